//===- Sampler.cpp - choosing the next token from logits ------------------===//
#include "runtime/src/Sampler.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <numeric>

namespace llmc {
namespace {

uint64_t splitMix(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

} // namespace

Sampler::Sampler(const SamplerOptions &options) : opts(options) {
  uint64_t x = options.seed;
  for (uint64_t &s : state)
    s = splitMix(x);
}

bool Sampler::validate(const SamplerOptions &o, std::string &why) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    why = "temperature must be a finite number >= 0";
  else if (o.topK < 0)
    why = "top_k must be >= 0";
  else if (!(o.topP > 0 && o.topP <= 1))
    why = "top_p must be in (0, 1]";
  else if (!(o.minP >= 0 && o.minP < 1))
    why = "min_p must be in [0, 1)";
  else if (!(o.repetitionPenalty > 0) || !std::isfinite(o.repetitionPenalty))
    why = "repetition_penalty must be a finite number > 0";
  else
    return true;
  return false;
}

double Sampler::uniform() {
  uint64_t result = rotl(state[1] * 5, 7) * 9;
  uint64_t t = state[1] << 17;
  state[2] ^= state[0];
  state[3] ^= state[1];
  state[1] ^= state[2];
  state[0] ^= state[3];
  state[2] ^= t;
  state[3] = rotl(state[3], 45);
  return double(result >> 11) * 0x1.0p-53;
}

void Sampler::penalize(const float *logits, int64_t vocab, const std::vector<int32_t> &history) {
  work.assign(logits, logits + vocab);
  for (float &l : work) // a NaN is never chosen (and would break the order)
    if (l != l)
      l = -INFINITY;
  if (opts.repetitionPenalty == 1)
    return;
  // Each token of the history once, however often it occurs (Hugging Face's
  // RepetitionPenaltyLogitsProcessor gathers and scatters by token id;
  // llama.cpp and vLLM also penalise each distinct token once): until
  // 2026-11-29 a token seen n times was divided by the penalty n times.
  seen.resize(size_t(vocab), 0);
  for (int32_t t : history)
    if (t >= 0 && t < vocab && !seen[size_t(t)]) {
      seen[size_t(t)] = 1;
      float &l = work[size_t(t)];
      l = l > 0 ? l / opts.repetitionPenalty : l * opts.repetitionPenalty;
    }
  for (int32_t t : history) // (zeros again for the next call)
    if (t >= 0 && t < vocab)
      seen[size_t(t)] = 0;
}

void Sampler::distribution(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                           Distribution &out) {
  penalize(logits, vocab, history);
  distributionOfWork(vocab, out);
}

void Sampler::distributionOfWork(int64_t vocab, Distribution &out) {
  order.resize(size_t(vocab));
  std::iota(order.begin(), order.end(), 0);
  // Most likely first; ties by id so the order is deterministic.
  auto better = [&](int32_t a, int32_t b) {
    return work[size_t(a)] > work[size_t(b)] || (work[size_t(a)] == work[size_t(b)] && a < b);
  };
  size_t keep = size_t(vocab);
  if (opts.topK > 0 && size_t(opts.topK) < keep) {
    keep = size_t(opts.topK);
    std::partial_sort(order.begin(), order.begin() + long(keep), order.end(), better);
  } else {
    std::sort(order.begin(), order.end(), better);
  }
  // Probabilities of the kept tokens at the temperature.
  std::vector<double> &p = out.weights;
  p.resize(keep);
  double top = work[size_t(order[0])] / opts.temperature, sum = 0;
  for (size_t i = 0; i < keep; ++i)
    sum += p[i] = std::exp(double(work[size_t(order[i])]) / opts.temperature - top);
  for (double &x : p)
    x /= sum;
  if (opts.topP < 1) {
    double acc = 0;
    size_t n = 0;
    while (n < keep && acc < opts.topP)
      acc += p[n++];
    keep = std::max<size_t>(n, 1);
  }
  if (opts.minP > 0) {
    size_t n = 1;
    while (n < keep && p[n] >= opts.minP * p[0])
      ++n;
    keep = n;
  }
  p.resize(keep);
  out.tokens.assign(order.begin(), order.begin() + long(keep));
  out.total = 0;
  for (size_t i = 0; i < keep; ++i)
    out.total += p[i];
}

double Sampler::Distribution::probability(int32_t token) const {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == token)
      return weights[i] / total;
  return 0;
}

int32_t Sampler::draw(const Distribution &d, int32_t except) { return draw(d, except, uniform()); }

int32_t Sampler::draw(const Distribution &d, int32_t except, double u) {
  double total = d.total;
  for (size_t i = 0; i < d.tokens.size(); ++i)
    if (d.tokens[i] == except)
      total -= d.weights[i];
  double r = u * total;
  int32_t last = -1;
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    if (d.tokens[i] == except)
      continue;
    last = d.tokens[i];
    r -= d.weights[i];
    if (r < 0)
      return d.tokens[i];
  }
  // Rounding left a sliver (or everything was `except`: then that token).
  return last >= 0 ? last : d.tokens[0];
}

