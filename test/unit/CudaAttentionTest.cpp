//===- CudaAttentionTest.cpp - the CUDA attention kernels against float64 -===//
//
// Split-KV decode attention (AttentionDecode.h) and flash prefill attention, SIMT (Attention.h)
// and tensor-core (AttentionMma.h, and AttentionTensorCore.h's WMMA form), against float64 attention over
// the caches' stored values: GQA/MQA/MHA, empty split chunks, long
// contexts over many splits, windows, softcap, several query blocks and key
// tiles, chunks after cached tokens, int8 caches with their scales, and the
// shared-memory opt-in. Built against the host emulation in CI and with
// nvcc on a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/AttentionDecode.h"
#include "runtime/src/model/cuda/AttentionTensorCore.h"
#include "runtime/src/model/cuda/Rope.h"

#include "runtime/src/cpu/Numeric.h"
#include "test/unit/CudaTestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

/// float64 attention of the query row q (Hq heads of D) at position qpos
/// over cache rows [0, keys) with llm.cached_attention's rules (and its
/// sinks, one per query head, when given).
std::vector<double> attentionRow(const std::vector<double> &q, const std::vector<double> &k,
                                 const std::vector<double> &v, int bi, int hq, int hkv, int cap,
                                 int d, int dv, long long qpos, int keys, bool causal, int window,
                                 double scale, double softcap,
                                 const std::vector<float> *sinks = nullptr) {
  std::vector<double> out(size_t(hq) * size_t(dv), 0.0);
  for (int h = 0; h < hq; ++h) {
    int kvh = h / (hq / hkv);
    std::vector<double> sc;
    std::vector<int> idx;
    for (int j = 0; j < keys; ++j) {
      if (causal && j > qpos)
        continue;
      if (window > 0 && j <= qpos - window)
        continue;
      double s = 0;
      for (int e = 0; e < d; ++e)
        s += q[size_t(h * d + e)] * k[((size_t(bi) * size_t(hkv) + size_t(kvh)) * size_t(cap) + size_t(j)) * size_t(d) + size_t(e)];
      s *= scale;
      if (softcap > 0)
        s = softcap * std::tanh(s / softcap);
      sc.push_back(s);
      idx.push_back(j);
    }
    if (sc.empty())
      continue;
    double m = *std::max_element(sc.begin(), sc.end()), sum = 0;
    if (sinks) { // one more score, with no value
      m = std::max(m, double((*sinks)[size_t(h)]));
      sum += std::exp(double((*sinks)[size_t(h)]) - m);
    }
    for (double &s : sc)
      sum += (s = std::exp(s - m));
    for (size_t t = 0; t < sc.size(); ++t)
      for (int e = 0; e < dv; ++e)
        out[size_t(h * dv + e)] += sc[t] / sum *
            v[((size_t(bi) * size_t(hkv) + size_t(kvh)) * size_t(cap) + size_t(idx[t])) * size_t(dv) + size_t(e)];
  }
  return out;
}

/// A cache of K with n-element rows over `values` (T's values): stored as
/// K, or (K = int8_t) each row quantized as llm.quantized_cache_update does
/// (cpu::quantizeKvRow) with its scale in `scales`; `exact` gets what the
/// cache holds, in float64.
template <class K, class T>
std::vector<K> cacheRows(const std::vector<T> &values, int n, std::vector<float> &scales,
                         std::vector<double> &exact) {
  exact = widen(values);
  if constexpr (std::is_same_v<K, int8_t>) {
    std::vector<K> q(values.size());
    scales.resize(values.size() / size_t(n));
    std::vector<float> row(static_cast<size_t>(n));
    for (size_t r = 0; r < scales.size(); ++r) {
      for (int i = 0; i < n; ++i)
        row[size_t(i)] = float(exact[r * size_t(n) + size_t(i)]);
      scales[r] = llmc::cpu::quantizeKvRow(row.data(), n, q.data() + r * size_t(n));
      for (int i = 0; i < n; ++i)
        exact[r * size_t(n) + size_t(i)] = double(q[r * size_t(n) + size_t(i)]) * scales[r];
    }
    return q;
  } else {
    return values;
  }
}

/// Random caches of K over values of T ([B, Hkv, cap, D] keys and
/// [.., Dv] values, cacheRows) on the device, with their scales when int8,
/// and the values they hold in float64.
template <class T, class K> struct DeviceCaches {
  std::vector<float> ks, vs;
  std::vector<double> kd, vd;
  DeviceBuffer<K> k, v;
  DeviceBuffer<float> kScales, vScales;
  DeviceCaches(size_t rows, int d, int dv, unsigned seed)
      : k(cacheRows<K>(randomValues<T>(rows * size_t(d), 1.0f, seed), d, ks, kd)),
        v(cacheRows<K>(randomValues<T>(rows * size_t(dv), 1.0f, seed + 1), dv, vs, vd)),
        kScales(ks.empty() ? std::vector<float>{0} : ks),
        vScales(vs.empty() ? std::vector<float>{0} : vs) {}
  const float *ksPtr() { return ks.empty() ? nullptr : kScales.get(); }
  const float *vsPtr() { return vs.empty() ? nullptr : vScales.get(); }
};

/// The decode kernel's tolerance for g query heads a kv head: on tensor
/// cores (kMmaDecode) it rounds the probabilities to T for the value
/// product, as the tensor-core prefill does: one unit of T's rounding more.
template <class T, class K, int D, int Dv> double decodeTolerance(int g, double base) {
  bool mma = kMmaDecode<T, K, D, Dv> && g <= kMmaDecodeRows && decodeMmaEnabled();
  return base + (mma ? storageEpsilon<T>() : 0.0);
}

/// Sink logits for hq query heads: below, among and above the scores.
std::vector<float> someSinks(int hq) {
  std::vector<float> s;
  for (int h = 0; h < hq; ++h)
    s.push_back(h % 3 == 0 ? -20.0f : h % 3 == 1 ? 0.75f : 3.5f);
  return s;
}

template <class T, int D, int Dv, class K = T>
void checkDecode(int b, int hq, int hkv, int cap, long long pos, int splits, int window,
                 float softcap, int maxStages = 0, bool withSinks = false) {
  SCOPED_TRACE("hq=" + std::to_string(hq) + " hkv=" + std::to_string(hkv) + " pos=" +
               std::to_string(pos) + " splits=" + std::to_string(splits) + " window=" +
               std::to_string(window) + " softcap=" + std::to_string(softcap) +
               (withSinks ? " sinks" : ""));
  std::vector<float> sinkValues = someSinks(hq);
  DeviceBuffer<float> sinks(sinkValues);
  auto q = randomValues<T>(size_t(b * hq * D), 1.0f, 41);
  DeviceCaches<T, K> c(size_t(b * hkv * cap), D, Dv, 42);
  const std::vector<double> &kd = c.kd, &vd = c.vd;
  DeviceBuffer<T> dq(q);
  DeviceBuffer<int64_t> dpos(std::vector<int64_t>{pos});
  DeviceBuffer<float> partial(size_t(b * splits * hq * Dv)), lse(size_t(b * splits * hq));
  DeviceBuffer<float> out(size_t(b * hq * Dv));
  SplitCounters counters;
  float scale = 1.0f / std::sqrt(float(D)) * 2.0f; // sharper than usual
  ASSERT_EQ((decodeAttention<T, K, D, Dv>(dq.get(), c.k.get(), c.v.get(), c.ksPtr(), c.vsPtr(),
                                          dpos.get(), partial.get(), lse.get(), out.get(),
                                          counters.get(), b, hq, hkv, cap, splits, window, scale,
                                          softcap, nullptr, maxStages, false,
                                          withSinks ? sinks.get() : nullptr)),
            "");
  EXPECT_EQ(counters.leftNonzero(), 0u);
  auto qd = widen(q);
  std::vector<double> want;
  for (int bi = 0; bi < b; ++bi) {
    std::vector<double> qrow(qd.begin() + bi * hq * D, qd.begin() + (bi + 1) * hq * D);
    auto row = attentionRow(qrow, kd, vd, bi, hq, hkv, cap, D, Dv, pos, int(pos + 1), true, window,
                            scale, softcap, withSinks ? &sinkValues : nullptr);
    want.insert(want.end(), row.begin(), row.end());
  }
  EXPECT_LE(relativeError(out.download(), want),
            (decodeTolerance<T, K, D, Dv>(hq / hkv, kF32Tolerance)));
}

