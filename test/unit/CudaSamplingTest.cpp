//===- CudaSamplingTest.cpp - choosing tokens on the device ---------------===//
//
// runtime/src/model/cuda/Sampling.h: the argmax against the first largest
// logit, and the sampling kernel against the runtime's own sampler
// (runtime/src/Sampler.h, the rule it must follow) given the same uniforms,
// both with the repetition penalty over marked tokens (the argmax also
// against the rule written out here), over small and large vocabularies,
// rows flatter than the kernel's candidates (drawn by its search of the
// whole order), ties and signed zeros, half logits, NaN (a row of nothing
// else left to the host, its logits handed back unpenalised) and one
// position of each sequence. Built against the host emulation in CI and
// with nvcc on a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Sampling.h"

#include "runtime/src/Sampler.h"
#include "test/unit/CudaTestUtil.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

TEST(CudaArgmax, FirstOfTheLargest) {
  int vocab = 3001;
  std::vector<float> logits(4 * size_t(vocab));
  auto r = randomValues<float>(logits.size(), 10.0f, 61);
  logits = r;
  logits[size_t(1000)] = 50;              // row 0: one maximum
  logits[size_t(vocab + 17)] = 60;        // row 1: a tie, the first wins
  logits[size_t(vocab + 2999)] = 60;
  for (int i = 0; i < vocab; ++i)         // row 2: all -inf
    logits[size_t(2 * vocab + i)] = -INFINITY;
  logits[size_t(3 * vocab + 5)] = NAN;    // row 3: NaN is never chosen
  logits[size_t(3 * vocab + 6)] = 70;
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<int32_t> ids(4);
  ASSERT_EQ(argmax(dl.get(), ids.get(), 4, vocab, size_t(vocab), nullptr), "");
  std::vector<int32_t> got = ids.download();
  EXPECT_EQ(got[0], 1000);
  EXPECT_EQ(got[1], 17);
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(got[3], 6);
}

TEST(CudaArgmax, OnePositionOfEachSequence) {
  // [B = 3, S = 4, V = 100]: position 2 of each sequence (what greedy
  // decoding after a padded prefill bucket reads).
  const int b = 3, s = 4, v = 100, row = 2;
  auto logits = randomValues<float>(size_t(b * s * v), 4.0f, 63);
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<int32_t> ids{size_t(b)};
  ASSERT_EQ(argmax(dl.get() + row * v, ids.get(), b, v, size_t(s * v), nullptr), "");
  std::vector<int32_t> got = ids.download();
  for (int q = 0; q < b; ++q) {
    const float *r = logits.data() + (q * s + row) * v;
    EXPECT_EQ(got[size_t(q)], int(std::max_element(r, r + v) - r));
  }
  EXPECT_NE(argmax(dl.get(), ids.get(), b, v, size_t(v - 1), nullptr), "");
}

/// Each row's repetition-penalty marks of the tokens in `histories`.
std::vector<uint32_t> penaltyMarks(const std::vector<std::vector<int32_t>> &histories, int vocab) {
  size_t words = size_t(penaltyWords(vocab));
  std::vector<uint32_t> marks(histories.size() * words, 0);
  for (size_t r = 0; r < histories.size(); ++r)
    for (int32_t t : histories[r])
      marks[r * words + size_t(t) / 32] |= 1u << (t % 32);
  return marks;
}

