//===- CudaQuantTest.cpp - the 4- and 8-bit linear kernels against float64 -===//
//
// qgemv (decode) and qgemm (prefill) of runtime/src/model/cuda/QuantGemv.h
// on weights packed here in llm.quantized_linear's layout (MatMulNBits'),
// against a float64 x dequant(W)^T computed from the same bytes: 4 and 8
// bits, with and without zero points, groups of 16 to 128 (every chunk
// width), K that ends inside a group, K whose rows of x are not 16-byte
// aligned, f32/f16/bf16 activations and f32/f16 scales, bias, residual and
// split-K; qgemm's tensor-core tiles (16-bit x) against the weights rounded
// to x's type. Built against the host emulation in CI and with nvcc on a
// GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/QuantGemv.h"

#include "test/unit/CudaTestUtil.h"

#include <cstdlib>
#include <string>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

/// A quantized weight in the op's layout, random values and scales.
struct Packed {
  int n, k, bits, groupSize, groups;
  std::vector<uint8_t> q, zeros; // zeros empty: symmetric
  std::vector<float> scales;

  /// W[j, e] as the op defines it (the reference's weight).
  double at(int j, int e) const {
    int g = e / groupSize;
    size_t rowBytes = size_t(groups) * size_t(groupSize) * size_t(bits) / 8;
    const uint8_t *row = q.data() + size_t(j) * rowBytes;
    int v = bits == 8 ? row[e] : (row[e / 2] >> ((e % 2) * 4)) & 15;
    int zero = zeros.empty() ? 1 << (bits - 1) : zeros[size_t(j) * size_t(groups) + size_t(g)];
    return double(v - zero) * double(scales[size_t(j) * size_t(groups) + size_t(g)]);
  }
};

