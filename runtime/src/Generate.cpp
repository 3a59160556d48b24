//===- Generate.cpp - generation and speculative decoding (llmc.h) --------===//
//
// llmc_generate: the prompt through the prefill buckets, then a token per
// decode step, sampled (runtime/src/Sampler.h) and checked against stop
// tokens and strings. Speculative decoding proposes several tokens (prompt
// lookup, or a draft model's session) and verifies them in one prefill pass
// of the target, rolling the cache back past the first that does not stand.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Sampler.h"
#include "runtime/src/Session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>

using llmc::rt::append;
using llmc::rt::fail;
using llmc::rt::needSingle;
using llmc::rt::ok;

extern "C" {

void llmc_generate_params_init(llmc_generate_params *p) {
  if (!p)
    return;
  *p = llmc_generate_params{};
  p->max_new_tokens = 128;
  p->temperature = 0;
  p->top_k = 0;
  p->top_p = 1;
  p->min_p = 0;
  p->repetition_penalty = 1;
  p->seed = 0;
  p->speculative = LLMC_SPECULATIVE_NONE;
  p->draft_tokens = 4;
  p->ngram_max = 3;
  p->ngram_min = 1;
}

} // extern "C"

namespace {

/// Prompt lookup: up to `k` tokens that followed the latest earlier
/// occurrence of the last n tokens of `text` (n from nmax down to nmin;
/// the first size that occurs wins), or none.
std::vector<int32_t> promptLookup(const std::vector<int32_t> &text, size_t k, size_t nmin,
                                  size_t nmax) {
  size_t len = text.size();
  for (size_t n = std::min(nmax, len > 0 ? len - 1 : 0); n >= nmin && n > 0; --n) {
    const int32_t *tail = text.data() + (len - n);
    // Occurrences starting at i < len - n, latest first.
    for (size_t i = len - n; i-- > 0;)
      if (std::equal(tail, tail + n, text.data() + i)) {
        size_t from = i + n, to = std::min(len, from + k);
        if (from < to)
          return std::vector<int32_t>(text.begin() + int64_t(from), text.begin() + int64_t(to));
      }
  }
  return {};
}

/// How many of `k` proposals to verify: the verification pass runs them and
/// the new token through the smallest prefill bucket that holds them, whose
/// padding rows cost as much as real ones, so when the k + 1 rows do not
/// fill a bucket, as many as fill the largest bucket below do (a bucket of
/// exactly k + 1 keeps all k; none below: all k, padded).
size_t fitBucket(const llmc_session &s, size_t k) {
  size_t rows = k + 1, fit = 0;
  for (const auto &[seq, entry] : s.entries->prefill) {
    (void)entry;
    if (size_t(seq) == rows)
      return k;
    if (size_t(seq) < rows && size_t(seq) >= 2)
      fit = std::max(fit, size_t(seq));
  }
  return fit ? fit - 1 : k;
}

/// Constrained generation for one sequence: where its text stands in the
/// grammar, and the mask of each step laid over the logits.
struct Guide {
  const llmc::grammar::Matcher *matcher;
  const std::vector<int32_t> *enders; // stop tokens: allowed where the text may end
  llmc::grammar::StackPool pool;
  llmc::grammar::Stacks stacks, next;
  // The last mask and the state it was made for: the draft model, a
  // verification pass and the next step often ask again for the same one.
  std::vector<uint64_t> mask;
  llmc::grammar::Stacks maskedAt;
  bool masked = false;
  double *ms;

  Guide(const llmc::grammar::Matcher &m, const std::vector<int32_t> &e, double *time)
      : matcher(&m), enders(&e), stacks(m.start(pool)), mask(m.maskWords()), ms(time) {}

  /// Adds the time of its scope to the grammar's.
  struct Timed {
    double *ms;
    std::chrono::steady_clock::time_point begin = std::chrono::steady_clock::now();
    ~Timed() {
      *ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                 .count();
    }
  };

  /// Whether the grammar admits more text.
  bool open() const { return llmc::grammar::Matcher::canContinue(stacks); }

