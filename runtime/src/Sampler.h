//===- Sampler.h - choosing the next token from logits --------------------===//
//
// Greedy when temperature is 0; otherwise, in this order: repetition
// penalty over the tokens so far (a positive logit divided by it, a
// negative one multiplied), temperature, top-k, then top-p (the smallest set
// of most likely tokens whose probability reaches p) and min-p (tokens below
// min_p times the top probability dropped), and a draw from what is left.
// The generator is SplitMix64-seeded xoshiro256**, written out so the same
// seed gives the same tokens on every platform and compiler.
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
  /// A uniform double in [0, 1).
  double uniform();

private:
  SamplerOptions opts;
  uint64_t state[4];
  std::vector<float> work;
  std::vector<int32_t> order;
};

} // namespace llmc

#endif // LLMC_RUNTIME_SAMPLER_H