TEST(CudaDecodeAttention, GqaMqaMhaOverSplits) {
  checkDecode<half, 64, 64>(1, 8, 2, 96, 77, 1, 0, 0);
  checkDecode<half, 64, 64>(2, 8, 2, 96, 77, 4, 0, 0);
  checkDecode<float, 64, 64>(1, 8, 1, 40, 33, 3, 0, 0); // MQA: 8 heads on one
  checkDecode<bfloat16, 64, 64>(1, 4, 4, 40, 20, 2, 0, 0); // MHA
  checkDecode<half, 128, 128>(1, 10, 2, 70, 69, 5, 0, 0); // 5 heads per kv head
}

TEST(CudaDecodeAttention, SinksJoinTheMerge) {
  // One busy split (its block writes the output) and several (the last
  // block's merge adds the sinks), empty splits, a window; tensor-core
  // tiles (half, 4 rows a kv head), SIMT ones (f32, 10 rows), int8 caches.
  checkDecode<half, 64, 64>(1, 8, 2, 96, 20, 1, 0, 0, 0, true);
  checkDecode<half, 64, 64>(2, 8, 2, 96, 77, 4, 0, 0, 0, true);
  checkDecode<half, 64, 64>(1, 4, 2, 16, 0, 4, 0, 0, 0, true); // one key
  checkDecode<float, 64, 64>(1, 10, 1, 3072, 2999, 33, 1000, 0, 0, true);
  checkDecode<bfloat16, 64, 64, int8_t>(1, 6, 2, 128, 100, 5, 0, 20.0f, 0, true);
}

TEST(CudaDecodeAttention, EmptyChunksAndFirstToken) {
  checkDecode<half, 64, 64>(1, 4, 2, 16, 0, 4, 0, 0); // one key, three empty splits
  checkDecode<float, 32, 32>(1, 2, 1, 16, 2, 7, 0, 0);
}

TEST(CudaDecodeAttention, LongContextOverManySplits) {
  // The CUDA target's split count for a 1B Llama at batch 1 (33: 264 blocks
  // over 8 kv heads): chunks of whole 32-key tiles over 3000 keys, the last
  // splits empty; and the same splits over a short context (a tile each for
  // the first three, the other 30 empty), and inside a window.
  checkDecode<half, 64, 64>(1, 16, 4, 3072, 2999, 33, 0, 0);
  checkDecode<half, 64, 64>(1, 16, 4, 3072, 70, 33, 0, 0);
  checkDecode<float, 64, 64>(1, 8, 2, 3072, 2999, 33, 1000, 0);
}

TEST(CudaDecodeAttention, WindowAndSoftcap) {
  checkDecode<half, 64, 64>(1, 8, 2, 96, 90, 4, 17, 0);     // whole splits outside the window
  checkDecode<float, 64, 64>(1, 4, 2, 64, 50, 2, 0, 5.0f);  // Gemma-2's softcap form
  checkDecode<bfloat16, 64, 64>(2, 4, 1, 64, 63, 3, 8, 30.0f);
}

TEST(CudaDecodeAttention, SmallHeads) {
  checkDecode<float, 16, 16>(1, 4, 2, 24, 11, 2, 0, 0); // Dv < 32: lanes without a channel
  checkDecode<half, 16, 16>(1, 2, 2, 24, 23, 1, 0, 0);
}

TEST(CudaDecodeAttention, LargeGroupsNeedTheSharedMemoryOptIn) {
  // 32 query heads on one kv head of 128: 53 KiB of shared memory.
  EXPECT_GT((decodeSharedBytes<half, 128, 128>(32)), size_t(48 * 1024));
  checkDecode<half, 128, 128>(1, 32, 1, 40, 37, 2, 0, 0);
}

// Half and bfloat16 queries over caches of their type, D a multiple of 16
// and Dv of 64 (at most 128), groups of at most 16 heads: the tiles on tensor cores
// (decodeTilesMma; the tests above take it too): every row of the products
// a head, heads in the second 8 rows, D != Dv, D of an odd number of
// k-steps, softcap, a window; 17 heads take the SIMT loop.
TEST(CudaDecodeAttention, TensorCoreTiles) {
  static_assert(kMmaDecode<half, half, 64, 64> && kMmaDecode<bfloat16, bfloat16, 128, 128> &&
                !kMmaDecode<float, float, 64, 64> && !kMmaDecode<half, int8_t, 64, 64> &&
                !kMmaDecode<half, half, 64, 32> && !kMmaDecode<half, half, 72, 64> &&
                !kMmaDecode<half, half, 256, 256>);
  checkDecode<half, 128, 128>(1, 16, 1, 100, 99, 2, 0, 0);
  checkDecode<bfloat16, 128, 64>(2, 12, 1, 130, 129, 3, 0, 20.0f);
  checkDecode<half, 80, 64>(1, 6, 2, 70, 45, 1, 30, 0);
  checkDecode<half, 64, 64>(1, 17, 1, 70, 50, 2, 0, 0);
}

/// An off switch (`setting`, read by `enabled`) that only exactly "0"
/// turns off.
void expectOffOnlyByZero(EnvSetting &setting, bool (*enabled)()) {
  for (auto [value, on] : std::vector<std::pair<const char *, bool>>{
           {"0", false}, {"1", true}, {"", true}, {"00", true}}) {
    setting.set(value);
    EXPECT_EQ(enabled(), on) << value;
  }
}

// LLMC_CUDA_DECODE_MMA=0 keeps every tile on the SIMT loop (to compare the
// two on a GPU): within f32's tolerance of float64 again, which the
// tensor-core tiles' rounding of P to half is not.
TEST(CudaDecodeAttention, TensorCoreTilesOffByTheEnvironment) {
  EnvSetting setting("LLMC_CUDA_DECODE_MMA", nullptr);
  expectOffOnlyByZero(setting, decodeMmaEnabled);
  setting.set("0");
  ASSERT_EQ((decodeTolerance<half, half, 64, 64>(4, kF32Tolerance)), kF32Tolerance);
  checkDecode<half, 64, 64>(1, 8, 2, 400, 300, 2, 0, 0);
  checkDecode<bfloat16, 128, 128>(1, 8, 2, 100, 99, 1, 0, 0);
}