  bool isEnder(int32_t t) const {
    return std::find(enders->begin(), enders->end(), t) != enders->end();
  }

  /// Sets the logits of the tokens not allowed after `at` to -inf; whether
  /// any is.
  bool maskLogits(const llmc::grammar::Stacks &at, float *logits, int64_t vocab) {
    Timed timed{ms};
    // Stack ids name the same stacks for the pool's life (a mask forgets
    // only what it pushed itself), so equal ids are the same state.
    if (!masked || at != maskedAt) {
      matcher->mask(pool, at, mask.data());
      maskedAt = at;
      masked = true;
    }
    int64_t known = std::min<int64_t>(vocab, matcher->vocab());
    bool ends = llmc::grammar::Matcher::canEnd(at), any = false;
    for (int64_t t = 0; t < vocab; ++t) {
      bool allowed = t < known && ((mask[size_t(t) / 64] >> (t % 64)) & 1);
      if (!allowed && ends)
        allowed = isEnder(int32_t(t));
      if (!allowed)
        logits[t] = -std::numeric_limits<float>::infinity();
      any = any || allowed;
    }
    return any;
  }

  /// The stacks after `token` from `at` into `to` (empty: not allowed);
  /// false, with `why`, when the grammar is too ambiguous to follow.
  bool follow(const llmc::grammar::Stacks &at, int32_t token, llmc::grammar::Stacks &to,
              std::string *why = nullptr) {
    Timed timed{ms};
    if (matcher->advanceToken(pool, at, token, to, why))
      return true;
    to.clear();
    return false;
  }

  /// How many of `tokens` the grammar allows in a row from here (stopping
  /// at a stop token and once the text cannot go on).
  size_t allowedPrefix(const std::vector<int32_t> &tokens) {
    llmc::grammar::Stacks at = stacks, after;
    size_t n = 0;
    for (; n < tokens.size(); ++n) {
      if (isEnder(tokens[n]) || !llmc::grammar::Matcher::canContinue(at))
        break;
      follow(at, tokens[n], after);
      if (after.empty())
        break;
      at.swap(after);
    }
    return n;
  }

  /// Sets the logits of the tokens not allowed next to -inf; an error when
  /// none is.
  llmc_status constrain(float *logits, int64_t vocab, size_t generated) {
    bool ends = llmc::grammar::Matcher::canEnd(stacks);
    if (!maskLogits(stacks, logits, vocab))
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "no token of the vocabulary continues the grammar after " +
                      std::to_string(generated) + " generated tokens" +
                      (ends ? " (the text may end here, but there is no stop token: give "
                              "stop_tokens)"
                            : ""));
    return LLMC_OK;
  }

  /// Follows `token`; an error when the grammar cannot.
  llmc_status accept(int32_t token) {
    std::string why;
    if (!follow(stacks, token, next, &why))
      return fail(LLMC_ERROR_INVALID_ARGUMENT, why);
    if (!next.empty()) // else an ender, or a token the mask kept out
      stacks.swap(next);
    return LLMC_OK;
  }
};

/// Draft-model speculation: the draft session's cache follows the text
/// (prompt and accepted tokens), and each step it proposes up to k tokens,
/// one decode step each, sampled as the target samples.
struct DraftProposer {
  llmc_session *session;
  llmc::Sampler sampler;
  std::vector<float> logits;
  // The text and the proposals so far; between steps a prefix of the
  // generation's history (what stood), extended rather than copied.
  std::vector<int32_t> text;
  std::vector<llmc::Sampler::Distribution> q; // what proposal i was drawn from
  double ms = 0;

  DraftProposer(llmc_session *s, const llmc::SamplerOptions &o)
      : session(s), sampler(o), logits(size_t(s->model->vocab)) {}

  /// The prompt into the draft's cache (from empty), before the first token.
  llmc_status start(const int32_t *prompt, size_t n) {
    auto begin = std::chrono::steady_clock::now();
    session->length = 0;
    text.assign(prompt, prompt + n);
    llmc_status st = append(session, prompt, n, nullptr, nullptr);
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
              .count();
    return st;
  }