Packed pack(int n, int k, int bits, int groupSize, bool withZeros, unsigned seed) {
  Packed p{n, k, bits, groupSize, (k + groupSize - 1) / groupSize, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(0, (1 << bits) - 1);
  size_t bytes = size_t(n) * size_t(p.groups) * size_t(groupSize) * size_t(bits) / 8;
  p.q.resize(bytes);
  for (uint8_t &b : p.q)
    b = uint8_t(bits == 8 ? value(rng) : value(rng) | (value(rng) << 4));
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  p.scales.resize(size_t(n) * size_t(p.groups));
  for (float &s : p.scales)
    s = scale(rng);
  if (withZeros) {
    p.zeros.resize(p.scales.size());
    for (uint8_t &z : p.zeros)
      z = uint8_t(value(rng));
  }
  return p;
}

/// qgemv (splits >= 1, y in seg's layout; with IN, qnormGemv or
/// qswigluGemv: x through an RMS norm or SwiGLU first) or, with splits = 0,
/// qgemm's tiles that dequantize as they stage, with splits = -1, qgemm
/// through its dequantized scratch copy, against float64. B: the bias's
/// type. ROWS: the launchers' (0: built for every row
/// count; m: only m's kernels, fewer for the GPU's test binary to carry).
template <class X, class Y, class S, int BITS, GemvIn IN = GemvIn::Plain, int ROWS = 0,
          class B = float>
void checkQuant(int m, int n, int k, int groupSize, bool withZeros, int splits, bool withBias,
                bool withResidual, unsigned seed, GemvSegments seg = {},
                GateAct act = GateAct::Silu) {
  SCOPED_TRACE("bits=" + std::to_string(BITS) + " m=" + std::to_string(m) + " n=" +
               std::to_string(n) + " k=" + std::to_string(k) + " group=" +
               std::to_string(groupSize) + " zeros=" + std::to_string(withZeros) + " splits=" +
               std::to_string(splits) + " prologue=" + std::to_string(int(IN)) +
               " act=" + std::to_string(int(act)));
  Packed p = pack(n, k, BITS, groupSize, withZeros, seed);
  std::vector<S> scales(p.scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = fromFloat<S>(p.scales[i]);
    p.scales[i] = toFloat(scales[i]); // the reference reads the stored scale
  }
  auto x = randomValues<X>(size_t(m) * size_t(k), 1.0f, seed + 1);
  // The prologue's operands: the norm's weights (offset 1 on odd seeds,
  // Gemma's 1 + w), SwiGLU's up.
  const float eps = 1e-5f, offset = seed % 2 ? 1.0f : 0.0f;
  auto other = randomValues<X>(IN == GemvIn::RmsNorm ? size_t(k) : size_t(m) * size_t(k), 1.0f,
                               seed + 4);
  DeviceBuffer<X> dother(other);
  auto bias = randomValues<B>(size_t(n), 1.0f, seed + 2);
  auto residual = randomValues<Y>(size_t(m) * size_t(n), 4.0f, seed + 3);
  DeviceBuffer<X> dx(x);
  DeviceBuffer<uint8_t> dq(p.q), dz(withZeros ? p.zeros : std::vector<uint8_t>(1));
  DeviceBuffer<S> ds(scales);
  DeviceBuffer<B> db(bias);
  DeviceBuffer<float> partial(size_t(std::max(splits, 0)) * size_t(m) * size_t(n));
  DeviceBuffer<Y> dr(residual), dy(size_t(m) * size_t(n));
  const uint8_t *zeros = withZeros ? dz.get() : nullptr;
  const B *b = withBias ? db.get() : nullptr;
  const Y *r = withResidual ? dr.get() : nullptr;
  SplitCounters counters;
  DeviceBuffer<X> scratch(splits < 0 ? size_t(n) * size_t(k) : size_t(1));
  // (if constexpr: each instance builds only the launcher it runs; every
  // launcher is 24 SIMT kernels and, for 16-bit x, 8 tensor-core ones, and
  // the GPU's test binary must fit what the device tool carries.)
  if (splits > 0) {
    std::string e;
    if constexpr (IN == GemvIn::RmsNorm)
      e = qnormGemv<X, Y, S, B, BITS, ROWS>(
          dx.get(), dother.get(), eps, offset, dq.get(), ds.get(), zeros, b, r, dy.get(),
          partial.get(), counters.get(), m, n, k, groupSize, splits, nullptr, seg);
    else if constexpr (IN == GemvIn::Swiglu)
      e = act == GateAct::Silu
              ? qswigluGemv<X, Y, S, B, BITS, ROWS>(
                    dx.get(), dother.get(), dq.get(), ds.get(), zeros, b, r, dy.get(),
                    partial.get(), counters.get(), m, n, k, groupSize, splits, nullptr, seg)
              : qgatedGemv<X, Y, S, B, BITS, ROWS>(
                    act, dx.get(), dother.get(), dq.get(), ds.get(), zeros, b, r, dy.get(),
                    partial.get(), counters.get(), m, n, k, groupSize, splits, nullptr, seg);
    else
      e = qgemv<X, Y, S, B, BITS>(dx.get(), dq.get(), ds.get(), zeros, b, r, dy.get(),
                                      partial.get(), counters.get(), m, n, k, groupSize, splits,
                                      nullptr, seg);
    ASSERT_EQ(e, "");
    EXPECT_EQ(counters.leftNonzero(), 0u);
  } else if constexpr (IN == GemvIn::Plain) {
    Blas blas; // (cuBLASLt on a GPU: the copy's gemm where x, y and the bias are one type)
    ASSERT_EQ(blas.open(), "");
    ASSERT_EQ((qgemm<X, Y, S, B, BITS>(dx.get(), dq.get(), ds.get(), zeros, b, r, dy.get(), m, n,
                                       k, groupSize, splits < 0 ? scratch.get() : nullptr, nullptr,
                                       &blas)),
              "");
  }
  auto xd = widen(x), rd = widen(residual), od = widen(other);
  // The prologue's output in float64 (the kernels round it to X: one unit
  // of X's rounding more in the tolerance).
  if (IN == GemvIn::RmsNorm)
    for (int i = 0; i < m; ++i) {
      double squares = 0;
      for (int e = 0; e < k; ++e)
        squares += xd[size_t(i) * size_t(k) + size_t(e)] * xd[size_t(i) * size_t(k) + size_t(e)];
      double inv = 1.0 / std::sqrt(squares / k + eps);
      for (int e = 0; e < k; ++e)
        xd[size_t(i) * size_t(k) + size_t(e)] *= inv * (od[size_t(e)] + offset);
    }
  if (IN == GemvIn::Swiglu)
    for (size_t i = 0; i < xd.size(); ++i)
      xd[i] = gateReference(act, xd[i]) * od[i];
  // qgemm with half or bfloat16 x multiplies each weight rounded to x's
  // type (its f32 value, q - zero times the scale, rounded). qgemv does
  // not, in either form: the SIMT one makes q - zero an f32, the tensor-core
  // one a value of x's type (exact) and scales each chunk's sums in f32.
  // (With f32 outputs and no prologue the tolerance tells the two apart:
  // the rounded weights miss it.)
  bool rounded = (std::is_same_v<X, half> || std::is_same_v<X, bfloat16>) && splits <= 0;
  auto weight = [&](int j, int e) {
    double w = p.at(j, e);
    return rounded ? double(toFloat(fromFloat<X>(float(w)))) : w;
  };
  std::vector<double> want(size_t(m) * size_t(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = withBias ? double(toFloat(bias[size_t(j)])) : 0.0;
      for (int e = 0; e < k; ++e)
        s += weight(j, e) * xd[size_t(i) * size_t(k) + size_t(e)];
      if (withResidual)
        s += rd[size_t(i) * size_t(n) + size_t(j)];
      want[outputAt(seg, m, i, j, n)] = s;
    }
  EXPECT_LE(relativeError(dy.download(), want),
            1e-5 + storageEpsilon<Y>() + (IN == GemvIn::Plain ? 0.0 : storageEpsilon<X>()));
  if (splits < 0) { // (the copy was made: its last weight)
    std::vector<X> copy = scratch.download();
    EXPECT_EQ(toFloat(copy.back()), toFloat(fromFloat<X>(float(p.at(n - 1, k - 1)))));
  }
}

/// LLMC_CUDA_QGEMV_TC_ROWS set to `value` (null: unset) for a scope, then
/// as it was.
struct QgemvRowsSetting : EnvSetting {
  explicit QgemvRowsSetting(const char *value) : EnvSetting("LLMC_CUDA_QGEMV_TC_ROWS", value) {}
};

TEST(CudaQuantGemv, Int4EveryRowCount) {
  for (int m = 1; m <= kGemvMaxRows; ++m)
    checkQuant<float, float, float, 4>(m, 37, 256, 32, false, 1, true, false, unsigned(m));
}

TEST(CudaQuantGemv, Int8EveryRowCount) {
  for (int m = 1; m <= kGemvMaxRows; ++m)
    checkQuant<float, float, float, 8>(m, 21, 256, 64, true, 1, false, true, unsigned(20 + m));
}

TEST(CudaQuantGemv, GroupSizesAndChunkWidths) {
  // int4: 16-value groups are 8 bytes (8-byte chunks), 32+ are 16-byte
  // chunks; int8: 16-value groups are 16 bytes.
  checkQuant<float, float, float, 4>(2, 24, 512, 16, true, 1, true, true, 31);
  checkQuant<float, float, float, 4>(1, 24, 512, 128, false, 1, false, false, 32);
  checkQuant<float, float, float, 8>(3, 24, 512, 16, false, 1, true, false, 33);
  checkQuant<float, float, float, 8>(1, 24, 384, 128, true, 1, false, false, 34);
  // 8-bit groups of 8 and 4-bit groups of 8: 8- and 4-byte chunks.
  checkQuant<float, float, float, 8>(2, 9, 64, 8, true, 1, false, false, 35);
  checkQuant<float, float, float, 4>(2, 9, 64, 8, true, 1, false, false, 36);
}

TEST(CudaQuantGemv, KEndingInsideAGroupAndUnalignedRows) {
  // K = 100 with groups of 32: the last group is 4 values and padding.
  checkQuant<float, float, float, 4>(3, 17, 100, 32, true, 1, true, false, 41);
  checkQuant<half, half, half, 8>(2, 17, 100, 32, false, 1, false, true, 42);
  // K = 99: rows of x are not 16-byte aligned; every value by the tail.
  checkQuant<float, float, float, 4>(4, 11, 99, 32, true, 1, true, true, 43);
  checkQuant<bfloat16, float, float, 8>(1, 11, 99, 64, false, 1, false, false, 44);
}

TEST(CudaQuantGemv, HalfAndBfloat16ActivationsAndScales) {
  checkQuant<half, half, half, 4>(1, 64, 1024, 32, false, 1, true, true, 51);
  checkQuant<bfloat16, bfloat16, float, 4>(2, 40, 512, 64, true, 1, false, true, 52);
  checkQuant<half, float, half, 8>(1, 33, 256, 128, false, 1, true, false, 53);
}

TEST(CudaQuantGemv, SplitK) {
  checkQuant<float, float, float, 4>(1, 16, 4096, 32, false, 4, true, true, 61);
  checkQuant<half, half, float, 8>(3, 8, 2048, 128, true, 3, true, false, 62);
  // More splits than chunks: the last splits are empty.
  checkQuant<float, float, float, 4>(1, 8, 128, 32, false, 16, false, false, 63);
}

// Rows long enough for a lane to take several batches of chunks, each
// batch issued before the one before it is used. The SIMT form (Gemv.h's
// gemvSimtBody over QuantGemvRows: f32 x, or groups that are not a
// multiple of 32), kQuantUnroll chunks a batch: 8 chunks a lane (K = 8192
// at 4 bits in groups of 32), 4 a lane of each of two splits, groups
// spanning several chunks (128 values at 4 bits: 4), 16-byte chunks of
// 8-bit groups of 16 and 8-byte ones of 4-bit groups of 16, and an RMS
// norm and a SwiGLU folded in (f32 x: SIMT at 3 rows too). The tensor-core
// form (kTcGemvUnroll chunks a batch): 32 chunks a warp at K = 8192 (8
// batches), per-channel int8 at K = 4096 over two splits, an RMS norm.
TEST(CudaQuantGemv, SeveralBatchesALane) {
  checkQuant<float, float, float, 4>(1, 12, 8192, 32, true, 1, true, true, 81);
  checkQuant<float, float, float, 4>(2, 9, 8192, 128, false, 1, false, false, 82);
  checkQuant<half, half, float, 8>(2, 10, 4096, 16, false, 1, true, false, 83);
  checkQuant<bfloat16, bfloat16, float, 4>(1, 10, 4096, 16, true, 2, false, true, 84);
  // (Instances the tests below build too: the GPU's test binary stays as it is.)
  checkQuant<float, float, float, 8, GemvIn::Swiglu, 3>(3, 9, 2048, 64, true, 1, false, true, 86);
  checkQuant<half, half, half, 4, GemvIn::RmsNorm, 2>(2, 11, 8192, 32, false, 2, true, false, 85);
  checkQuant<half, half, float, 8>(1, 24, 4096, 4096, true, 2, true, false, 87);
  checkQuant<bfloat16, bfloat16, float, 4>(2, 20, 8192, 128, false, 1, false, true, 88);
}

// qgemv of half or bfloat16 x runs on the tensor cores from one row
// (GemvTensorCore.h over QuantTcRows, kQuantTcMinRows): every row count,
// 4 and 8 bits, groups of 32 to 128 values, zero points, N not a multiple
// of 16, split-K, bias, residual, column ranges, an RMS norm or SwiGLU
// folded in; f32 outputs, which hold it to the unrounded weights (the
// weights rounded to x's type miss the tolerance).
TEST(CudaQuantGemv, TensorCoresFromOneRow) {
  QgemvRowsSetting setting(nullptr); // (the default boundary, whatever the environment says)
  for (int m = kQuantTcMinRows; m <= kGemvMaxRows; ++m) {
    checkQuant<half, float, half, 4>(m, 37, 256, 32, m % 2, 1, true, true, unsigned(110 + m));
    checkQuant<bfloat16, float, float, 8>(m, 21, 512, 64, m % 2 == 0, 2, true, false,
                                          unsigned(120 + m));
  }
  checkQuant<half, float, half, 4>(8, 64, 1024, 128, false, 4, true, false, 133);
  checkQuant<half, half, half, 4>(3, 40, 256, 32, true, 1, true, false, 134, {16, 24});
  checkQuant<half, float, half, 4, GemvIn::RmsNorm, 6>(6, 33, 512, 32, true, 1, true, false, 135);
  checkQuant<bfloat16, float, float, 4, GemvIn::Swiglu, 3>(3, 20, 256, 64, false, 2, false, true,
                                                           136);
  EXPECT_TRUE(qgemvOnTensorCores<half>(1, 256, 32));
  EXPECT_TRUE(qgemvOnTensorCores<bfloat16>(2, 2048, 2048));
  // Groups that are not a multiple of 32 values, or K not a multiple of
  // 32, or f32 x: the SIMT form, at every row count.
  EXPECT_FALSE(qgemvOnTensorCores<half>(4, 256, 16));
  EXPECT_FALSE(qgemvOnTensorCores<half>(4, 256, 4));
  EXPECT_FALSE(qgemvOnTensorCores<half>(4, 100, 32));
  EXPECT_FALSE(qgemvOnTensorCores<float>(8, 256, 32));
  checkQuant<half, float, float, 4>(4, 40, 128, 8, true, 1, false, false, 131);   // 4-byte groups
  checkQuant<bfloat16, float, half, 8>(5, 24, 96, 16, true, 1, false, true, 132); // 3 chunks
  checkQuant<half, float, half, 8>(4, 12, 64, 4, true, 1, false, false, 137);
}

// LLMC_CUDA_QGEMV_TC_ROWS moves the forms' boundary (9: SIMT at every row
// count), and the SIMT form of 16-bit x in groups of 32 stays right under
// it (what the runtime passes to the tensor cores otherwise), with an RMS
// norm, a SwiGLU or a GELU-gated product folded in too.
TEST(CudaQuantGemv, FormSwitch) {
  QgemvRowsSetting setting("3");
  EXPECT_FALSE(qgemvOnTensorCores<half>(2, 256, 32));
  EXPECT_TRUE(qgemvOnTensorCores<half>(3, 256, 32));
  setting.set("9");
  EXPECT_FALSE(qgemvOnTensorCores<half>(8, 256, 32));
  checkQuant<half, float, half, 4>(1, 37, 2048, 32, true, 1, true, true, 141);
  checkQuant<bfloat16, float, float, 8>(2, 21, 512, 64, false, 2, true, false, 142);
  checkQuant<half, float, half, 4>(6, 37, 256, 32, false, 1, false, true, 143);
  checkQuant<half, half, half, 4, GemvIn::RmsNorm, 2>(2, 16, 4096, 32, true, 4, true, true, 144);
  checkQuant<bfloat16, float, float, 4, GemvIn::Swiglu, 1>(1, 16, 4096, 128, false, 4, false,
                                                           false, 145);
  checkQuant<half, half, half, 4, GemvIn::Swiglu, 1>(1, 21, 256, 32, true, 2, true, false, 146,
                                                     {}, GateAct::GeluTanh);
  setting.set("0"); // (not 1-9: the default)
  EXPECT_TRUE(qgemvOnTensorCores<half>(1, 256, 32));
}

/// Runs quantPairs over `loads` 8-value loads (WORDS words each, zero
/// points `zeros`), one a thread, writing the registers it returns.
template <class T, int BITS>
LLMC_GLOBAL void quantPairsKernel(const unsigned *words, const uint8_t *zeros, unsigned *out,
                                  int loads) {
  LLMC_KERNEL_BEGIN();
  int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= loads)
    return;
  QuantChunk<float, BITS / 4> c;
  for (int w = 0; w < BITS / 4; ++w)
    c.v[w] = words[size_t(i) * (BITS / 4) + size_t(w)];
  c.scale = 1.0f;
  c.zero = zeros[i];
  uint4 r = quantPairs<T, BITS>(c);
  out[4 * i] = r.x, out[4 * i + 1] = r.y, out[4 * i + 2] = r.z, out[4 * i + 3] = r.w;
}

/// quantPairs on the device, bit for bit against q - zero rounded to T by
/// the host: every value in every one of the 8 positions, against every
/// zero point (4 bits: all 16; 8 bits: all 256).
template <class T, int BITS> void checkQuantPairs() {
  SCOPED_TRACE(std::string(std::is_same_v<T, half> ? "half" : "bfloat16") +
               " bits=" + std::to_string(BITS));
  constexpr int kValues = 1 << BITS, kWords = BITS / 4;
  std::vector<unsigned> words;
  std::vector<uint8_t> zeros;
  std::vector<int> expected; // the 8 values of each load, then its zero
  for (int zero = 0; zero < kValues; ++zero)
    for (int v = 0; v < kValues; ++v) {
      // Value v at position p, the others distinct from it and each other.
      int vals[8];
      for (int p = 0; p < 8; ++p)
        vals[p] = (v + 37 * p) % kValues;
      unsigned w[kWords] = {};
      for (int p = 0; p < 8; ++p)
        w[p * BITS / 32] |= unsigned(vals[p]) << (p * BITS % 32);
      words.insert(words.end(), w, w + kWords);
      zeros.push_back(uint8_t(zero));
      expected.insert(expected.end(), vals, vals + 8);
      expected.push_back(zero);
    }
  int loads = int(zeros.size());
  DeviceBuffer<unsigned> dw(words), dout(size_t(loads) * 4);
  DeviceBuffer<uint8_t> dz(zeros);
  ASSERT_EQ(launch(quantPairsKernel<T, BITS>, dim3(unsigned((loads + 127) / 128)), dim3(128), 0,
                   nullptr, dw.get(), dz.get(), dout.get(), loads),
            "");
  std::vector<unsigned> out = dout.download();
  int bad = 0;
  for (int i = 0; i < loads && bad < 5; ++i) {
    const int *e = &expected[size_t(i) * 9];
    for (int p = 0; p < 8; ++p) {
      unsigned want = tc::pack(fromFloat<T>(float(e[p] - e[8])), fromFloat<T>(0.0f)) & 0xffffu;
      unsigned got = (out[size_t(i) * 4 + size_t(p / 2)] >> (16 * (p % 2))) & 0xffffu;
      if (got != want) {
        ADD_FAILURE() << "load " << i << " position " << p << ": q " << e[p] << " zero " << e[8]
                      << " gave bits " << got << ", want " << want;
        ++bad;
      }
    }
  }
}

TEST(CudaQuantGemv, QuantPairsAreExact) {
  checkQuantPairs<half, 4>();
  checkQuantPairs<bfloat16, 4>();
  checkQuantPairs<half, 8>();
  checkQuantPairs<bfloat16, 8>();
}

// A merged projection's output in column ranges (Gemv.h's segments), with
// and without split-K.
TEST(CudaQuantGemv, OutputInColumnRanges) {
  checkQuant<half, half, half, 4>(3, 40, 256, 32, true, 1, true, false, 64, {16, 24});
  checkQuant<float, float, float, 8>(2, 24, 1024, 64, false, 2, false, false, 65, {8, 0});
}

// An RMS norm, a SwiGLU and a GELU-gated product folded into the 4- and
// 8-bit GEMVs (qnormGemv, qswigluGemv, qgatedGemv): every row count, zero points, split-K (SwiGLU: each split's
// range of K), K ending inside a group and unaligned, column ranges, and
// the largest rows the shared memory holds.
TEST(CudaQuantGemv, NormAndSwigluFoldedIn) {
  for (int m = 1; m <= kGemvMaxRows; ++m) {
    checkQuant<float, float, float, 4, GemvIn::RmsNorm>(m, 37, 256, 32, m % 2, 1, true, false,
                                                        unsigned(80 + m));
    checkQuant<half, half, half, 8, GemvIn::Swiglu>(m, 21, 256, 64, m % 2 == 0, 1, false, true,
                                                    unsigned(90 + m));
  }
  checkQuant<half, half, half, 4, GemvIn::RmsNorm, 2>(2, 16, 4096, 32, true, 4, true, true, 101);
  checkQuant<bfloat16, float, float, 4, GemvIn::Swiglu, 1>(1, 16, 4096, 128, false, 4, false,
                                                           false, 102);
  checkQuant<float, float, float, 8, GemvIn::Swiglu, 3>(3, 17, 99, 32, true, 1, true, false, 103);
  checkQuant<half, half, half, 4, GemvIn::RmsNorm, 3>(3, 40, 256, 32, true, 1, true, false, 104,
                                                      {16, 24});
  checkQuant<half, half, half, 4, GemvIn::RmsNorm, 8>(8, 16, 2048, 32, false, 2, false, true, 105);
  // Gemma's GELU-gated product (qgatedGemv), tanh and erf.
  checkQuant<half, half, half, 4, GemvIn::Swiglu, 1>(1, 21, 256, 32, true, 2, true, false, 106,
                                                     {}, GateAct::GeluTanh);
  checkQuant<float, float, float, 8, GemvIn::Swiglu, 3>(3, 17, 99, 32, false, 1, false, true, 107,
                                                        {}, GateAct::GeluErf);
  // Past the shared memory: refused with a message.
  DeviceBuffer<half> x(size_t(8) * 4096);
  EXPECT_NE((qnormGemv<half, half, half, float, 4, 8>(x.get(), x.get(), 1e-5f, 0.0f, nullptr,
                                                      nullptr, nullptr, nullptr, nullptr, x.get(),
                                                      nullptr, nullptr, 8, 16, 4096, 32, 1,
                                                      nullptr)),
            "");
}

TEST(CudaQuantGemm, TilesAndEdges) {
  // f32 x: the SIMT tiles; half and bfloat16 x: the tensor-core tiles (the
  // f32 outputs hold them to the rounded weights within f32 sums).
  checkQuant<float, float, float, 4>(64, 64, 64, 32, false, 0, false, false, 71);
  checkQuant<float, float, float, 4>(100, 37, 100, 32, true, 0, true, true, 72);
  checkQuant<half, half, half, 8>(17, 70, 128, 64, true, 0, true, false, 73);
  checkQuant<bfloat16, float, float, 8>(65, 20, 99, 16, false, 0, false, true, 74);
  checkQuant<half, float, half, 4>(130, 72, 200, 32, true, 0, true, true, 75);
  checkQuant<bfloat16, bfloat16, float, 4>(64, 64, 256, 128, false, 0, false, false, 76);
}

TEST(CudaQuantGemm, ThroughADequantizedCopy) {
  // The same shapes through the scratch copy, then gemm: f32 x on the SIMT
  // tiles, half and bfloat16 on the tensor-core ones; on a GPU, cuBLASLt
  // where x, y and the bias (or none) are one 16-bit type (the emulation
  // has no cuBLASLt: its tiles).
  checkQuant<float, float, float, 4>(64, 64, 64, 32, false, -1, false, false, 71);
  checkQuant<float, float, float, 4>(100, 37, 100, 32, true, -1, true, true, 72);
  checkQuant<half, half, half, 8>(17, 70, 128, 64, true, -1, true, false, 73);
  checkQuant<bfloat16, float, float, 8>(65, 20, 99, 16, false, -1, false, true, 74);
  checkQuant<half, float, half, 4>(130, 72, 200, 32, true, -1, true, true, 75);
  checkQuant<bfloat16, bfloat16, float, 4>(64, 64, 256, 128, false, -1, false, false, 76);
  checkQuant<half, half, half, 4>(40, 48, 64, 32, true, -1, false, true, 77);
  checkQuant<bfloat16, bfloat16, bfloat16, 8>(24, 40, 96, 32, false, -1, false, false, 78);
  // A bias of x's type (gemm's own bias; cuBLASLt's epilogue on a GPU).
  checkQuant<half, half, half, 4, GemvIn::Plain, 0, half>(40, 48, 64, 32, true, -1, true, true, 79);
  checkQuant<bfloat16, bfloat16, float, 8, GemvIn::Plain, 0, bfloat16>(72, 64, 128, 64, false, -1,
                                                                       true, false, 80);
}

/// dequantRows' copy against the weights the op defines, each rounded to T
/// once from its f32 value: equal bit for bit.
template <class S, class T, int BITS>
void checkDequantRows(int n, int k, int groupSize, bool withZeros, unsigned seed) {
  SCOPED_TRACE("bits=" + std::to_string(BITS) + " n=" + std::to_string(n) + " k=" +
               std::to_string(k) + " group=" + std::to_string(groupSize) +
               " zeros=" + std::to_string(withZeros));
  Packed p = pack(n, k, BITS, groupSize, withZeros, seed);
  std::vector<S> scales(p.scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = fromFloat<S>(p.scales[i]);
    p.scales[i] = toFloat(scales[i]);
  }
  DeviceBuffer<uint8_t> dq(p.q), dz(withZeros ? p.zeros : std::vector<uint8_t>(1));
  DeviceBuffer<S> ds(scales);
  // One more row's room, poisoned: nothing is written past n * k.
  std::vector<T> poison(size_t(n + 1) * size_t(k), fromFloat<T>(-7.0f));
  DeviceBuffer<T> out(poison);
  ASSERT_EQ((dequantRows<S, T, BITS>(dq.get(), ds.get(), withZeros ? dz.get() : nullptr,
                                     out.get(), n, k, groupSize, nullptr)),
            "");
  std::vector<T> got = out.download();
  int wrong = 0;
  for (int j = 0; j <= n; ++j)
    for (int e = 0; e < k; ++e) {
      float want = j < n ? toFloat(fromFloat<T>(float(p.at(j, e)))) : -7.0f;
      wrong += toFloat(got[size_t(j) * size_t(k) + size_t(e)]) != want;
    }
  EXPECT_EQ(wrong, 0);
}

TEST(CudaQuantGemm, DequantizedRowsEqualTheOpsWeights) {
  checkDequantRows<float, float, 4>(5, 64, 32, false, 81);
  checkDequantRows<float, half, 4>(7, 100, 32, true, 82); // K ends inside a group and a word
  checkDequantRows<half, half, 8>(3, 99, 16, true, 83);
  checkDequantRows<float, bfloat16, 8>(4, 130, 4, false, 84); // groups of one word
  checkDequantRows<half, bfloat16, 4>(6, 256, 128, true, 85);
  EXPECT_NE((dequantRows<float, half, 4>(nullptr, nullptr, nullptr, nullptr, 1, 8, 4, nullptr)),
            ""); // (a group of 2 bytes)
}

/// With `scaled`, each value (rounded to Y) times 5.5 (Gemma's scaling Mul),
/// rounded to Y again.
template <class S, class Y, int BITS>
void checkEmbedding(int groupSize, bool withZeros, bool scaled = false) {
  SCOPED_TRACE("bits=" + std::to_string(BITS) + " group=" + std::to_string(groupSize) +
               (scaled ? " scaled" : ""));
  const int vocab = 50, groups = 3, h = groups * groupSize;
  Packed p = pack(vocab, h, BITS, groupSize, withZeros, unsigned(BITS * 100 + groupSize));
  std::vector<S> scales(p.scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = fromFloat<S>(p.scales[i]);
    p.scales[i] = toFloat(scales[i]);
  }
  std::vector<int64_t> ids = {7, 0, 49, 7, 50, -1};
  DeviceBuffer<uint8_t> dq(p.q), dz(withZeros ? p.zeros : std::vector<uint8_t>(1));
  DeviceBuffer<S> ds(scales);
  DeviceBuffer<int64_t> di(ids);
  DeviceBuffer<Y> dy(ids.size() * size_t(h));
  DeviceBuffer<unsigned long long> error(std::vector<unsigned long long>{0});
  DeviceBuffer<Y> scale(std::vector<Y>{fromFloat<Y>(5.5f)});
  ASSERT_EQ((quantEmbedding<S, Y, BITS>(dq.get(), ds.get(), withZeros ? dz.get() : nullptr,
                                        di.get(), dy.get(), int(ids.size()), vocab, groupSize,
                                        groups, error.get(), nullptr,
                                        scaled ? scale.get() : nullptr)),
            "");
  std::vector<double> want(ids.size() * size_t(h), 0.0);
  for (size_t r = 0; r < ids.size(); ++r)
    if (ids[r] >= 0 && ids[r] < vocab)
      for (int e = 0; e < h; ++e)
        want[r * size_t(h) + size_t(e)] = p.at(int(ids[r]), e) * (scaled ? 5.5 : 1.0);
  // one rounding, or two with the scale
  EXPECT_LE(relativeError(dy.download(), want), 1e-7 + (scaled ? 2 : 1) * storageEpsilon<Y>());
  // A bad id (row 4: 50, past the vocabulary; row 5: -1) is reported
  // (whichever block gets there first on a GPU).
  unsigned long long word = error.download()[0];
  EXPECT_EQ(word >> 32, static_cast<unsigned long long>(kTokenOutOfRange));
  EXPECT_TRUE((word & 0xffffffffull) == 4 || (word & 0xffffffffull) == 5) << word;
}

TEST(CudaQuantEmbedding, GathersAndDequantizesRows) {
  checkEmbedding<float, float, 4>(32, false);
  checkEmbedding<float, float, 4>(16, true);
  checkEmbedding<half, half, 8>(64, true);
  checkEmbedding<float, bfloat16, 8>(32, false);
  checkEmbedding<float, float, 4>(16, true, true);
  checkEmbedding<half, half, 8>(64, true, true);
}

TEST(CudaQuantGemv, ChunkBytesAndBadArguments) {
  EXPECT_EQ(quantChunkBytes(4, 32), 16);
  EXPECT_EQ(quantChunkBytes(4, 16), 8);
  EXPECT_EQ(quantChunkBytes(8, 4), 4);
  EXPECT_EQ(quantChunkBytes(4, 4), 0);
  EXPECT_NE((qgemv<float, float, float, float, 4>(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, 1, 4, 16,
                                                  4, 1, nullptr)),
            "");
  EXPECT_NE((qgemv<float, float, float, float, 4>(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr, nullptr, nullptr, nullptr, 9, 4, 64,
                                                  32, 1, nullptr)),
            "");
  EXPECT_EQ((qgemv<float, float, float, float, 4, 2>(nullptr, nullptr, nullptr, nullptr, nullptr,
                                                     nullptr, nullptr, nullptr, nullptr, 1, 4, 64,
                                                     32, 1, nullptr)),
            "qgemv: 1 rows, where the call was compiled for 2");
}

} // namespace