// The tiles go through shared memory by cp.async into up to four buffers,
// as many as a split's chunk can have tiles, within kDecodeStageBytes (f32
// with head size 256 and 8 heads a group takes one).
TEST(CudaDecodeAttention, TileStages) {
  EXPECT_EQ((decodeStages<half, 128, 128>(4, 4160, 33, 0)), 4); // 1B Llama, batch 1
  EXPECT_EQ((decodeStages<half, 128, 128>(4, 4160, 33, 2)), 2); // capped
  EXPECT_EQ((decodeStages<half, 64, 64>(4, 400, 2, 0)), 4);
  EXPECT_EQ((decodeStages<half, 64, 64>(4, 70, 3, 0)), 1); // a tile a chunk
  EXPECT_EQ((decodeStages<half, 64, 64>(4, 96, 1, 0)), 3);
  EXPECT_EQ((decodeStages<half, 128, 128>(32, 4096, 16, 0)), 3); // 4 do not fit
  EXPECT_EQ((decodeStages<float, 256, 256>(8, 200, 2, 0)), 1);
  EXPECT_LE((decodeSharedBytes<half, 128, 128>(32, 3)), kDecodeStageBytes);
  EXPECT_GT((decodeSharedBytes<half, 128, 128>(32, 4)), kDecodeStageBytes);
  // Chunks of more tiles than buffers, as many, and fewer; in every stage
  // count; from a window's first key past a chunk's start.
  for (int stages = 1; stages <= kDecodeMaxStages; ++stages) {
    SCOPED_TRACE("stages=" + std::to_string(stages));
    checkDecode<half, 64, 64>(1, 8, 2, 400, 300, 2, 0, 0, stages);
    checkDecode<bfloat16, 128, 128>(2, 8, 2, 200, 127, 1, 0, 0, stages);
    checkDecode<float, 64, 64>(1, 4, 1, 300, 299, 3, 150, 0, stages);
    checkDecode<half, 64, 64, int8_t>(1, 8, 2, 300, 250, 2, 0, 0, stages);
  }
  checkDecode<float, 256, 256>(1, 16, 2, 200, 150, 2, 0, 0);
  checkDecode<float, 256, 256, int8_t>(1, 16, 2, 200, 199, 1, 40, 0);
}

// LLMC_CUDA_DECODE_STAGES caps the buffers when it is a count from 1 to 4.
TEST(CudaDecodeAttention, StageCapFromTheEnvironment) {
  EnvSetting setting("LLMC_CUDA_DECODE_STAGES", nullptr);
  for (auto [value, cap] : std::vector<std::pair<const char *, int>>{
           {"1", 1}, {"3", 3}, {"4", 4}, {"0", 0}, {"5", 0}, {"22", 0}, {"", 0}, {"x", 0}}) {
    setting.set(value);
    EXPECT_EQ(decodeStageCap(), cap) << value;
  }
  setting.set("1");
  checkDecode<half, 64, 64>(1, 8, 2, 400, 300, 2, 0, 0);
}

// The decode kernel asks for every tile but the one holding row *pos
// before it waits for the kernel before it (programmatic launches on sm_90
// and later), which writes that row: here a cache write of the new key and
// value rows, over rows that held values far from them, right before the
// attention in the same stream. On a GPU an early copy of that tile would
// score the stale key.
TEST(CudaDecodeAttention, NewRowWrittenByTheKernelBefore) {
  constexpr int D = 64;
  const int hq = 8, hkv = 2, cap = 300, pos = 250, splits = 2;
  for (int stages = 1; stages <= kDecodeMaxStages; ++stages) {
    SCOPED_TRACE("stages=" + std::to_string(stages));
    size_t rows = size_t(hkv) * size_t(cap);
    auto kv = randomValues<half>(rows * D, 1.0f, 7), vv = randomValues<half>(rows * D, 1.0f, 8);
    auto kNew = randomValues<half>(size_t(hkv) * D, 1.0f, 9);
    auto vNew = randomValues<half>(size_t(hkv) * D, 1.0f, 10);
    auto kStale = kv, vStale = vv;
    for (int h = 0; h < hkv; ++h)
      for (int e = 0; e < D; ++e) {
        size_t at = (size_t(h) * cap + pos) * D + size_t(e);
        kv[at] = kNew[size_t(h) * D + size_t(e)], vv[at] = vNew[size_t(h) * D + size_t(e)];
        kStale[at] = fromFloat<half>(8.0f), vStale[at] = fromFloat<half>(-50.0f);
      }
    auto q = randomValues<half>(size_t(hq) * D, 1.0f, 11);
    DeviceBuffer<half> dq(q), kc(kStale), vc(vStale), dk(kNew), dv(vNew);
    DeviceBuffer<int64_t> dpos(std::vector<int64_t>{pos});
    DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
    DeviceBuffer<float> partial(size_t(splits * hq * D)), lse(size_t(splits * hq)), out(size_t(hq * D));
    SplitCounters counters;
    float scale = 1.0f / std::sqrt(float(D));
    ASSERT_EQ(cacheWritePair(kc.get(), dk.get(), int64_t(hkv * D), int64_t(hkv * D), int64_t(D),
                             vc.get(), dv.get(), int64_t(hkv * D), int64_t(hkv * D), int64_t(D),
                             dpos.get(), 1, hkv, cap, 1, D, err.get(), nullptr),
              "");
    ASSERT_EQ((decodeAttention<half, half, D, D>(dq.get(), kc.get(), vc.get(), nullptr, nullptr,
                                                 dpos.get(), partial.get(), lse.get(), out.get(),
                                                 counters.get(), 1, hq, hkv, cap, splits, 0, scale,
                                                 0.0f, nullptr, stages)),
              "");
    EXPECT_EQ(err.download()[0], 0u);
    auto want = attentionRow(widen(q), widen(kv), widen(vv), 0, hq, hkv, cap, D, D, pos, pos + 1,
                             true, 0, scale, 0);
    EXPECT_LE(relativeError(out.download(), want),
              (decodeTolerance<half, half, D, D>(hq / hkv, kF32Tolerance)));
  }
}

LLMC_GLOBAL void setPosition(int64_t *pos, int64_t v) {
  LLMC_KERNEL_BEGIN();
  if (threadIdx.x == 0)
    *pos = v;
}