/// sample() on `rows` rows of logits against the runtime's sampler given
/// the same uniforms (the rule the kernel follows); returns how many rows
/// the device left to the host (-1). Every row it decided must equal the
/// host's draw. With `histories` (one a row), under the repetition penalty
/// o.repetitionPenalty over them; `draws`, if given, gets the host's draws.
template <class T>
int checkSample(const std::vector<T> &logits, int rows, int vocab, size_t rowStride,
                const llmc::SamplerOptions &o, unsigned seed,
                const std::vector<std::vector<int32_t>> &histories = {},
                std::vector<int32_t> *draws = nullptr) {
  SCOPED_TRACE("vocab=" + std::to_string(vocab) + " T=" + std::to_string(o.temperature) +
               " top_k=" + std::to_string(o.topK) + " top_p=" + std::to_string(o.topP) +
               " min_p=" + std::to_string(o.minP) +
               " penalty=" + std::to_string(o.repetitionPenalty));
  llmc::SamplerOptions uo;
  uo.seed = seed;
  llmc::Sampler source(uo);
  std::vector<double> u(static_cast<size_t>(rows));
  for (double &x : u)
    x = source.uniform();
  SampleParams prm{o.temperature, o.topK, o.topP, o.minP, o.repetitionPenalty};
  DeviceBuffer<T> dl(logits);
  DeviceBuffer<SampleParams> dp(std::vector<SampleParams>{prm});
  DeviceBuffer<double> du(u);
  DeviceBuffer<int32_t> ids{size_t(rows)};
  DeviceBuffer<float> leftRows(std::vector<float>(size_t(rows) * size_t(vocab), -7.0f));
  DeviceBuffer<uint32_t> marks(histories.empty() ? std::vector<uint32_t>{0u}
                                                 : penaltyMarks(histories, vocab));
  EXPECT_EQ(sample(dl.get(), ids.get(), rows, vocab, rowStride, dp.get(), du.get(),
                   leftRows.get(), nullptr, histories.empty() ? nullptr : marks.get()),
            "");
  std::vector<int32_t> got = ids.download();
  std::vector<float> leftLogits = leftRows.download();
  llmc::Sampler host(o);
  int left = 0;
  for (int r = 0; r < rows; ++r) {
    std::vector<float> row(static_cast<size_t>(vocab));
    for (int i = 0; i < vocab; ++i)
      row[size_t(i)] = toFloat(logits[size_t(r) * rowStride + size_t(i)]);
    int32_t want = host.sample(row.data(), vocab, histories.empty() ? std::vector<int32_t>{}
                                                                    : histories[size_t(r)],
                               u[size_t(r)]);
    if (draws)
      draws->push_back(want);
    if (got[size_t(r)] == -1) { // its logits come back as f32, unpenalised
      ++left;
      int differing = 0;
      for (int i = 0; i < vocab; ++i) {
        float l = leftLogits[size_t(r) * size_t(vocab) + size_t(i)], x = row[size_t(i)];
        differing += !(l == x || (l != l && x != x));
      }
      EXPECT_EQ(differing, 0) << "row " << r << ": logits handed back";
    } else
      EXPECT_EQ(got[size_t(r)], want) << "row " << r << " u=" << u[size_t(r)];
  }
  return left;
}

llmc::SamplerOptions sampling(float t, int k, float p, float minP) {
  llmc::SamplerOptions o;
  o.temperature = t, o.topK = k, o.topP = p, o.minP = minP;
  return o;
}

TEST(CudaSample, TheHostSamplersDrawOnASmallVocabulary) {
  // Every token fits the candidate buffer: the device always decides.
  const int rows = 12, vocab = 1500;
  auto logits = randomValues<float>(size_t(rows * vocab), 6.0f, 71);
  for (auto o : {sampling(1, 0, 1, 0), sampling(0.7f, 0, 0.9f, 0), sampling(1.3f, 40, 1, 0),
                 sampling(1, 50, 0.8f, 0.02f), sampling(0.5f, 0, 1, 0.1f), sampling(2, 1, 1, 0),
                 sampling(1, 0, 0.3f, 0), sampling(4, 1400, 0.99f, 0)})
    EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 72), 0);
}

TEST(CudaSample, TheHostSamplersDrawOnALargeVocabulary) {
  // 5000 tokens, logits in [-8, 8]: at T 1 the largest rung that fits holds
  // ~1600 tokens and all but ~1e-4 of the weight, so top-k up to that,
  // top-p, min-p and most plain draws stay on the device.
  const int rows = 16, vocab = 5000;
  auto logits = randomValues<float>(size_t(rows * vocab), 8.0f, 73);
  for (auto o : {sampling(1, 40, 1, 0), sampling(1, 0, 0.95f, 0), sampling(0.8f, 0, 1, 0.05f),
                 sampling(1, 200, 0.9f, 0.01f), sampling(1, 0, 1, 0)})
    EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 74), 0);
  // At T 3 the largest rung that fits (log-weight >= -2, ~1900 tokens)
  // holds ~87% of the weight: top-p 0.99 reaches past it (every row then
  // searched in the whole order), a plain draw past it where u > ~0.87.
  for (auto o : {sampling(3, 0, 0.99f, 0), sampling(3, 0, 1, 0), sampling(3, 1000, 1, 0),
                 sampling(3, 2500, 0.97f, 0), sampling(3, 0, 1, 0.2f)})
    EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 75), 0);
}

