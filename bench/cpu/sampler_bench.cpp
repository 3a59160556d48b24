//===- sampler_bench.cpp - what a sampled token costs the host sampler -----===//
//
// Times Sampler::sample (runtime/src/Sampler.cpp) on a vocabulary of 32000
// logits drawn from N(0, SIGMA) (SIGMA 3: a spread like a trained model's
// at temperature 1; 0.3: nearly flat, where no rung holds the draw and
// every token is sorted), for plain temperature, top-k 40, top-p 0.9 and
// min-p 0.05, and the same draws through distribution() + draw() (every
// token sorted: what sample() did before its rungs), in turns, medians of
// ROUNDS rounds of 200 draws. Both choose the same tokens (checked). With
// PENALTY, under that repetition penalty over a 4096-token history.
//
//   cmake --build build --target llmc-bench-sampler
//   build/bin/llmc-bench-sampler [SIGMA] [ROUNDS] [PENALTY]
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char **argv) {
  float sigma = argc > 1 ? float(std::atof(argv[1])) : 3.0f;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  // PENALTY (default 1: none): the repetition penalty over a history of
  // 4096 tokens, 1024 distinct, each four times.
  float penalty = argc > 3 ? float(std::atof(argv[3])) : 1.0f;
  const int64_t vocab = 32000;
  const int draws = 200;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (float &x : logits)
    x = normal(rng);
  std::vector<int32_t> history;
  if (penalty != 1)
    for (int i = 0; i < 4096; ++i)
      history.push_back(int32_t((i % 1024) * 31 % vocab));
  struct Case {
    const char *name;
    int k;
    float p, minP;
  } cases[] = {{"temperature 1", 0, 1, 0}, {"top-k 40", 40, 1, 0}, {"top-p 0.9", 0, 0.9f, 0},
               {"min-p 0.05", 0, 1, 0.05f}};
  std::printf("| vocab 32000, logits N(0, %.1f), repetition penalty %.2f | sample() us/draw | "
              "sorted distribution() + draw() us/draw | ratio |\n| --- | --- | --- | --- |\n",
              double(sigma), double(penalty));
  for (const Case &c : cases) {
    llmc::SamplerOptions o;
    o.temperature = 1, o.topK = c.k, o.topP = c.p, o.minP = c.minP, o.seed = 3;
    o.repetitionPenalty = penalty;
    std::vector<double> us(static_cast<size_t>(draws));
    llmc::Sampler source(o);
    for (double &u : us)
      u = source.uniform();
    std::vector<double> fast, sorted;
    for (int r = 0; r < rounds; ++r) {
      llmc::Sampler a(o), b(o);
      llmc::Sampler::Distribution d;
      std::vector<int32_t> got(static_cast<size_t>(draws)), want(static_cast<size_t>(draws));
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < draws; ++i)
        got[size_t(i)] = a.sample(logits.data(), vocab, history, us[size_t(i)]);
      auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < draws; ++i) {
        b.distribution(logits.data(), vocab, history, d);
        want[size_t(i)] = b.draw(d, -1, us[size_t(i)]);
      }
      auto t2 = std::chrono::steady_clock::now();
      if (got != want) {
        std::fprintf(stderr, "sampler_bench: %s: the draws differ\n", c.name);
        return 1;
      }
      fast.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / draws);
      sorted.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() / draws);
    }
    std::sort(fast.begin(), fast.end());
    std::sort(sorted.begin(), sorted.end());
    double f = fast[fast.size() / 2], s = sorted[sorted.size() / 2];
    std::printf("| %s | %.0f | %.0f | %.1fx |\n", c.name, f, s, s / f);
  }
  return 0;
}