// A position a kernel computes (not the step's position buffer, which is
// copied in before the step's first kernel): with posAfterWait the decode
// kernel reads it after waiting for the kernel before, which writes it
// right before the attention here. On the emulation under the
// programmatic-launch check, an early read would see the word marked (-1);
// on a GPU, the old position (100) or the new one.
TEST(CudaDecodeAttention, PositionWrittenByTheKernelBefore) {
#if LLMC_CUDA_EMULATED
  bool was = ::llmc::cudaemu::pdl::setEnabled(true);
#endif
  constexpr int D = 64;
  const int hq = 8, hkv = 2, cap = 300, pos = 250, splits = 4;
  auto q = randomValues<half>(size_t(hq) * D, 1.0f, 21);
  DeviceCaches<half, half> c(size_t(hkv * cap), D, D, 22);
  DeviceBuffer<half> dq(q);
  DeviceBuffer<int64_t> dpos(std::vector<int64_t>{100});
  DeviceBuffer<float> partial(size_t(splits * hq * D)), lse(size_t(splits * hq)), out(size_t(hq * D));
  SplitCounters counters;
  float scale = 1.0f / std::sqrt(float(D));
  ASSERT_EQ(launch(setPosition, dim3(1), dim3(32), 0, nullptr, dpos.get(), int64_t(pos)), "");
  ASSERT_EQ((decodeAttention<half, half, D, D>(dq.get(), c.k.get(), c.v.get(), nullptr, nullptr,
                                               dpos.get(), partial.get(), lse.get(), out.get(),
                                               counters.get(), 1, hq, hkv, cap, splits, 0, scale,
                                               0.0f, nullptr, 0, /*posAfterWait=*/true)),
            "");
  EXPECT_EQ(counters.leftNonzero(), 0u);
  auto want = attentionRow(widen(q), c.kd, c.vd, 0, hq, hkv, cap, D, D, pos, pos + 1, true, 0,
                           scale, 0);
  EXPECT_LE(relativeError(out.download(), want),
            (decodeTolerance<half, half, D, D>(hq / hkv, kF32Tolerance)));
#if LLMC_CUDA_EMULATED
  ::llmc::cudaemu::pdl::setEnabled(was);
#endif
}

TEST(CudaDecodeAttention, PositionOutsideTheCacheReadsNoKey) {
  // The cache write before records the error; the attention must neither
  // divide by an empty chunk nor read past the cache, and writes nothing.
  constexpr int D = 64;
  const int hq = 4, hkv = 2, cap = 40, splits = 4;
  auto q = randomValues<half>(size_t(hq) * D, 1.0f, 23);
  DeviceCaches<half, half> c(size_t(hkv * cap), D, D, 24);
  DeviceBuffer<half> dq(q);
  DeviceBuffer<float> partial(size_t(splits * hq * D)), lse(size_t(splits * hq));
  SplitCounters counters;
  for (int64_t pos : {int64_t(-1), int64_t(-300), int64_t(cap), int64_t(cap) + 500}) {
    SCOPED_TRACE(pos);
    DeviceBuffer<int64_t> dpos(std::vector<int64_t>{pos});
    DeviceBuffer<float> out(std::vector<float>(size_t(hq * D), 7.0f));
    ASSERT_EQ((decodeAttention<half, half, D, D>(dq.get(), c.k.get(), c.v.get(), nullptr,
                                                 nullptr, dpos.get(), partial.get(), lse.get(),
                                                 out.get(), counters.get(), 1, hq, hkv, cap,
                                                 splits, 0, 0.125f, 0.0f, nullptr)),
              "");
    EXPECT_EQ(out.download(), std::vector<float>(size_t(hq * D), 7.0f));
    EXPECT_EQ(counters.leftNonzero(), 0u);
  }
}

/// Host caches of K for checkDecodeRope: random rows (cacheRows), row `pos`
/// of each (batch, head) holding `stale` (an int8 row: 127 at scale
/// stale / 127), far from what the kernel writes there.
template <class T, class K> struct RopeCaches {
  std::vector<K> k, v;
  std::vector<float> ks, vs;
  RopeCaches(size_t rows, int d, int dv, int cap, int pos) {
    std::vector<double> exact;
    k = cacheRows<K>(randomValues<T>(rows * size_t(d), 1.0f, 61), d, ks, exact);
    v = cacheRows<K>(randomValues<T>(rows * size_t(dv), 1.0f, 62), dv, vs, exact);
    for (size_t row = size_t(pos); row < rows; row += size_t(cap)) {
      stale(k, ks, row, d, 8.0f);
      stale(v, vs, row, dv, -50.0f);
    }
  }
  static void stale(std::vector<K> &c, std::vector<float> &scales, size_t row, int n, float x) {
    for (int e = 0; e < n; ++e) {
      if constexpr (std::is_same_v<K, int8_t>)
        c[row * size_t(n) + size_t(e)] = K(x > 0 ? 127 : -127);
      else
        c[row * size_t(n) + size_t(e)] = fromFloat<K>(x);
    }
    if (!scales.empty())
      scales[row] = std::fabs(x) / 127.0f;
  }
};

/// What a cache holds, in float64 (int8 rows times their scales).
template <class K>
std::vector<double> cacheValues(const std::vector<K> &c, const std::vector<float> &scales, int n) {
  std::vector<double> out(c.size());
  for (size_t i = 0; i < c.size(); ++i)
    out[i] = double(toFloat(c[i])) * (scales.empty() ? 1.0 : double(scales[i / size_t(n)]));
  return out;
}