TEST(CudaSample, FlatRowsInTheWholeOrder) {
  // Every logit equal: no rung holds at most kSampleCandidates tokens; the
  // order is the ids', every weight the same (at T 1 exactly 1). Top-p
  // 0.4567 cuts after 2284 of 5000 tokens, well away from rounding (at
  // 0.5 the cut would lie on a running weight, where host and device may
  // round to either side). Row 1: half its zeros -0, which the host's
  // comparison finds equal to +0 (ties by id).
  const int vocab = 5000;
  std::vector<float> flat(size_t(3 * vocab), 1.5f);
  for (int i = 0; i < vocab; ++i)
    flat[size_t(vocab + i)] = i % 2 ? -0.0f : 0.0f;
  for (int i = 0; i < vocab; ++i)
    flat[size_t(2 * vocab + i)] = float(i % 7); // ties of 7 values
  for (auto o : {sampling(1, 0, 0.4567f, 0), sampling(1, 0, 1, 0), sampling(1, 10, 1, 0),
                 sampling(1, 3000, 1, 0), sampling(2, 2999, 0.7123f, 0), sampling(1, 0, 1, 0.5f),
                 sampling(5, 0, 0.9f, 0.6f)})
    EXPECT_EQ(checkSample(flat, 3, vocab, size_t(vocab), o, 76), 0);
  // Equal logits after a clear top 40: top-k 10 of them is tokens 0 .. 9
  // (ties by id), which the candidates hold; top-k 3000 at T 4 (the shelf
  // then most of the weight) reaches past them.
  std::vector<float> shelf(size_t(2 * vocab), 0.0f);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 40; ++i)
      shelf[size_t(r * vocab + i * 97)] = 9.0f;
  for (auto o : {sampling(1, 10, 1, 0), sampling(1, 0, 0.9f, 0), sampling(4, 3000, 1, 0),
                 sampling(4, 0, 0.95f, 0)})
    EXPECT_EQ(checkSample(shelf, 2, vocab, size_t(vocab), o, 77), 0);
}

TEST(CudaSample, ALargeVocabularyInTheWholeOrder) {
  // 40000 tokens (two rows of f32 and two of half), logits in [-3, 3] with
  // runs of equal values, a NaN and a -inf a row: at T 1.5 ~10000 tokens
  // lie within e^-1 of the top, far more than the candidates hold.
  const int rows = 2, vocab = 40000;
  auto logits = randomValues<float>(size_t(rows * vocab), 3.0f, 85);
  for (size_t i = 0; i < logits.size(); i += 11)
    logits[i] = std::round(logits[i] * 4) / 4; // (ties)
  for (int r = 0; r < rows; ++r) {
    logits[size_t(r * vocab + 7)] = NAN;
    logits[size_t(r * vocab + 9)] = -INFINITY;
  }
  std::vector<half> halves(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    halves[i] = fromFloat<half>(logits[i]);
  for (auto o : {sampling(1.5f, 0, 1, 0), sampling(1.5f, 0, 0.8123f, 0),
                 sampling(1.5f, 5000, 0.9f, 0.3f), sampling(0.9f, 0, 0.95f, 0.05f)}) {
    EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 86), 0);
    EXPECT_EQ(checkSample(halves, rows, vocab, size_t(vocab), o, 87), 0);
  }
}

TEST(CudaSample, RowsOfNothingButNaNAreLeftToTheHost) {
  const int vocab = 3000;
  std::vector<float> logits(size_t(2 * vocab), 0.5f);
  for (int i = 0; i < vocab; ++i)
    logits[size_t(vocab + i)] = NAN;
  // So are rows whose top is infinite (every weight NaN): all -inf (a
  // fully masked row), one +inf.
  std::vector<float> infinite(size_t(2 * vocab), -INFINITY);
  for (int i = 0; i < vocab; ++i)
    infinite[size_t(vocab + i)] = float(i % 5);
  infinite[size_t(vocab + 1234)] = INFINITY;
  for (auto o : {sampling(1, 0, 0.9f, 0), sampling(1, 0, 1, 0)})
    EXPECT_EQ(checkSample(infinite, 2, vocab, size_t(vocab), o, 88), 2);
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<int32_t> ids{2};
  DeviceBuffer<SampleParams> dp(std::vector<SampleParams>{SampleParams{1, 0, 1, 0}});
  DeviceBuffer<double> du(std::vector<double>{0.25, 0.25});
  DeviceBuffer<float> leftRows(std::vector<float>(size_t(2 * vocab), 7.0f));
  ASSERT_EQ(sample(dl.get(), ids.get(), 2, vocab, size_t(vocab), dp.get(), du.get(),
                   leftRows.get(), nullptr),
            "");
  std::vector<int32_t> got = ids.download();
  EXPECT_EQ(got[0], 750); // (every weight 1: the draw's token is u * vocab)
  EXPECT_EQ(got[1], -1);
  std::vector<float> back = leftRows.download();
  int nan = 0;
  for (int i = 0; i < vocab; ++i)
    nan += back[size_t(vocab + i)] != back[size_t(vocab + i)];
  EXPECT_EQ(nan, vocab);
}

