//===- Sampler.h - choosing the next token from logits --------------------===//
//
// First the repetition penalty over the tokens so far: the logit of each
// distinct token in the sequence, however often it occurs, divided by it
// where positive and multiplied where not (as Hugging Face transformers and
// llama.cpp apply it). Then greedy when temperature is 0; otherwise, in this
// order: temperature, top-k, then top-p (the smallest set of most likely
// tokens whose probability reaches p) and min-p (tokens below min_p times
// the top probability dropped), and a draw from what is left.
// The generator is SplitMix64-seeded xoshiro256**, written out so the same
// seed gives the same tokens on every platform and compiler.
//
// sample() without top-k (which sorts only its k) does not sort the whole
// vocabulary: one pass sums every weight and the weight above 16 rungs of
// log-weight below the top (as the CUDA sampling kernel does with 8,
// runtime/src/model/cuda/Sampling.h); the smallest rung that can hold the
// top-p cut and the draw is sorted and the rule run on it, and only where
// none can (a distribution flatter than the rungs) is every token sorted.
// The kept set and the draw are distribution()'s; sums are taken in another
// order (rounding). Vocabulary 32000: 3.6-4.0 ms -> 0.4-0.8 ms a draw.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SAMPLER_H
#define LLMC_RUNTIME_SAMPLER_H

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct SamplerOptions {
  float temperature = 0;
  int32_t topK = 0;
  float topP = 1;
  float minP = 0;
  float repetitionPenalty = 1;
  uint64_t seed = 0;
};

class Sampler {
public:
  explicit Sampler(const SamplerOptions &options);
  /// Whether the options are usable; `why` names the bad one.
  static bool validate(const SamplerOptions &options, std::string &why);
  /// The next token given `logits` [vocab] and the sequence so far.
  int32_t sample(const float *logits, int64_t vocab, const std::vector<int32_t> &history);
  /// The same with the draw's uniform `u` given (one the caller took from
  /// uniform(): a device that could not draw, over a row of nothing but
  /// NaN, hands it back).
  int32_t sample(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                 double u);
  /// A uniform double in [0, 1).
  double uniform();

  /// What a sampling (temperature > 0) draw chooses from: the kept tokens,
  /// most likely first, and their weights (probabilities up to the factor
  /// `total`).
  struct Distribution {
    std::vector<int32_t> tokens;
    std::vector<double> weights;
    double total = 0;
    /// The probability of `token` (0 when it was cut).
    double probability(int32_t token) const;
  };
  void distribution(const float *logits, int64_t vocab, const std::vector<int32_t> &history,
                    Distribution &out);
  /// A draw from `d`, leaving out `except` (-1: none) and renormalising:
  /// the residual max(0, p - q) of speculative sampling when the draft q
  /// proposed one token.
  int32_t draw(const Distribution &d, int32_t except = -1);
  int32_t draw(const Distribution &d, int32_t except, double u);
  /// A draw from max(0, p - q), renormalised: speculative sampling's
  /// residual after the target p rejected a token that a draft proposed
  /// from q. Where nothing is left (p == q up to rounding), from p.
  int32_t drawResidual(const Distribution &p, const Distribution &q);
  bool greedy() const { return opts.temperature == 0; }

private:
  /// `work` = the logits with the repetition penalty applied.
  void penalize(const float *logits, int64_t vocab, const std::vector<int32_t> &history);
  /// distribution() of `work`.
  void distributionOfWork(int64_t vocab, Distribution &out);
  /// sample()'s draw from `work` (no top-k) with uniform u over a sorted
  /// prefix of the order (see the top); -1 where none of the rungs holds it.
  int32_t drawFromPrefix(int64_t vocab, double u);

  SamplerOptions opts;
  uint64_t state[4];
  std::vector<float> work;
  std::vector<int32_t> order;
  Distribution dist;
  std::vector<double> dense; // drawResidual's q by token id (zeros between calls)
  std::vector<double> running; // drawFromPrefix's running weights
  std::vector<uint8_t> seen;    // penalize's tokens already penalised (zeros between calls)
};

} // namespace llmc

#endif // LLMC_RUNTIME_SAMPLER_H