/// decodeAttentionRope: the queries and the new key roped in the kernel
/// (tables of T at positions [B, 1] or [1, 1], partial rotary dimension r,
/// interleaved pairs), the roped key row and the value row (read at
/// strides that skip every other head) written at row `pos` over rows that
/// held values far from them, into caches of K (T, or int8 with scales).
/// The new key row: within one unit of T's rounding of float64's rope (an
/// int8 row: within half a step of its scale, the scale max|k| / 127); the
/// value row: T's values exactly, or cpu::quantizeKvRow's bytes and scale;
/// every other row and scale as it was. Then the output: float64 attention
/// of float64's roped queries (rounded to T) over what the caches hold.
/// With `norms`, each query and key head is first RMS-normalised (HeadNorms:
/// the queries' weights with offset 0, the keys' with offset 1, each its own
/// epsilon) in float64 and rounded to T, as the graph's norm writes it.
template <class T, int D, int Dv, class K = T>
void checkDecodeRope(int b, int hq, int hkv, int cap, int pos, int splits, int window, int r,
                     bool interleaved, bool perBatch, int stages = 0, bool norms = false) {
  SCOPED_TRACE("b=" + std::to_string(b) + " hq=" + std::to_string(hq) + " hkv=" +
               std::to_string(hkv) + " pos=" + std::to_string(pos) + " splits=" +
               std::to_string(splits) + " window=" + std::to_string(window) + " r=" +
               std::to_string(r) + (interleaved ? " interleaved" : "") +
               (perBatch ? " per-batch" : "") + " stages=" + std::to_string(stages) +
               (norms ? " norms" : ""));
  constexpr bool kInt8 = std::is_same_v<K, int8_t>;
  int p = 3 * cap, rot = r ? r : D;
  RopeTables tables(p, rot); // rounded to T: the kernel's tables are T
  for (float &v : tables.cosT)
    v = toFloat(fromFloat<T>(v));
  for (float &v : tables.sinT)
    v = toFloat(fromFloat<T>(v));
  std::vector<T> cosT(tables.cosT.size()), sinT(tables.sinT.size());
  for (size_t i = 0; i < cosT.size(); ++i)
    cosT[i] = fromFloat<T>(tables.cosT[i]), sinT[i] = fromFloat<T>(tables.sinT[i]);
  std::vector<int64_t> positions = ropePositions(b, 1, perBatch, p);
  size_t rows = size_t(b) * size_t(hkv) * size_t(cap);
  RopeCaches<T, K> init(rows, D, Dv, cap, pos);
  auto xq = randomValues<T>(size_t(b * hq * D), 1.0f, 63);
  auto xk = randomValues<T>(size_t(b * hkv * D), 1.0f, 64);
  auto values = randomValues<T>(size_t(b * 2 * hkv * Dv), 1.0f, 65); // [B, 2 Hkv, Dv]
  DeviceBuffer<T> dq(xq), dk(xk), dv(values), dcos(cosT), dsin(sinT);
  DeviceBuffer<K> kc(init.k), vc(init.v);
  DeviceBuffer<float> kScales(init.ks.empty() ? std::vector<float>{0} : init.ks),
      vScales(init.vs.empty() ? std::vector<float>{0} : init.vs);
  DeviceBuffer<int64_t> dpos(std::vector<int64_t>{pos}), dp(positions);
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  DeviceBuffer<float> partial(size_t(b * splits * hq * Dv)), lse(size_t(b * splits * hq));
  DeviceBuffer<float> out(size_t(b * hq * Dv));
  SplitCounters counters;
  float scale = 1.5f / std::sqrt(float(D));
  // The heads' norms: weights around 1 for the queries (offset 0), around 0
  // for the keys (offset 1, Gemma's form).
  auto qw = randomValues<T>(size_t(D), 0.5f, 66), kw = randomValues<T>(size_t(D), 0.5f, 67);
  for (T &w : qw)
    w = fromFloat<T>(toFloat(w) + 1.0f);
  DeviceBuffer<T> dqw(qw), dkw(kw);
  HeadNorms<T> hn;
  if (norms)
    hn = HeadNorms<T>{dqw.get(), dkw.get(), 1e-6f, 1e-5f, 0.0f, 1.0f};
  auto launch = norms ? decodeAttentionRope<T, K, D, Dv, float, true>
                      : decodeAttentionRope<T, K, D, Dv, float, false>;
  ASSERT_EQ(launch(dq.get(), dk.get(), dv.get(), int64_t(2 * hkv * Dv), int64_t(2 * Dv), kc.get(),
                   vc.get(), kInt8 ? kScales.get() : nullptr, kInt8 ? vScales.get() : nullptr,
                   dcos.get(), dsin.get(), dp.get(), perBatch, r, p, interleaved, dpos.get(),
                   partial.get(), lse.get(), out.get(), counters.get(), b, hq, hkv, cap, splits,
                   window, scale, 0.0f, err.get(), nullptr, stages, false, nullptr, hn),
            "");
  // (Norms given to the instance without them: refused.)
  if (norms)
    EXPECT_NE((decodeAttentionRope<T, K, D, Dv, float>(
                  dq.get(), dk.get(), dv.get(), 0, 0, kc.get(), vc.get(), nullptr, nullptr,
                  dcos.get(), dsin.get(), dp.get(), perBatch, r, p, interleaved, dpos.get(),
                  partial.get(), lse.get(), out.get(), counters.get(), b, hq, hkv, cap, splits,
                  window, scale, 0.0f, err.get(), nullptr, stages, false, nullptr, hn)),
              "");
  if (norms) { // float64's norms, rounded to T: what the ropes below read
    auto normRows = [&](std::vector<T> &x, const std::vector<T> &w, double eps, double offset) {
      for (size_t row = 0; row < x.size() / size_t(D); ++row) {
        double squares = 0;
        for (int e = 0; e < D; ++e)
          squares += double(toFloat(x[row * D + size_t(e)])) * double(toFloat(x[row * D + size_t(e)]));
        double inv = 1.0 / std::sqrt(squares / D + eps);
        for (int e = 0; e < D; ++e)
          x[row * D + size_t(e)] = fromFloat<T>(float(double(toFloat(x[row * D + size_t(e)])) *
                                                      inv * (double(toFloat(w[size_t(e)])) + offset)));
      }
    };
    normRows(xq, qw, 1e-6, 0.0);
    normRows(xk, kw, 1e-5, 1.0);
  }
  EXPECT_EQ(err.download()[0], 0u);
  EXPECT_EQ(counters.leftNonzero(), 0u);
  std::vector<K> gotK = kc.download(), gotV = vc.download();
  std::vector<float> gotKs = kInt8 ? kScales.download() : std::vector<float>{},
                     gotVs = kInt8 ? vScales.download() : std::vector<float>{};
  // float64's ropes; the queries rounded to T as the graph's rope writes them.
  auto qd = ropeReference(xq, tables, positions, b, 1, hq, D, r, interleaved, perBatch);
  for (double &x : qd)
    x = double(toFloat(fromFloat<T>(float(x))));
  auto kNew = ropeReference(xk, tables, positions, b, 1, hkv, D, r, interleaved, perBatch);
  std::vector<double> kd = cacheValues(gotK, gotKs, D), vd = cacheValues(gotV, gotVs, Dv);
  for (size_t row = 0; row < rows; ++row) {
    if (int(row % size_t(cap)) != pos) { // untouched
      for (int e = 0; e < D; ++e)
        ASSERT_EQ(toFloat(gotK[row * D + size_t(e)]), toFloat(init.k[row * D + size_t(e)])) << row;
      for (int e = 0; e < Dv; ++e)
        ASSERT_EQ(toFloat(gotV[row * Dv + size_t(e)]), toFloat(init.v[row * Dv + size_t(e)])) << row;
      if (kInt8) {
        ASSERT_EQ(gotKs[row], init.ks[row]) << row;
        ASSERT_EQ(gotVs[row], init.vs[row]) << row;
      }
      continue;
    }
    size_t bh = row / size_t(cap); // (batch, kv head)
    std::vector<double> kWant(kNew.begin() + long(bh * D), kNew.begin() + long((bh + 1) * D));
    std::vector<double> kGot(kd.begin() + long(row * D), kd.begin() + long((row + 1) * D));
    std::vector<float> v(Dv);
    for (int e = 0; e < Dv; ++e)
      v[size_t(e)] = toFloat(values[(bh / size_t(hkv) * 2 * size_t(hkv) + 2 * (bh % size_t(hkv))) * Dv + size_t(e)]);
    if constexpr (kInt8) {
      double amax = 0;
      for (double x : kWant)
        amax = std::max(amax, std::fabs(x));
      EXPECT_LE(relativeError(kGot, kWant), 0.5 / 127 + storageEpsilon<T>() + 1e-6) << row;
      EXPECT_NEAR(gotKs[row], amax / 127, amax / 127 * (storageEpsilon<T>() + 1e-6)) << row;
      std::vector<int8_t> q(Dv);
      float s = llmc::cpu::quantizeKvRow(v.data(), Dv, q.data());
      EXPECT_EQ(gotVs[row], s) << row;
      for (int e = 0; e < Dv; ++e)
        ASSERT_EQ(int(gotV[row * Dv + size_t(e)]), int(q[size_t(e)])) << row << " " << e;
    } else {
      EXPECT_LE(relativeError(kGot, kWant), tolerance<T>()) << row;
      for (int e = 0; e < Dv; ++e)
        ASSERT_EQ(toFloat(gotV[row * Dv + size_t(e)]), v[size_t(e)]) << row << " " << e;
    }
  }
  std::vector<double> want;
  for (int bi = 0; bi < b; ++bi) {
    std::vector<double> qrow(qd.begin() + bi * hq * D, qd.begin() + (bi + 1) * hq * D);
    auto row = attentionRow(qrow, kd, vd, bi, hq, hkv, cap, D, Dv, pos, pos + 1, true, window,
                            scale, 0.0);
    want.insert(want.end(), row.begin(), row.end());
  }
  EXPECT_LE(relativeError(out.download(), want), (decodeTolerance<T, K, D, Dv>(hq / hkv, tolerance<T>())));
}