TEST(CudaSample, OnePositionOfEachSequenceHalfLogitsAndNaN) {
  // [B = 3, S = 2, V = 700] half logits, position 1 of each sequence; a NaN
  // and a -inf in each row are never drawn.
  const int b = 3, s = 2, v = 700, row = 1;
  auto logits = randomValues<half>(size_t(b * s * v), 5.0f, 78);
  for (int q = 0; q < b * s; ++q) {
    logits[size_t(q * v + 3)] = fromFloat<half>(NAN);
    logits[size_t(q * v + 4)] = fromFloat<half>(-INFINITY);
  }
  std::vector<half> rows(logits.begin() + row * v, logits.end());
  for (auto o : {sampling(1, 0, 1, 0), sampling(0.9f, 20, 0.9f, 0.05f)})
    EXPECT_EQ(checkSample(rows, b, v, size_t(s * v), o, 79), 0);
  DeviceBuffer<half> dl(logits);
  DeviceBuffer<int32_t> ids{size_t(b)};
  DeviceBuffer<SampleParams> dp(std::vector<SampleParams>{SampleParams{1, 0, 1, 0}});
  DeviceBuffer<double> du(std::vector<double>(size_t(b), 0.5));
  DeviceBuffer<float> leftRows(size_t(b * v));
  EXPECT_NE(sample(dl.get(), ids.get(), b, v, size_t(v - 1), dp.get(), du.get(), leftRows.get(),
                   nullptr),
            "");
  EXPECT_NE(sample(dl.get(), ids.get(), b, v, size_t(v), nullptr, du.get(), leftRows.get(), nullptr),
            "");
  EXPECT_NE(sample(dl.get(), ids.get(), b, v, size_t(v), dp.get(), du.get(), nullptr, nullptr), "");
}

TEST(CudaSample, TheRepetitionPenaltyAsTheHostSamplerAppliesIt) {
  // Histories that hold each row's likeliest tokens, some several times
  // (penalised once), a penalty above 1 and one below; half logits too.
  const int rows = 6, vocab = 1500;
  auto logits = randomValues<float>(size_t(rows * vocab), 6.0f, 81);
  for (size_t i = size_t(3 * vocab); i < logits.size(); ++i)
    logits[i] -= 8; // (rows 3-5 all negative: their marked logits are multiplied)
  std::vector<std::vector<int32_t>> histories(rows);
  for (int r = 0; r < rows; ++r) {
    const float *row = logits.data() + r * vocab;
    std::vector<int32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 30, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int i = 0; i < 30; i += 1 + r % 3) // the top tokens, every first, second or third
      histories[size_t(r)].insert(histories[size_t(r)].end(), size_t(1 + i % 3), order[size_t(i)]);
    histories[size_t(r)].push_back(int32_t(vocab - 1 - r)); // and somewhere in the tail
  }
  for (float penalty : {1.8f, 0.6f})
    for (auto o :
         {sampling(1, 0, 1, 0), sampling(0.8f, 40, 0.9f, 0.02f), sampling(1.2f, 0, 0.5f, 0)}) {
      o.repetitionPenalty = penalty;
      std::vector<int32_t> penalised, plain;
      EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 82, histories, &penalised), 0);
      o.repetitionPenalty = 1;
      EXPECT_EQ(checkSample(logits, rows, vocab, size_t(vocab), o, 82, {}, &plain), 0);
      EXPECT_NE(penalised, plain) << "the penalty changed no draw: the test shows nothing";
    }
  std::vector<half> halves(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    halves[i] = fromFloat<half>(logits[i]);
  llmc::SamplerOptions o = sampling(1, 0, 0.95f, 0);
  o.repetitionPenalty = 1.5f;
  EXPECT_EQ(checkSample(halves, rows, vocab, size_t(vocab), o, 83, histories), 0);
  // Flat rows, drawn in the whole order, with the penalty (the marked
  // tokens fall to the end of the order).
  std::vector<float> flat(size_t(2 * 5000), 1.5f);
  std::vector<int32_t> penalised, plain;
  EXPECT_EQ(checkSample(flat, 2, 5000, 5000, o, 84, {{1, 2, 3, 2}, {4999}}, &penalised), 0);
  o.repetitionPenalty = 1;
  EXPECT_EQ(checkSample(flat, 2, 5000, 5000, o, 84, {}, &plain), 0);
  EXPECT_NE(penalised, plain) << "the penalty changed no draw: the test shows nothing";
}

