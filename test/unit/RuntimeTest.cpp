//===- RuntimeTest.cpp - the runtime's JSON, SHA-256, sampler and C API ---===//
#include "llmc/llmc.h"
#include "runtime/src/Sampler.h"
#include "runtime/src/support/Json.h"
#include "runtime/src/support/Sha256.h"
#include "runtime/src/support/WeightTable.h"
#include "runtime/src/support/XxHash64.h"

#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <map>
#include <string>

namespace {

TEST(Json, ParsesTheValueKinds) {
  llmc::json::Value v;
  std::string err;
  ASSERT_TRUE(llmc::json::parse(
      R"({"a": [1, -2.5e3, true, false, null], "s": "x\"\u00e9\ud83d\ude00", "o": {}})", v, err))
      << err;
  ASSERT_EQ(v.kind, llmc::json::Value::Object);
  const llmc::json::Value *a = v.get("a");
  ASSERT_TRUE(a && a->kind == llmc::json::Value::Array && a->array.size() == 5);
  EXPECT_TRUE(a->array[0].isInt());
  EXPECT_EQ(a->array[0].asInt(), 1);
  EXPECT_EQ(a->array[1].number, -2500);
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[4].kind, llmc::json::Value::Null);
  EXPECT_EQ(v.get("s")->string, "x\"\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.get("o")->kind, llmc::json::Value::Object);
  EXPECT_EQ(v.get("missing"), nullptr);
}

TEST(Json, RejectsBadInputWithAnOffset) {
  llmc::json::Value v;
  for (const char *bad : {"{", "[1,]", "{\"a\" 1}", "\"\\ud800\"", "01x", "tru", "\"a\nb\"",
                          "[1] 2", ""}) {
    std::string err;
    EXPECT_FALSE(llmc::json::parse(bad, v, err)) << bad;
    EXPECT_NE(err.find("at byte"), std::string::npos) << bad << ": " << err;
  }
  // Deep nesting is an error, not a stack overflow.
  std::string deep(100000, '[');
  std::string err;
  EXPECT_FALSE(llmc::json::parse(deep, v, err));
  EXPECT_NE(err.find("nesting"), std::string::npos) << err;
}

TEST(Sha256, KnownDigests) {
  // FIPS 180-4 examples.
  auto hex = [](const std::string &s) {
    llmc::Sha256 h;
    h.update(s.data(), s.size());
    return h.hexDigest();
  };
  EXPECT_EQ(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Streaming in odd pieces gives the same digest.
  std::string million(1000000, 'a');
  llmc::Sha256 h;
  for (size_t i = 0; i < million.size(); i += 997)
    h.update(million.data() + i, std::min<size_t>(997, million.size() - i));
  EXPECT_EQ(h.hexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// XXH64 against the specification's digests and LLVM's implementation
// (what llmc compile writes into the manifest), at every length up to 300
// (each tail path, every stripe count) and at unaligned starts.
TEST(XxHash64, MatchesTheSpecificationAndLlvm) {
  EXPECT_EQ(llmc::xxHash64("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(llmc::hex64(llmc::xxHash64("", 0)), "ef46db3751d8e999");
  std::string bytes(400, '\0');
  uint64_t state = 12345;
  for (char &c : bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    c = char(state >> 56);
  }
  for (size_t offset : {0, 1, 3})
    for (size_t n = 0; n <= 300; ++n) {
      llvm::StringRef piece(bytes.data() + offset, n);
      ASSERT_EQ(llmc::xxHash64(piece.data(), n), llvm::xxHash64(piece))
          << "length " << n << " offset " << offset;
    }
}

// The table must cover weights.bin exactly; a damaged byte names its range.
TEST(WeightTable, CoversTheFileAndNamesTheDamagedTensor) {
  std::string data(200, 'x');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = char(i * 7);
  auto row = [&](const char *name, uint64_t off, uint64_t n) {
    return std::string("{\"name\": \"") + name + "\", \"offset\": " + std::to_string(off) +
           ", \"bytes\": " + std::to_string(n) + ", \"xxh64\": \"" +
           llmc::hex64(llvm::xxHash64(llvm::StringRef(data.data() + off, n))) + "\"}";
  };
  std::string text = "{\"table\": [" + row("a", 0, 64) + ", " + row("b", 64, 0) + ", " +
                     row("c", 64, 136) + "]}";
  llmc::json::Value weights;
  std::string error;
  ASSERT_TRUE(llmc::json::parse(text, weights, error)) << error;
  std::vector<llmc::WeightRange> table;
  ASSERT_TRUE(llmc::readWeightTable(weights, data.size(), table, error)) << error;
  ASSERT_EQ(table.size(), 3u);
  for (unsigned threads : {1u, 2u, 8u})
    EXPECT_TRUE(llmc::checkWeights(table, data.data(), error, threads)) << error;
  data[150] ^= 1;
  EXPECT_FALSE(llmc::checkWeights(table, data.data(), error, 2));
  EXPECT_NE(error.find("tensor 'c' (bytes 64..200)"), std::string::npos) << error;
  // A table that stops short of, or runs past, the file.
  EXPECT_FALSE(llmc::readWeightTable(weights, 201, table, error));
  EXPECT_NE(error.find("covers 200 bytes; weights.bin has 201"), std::string::npos) << error;
  EXPECT_FALSE(llmc::readWeightTable(weights, 199, table, error));
  EXPECT_NE(error.find("weights.table[2] ('c') does not follow"), std::string::npos) << error;
}

TEST(Sampler, GreedyTakesTheFirstLargest) {
  llmc::Sampler s({});
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(logits.data(), 4, {}), 1);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  llmc::SamplerOptions o;
  o.repetitionPenalty = 2;
  llmc::Sampler s(o);
  // Token 0 (3.0 -> 1.5) loses to token 1 (2.0) once it was seen.
  std::vector<float> logits = {3.0f, 2.0f, -1.0f};
  EXPECT_EQ(s.sample(logits.data(), 3, {}), 0);
  EXPECT_EQ(s.sample(logits.data(), 3, {0}), 1);
}

TEST(Sampler, RepetitionPenaltyCountsEachDistinctTokenOnce) {
  // Hugging Face's RepetitionPenaltyLogitsProcessor (gather the logits of
  // input_ids, divide the positive and multiply the negative, scatter back:
  // a repeated id writes the same value again), llama.cpp's and vLLM's
  // penalty: each token in the sequence once, however often it occurs.
  llmc::SamplerOptions o;
  o.temperature = 1;
  o.repetitionPenalty = 2;
  llmc::Sampler s(o);
  std::vector<float> logits = {3.0f, 1.0f, -1.0f, 0.5f};
  std::vector<int32_t> history = {0, 2, 0, 2, 2, 0};
  std::vector<double> penalised = {3.0 / 2, 1.0, -1.0 * 2, 0.5}, want(4);
  double sum = 0;
  for (size_t i = 0; i < 4; ++i)
    sum += want[i] = std::exp(penalised[i] - 1.5);
  llmc::Sampler::Distribution d;
  s.distribution(logits.data(), 4, history, d);
  ASSERT_EQ(d.tokens.size(), 4u);
  EXPECT_EQ(d.tokens[0], 0); // 1.5 (twice penalised it would be 0.75, below token 1)
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(d.probability(int32_t(i)), want[i] / sum, 1e-12) << "token " << i;
  // Greedy likewise, and again on the next call (nothing left over).
  o.temperature = 0;
  llmc::Sampler g(o);
  EXPECT_EQ(g.sample(logits.data(), 4, history), 0);
  std::vector<float> close = {3.0f, 2.0f};
  EXPECT_EQ(g.sample(close.data(), 2, {0, 0}), 1); // 1.5 against 2.0
  EXPECT_EQ(g.sample(close.data(), 2, {}), 0);     // (no mark left from the call before)
}

TEST(Sampler, SeedsAreReproducibleAndTopKOneIsGreedy) {
  std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.25f};
  llmc::SamplerOptions o;
  o.temperature = 1;
  o.seed = 42;
  llmc::Sampler a(o), b(o);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(a.sample(logits.data(), 4, {}), b.sample(logits.data(), 4, {}));
  o.topK = 1;
  llmc::Sampler k(o);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(k.sample(logits.data(), 4, {}), 1);
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  // 40000 draws at temperature 0.5 against the exact probabilities: every
  // frequency within 5 standard errors.
  std::vector<float> logits = {1.0f, 0.0f, 0.5f, -1.0f};
  llmc::SamplerOptions o;
  o.temperature = 0.5f;
  o.seed = 1;
  llmc::Sampler s(o);
  const int n = 40000;
  std::vector<int> count(4);
  for (int i = 0; i < n; ++i)
    ++count[size_t(s.sample(logits.data(), 4, {}))];
  double z = 0;
  std::vector<double> p(4);
  for (int i = 0; i < 4; ++i)
    z += p[size_t(i)] = std::exp(logits[size_t(i)] / 0.5);
  for (int i = 0; i < 4; ++i) {
    double q = p[size_t(i)] / z, se = std::sqrt(q * (1 - q) / n);
    EXPECT_NEAR(double(count[size_t(i)]) / n, q, 5 * se) << "token " << i;
  }
}

TEST(Sampler, TopPAndMinPCutTheTail) {
  // Probabilities at temperature 1: about 0.64, 0.24, 0.09, 0.03.
  std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f};
  llmc::SamplerOptions o;
  o.temperature = 1;
  o.topP = 0.7f; // the two most likely reach 0.7
  llmc::Sampler s(o);
  for (int i = 0; i < 500; ++i)
    EXPECT_LT(s.sample(logits.data(), 4, {}), 2);
  o.topP = 1;
  o.minP = 0.3f; // 0.24 / 0.64 >= 0.3 stays, 0.09 / 0.64 goes
  llmc::Sampler m(o);
  for (int i = 0; i < 500; ++i)
    EXPECT_LT(m.sample(logits.data(), 4, {}), 2);
}

TEST(Sampler, DistributionIsWhatSampleDrawsFrom) {
  // distribution(): the kept tokens (top-k 3, most likely first) with the
  // softmax at the temperature over them; sample() draws from it with the
  // same generator steps as draw().
  std::vector<float> logits = {1.0f, 0.0f, 0.5f, -1.0f, 0.25f};
  llmc::SamplerOptions o;
  o.temperature = 0.8f;
  o.topK = 3;
  o.seed = 7;
  llmc::Sampler a(o), b(o);
  llmc::Sampler::Distribution d;
  b.distribution(logits.data(), 5, {}, d);
  ASSERT_EQ(d.tokens, (std::vector<int32_t>{0, 2, 4}));
  double z = 0;
  for (int t : {0, 2, 4})
    z += std::exp(logits[size_t(t)] / double(o.temperature));
  for (int t : {0, 2, 4})
    EXPECT_NEAR(d.probability(t), std::exp(logits[size_t(t)] / double(o.temperature)) / z, 1e-12);
  EXPECT_EQ(d.probability(1), 0);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(a.sample(logits.data(), 5, {}), b.draw(d));
}

TEST(Sampler, SampleDrawsWhatTheSortedDistributionGives) {
  // sample() sorts only the tokens above a rung of log-weight that holds
  // the kept set's cut and the draw; distribution() + draw(), which sorts
  // every token, is the rule. Over large vocabularies of logits peaked,
  // spread and flat (ties included), every parameter mix and many
  // uniforms, both choose the same token.
  std::mt19937 rng(11);
  struct Case {
    int64_t vocab;
    float spread; // standard deviation of the logits (0: all equal)
  };
  int compared = 0;
  for (Case c : {Case{32000, 3.0f}, Case{32000, 10.0f}, Case{32000, 0.3f}, Case{3000, 0.0f},
                 Case{5000, 1.0f}}) {
    std::normal_distribution<float> normal(0.0f, c.spread > 0 ? c.spread : 1.0f);
    std::vector<float> logits(size_t(c.vocab));
    for (float &x : logits)
      x = c.spread > 0 ? normal(rng) : 0.5f;
    logits[7] = c.spread > 0 ? logits[7] : 2.0f; // (a flat row with one clear top)
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (float t : {0.6f, 1.0f, 1.7f})
      for (int k : {0, 1, 40, 3000})
        for (float p : {1.0f, 0.9f, 0.5f})
          for (float minP : {0.0f, 0.05f}) {
            llmc::SamplerOptions o;
            o.temperature = t, o.topK = k, o.topP = p, o.minP = minP;
            llmc::Sampler fast(o), full(o);
            llmc::Sampler::Distribution d;
            full.distribution(logits.data(), c.vocab, {}, d);
            for (int i = 0; i < 8; ++i) {
              double u = uniform(rng);
              ASSERT_EQ(fast.sample(logits.data(), c.vocab, {}, u), full.draw(d, -1, u))
                  << "vocab " << c.vocab << " spread " << c.spread << " T " << t << " k " << k
                  << " p " << p << " min_p " << minP << " u " << u;
              ++compared;
            }
          }
  }
  EXPECT_EQ(compared, 5 * 3 * 4 * 3 * 2 * 8);
}

TEST(Sampler, DrawLeavingATokenOutRenormalises) {
  // The residual of speculative sampling: p without token 0 (p = 0.64,
  // 0.24, 0.09, 0.03 at temperature 1), renormalised; 40000 draws within
  // 5 standard errors, token 0 never.
  std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f};
  llmc::SamplerOptions o;
  o.temperature = 1;
  o.seed = 3;
  llmc::Sampler s(o);
  llmc::Sampler::Distribution d;
  s.distribution(logits.data(), 4, {}, d);
  const int n = 40000;
  std::vector<int> count(4);
  for (int i = 0; i < n; ++i)
    ++count[size_t(s.draw(d, 0))];
  EXPECT_EQ(count[0], 0);
  double rest = 1 - d.probability(0);
  for (int t = 1; t < 4; ++t) {
    double q = d.probability(t) / rest, se = std::sqrt(q * (1 - q) / n);
    EXPECT_NEAR(double(count[size_t(t)]) / n, q, 5 * se) << "token " << t;
  }
}

TEST(Sampler, ResidualIsWhatPHasBeyondQ) {
  // A draft model's rejection: draws from max(0, p - q), renormalised.
  // p = (0.5, 0.3, 0.2) over tokens 0..2 and q = (0.7, 0.1, 0.2) over
  // tokens 0, 1, 3: the residual is (0, 0.2, 0.2) -> tokens 1 and 2 alike,
  // 0 and 3 never. Weights are up to a factor (total), as distribution()
  // leaves them.
  llmc::Sampler::Distribution p, q;
  p.tokens = {0, 1, 2}, p.weights = {5, 3, 2}, p.total = 10;
  q.tokens = {0, 1, 3}, q.weights = {1.4, 0.2, 0.4}, q.total = 2;
  llmc::SamplerOptions o;
  o.temperature = 1;
  o.seed = 11;
  llmc::Sampler s(o);
  const int n = 40000;
  std::vector<int> count(4);
  for (int i = 0; i < n; ++i)
    ++count[size_t(s.drawResidual(p, q))];
  EXPECT_EQ(count[0], 0);
  EXPECT_EQ(count[3], 0);
  double se = std::sqrt(0.25 / n);
  EXPECT_NEAR(double(count[1]) / n, 0.5, 5 * se);
  EXPECT_NEAR(double(count[2]) / n, 0.5, 5 * se);
  // The scratch table is cleared between calls: with q = p nothing is left,
  // and the draw falls back to p itself.
  std::fill(count.begin(), count.end(), 0);
  for (int i = 0; i < n; ++i)
    ++count[size_t(s.drawResidual(p, p))];
  for (int t = 0; t < 3; ++t) {
    double want = p.weights[size_t(t)] / p.total, e = std::sqrt(want * (1 - want) / n);
    EXPECT_NEAR(double(count[size_t(t)]) / n, want, 5 * e) << "token " << t;
  }
}

TEST(Sampler, OptionsAreValidated) {
  std::string why;
  llmc::SamplerOptions o;
  EXPECT_TRUE(llmc::Sampler::validate(o, why));
  o.topP = 0;
  EXPECT_FALSE(llmc::Sampler::validate(o, why));
  EXPECT_EQ(why, "top_p must be in (0, 1]");
  o = {};
  o.temperature = NAN;
  EXPECT_FALSE(llmc::Sampler::validate(o, why));
  o = {};
  o.repetitionPenalty = 0;
  EXPECT_FALSE(llmc::Sampler::validate(o, why));
}

TEST(RuntimeApi, NullArgumentsAreStatusesNotCrashes) {
  llmc_model *model = reinterpret_cast<llmc_model *>(1);
  EXPECT_EQ(llmc_model_load(nullptr, nullptr, &model), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(llmc_model_load("x", nullptr, nullptr), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(llmc_model_load("/nonexistent/model.llmc", nullptr, &model), LLMC_ERROR_IO);
  EXPECT_NE(std::string(llmc_last_error()).find("manifest.json"), std::string::npos);
  llmc_session *session = nullptr;
  EXPECT_EQ(llmc_session_create(nullptr, nullptr, &session), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(llmc_session_append(nullptr, nullptr, 0, nullptr), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(llmc_session_reset(nullptr), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(llmc_session_rollback(nullptr, 0), LLMC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(llmc_generate(nullptr, nullptr, 0, nullptr, nullptr, nullptr, nullptr, 0, nullptr,
                          nullptr),
            LLMC_ERROR_INVALID_ARGUMENT);
  llmc_model_info info;
  EXPECT_EQ(llmc_model_get_info(nullptr, &info), LLMC_ERROR_INVALID_ARGUMENT);
  llmc_model_free(nullptr);
  llmc_session_free(nullptr);
  EXPECT_EQ(llmc_session_length(nullptr), 0);
}

TEST(RuntimeApi, GenerateParamsDefaults) {
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  EXPECT_EQ(p.max_new_tokens, 128);
  EXPECT_EQ(p.temperature, 0);
  EXPECT_EQ(p.top_p, 1);
  EXPECT_EQ(p.repetition_penalty, 1);
  EXPECT_EQ(p.num_stop_tokens, 0u);
  EXPECT_EQ(p.num_stop_strings, 0u);
  EXPECT_EQ(p.stop_strings, nullptr);
}

} // namespace