// The ropes and cache writes of a decode step in the attention's own launch
// (decodeAttentionRope, the compiler's form at one token): GQA, MQA, MHA,
// several splits (the new row in the last busy one's last tile), every
// stage count, windows, partial and interleaved rotations, per-sequence
// positions; f32, half and bfloat16.
TEST(CudaDecodeAttention, RopesAndCacheWritesInTheSameLaunch) {
  checkDecodeRope<half, 64, 64>(1, 8, 2, 96, 77, 1, 0, 0, false, false);
  checkDecodeRope<half, 64, 64>(2, 8, 2, 300, 250, 3, 0, 0, false, true);
  checkDecodeRope<float, 64, 64>(1, 8, 1, 40, 33, 3, 0, 32, true, false); // MQA, r = 32
  checkDecodeRope<bfloat16, 128, 128>(2, 4, 4, 70, 0, 2, 0, 64, false, true); // MHA, first token
  checkDecodeRope<half, 64, 64>(1, 8, 2, 96, 90, 4, 17, 0, true, false);   // window
  checkDecodeRope<float, 32, 32>(1, 2, 1, 16, 15, 7, 0, 0, false, false);  // the last row
  // (The last split's 5 tiles at position 300 are more than the tiles
  // asked for before the wait, so its new rows go through the cache; its 2
  // at position 100 are within them from 3 stages, so the rows go into the
  // tile from shared memory, as in the cases above with one or two tiles a
  // chunk. The cache holds a stale row at *pos.)
  for (int stages = 1; stages <= kDecodeMaxStages; ++stages) {
    checkDecodeRope<half, 64, 64>(1, 8, 2, 400, 300, 2, 0, 0, false, false, stages);
    checkDecodeRope<half, 64, 64>(1, 8, 2, 400, 100, 2, 0, 0, false, false, stages);
  }
}

// LLMC_CUDA_DECODE_PATCH=0: the new rows go into their tile through the
// cache (a copy back), in cases above that put them in from shared memory.
TEST(CudaDecodeAttention, RowPatchOffByTheEnvironment) {
  EnvSetting setting("LLMC_CUDA_DECODE_PATCH", nullptr);
  expectOffOnlyByZero(setting, decodePatchEnabled);
  setting.set("0");
  checkDecodeRope<half, 64, 64>(2, 8, 2, 300, 250, 3, 0, 0, false, true);
  checkDecodeRope<float, 64, 64>(1, 8, 1, 40, 33, 3, 0, 32, true, false);
  checkDecodeRope<half, 64, 64>(1, 8, 2, 96, 90, 4, 17, 0, true, false);
  checkDecodeRope<half, 64, 64>(1, 8, 2, 400, 100, 2, 0, 0, false, false, 4);
}

// The same with each query and key head RMS-normalised first, in the same
// launch (HeadNorms: Qwen 3's and Gemma 3's head norms at one token): GQA
// and MHA, several splits, partial rotation, f32, half and bfloat16, and
// into int8 caches.
TEST(CudaDecodeAttention, HeadNormsInTheSameLaunch) {
  checkDecodeRope<half, 64, 64>(1, 8, 2, 96, 77, 1, 0, 0, false, false, 0, true);
  checkDecodeRope<bfloat16, 128, 128>(2, 16, 8, 300, 250, 3, 0, 0, false, true, 0, true);
  checkDecodeRope<float, 64, 64>(1, 8, 1, 40, 33, 3, 0, 32, true, false, 0, true);
  checkDecodeRope<half, 128, 128>(2, 4, 4, 70, 0, 2, 17, 64, false, true, 0, true);
  checkDecodeRope<half, 64, 64, int8_t>(1, 8, 2, 96, 77, 2, 0, 0, false, false, 0, true);
}

// The same into int8 caches with their scales (the rope pair and
// cacheWriteInt8's work at one token).
TEST(CudaDecodeAttention, RopesAndInt8CacheWritesInTheSameLaunch) {
  checkDecodeRope<half, 64, 64, int8_t>(1, 8, 2, 96, 77, 1, 0, 0, false, false);
  checkDecodeRope<float, 64, 64, int8_t>(2, 8, 2, 300, 250, 3, 17, 32, true, true);
  checkDecodeRope<bfloat16, 128, 128, int8_t>(1, 10, 2, 70, 69, 5, 0, 0, false, false);
  checkDecodeRope<half, 16, 16, int8_t>(1, 4, 4, 24, 0, 2, 0, 0, false, true); // first token
  for (int stages = 1; stages <= kDecodeMaxStages; ++stages)
    checkDecodeRope<half, 64, 64, int8_t>(1, 8, 2, 400, 300, 2, 0, 0, false, false, stages);
}

// A row *pos outside the cache writes nothing and is reported
// (kCacheOverflow), as is a position outside the tables
// (kPositionOutOfRange); bad arguments are refused.
TEST(CudaDecodeAttention, RopeFoldReportsItsErrors) {
  constexpr int D = 32;
  int cap = 8, p = 16;
  RopeTables tables(p, D);
  std::vector<float> cosT = tables.cosT, sinT = tables.sinT;
  std::vector<float> init(size_t(cap * D), 3.0f);
  DeviceBuffer<float> q(size_t{2 * D}), k(size_t{D}), v(size_t{D}), kc(init), vc(init);
  DeviceBuffer<float> dcos(cosT), dsin(sinT), partial(size_t(4 * 2 * D)), lse(size_t(8)),
      out(size_t(2 * D));
  DeviceBuffer<int64_t> dpos(std::vector<int64_t>{cap}), dp(std::vector<int64_t>{3});
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  SplitCounters counters;
  auto run = [&](int r) {
    return decodeAttentionRope<float, float, D, D>(q.get(), k.get(), v.get(), 0, 0, kc.get(),
                                                   vc.get(), nullptr, nullptr, dcos.get(),
                                                   dsin.get(), dp.get(), false, r, p, false,
                                            dpos.get(), partial.get(), lse.get(), out.get(),
                                            counters.get(), 1, 2, 1, cap, 4, 0, 1.0f, 0.0f,
                                            err.get(), nullptr);
  };
  out.upload(std::vector<float>(size_t(2 * D), 7.0f));
  ASSERT_EQ(run(0), "");
  EXPECT_EQ(err.download()[0] >> 32, kCacheOverflow);
  EXPECT_EQ(kc.download(), init);
  EXPECT_EQ(vc.download(), init);
  EXPECT_EQ(out.download(), std::vector<float>(size_t(2 * D), 7.0f));
  err.upload({0});
  dpos.upload({2});
  dp.upload({p}); // past the tables' rows
  ASSERT_EQ(run(0), "");
  EXPECT_EQ(err.download()[0] >> 32, kPositionOutOfRange);
  EXPECT_NE(run(3), ""); // an odd rotary dimension
  EXPECT_NE(run(2 * D), "");
}