TEST(CudaArgmax, TheRepetitionPenaltyOncePerToken) {
  // Against the rule written out: the marked logits divided by the penalty
  // where positive, multiplied where not, then the first largest.
  const int rows = 5, vocab = 3000;
  auto logits = randomValues<float>(size_t(rows * vocab), 4.0f, 85);
  std::vector<std::vector<int32_t>> histories(rows);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < 400; ++i)
      histories[size_t(r)].push_back(int32_t((i * 7919 + r * 31) % vocab));
    float *row = logits.data() + r * vocab;
    histories[size_t(r)].push_back(int32_t(std::max_element(row, row + vocab) - row));
    if (r >= 3) // (rows 3-4 all negative: their marked logits are multiplied)
      for (int i = 0; i < vocab; ++i)
        row[i] -= 6;
  }
  for (float penalty : {1.3f, 2.5f, 0.7f}) {
    SampleParams prm{0, 0, 1, 0, penalty};
    DeviceBuffer<float> dl(logits);
    DeviceBuffer<SampleParams> dp(std::vector<SampleParams>{prm});
    DeviceBuffer<uint32_t> marks(penaltyMarks(histories, vocab));
    DeviceBuffer<int32_t> ids{size_t(rows)};
    ASSERT_EQ(argmax(dl.get(), ids.get(), rows, vocab, size_t(vocab), nullptr, dp.get(),
                     marks.get()),
              "");
    std::vector<int32_t> got = ids.download();
    int changed = 0;
    for (int r = 0; r < rows; ++r) {
      std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      int32_t plain = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
      std::vector<bool> in(size_t(vocab), false);
      for (int32_t t : histories[size_t(r)])
        in[size_t(t)] = true;
      for (int i = 0; i < vocab; ++i)
        if (in[size_t(i)])
          row[size_t(i)] = row[size_t(i)] > 0 ? row[size_t(i)] / penalty : row[size_t(i)] * penalty;
      int32_t want = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
      EXPECT_EQ(got[size_t(r)], want) << "row " << r << " penalty " << penalty;
      changed += want != plain;
    }
    if (penalty > 1) { // (below 1 the marked largest only gains)
      EXPECT_GT(changed, 0) << "no row's choice moved: the test shows nothing";
    }
  }
  DeviceBuffer<float> dl(logits);
  DeviceBuffer<uint32_t> marks(penaltyMarks(histories, vocab));
  DeviceBuffer<int32_t> ids{size_t(rows)};
  EXPECT_NE(argmax(dl.get(), ids.get(), rows, vocab, size_t(vocab), nullptr, nullptr, marks.get()),
            "");
}

TEST(CudaArgmax, HalfLogits) {
  auto logits = randomValues<half>(2 * 500, 4.0f, 62);
  DeviceBuffer<half> dl(logits);
  DeviceBuffer<int32_t> ids(2);
  ASSERT_EQ(argmax(dl.get(), ids.get(), 2, 500, 500, nullptr), "");
  std::vector<int32_t> got = ids.download();
  for (int r = 0; r < 2; ++r) {
    int best = 0;
    for (int i = 1; i < 500; ++i)
      if (toFloat(logits[size_t(r * 500 + i)]) > toFloat(logits[size_t(r * 500 + best)]))
        best = i;
    EXPECT_EQ(got[size_t(r)], best);
  }
}

} // namespace