int32_t Sampler::drawResidual(const Distribution &p, const Distribution &q) {
  for (size_t i = 0; i < q.tokens.size(); ++i) {
    size_t t = size_t(q.tokens[i]);
    if (dense.size() <= t)
      dense.resize(t + 1, 0.0);
    dense[t] = q.weights[i] / q.total;
  }
  auto residual = [&](size_t i) {
    size_t t = size_t(p.tokens[i]);
    double qt = t < dense.size() ? dense[t] : 0.0;
    return std::max(0.0, p.weights[i] / p.total - qt);
  };
  double total = 0;
  for (size_t i = 0; i < p.tokens.size(); ++i)
    total += residual(i);
  int32_t chosen = -1;
  if (total > 0) {
    double r = uniform() * total;
    for (size_t i = 0; i < p.tokens.size() && chosen < 0; ++i) {
      double w = residual(i);
      r -= w;
      if (r < 0 || (w > 0 && i + 1 == p.tokens.size()))
        chosen = p.tokens[i];
    }
    if (chosen < 0) // rounding left a sliver: the last token with weight
      for (size_t i = p.tokens.size(); i-- > 0 && chosen < 0;)
        if (residual(i) > 0)
          chosen = p.tokens[i];
  }
  for (int32_t t : q.tokens)
    dense[size_t(t)] = 0.0;
  return chosen >= 0 ? chosen : draw(p);
}

int32_t Sampler::sample(const float *logits, int64_t vocab, const std::vector<int32_t> &history) {
  // (Greedy takes no uniform.)
  return sample(logits, vocab, history, greedy() ? 0.0 : uniform());
}

int32_t Sampler::sample(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                        double u) {
  penalize(logits, vocab, history);
  if (opts.temperature == 0) // greedy: the first of the largest
    return int32_t(std::max_element(work.begin(), work.end()) - work.begin());
  // (Top-k sorts only its k already.)
  if (!(opts.topK > 0 && opts.topK < vocab))
    if (int32_t token = drawFromPrefix(vocab, u); token >= 0)
      return token;
  distributionOfWork(vocab, dist);
  return draw(dist, -1, u);
}

int32_t Sampler::drawFromPrefix(int64_t vocab, double u) {
  // Rungs of log-weight below the top, descending.
  constexpr int kRungs = 16;
  constexpr double rung[kRungs] = {-0.5, -1, -1.5, -2, -2.5, -3, -4, -5,
                                   -6,   -7, -8,   -10, -12, -14.5, -17, -20};
  const float t = opts.temperature;
  float most = -INFINITY;
  for (float x : work)
    most = std::max(most, x);
  if (!(most > -INFINITY))
    return -1;
  // distribution()'s weights: exp(x / T - top), top the float quotient.
  const double top = most / t;
  auto weight = [&](float x) { return std::exp(double(x) / t - top); };
  const double minWeight = double(opts.minP) * weight(most);
  // The rungs as logits (x >= at[j]: a prefix of the order whatever the
  // rounding); per token the number of rungs it lies above, b (then it is
  // above at[kRungs - b] and every lower one), counted and weighed per b.
  float at[kRungs];
  for (int j = 0; j < kRungs; ++j)
    at[j] = float((rung[j] + top) * double(t));
  double mass[kRungs + 1] = {}, total = 0, minMass = 0;
  for (float x : work) {
    int b = 0;
    for (float r : at)
      b += x >= r;
    double w = weight(x);
    total += w;
    mass[b] += w;
    if (w >= minWeight)
      minMass += w;
  }
  for (int b = kRungs - 1; b >= 1; --b) // now mass[b]: of the tokens above at[kRungs - b]
    mass[b] += mass[b + 1];
  // What the draw is from: every token, or the min-p set, or (top-p) a cut
  // of the order that only the sorted weights place.
  const double keptAll = opts.minP > 0 ? minMass : total;
  auto better = [&](int32_t a, int32_t b) {
    return work[size_t(a)] > work[size_t(b)] || (work[size_t(a)] == work[size_t(b)] && a < b);
  };
  for (int b = kRungs; b >= 1; --b) { // from the fewest tokens
    // A rung whose tokens cannot hold the top-p cut or the draw.
    if (opts.topP < 1 ? mass[b] < double(opts.topP) * total : mass[b] <= u * keptAll)
      continue;
    order.clear();
    for (int64_t i = 0; i < vocab; ++i)
      if (work[size_t(i)] >= at[kRungs - b])
        order.push_back(int32_t(i));
    std::sort(order.begin(), order.end(), better);
    const int64_t n = int64_t(order.size());
    running.resize(size_t(n));
    double run = 0;
    for (int64_t i = 0; i < n; ++i)
      running[size_t(i)] = run += weight(work[size_t(order[size_t(i)])]);
    // distribution()'s cuts where they fall among these n (kNone: past them).
    constexpr int64_t kNone = INT64_MAX;
    int64_t cut = n < vocab ? kNone : n;
    if (opts.topP < 1) {
      int64_t i = 0;
      while (i < n && running[size_t(i)] / total < opts.topP)
        ++i;
      if (i < n)
        cut = i + 1;
    }
    if (opts.minP > 0) {
      int64_t i = 1;
      while (i < n && weight(work[size_t(order[size_t(i)])]) >= minWeight)
        ++i;
      if (i < n)
        cut = std::min(cut, i);
    }
    double kept;
    if (cut <= n)
      kept = running[size_t(cut - 1)];
    else if (opts.topP >= 1) // every token, or the min-p set
      kept = keptAll;
    else
      continue; // a top-p cut past these tokens
    const double r = u * kept;
    for (int64_t i = 0; i < std::min(cut, n); ++i)
      if (running[size_t(i)] > r)
        return order[size_t(i)];
    if (cut <= n) // rounding left a sliver: the last kept
      return order[size_t(cut - 1)];
  }
  return -1;
}

} // namespace llmc