  /// Up to k tokens to follow `history` into `out`; with `guide`, only
  /// tokens its grammar allows after the text (the draft's logits masked as
  /// the target's are), ending early where the grammar's text may end or
  /// no token continues it.
  llmc_status propose(const std::vector<int32_t> &history, size_t k, std::vector<int32_t> &out,
                      Guide *guide) {
    auto start = std::chrono::steady_clock::now();
    out.clear();
    // Catch up with what the draft has not seen: the tokens accepted after
    // its last proposal, and the target's newest token.
    size_t cached = size_t(std::min<int64_t>(session->length, int64_t(history.size()) - 1));
    session->length = int64_t(cached);
    if (llmc_status st = append(session, history.data() + cached, history.size() - cached,
                                nullptr, logits.data());
        st != LLMC_OK)
      return st;
    text.insert(text.end(), history.begin() + int64_t(text.size()), history.end());
    if (q.size() < k)
      q.resize(k);
    int64_t vocab = session->model->vocab;
    llmc::grammar::Stacks at, next;
    if (guide)
      at = guide->stacks;
    for (size_t i = 0; i < k; ++i) {
      if (guide && !guide->maskLogits(at, logits.data(), vocab))
        break;
      int32_t d;
      if (sampler.greedy()) {
        d = sampler.sample(logits.data(), vocab, text);
      } else {
        sampler.distribution(logits.data(), vocab, text, q[i]);
        d = sampler.draw(q[i]);
      }
      out.push_back(d);
      text.push_back(d);
      if (guide) {
        if (guide->isEnder(d))
          break;
        guide->follow(at, d, next);
        if (!llmc::grammar::Matcher::canContinue(next))
          break;
        at.swap(next);
      }
      if (i + 1 < k)
        if (llmc_status st = append(session, &d, 1, nullptr, logits.data()); st != LLMC_OK)
          return st;
    }
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    return LLMC_OK;
  }

  /// After the target kept `kept` proposals following a text of `length`
  /// tokens: the draft's cache keeps only what stood.
  void settle(size_t length, size_t kept) {
    session->length = std::min<int64_t>(session->length, int64_t(length + kept));
    text.resize(std::min(text.size(), length + kept));
  }
};