TEST(CudaDecodeAttention, Int8CachesWithTheirScales) {
  // The caches as llm.quantized_cache_update leaves them: float64 attention
  // over the values they hold.
  checkDecode<half, 64, 64, int8_t>(1, 8, 2, 96, 77, 1, 0, 0);
  checkDecode<float, 64, 64, int8_t>(2, 8, 2, 96, 77, 4, 17, 0);
  checkDecode<bfloat16, 128, 128, int8_t>(1, 10, 2, 70, 69, 5, 0, 30.0f);
  checkDecode<half, 16, 16, int8_t>(1, 4, 4, 24, 23, 2, 0, 0);
  // Scales given for a float cache (or none for an int8 one): refused.
  DeviceBuffer<half> q(size_t(64)), c(size_t(64 * 8));
  DeviceBuffer<int64_t> pos(std::vector<int64_t>{0});
  DeviceBuffer<float> scales(size_t(8)), partial(size_t(64)), lse(size_t(1)), out(size_t(64));
  SplitCounters counters;
  EXPECT_NE((decodeAttention<half, half, 64, 64>(q.get(), c.get(), c.get(), scales.get(),
                                                 scales.get(), pos.get(), partial.get(), lse.get(),
                                                 out.get(), counters.get(), 1, 1, 1, 8, 1, 0, 1.0f,
                                                 0.0f, nullptr)),
            "");
  // Without the split counters: refused.
  EXPECT_NE((decodeAttention<half, half, 64, 64>(q.get(), c.get(), c.get(), nullptr, nullptr,
                                                 pos.get(), partial.get(), lse.get(), out.get(),
                                                 nullptr, 1, 1, 1, 8, 1, 0, 1.0f, 0.0f, nullptr)),
            "");
}

/// Which prefill form checkPrefill runs: the one flashAttention chooses
/// (on the emulation, as on sm_80 and later GPUs: mma.sync), or
/// AttentionTensorCore.h's WMMA form (which flashAttention takes only
/// before sm_80), or AttentionWgmma.h's wgmma form at head_dim 64 and 128
/// (which it takes with LLMC_CUDA_WGMMA=1 in sm_90a code; the emulation
/// has it: run only where wg::wgmmaBuilt()).
enum class Prefill { Chosen, Wmma, Wgmma };

/// Prefill attention in `form`; the scale is scaleTimes / sqrt(D).
template <class T, int D, int Dv, class K = T>
void checkPrefill(int b, int s, int hq, int hkv, int cap, long long pos, bool causal, int window,
                  float softcap, Prefill form = Prefill::Chosen, float scaleTimes = 1.5f,
                  bool withSinks = false) {
  SCOPED_TRACE("form=" + std::to_string(int(form)) + " s=" + std::to_string(s) + " hq=" + std::to_string(hq) + " hkv=" +
               std::to_string(hkv) + " pos=" + std::to_string(pos) + (causal ? " causal" : "") +
               " window=" + std::to_string(window) + " softcap=" + std::to_string(softcap) +
               " scale x" + std::to_string(scaleTimes) + (withSinks ? " sinks" : ""));
  std::vector<float> sinkValues = someSinks(hq);
  DeviceBuffer<float> sinkBuffer(sinkValues);
  const float *sinks = withSinks ? sinkBuffer.get() : nullptr;
  auto q = randomValues<T>(size_t(b * s * hq * D), 1.0f, 51);
  DeviceCaches<T, K> c(size_t(b * hkv * cap), D, Dv, 52);
  const std::vector<double> &kd = c.kd, &vd = c.vd;
  DeviceBuffer<T> dq(q);
  DeviceBuffer<int64_t> dpos(std::vector<int64_t>{pos});
  DeviceBuffer<float> out(size_t(b * s * hq * Dv));
  float scale = scaleTimes / std::sqrt(float(D));
  if constexpr (kTensorCoreAttention<T, K, D, Dv>) {
    if (form == Prefill::Wmma) {
      ASSERT_EQ((flashAttentionWmma<T, D, float>(dq.get(), c.k.get(), c.v.get(), dpos.get(),
                                                 out.get(), b, s, hq, hkv, cap, causal, window,
                                                 scale, softcap, nullptr, sinks)),
                "");
    }
    if constexpr (D == 64 || D == 128)
      if (form == Prefill::Wgmma) {
        ASSERT_EQ((flashAttentionWgmma<T, D, float>(dq.get(), c.k.get(), c.v.get(), dpos.get(),
                                                    out.get(), b, s, hq, hkv, cap, causal, window,
                                                    scale, softcap, nullptr, sinks)),
                  "");
      }
  }
  if (form == Prefill::Chosen) {
    ASSERT_EQ((flashAttention<T, K, D, Dv, float>(dq.get(), c.k.get(), c.v.get(), c.ksPtr(),
                                                  c.vsPtr(), dpos.get(), out.get(), b, s, hq, hkv,
                                                  cap, causal, window, scale, softcap, nullptr,
                                                  sinks)),
              "");
  }
  auto qd = widen(q);
  std::vector<double> want;
  for (int bi = 0; bi < b; ++bi)
    for (int si = 0; si < s; ++si) {
      std::vector<double> qrow(qd.begin() + (bi * s + si) * hq * D,
                               qd.begin() + (bi * s + si + 1) * hq * D);
      auto row = attentionRow(qrow, kd, vd, bi, hq, hkv, cap, D, Dv, pos + si, int(pos + s), causal,
                              window, scale, softcap, withSinks ? &sinkValues : nullptr);
      want.insert(want.end(), row.begin(), row.end());
    }
  // The tensor-core form rounds the probabilities to T for the value
  // product (its B operand): within one unit of T's rounding more.
  double tol = kF32Tolerance + (kTensorCoreAttention<T, K, D, Dv> ? storageEpsilon<T>() : 0.0);
  EXPECT_LE(relativeError(out.download(), want), tol);
}

TEST(CudaFlashAttention, CausalPrefillFromTheStart) {
  checkPrefill<half, 64, 64>(1, 40, 4, 2, 64, 0, true, 0, 0); // three query blocks
  checkPrefill<float, 32, 32>(2, 5, 2, 1, 16, 0, true, 0, 0);
  checkPrefill<bfloat16, 64, 64>(1, 17, 4, 4, 32, 0, true, 0, 0);
}

TEST(CudaFlashAttention, ChunkedPrefillAfterCachedTokens) {
  checkPrefill<half, 64, 64>(1, 20, 4, 2, 64, 9, true, 0, 0);
  checkPrefill<float, 128, 128>(1, 3, 2, 1, 80, 70, true, 0, 0);
  checkPrefill<half, 16, 16>(1, 6, 2, 2, 16, 4, true, 0, 0);
}

TEST(CudaFlashAttention, SinksInEveryForm) {
  // The sinks in each prefill form's last division: mma.sync (the chosen
  // form), wgmma and WMMA (the scale folded into the exp2, and not:
  // softcap), SIMT (f32, int8 caches).
  for (Prefill form : {Prefill::Chosen, Prefill::Wgmma, Prefill::Wmma}) {
    if (form == Prefill::Wgmma && !wg::wgmmaBuilt())
      continue; // (device code without wgmma: WgmmaTiles says so)
    checkPrefill<half, 64, 64>(1, 70, 4, 2, 160, 5, true, 0, 0, form, 1.5f, true);
    if (form == Prefill::Wmma) // (half only before sm_80)
      checkPrefill<half, 128, 128>(1, 40, 6, 2, 128, 30, true, 16, 30.0f, form, 1.5f, true);
    else
      checkPrefill<bfloat16, 128, 128>(1, 40, 6, 2, 128, 30, true, 16, 30.0f, form, 1.5f, true);
  }
  checkPrefill<float, 32, 32>(2, 20, 6, 2, 64, 9, true, 5, 0, Prefill::Chosen, 1.5f, true);
  checkPrefill<half, 64, 64, int8_t>(1, 40, 3, 1, 64, 0, false, 0, 0, Prefill::Chosen, 1.5f, true);
}

TEST(CudaFlashAttention, Int8CachesWithTheirScales) {
  checkPrefill<half, 64, 64, int8_t>(1, 40, 4, 2, 64, 0, true, 0, 0);
  checkPrefill<float, 128, 128, int8_t>(1, 3, 2, 1, 80, 70, true, 13, 20.0f);
  checkPrefill<bfloat16, 32, 32, int8_t>(2, 9, 2, 2, 32, 3, false, 0, 0);
}

/// Head dims 64 and 128 in `form` (Chosen: mma.sync; Wgmma: the wgmma
/// form): several query blocks (64 or 128
/// queries) and key tiles (64 or 128 keys), a partial last block with
/// warps that have no query, a chunk after cached tokens, GQA and MQA,
/// windows that skip whole tiles, softcap, non-causal.
void headDims64And128(Prefill form) {
  checkPrefill<half, 128, 128>(1, 150, 4, 2, 256, 30, true, 0, 0, form);
  checkPrefill<bfloat16, 64, 64>(2, 70, 4, 1, 160, 5, true, 40, 30.0f, form);
  checkPrefill<half, 64, 64>(1, 130, 2, 2, 130, 0, false, 0, 0, form);
  checkPrefill<bfloat16, 128, 128>(1, 70, 2, 2, 300, 200, true, 0, 0, form);
  // A window that leaves a block's first key tiles out (its first tile
  // past 0) and some warps without keys in a tile.
  checkPrefill<bfloat16, 64, 64>(1, 130, 2, 1, 384, 200, true, 40, 0, form);
  // A window without causality or softcap (masks in the exp2 domain of the
  // scale).
  checkPrefill<half, 64, 64>(1, 100, 2, 1, 128, 0, false, 20, 0, form);
  // Without a softcap and with a positive scale the kernels fold the scale
  // into the exp2 (the row maximum taken over the raw products); a negative
  // or zero scale (no model's, but the operator allows it) takes the
  // instance that scales each score first: with masks and a window, and
  // over several key tiles.
  checkPrefill<half, 64, 64>(1, 130, 2, 1, 384, 200, true, 100, 0, form, -1.5f);
  checkPrefill<bfloat16, 128, 128>(1, 70, 2, 2, 128, 0, true, 0, 0, form, 0.0f);
  // A window that leaves the first key tile to a block's first queries
  // only (its other warps, or warpgroup, skip it).
  checkPrefill<half, 64, 64>(1, 256, 2, 1, 256, 0, true, 16, 0, form);
  // One query: a block of one row, one partial key tile.
  checkPrefill<half, 128, 128>(1, 1, 2, 1, 64, 40, true, 0, 0, form);
  // Five key tiles: round the wgmma form's three stages and back, the last
  // tile's values product after the loop; causal and not.
  checkPrefill<half, 128, 128>(1, 140, 2, 1, 700, 500, true, 0, 0, form);
  checkPrefill<bfloat16, 64, 64>(1, 65, 2, 2, 640, 530, false, 0, 0, form);
}

// Half and bfloat16 with D = Dv <= 128 run on tensor cores: by mma.sync
// (AttentionMma.h) on sm_80 and later (wgmma with LLMC_CUDA_WGMMA=1 in
// sm_90a code: WgmmaTiles).
TEST(CudaFlashAttention, TensorCoreTiles) {
  static_assert(kTensorCoreAttention<half, half, 128, 128> &&
                kTensorCoreAttention<bfloat16, bfloat16, 16, 16> &&
                !kTensorCoreAttention<half, int8_t, 64, 64> &&
                !kTensorCoreAttention<float, float, 64, 64> &&
                !kTensorCoreAttention<half, half, 256, 256> &&
                !kTensorCoreAttention<half, half, 64, 32>);
  headDims64And128(Prefill::Chosen);
  checkPrefill<bfloat16, 16, 16>(1, 20, 2, 1, 64, 0, true, 0, 0);
  checkPrefill<half, 32, 32>(1, 3, 2, 1, 8, 2, true, 0, 0);
  checkPrefill<half, 96, 96>(2, 33, 2, 1, 64, 0, false, 5, 10.0f);
  checkPrefill<bfloat16, 32, 32>(1, 70, 2, 2, 128, 0, true, 0, 0, Prefill::Chosen, 0.0f);
  // More cache rows than the kernels' ints count: refused.
  EXPECT_EQ((flashAttention<half, half, 64, 64, half>(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                      nullptr, nullptr, 2, 1, 8, 8, 1 << 28, true,
                                                      0, 0.125f, 0.0f, nullptr)),
            "flash attention: more cache rows than an int counts");
  EXPECT_EQ((flashAttentionMma<half, 64, half>(nullptr, nullptr, nullptr, nullptr, nullptr, 2, 1,
                                               8, 8, 1 << 28, true, 0, 0.125f, 0.0f, nullptr)),
            "flash attention: more cache rows than an int counts");
}

// The wgmma form at head_dim 64 and 128 (sm_90a code with
// LLMC_CUDA_WGMMA=1; the emulation has it).
TEST(CudaFlashAttention, WgmmaTiles) {
  if (!wg::wgmmaBuilt())
    GTEST_SKIP() << "this device code has no wgmma (it is built for sm_90a only)";
  headDims64And128(Prefill::Wgmma);
}

// The WMMA form (before sm_80) on the same shapes.
TEST(CudaFlashAttention, WmmaTiles) {
  checkPrefill<half, 128, 128>(1, 150, 4, 2, 256, 30, true, 0, 0, Prefill::Wmma);
  checkPrefill<half, 64, 64>(1, 130, 2, 2, 130, 0, false, 0, 0, Prefill::Wmma);
  checkPrefill<half, 64, 64>(2, 70, 4, 1, 160, 5, true, 40, 30.0f, Prefill::Wmma);
}

TEST(CudaFlashAttention, WindowSoftcapAndNonCausal) {
  checkPrefill<half, 64, 64>(1, 48, 4, 2, 64, 0, true, 13, 0);
  checkPrefill<float, 64, 64>(1, 24, 2, 1, 48, 10, true, 0, 20.0f);
  checkPrefill<half, 64, 64>(2, 9, 2, 2, 32, 3, false, 0, 0);
}

} // namespace