/// Generation for every sequence of the session: prompts [batch,
/// prompt_len], out [batch, out_capacity], counts [batch]. Each sequence
/// samples with its own generator (seed + its index) and stops on its own;
/// a finished one keeps feeding its last token, whose results are ignored.
llmc_status generateRows(llmc_session *session, const int32_t *prompts, size_t promptLen,
                         const llmc_generate_params *params, llmc_token_callback callback,
                         void *user, int32_t *out, size_t outCapacity, size_t *counts,
                         llmc_generate_stats *stats) {
  using Clock = std::chrono::steady_clock;
  if (!session)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the session is null");
  int64_t b = session->batch;
  if (counts)
    std::fill(counts, counts + b, 0);
  if (!prompts || promptLen == 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the prompt is empty");
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  if (params)
    p = *params;
  if (p.max_new_tokens < 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "max_new_tokens must be >= 0");
  if (p.max_new_tokens > 0 && (!out || outCapacity < size_t(p.max_new_tokens)))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "out_tokens must hold max_new_tokens (" + std::to_string(p.max_new_tokens) +
                    ") tokens per sequence");
  if (p.num_stop_tokens > 0 && !p.stop_tokens)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "stop_tokens is null");
  std::vector<std::string> stopStrings;
  if (p.num_stop_strings > 0) {
    if (!p.stop_strings)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "stop_strings is null");
    if (!session->model->tokenizer)
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "stop strings need the artifact's tokenizer (compile with --tokenizer)");
    for (size_t i = 0; i < p.num_stop_strings; ++i) {
      if (!p.stop_strings[i] || !*p.stop_strings[i])
        return fail(LLMC_ERROR_INVALID_ARGUMENT,
                    "stop_strings[" + std::to_string(i) + "] is null or empty");
      stopStrings.emplace_back(p.stop_strings[i]);
    }
  }
  llmc::SamplerOptions so;
  so.temperature = p.temperature, so.topK = p.top_k, so.topP = p.top_p, so.minP = p.min_p;
  so.repetitionPenalty = p.repetition_penalty;
  std::string why;
  if (!llmc::Sampler::validate(so, why))
    return fail(LLMC_ERROR_INVALID_ARGUMENT, why);
  std::vector<llmc::Sampler> samplers;
  for (int64_t r = 0; r < b; ++r) {
    so.seed = p.seed + uint64_t(r);
    samplers.emplace_back(so);
  }
  bool speculate = p.speculative != LLMC_SPECULATIVE_NONE;
  if (p.speculative != LLMC_SPECULATIVE_NONE && p.speculative != LLMC_SPECULATIVE_PROMPT_LOOKUP &&
      p.speculative != LLMC_SPECULATIVE_DRAFT)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "speculative must be LLMC_SPECULATIVE_NONE, LLMC_SPECULATIVE_PROMPT_LOOKUP or "
                "LLMC_SPECULATIVE_DRAFT");
  if (p.speculative == LLMC_SPECULATIVE_DRAFT && !session->draft)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "LLMC_SPECULATIVE_DRAFT needs a session made with a draft model "
                "(llmc_session_options.draft_model)");
  if (speculate) {
    if (b != 1)
      return fail(LLMC_ERROR_UNSUPPORTED, "speculative decoding runs single-sequence sessions");
    if (p.draft_tokens < 1 || p.draft_tokens > 64)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "draft_tokens must be in 1 .. 64");
    if (p.ngram_min < 1 || p.ngram_max < p.ngram_min || p.ngram_max > 64)
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "the n-gram sizes must satisfy 1 <= ngram_min <= ngram_max <= 64");
  }
  const ModelData &m = *session->model;
  const llmc::grammar::Matcher *grammar = p.grammar ? p.grammar->matcher.get() : nullptr;
  if (grammar && p.grammar->model != session->model &&
      !(p.grammar->model->tokenizer && m.tokenizer &&
        p.grammar->model->tokenizer->sameVocabulary(*m.tokenizer)))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "the grammar was made for a model with another vocabulary");
  // With a grammar, the stop tokens are what may end the text.
  std::vector<int32_t> enders(p.stop_tokens, p.stop_tokens + p.num_stop_tokens);
  if (grammar)
    enders.insert(enders.end(), m.stopTokens.begin(), m.stopTokens.end());
  double grammarMs = 0;
  std::vector<Guide> guides;
  if (grammar)
    for (int64_t r = 0; r < b; ++r)
      guides.emplace_back(*grammar, enders, &grammarMs);
  std::vector<float> logits(static_cast<size_t>(b * m.vocab));
  std::vector<std::vector<int32_t>> history(static_cast<size_t>(b));
  for (int64_t r = 0; r < b; ++r)
    history[size_t(r)].assign(prompts + r * int64_t(promptLen), prompts + (r + 1) * int64_t(promptLen));
  // A stop string completed by the newest token lies in the text of the
  // last `window` tokens (each adds at least a byte; a few more tokens keep
  // the decoder's start-of-text rules away from it), so each step decodes
  // only those: no quadratic cost over a long generation.
  size_t window = 0;
  for (const std::string &s : stopStrings)
    window = std::max(window, s.size() + 4);
  auto completesStopString = [&](int64_t r) {
    if (stopStrings.empty())
      return false;
    const std::vector<int32_t> &h = history[size_t(r)];
    size_t generated = h.size() - promptLen, from = h.size() - std::min(generated, window);
    std::string text = session->model->tokenizer->decode(
        std::vector<int32_t>(h.begin() + int64_t(from), h.end()));
    for (const std::string &s : stopStrings)
      if (text.find(s) != std::string::npos)
        return true;
    return false;
  };
  // Greedy without a repetition penalty needs only the argmax of each
  // step: a model that computes it where the logits are (run_greedy: a GPU
  // model) sends back token ids instead of the logits.
  bool deviceGreedy = m.abi->run_greedy && p.temperature == 0 && p.repetition_penalty == 1 &&
                      !speculate && !grammar;
  // Sampling, or greedy with a penalty, likewise (run_sample): the model
  // draws each row's token with a uniform taken from that row's sampler, as
  // the host would draw it, after the penalty over the tokens that `marks`
  // holds for the row (the prompt and every token emitted), and hands back
  // the logits of a row it leaves to the host.
  bool deviceDraw = m.abi->run_sample && (p.temperature > 0 || p.repetition_penalty != 1) &&
                    !speculate && !grammar;
  size_t markWords = (size_t(m.vocab) + 31) / 32;
  std::vector<uint32_t> marks;
  auto mark = [&](int64_t r, int32_t token) {
    if (!marks.empty())
      marks[size_t(r) * markWords + size_t(token) / 32] |= 1u << (uint32_t(token) % 32);
  };
  if (deviceDraw && p.repetition_penalty != 1) {
    marks.assign(size_t(b) * markWords, 0);
    for (int64_t r = 0; r < b; ++r)
      for (int32_t t : history[size_t(r)])
        mark(r, t);
  }
  const llmc_model_sampling drawParams{p.temperature,         p.top_k, p.top_p, p.min_p,
                                       p.repetition_penalty, marks.empty() ? nullptr : marks.data()};
  std::vector<double> uniforms(static_cast<size_t>(b), 0.0);
  std::vector<bool> finished(static_cast<size_t>(b), false);
  std::vector<int32_t> deviceIds(static_cast<size_t>(b)); // what run_greedy / run_sample chose
  auto step = [&](const int32_t *tokens, size_t count) {
    if (deviceDraw) {
      for (int64_t r = 0; r < b; ++r) // (a finished row draws nothing, as on the host; greedy none)
        uniforms[size_t(r)] =
            finished[size_t(r)] || p.temperature == 0 ? 0.0 : samplers[size_t(r)].uniform();
      return append(session, tokens, count, nullptr, logits.data(), deviceIds.data(), &drawParams,
                    uniforms.data());
    }
    return deviceGreedy ? append(session, tokens, count, nullptr, nullptr, deviceIds.data())
                        : append(session, tokens, count, nullptr, logits.data());
  };
  std::unique_ptr<DraftProposer> proposer;
  if (p.speculative == LLMC_SPECULATIVE_DRAFT) {
    so.seed = p.seed ^ 0x9e3779b97f4a7c15ull; // its own stream: the proposals
    proposer = std::make_unique<DraftProposer>(session->draft.get(), so);
  }
  auto start = Clock::now();
  session->length = 0;
  if (llmc_status st = step(prompts, promptLen); st != LLMC_OK)
    return st;
  // The draft reads the prompt too (its time is part of the first token's).
  if (proposer)
    if (llmc_status st = proposer->start(prompts, promptLen); st != LLMC_OK)
      return fail(st, "the draft model: " + std::string(llmc_last_error()));
  // A grammar that admits only the empty text: nothing to generate.
  bool closed = grammar && !guides[0].open();
  std::vector<int32_t> next(static_cast<size_t>(b));
  size_t produced = 0;
  Clock::time_point first = start;
  int64_t drafted = 0, accepted = 0, verifies = 0;
  llmc_status grammarStatus = LLMC_OK; // a grammar too ambiguous to follow
  // Writes token `produced` of row r; returns whether the row is done.
  auto emit = [&](int64_t r, int32_t token) {
    out[size_t(r) * outCapacity + produced] = token;
    history[size_t(r)].push_back(token);
    mark(r, token);
    if (counts)
      counts[r] = produced + 1;
    bool stop = std::find(p.stop_tokens, p.stop_tokens + p.num_stop_tokens, token) !=
                    p.stop_tokens + p.num_stop_tokens ||
                completesStopString(r);
    if (grammar) {
      Guide &gd = guides[size_t(r)];
      if (gd.isEnder(token)) {
        stop = true;
      } else if (llmc_status st = gd.accept(token); st != LLMC_OK) {
        grammarStatus = st;
        stop = true;
      } else if (!gd.open()) {
        stop = true;
      }
    }
    if (callback && b == 1 && callback(token, user) != 0)
      stop = true;
    if (stop || produced + 1 == size_t(p.max_new_tokens))
      finished[size_t(r)] = true;
    return bool(finished[size_t(r)]);
  };
  std::vector<float> verified;
  llmc::Sampler::Distribution target;
  int32_t pending = -1; // a token speculative sampling chose on a rejection
  // A draft model's proposals cost a decode step of it each, and every
  // verified row costs something (on a model whose weights stay in cache, a
  // pass of 4 rows costs 1.5 decode steps): how many to propose, with either
  // proposer, follows how many stood (all: two more, up to draft_tokens;
  // else one fewer, down to one), as Hugging Face's assisted generation does
  // for drafts.
  size_t draftLength = size_t(std::max(p.draft_tokens, 1));
  while (produced < size_t(p.max_new_tokens) && !closed) {
    bool all = true;
    for (int64_t r = 0; r < b; ++r) {
      if (finished[size_t(r)]) {
        next[size_t(r)] = history[size_t(r)].back();
        continue;
      }
      if (grammar && pending < 0)
        if (llmc_status st = guides[size_t(r)].constrain(logits.data() + r * m.vocab, m.vocab,
                                                         produced);
            st != LLMC_OK)
          return st;
      const float *rowLogits = logits.data() + r * m.vocab;
      int32_t token = pending >= 0 ? pending
                      : deviceGreedy || (deviceDraw && deviceIds[size_t(r)] >= 0)
                          ? deviceIds[size_t(r)]
                      : deviceDraw // left to the host: its uniform is taken
                          ? samplers[size_t(r)].sample(rowLogits, m.vocab, history[size_t(r)],
                                                       uniforms[size_t(r)])
                          : samplers[size_t(r)].sample(rowLogits, m.vocab, history[size_t(r)]);
      pending = -1;
      next[size_t(r)] = token;
      all = emit(r, token) && all;
    }
    if (grammarStatus != LLMC_OK)
      return grammarStatus;
    ++produced;
    if (produced == 1)
      first = Clock::now();
    if (all || session->length + 1 > session->capacity)
      break;
    // The proposals, verified together with the new token: those of the
    // draft model, or the tokens that followed the latest earlier
    // occurrence of the text's last n tokens (prompt lookup).
    std::vector<int32_t> draft;
    if (speculate) {
      size_t room = std::min<size_t>(size_t(p.max_new_tokens) - produced,
                                     size_t(session->capacity - session->length - 1));
      size_t k = std::min<size_t>(draftLength, room);
      if (proposer && k > 0) {
        k = fitBucket(*session, k);
        if (llmc_status st =
                proposer->propose(history[0], k, draft, grammar ? &guides[0] : nullptr);
            st != LLMC_OK)
          return fail(st, "the draft model: " + std::string(llmc_last_error()));
      } else if (!proposer) {
        draft = promptLookup(history[0], k, size_t(p.ngram_min), size_t(p.ngram_max));
        if (grammar) // proposals the grammar forbids would only be rejected
          draft.resize(guides[0].allowedPrefix(draft));
        draft.resize(fitBucket(*session, draft.size()));
      }
    }
    if (draft.empty()) {
      if (llmc_status st = step(next.data(), 1); st != LLMC_OK)
        return st;
      continue;
    }
    std::vector<int32_t> chunk = {next[0]};
    chunk.insert(chunk.end(), draft.begin(), draft.end());
    int64_t before = session->length;
    verified.resize(chunk.size() * size_t(m.vocab));
    if (llmc_status st = append(session, chunk.data(), chunk.size(), verified.data(), nullptr);
        st != LLMC_OK)
      return st;
    ++verifies;
    drafted += int64_t(draft.size());
    // Draft token i stands if it is what the sampler chooses after the
    // ones before it: greedy, the choice itself; sampling, with probability
    // min(1, p / q), p the sampler's probability of it and q the draft's
    // (prompt lookup proposes with certainty, q = 1), and on a rejection the
    // token comes from max(0, p - q), renormalised: each token then
    // follows p exactly.
    size_t textLength = history[0].size(), kept = 0;
    bool done = false;
    llmc::Sampler &sampler = samplers[0];
    while (kept < draft.size() && !done) {
      float *row = verified.data() + kept * size_t(m.vocab);
      if (grammar)
        if (llmc_status st = guides[0].constrain(row, m.vocab, produced); st != LLMC_OK)
          return st;
      bool stands;
      if (sampler.greedy()) {
        stands = sampler.sample(row, m.vocab, history[0]) == draft[kept];
      } else {
        sampler.distribution(row, m.vocab, history[0], target);
        const llmc::Sampler::Distribution *q = proposer ? &proposer->q[kept] : nullptr;
        double qd = q ? q->probability(draft[kept]) : 1.0;
        stands = sampler.uniform() * qd < target.probability(draft[kept]);
        if (!stands)
          pending = q ? sampler.drawResidual(target, *q) : sampler.draw(target, draft[kept]);
      }
      if (!stands)
        break;
      done = emit(0, draft[kept]);
      if (grammarStatus != LLMC_OK)
        return grammarStatus;
      ++produced;
      ++kept;
    }
    accepted += int64_t(kept);
    draftLength = kept == draft.size() ? std::min<size_t>(draftLength + 2, size_t(p.draft_tokens))
                                       : std::max<size_t>(draftLength - 1, 1);
    std::copy_n(verified.data() + kept * size_t(m.vocab), size_t(m.vocab), logits.data());
    session->length = before + 1 + int64_t(kept); // the rejected rows are written over later
    if (proposer)
      proposer->settle(textLength, kept);
    if (done)
      break;
  }
  auto end = Clock::now();
  if (stats) {
    auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    *stats = llmc_generate_stats{};
    stats->prompt_tokens = int64_t(promptLen) * b;
    stats->generated_tokens = int64_t(produced) * b;
    stats->time_to_first_token_ms = produced ? ms(first - start) : 0;
    stats->total_ms = ms(end - start);
    stats->draft_tokens = drafted;
    stats->accepted_tokens = accepted;
    stats->verify_steps = verifies;
    stats->draft_ms = proposer ? proposer->ms : 0;
    stats->grammar_ms = grammarMs;
    stats->grammar_complete =
        grammar && llmc::grammar::Matcher::canEnd(guides[0].stacks) ? 1 : 0;
    if (produced > 1) {
      stats->time_per_output_token_ms = ms(end - first) / double(produced - 1);
      stats->tokens_per_second = 1000.0 * double(b) / stats->time_per_output_token_ms;
    }
  }
  return ok();
}

} // namespace

extern "C" {

llmc_status llmc_generate(llmc_session *session, const int32_t *prompt, size_t prompt_len,
                          const llmc_generate_params *params, llmc_token_callback callback,
                          void *user_data, int32_t *out_tokens, size_t out_capacity,
                          size_t *out_count, llmc_generate_stats *stats) {
  if (out_count)
    *out_count = 0;
  if (llmc_status st = needSingle(session); st != LLMC_OK)
    return st;
  return generateRows(session, prompt, prompt_len, params, callback, user_data, out_tokens,
                      out_capacity, out_count, stats);
}

llmc_status llmc_generate_batch(llmc_session *session, const int32_t *prompts, size_t prompt_len,
                                const llmc_generate_params *params, int32_t *out_tokens,
                                size_t out_capacity, size_t *out_counts,
                                llmc_generate_stats *stats) {
  return generateRows(session, prompts, prompt_len, params, nullptr, nullptr, out_tokens,
                      out_capacity, out_counts, stats);
}

} // extern "C"
