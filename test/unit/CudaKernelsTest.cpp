//===- CudaKernelsTest.cpp - the CUDA kernel templates against float64 ----===//
//
// The kernels of runtime/src/model/cuda but attention (CudaAttentionTest),
// the quantized ones (CudaQuantTest) and token choice (CudaSamplingTest) on
// small shapes that reach their
// edges (tails past the vector width, split-K, bad ids and positions),
// compared with float64 references computed here from the stored values.
// Tolerances: f32 results within 1e-5 of the output's scale (f32
// accumulation), f16/bf16 results within one unit of their rounding more.
// Built against the host emulation in CI and with nvcc on a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Gemm.h"
#include "runtime/src/model/cuda/Gemv.h"
#include "runtime/src/model/cuda/Norm.h"
#include "runtime/src/model/cuda/Rope.h"

#include "runtime/src/cpu/Numeric.h"
#include "test/unit/CudaTestUtil.h"

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

//===----------------------------------------------------------------------===//
// gemv
//===----------------------------------------------------------------------===//

/// Which GEMV form checkLinear, checkNormGemv and checkSwigluGemv run: the
/// one gemv(), normGemv() and swigluGemv() choose, the SIMT one or the
/// tensor-core one, whatever the rows.
enum class Form { Chosen, Simt, TensorCores };

/// One GEMV launch with prologue IN in form F (Chosen: through the public
/// gemv, normGemv or swigluGemv).
template <Form F, GemvIn IN, class W, class X, class Y>
std::string runGemv(const X *x, const GemvPrologue<W, X> &pro, const W *w, const W *bias,
                    const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                    int k, int splits, GemvSegments seg) {
  if constexpr (F == Form::TensorCores)
    return launchGemvTc<IN>(x, pro, w, bias, residual, y, partial, counters, m, n, k, splits,
                            nullptr, seg);
  else if constexpr (F == Form::Simt)
    return launchGemvSimt<IN>(x, pro, w, bias, residual, y, partial, counters, m, n, k, splits,
                              nullptr, seg);
  else if constexpr (IN == GemvIn::RmsNorm)
    return normGemv(x, pro.norm, pro.eps, pro.offset, w, bias, residual, y, partial, counters, m,
                    n, k, splits, nullptr, seg);
  else if constexpr (IN == GemvIn::Swiglu)
    return pro.act == GateAct::Silu
               ? swigluGemv(x, pro.up, w, bias, residual, y, partial, counters, m, n, k, splits,
                            nullptr, seg)
               : gatedGemv(pro.act, x, pro.up, w, bias, residual, y, partial, counters, m, n, k,
                           splits, nullptr, seg);
  else
    return gemv(x, w, bias, residual, y, partial, counters, m, n, k, splits, nullptr, seg);
}

/// gemv (splits >= 1, in `form`, y in seg's layout) or, with splits = 0,
/// gemm against float64.
template <class W, class X, class Y, Form F = Form::Chosen>
void checkLinear(int m, int n, int k, int splits, bool withBias, bool withResidual, unsigned seed,
                 Blas *blas = nullptr, GemvSegments seg = {}) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " splits=" + std::to_string(splits) + " form=" + std::to_string(int(F)) +
               " segments=" + std::to_string(seg.e1) + "," + std::to_string(seg.e2));
  auto x = randomValues<X>(size_t(m) * size_t(k), 1.0f, seed);
  auto w = randomValues<W>(size_t(n) * size_t(k), 1.0f, seed + 1);
  auto bias = randomValues<W>(size_t(n), 1.0f, seed + 2);
  auto residual = randomValues<Y>(size_t(m) * size_t(n), 4.0f, seed + 3);
  DeviceBuffer<X> dx(x);
  DeviceBuffer<W> dw(w), db(bias);
  DeviceBuffer<Y> dr(residual), dy(size_t(m) * size_t(n));
  DeviceBuffer<float> partial(size_t(splits) * size_t(m) * size_t(n));
  SplitCounters counters;
  if (F != Form::Chosen) {
    ASSERT_GT(splits, 0);
  }
  if (splits > 0) {
    ASSERT_EQ((runGemv<F, GemvIn::Plain>(dx.get(), GemvPrologue<W, X>{}, dw.get(),
                                         withBias ? db.get() : nullptr,
                                         withResidual ? dr.get() : nullptr, dy.get(),
                                         partial.get(), counters.get(), m, n, k, splits, seg)),
              "");
    EXPECT_EQ(counters.leftNonzero(), 0u);
  } else
    ASSERT_EQ(gemm(dx.get(), dw.get(), withBias ? db.get() : nullptr,
                   withResidual ? dr.get() : nullptr, dy.get(), m, n, k, nullptr, blas),
              "");
  auto xd = widen(x), wd = widen(w), bd = widen(bias), rd = widen(residual);
  std::vector<double> want(size_t(m) * size_t(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = withBias ? bd[size_t(j)] : 0.0;
      for (int e = 0; e < k; ++e)
        s += wd[size_t(j) * size_t(k) + size_t(e)] * xd[size_t(i) * size_t(k) + size_t(e)];
      if (withResidual)
        s += rd[size_t(i) * size_t(n) + size_t(j)];
      want[outputAt(seg, m, i, j, n)] = s;
    }
  EXPECT_LE(relativeError(dy.download(), want), tolerance<Y>());
}

TEST(CudaGemv, F32WeightsEveryRowCount) {
  for (int m = 1; m <= kGemvMaxRows; ++m)
    checkLinear<float, float, float>(m, 37, 264, 1, true, false, unsigned(m));
}

TEST(CudaGemv, HalfAndBfloat16Weights) {
  checkLinear<half, float, float>(1, 45, 520, 1, false, false, 11);
  checkLinear<half, float, float>(4, 45, 520, 1, true, true, 12);
  checkLinear<bfloat16, float, float>(3, 19, 1032, 1, true, false, 13);
  checkLinear<half, half, half>(2, 64, 512, 1, true, true, 14);
  checkLinear<bfloat16, bfloat16, bfloat16>(1, 33, 256, 1, false, true, 15);
}

// Generated code names the rows (the ROWS argument): only that count's
// kernel is compiled, and a call with other rows is refused, in the SIMT
// form (1-2 rows) and on tensor cores (3 and more), not run with no kernel.
TEST(CudaGemv, RowsCompiledIntoTheCall) {
  const int n = 16, k = 64;
  DeviceBuffer<half> x(randomValues<half>(size_t(4 * k), 1.0f, 31));
  DeviceBuffer<half> w(randomValues<half>(size_t(n * k), 1.0f, 32)), y(size_t(4 * n));
  EXPECT_EQ((gemv<half, half, half, 2>(x.get(), w.get(), nullptr, nullptr, y.get(), nullptr,
                                       nullptr, 2, n, k, 1, nullptr)),
            "");
  EXPECT_EQ((gemv<half, half, half, 2>(x.get(), w.get(), nullptr, nullptr, y.get(), nullptr,
                                       nullptr, 1, n, k, 1, nullptr)),
            "gemv: 1 rows, where the call was compiled for 2");
  EXPECT_EQ((gemv<half, half, half, 4>(x.get(), w.get(), nullptr, nullptr, y.get(), nullptr,
                                       nullptr, 3, n, k, 1, nullptr)),
            "gemv: 3 rows, where the call was compiled for 4");
}

TEST(CudaGemv, KNotAMultipleOfTheVectorWidth) {
  checkLinear<half, float, float>(2, 21, 100, 1, true, false, 21);
  checkLinear<float, float, float>(1, 9, 7, 1, false, false, 22);
  checkLinear<bfloat16, float, float>(5, 40, 1003, 1, true, true, 23);
}

TEST(CudaGemv, SplitK) {
  checkLinear<half, float, float>(1, 16, 4096, 4, true, true, 31);
  checkLinear<float, float, float>(3, 5, 2048, 3, true, false, 32);
  checkLinear<bfloat16, float, bfloat16>(8, 24, 1024, 5, false, true, 33);
  // More splits than vectors: the last splits are empty and add nothing.
  checkLinear<half, float, float>(1, 8, 64, 16, true, false, 34);
}

// The SIMT form where gemv() would take the tensor-core one (half or
// bfloat16 from kTcGemvMinRows rows): every row count, a lane's last batch
// part-filled (K = 1032 halves: 129 vectors, batches of 4 x 32), split-K,
// N not a multiple of a block's columns.
TEST(CudaGemv, SimtFormAtEveryRowCount) {
  for (int m = 1; m <= kGemvMaxRows; ++m)
    checkLinear<half, half, half, Form::Simt>(m, 45, 1032, 1 + m % 3, m % 2 == 0, m % 3 != 1,
                                              35 + unsigned(m));
  checkLinear<bfloat16, bfloat16, bfloat16, Form::Simt>(8, 70, 512, 1, true, false, 44);
  checkLinear<half, half, float, Form::Simt>(4, 16, 4096, 4, true, true, 45);
  // 16 vectors a lane: four batches, each issued before the one before it
  // is used.
  checkLinear<half, float, float>(1, 9, 4096, 1, true, false, 46);
}

// Several rows on tensor cores (GemvTensorCore.h): every row count, N not a
// multiple of 16 (columns past N dropped), warps with no chunk (K = 64:
// two chunks for eight warps), split-K with empty splits, bias and
// residual, f32 and 16-bit outputs; gemv() takes this form from
// kTcGemvMinRows rows of half or bfloat16 with K a multiple of 32.
TEST(CudaGemv, SeveralRowsOnTensorCores) {
  static_assert(kTensorCoreGemv<half, half> && kTensorCoreGemv<bfloat16, bfloat16> &&
                !kTensorCoreGemv<half, float> && !kTensorCoreGemv<float, float>);
  for (int m = 1; m <= kGemvMaxRows; ++m)
    checkLinear<half, half, float, Form::TensorCores>(m, 37, 256, 1, m % 2 == 1, m % 3 == 0,
                                                      90 + unsigned(m));
  checkLinear<bfloat16, bfloat16, bfloat16, Form::TensorCores>(8, 70, 1024, 1, true, true, 99);
  checkLinear<half, half, half, Form::TensorCores>(4, 16, 64, 1, false, true, 100);
  checkLinear<half, half, float, Form::TensorCores>(8, 24, 2048, 4, true, true, 101);
  checkLinear<bfloat16, bfloat16, float, Form::TensorCores>(3, 33, 96, 8, true, false, 102);
  // 6 chunks a warp: a second batch of 2 after the first of 4.
  checkLinear<half, half, float, Form::TensorCores>(4, 20, 1536, 1, true, false, 107);
  // Through gemv(): the tensor-core form from kTcGemvMinRows rows (the same
  // bits as launchGemvTc's), the SIMT one below them or for K not a
  // multiple of 32.
  checkLinear<half, half, half>(kTcGemvMinRows, 40, 512, 2, true, true, 103);
  checkLinear<half, half, half>(8, 40, 520, 1, true, true, 104);
  {
    const int m = 6, n = 40, k = 512;
    DeviceBuffer<half> x(randomValues<half>(size_t(m) * k, 1.0f, 105)),
        w(randomValues<half>(size_t(n) * k, 1.0f, 106)), viaGemv(size_t(m) * n),
        viaTc(size_t(m) * n);
    ASSERT_EQ(gemv(x.get(), w.get(), (const half *)nullptr, (const half *)nullptr, viaGemv.get(),
                   nullptr, nullptr, m, n, k, 1, nullptr),
              "");
    ASSERT_EQ(launchGemvTc<GemvIn::Plain>(x.get(), GemvPrologue<half, half>{}, w.get(),
                                  (const half *)nullptr, (const half *)nullptr, viaTc.get(),
                                  nullptr, nullptr, m, n, k, 1, nullptr),
              "");
    std::vector<half> a = viaGemv.download(), b = viaTc.download();
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(half)), 0);
  }
}

/// normGemv (llm.rms_norm folded into the decode GEMV) against float64:
/// y = f(x) W^T + bias + residual, f(x) = x / sqrt(mean(x^2) + eps) *
/// (norm + offset). (The kernel rounds f(x) to X as the norm's output would
/// be: within X's storage epsilon of the unrounded reference.)
template <class W, class X, class Y, Form F = Form::Chosen>
void checkNormGemv(int m, int n, int k, int splits, bool withBias, bool withResidual,
                   float offset, unsigned seed, GemvSegments seg = {}) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " splits=" + std::to_string(splits) + " offset=" + std::to_string(offset) +
               " segments=" + std::to_string(seg.e1) + "," + std::to_string(seg.e2));
  const float eps = 1e-5f;
  auto x = randomValues<X>(size_t(m) * size_t(k), 3.0f, seed);
  auto norm = randomValues<W>(size_t(k), 1.0f, seed + 1);
  auto w = randomValues<W>(size_t(n) * size_t(k), 1.0f, seed + 2);
  auto bias = randomValues<W>(size_t(n), 1.0f, seed + 3);
  auto residual = randomValues<Y>(size_t(m) * size_t(n), 4.0f, seed + 4);
  DeviceBuffer<X> dx(x);
  DeviceBuffer<W> dn(norm), dw(w), db(bias);
  DeviceBuffer<Y> dr(residual), dy(size_t(m) * size_t(n));
  DeviceBuffer<float> partial(size_t(splits) * size_t(m) * size_t(n));
  SplitCounters counters;
  const W *b = withBias ? db.get() : nullptr;
  const Y *r = withResidual ? dr.get() : nullptr;
  ASSERT_EQ((runGemv<F, GemvIn::RmsNorm>(dx.get(), GemvPrologue<W, X>{dn.get(), eps, offset},
                                         dw.get(), b, r, dy.get(), partial.get(), counters.get(),
                                         m, n, k, splits, seg)),
            "");
  EXPECT_EQ(counters.leftNonzero(), 0u);
  auto xd = widen(x), nd = widen(norm), wd = widen(w), bd = widen(bias), rd = widen(residual);
  std::vector<double> want(size_t(m) * size_t(n));
  for (int i = 0; i < m; ++i) {
    double squares = 0;
    for (int e = 0; e < k; ++e)
      squares += xd[size_t(i) * size_t(k) + size_t(e)] * xd[size_t(i) * size_t(k) + size_t(e)];
    double inv = 1.0 / std::sqrt(squares / k + eps);
    std::vector<double> f(static_cast<size_t>(k));
    for (int e = 0; e < k; ++e)
      f[size_t(e)] = xd[size_t(i) * size_t(k) + size_t(e)] * inv * (nd[size_t(e)] + offset);
    for (int j = 0; j < n; ++j) {
      double s = withBias ? bd[size_t(j)] : 0.0;
      for (int e = 0; e < k; ++e)
        s += wd[size_t(j) * size_t(k) + size_t(e)] * f[size_t(e)];
      if (withResidual)
        s += rd[size_t(i) * size_t(n) + size_t(j)];
      want[outputAt(seg, m, i, j, n)] = s;
    }
  }
  EXPECT_LE(relativeError(dy.download(), want), tolerance<Y>() + storageEpsilon<X>());
}

TEST(CudaGemv, NormFoldedIn) {
  checkNormGemv<float, float, float>(2, 37, 264, 1, true, false, 0.0f, 61);
  checkNormGemv<float, float, float>(1, 20, 128, 1, false, true, 1.0f, 62); // 1 + w
  checkNormGemv<half, half, half>(1, 64, 512, 1, false, true, 0.0f, 63);
  checkNormGemv<half, half, half>(3, 40, 1024, 4, true, true, 0.0f, 64); // split-K
  checkNormGemv<bfloat16, bfloat16, bfloat16>(8, 24, 1003, 1, true, false, 0.0f, 65);
  checkNormGemv<half, float, float>(5, 16, 2048, 2, false, false, 0.0f, 66);
  // The largest rows the shared memory holds: 8 x 2048 halves (a 1B Llama
  // at batch 8), and 2 x 5120 floats.
  checkNormGemv<half, half, half>(8, 16, 2048, 1, false, true, 0.0f, 67);
  checkNormGemv<float, float, float>(2, 9, 5120, 1, true, false, 0.0f, 68);
  // Each form whatever the rows (gemv() picks by rows).
  checkNormGemv<half, half, half, Form::Simt>(3, 40, 1024, 4, true, true, 0.0f, 69);
  checkNormGemv<half, half, half, Form::Simt>(8, 70, 2048, 1, false, true, 0.0f, 70);
  checkNormGemv<bfloat16, bfloat16, bfloat16, Form::Simt>(8, 24, 1003, 1, true, false, 1.0f, 71);
  checkNormGemv<half, half, half, Form::TensorCores>(8, 40, 1024, 1, true, true, 0.0f, 72);
  checkNormGemv<bfloat16, bfloat16, float, Form::TensorCores>(3, 17, 2048, 2, false, false, 1.0f,
                                                              73);
  checkNormGemv<half, half, half, Form::TensorCores>(1, 64, 512, 1, false, true, 0.0f, 74);
  // f32 norm weights beside 16-bit x: the norm's vectors read in two loads.
  checkNormGemv<float, half, half>(2, 24, 512, 1, true, true, 0.0f, 75);
  checkNormGemv<float, bfloat16, float>(3, 10, 1024, 2, false, false, 1.0f, 76);
  // Without the norm's weights, or with more normalised inputs than the
  // shared memory holds (8 x 2048 floats): refused.
  EXPECT_NE((normGemv<half, half, half>(nullptr, nullptr, 1e-5f, 0.0f, nullptr, nullptr, nullptr,
                                        nullptr, nullptr, nullptr, 1, 4, 8, 1, nullptr)),
            "");
  DeviceBuffer<float> x(size_t(8 * 2048)), norm(size_t(2048)), w(size_t(2048 * 8)), y(size_t(64));
  EXPECT_NE((normGemv<float, float, float>(x.get(), norm.get(), 1e-5f, 0.0f, w.get(), nullptr,
                                           nullptr, y.get(), nullptr, nullptr, 8, 8, 2048, 1,
                                           nullptr)),
            "");
}

TEST(CudaGemm, TilesAndEdges) {
  checkLinear<float, float, float>(64, 64, 16, 0, false, false, 41);   // one tile, one step
  checkLinear<float, float, float>(100, 37, 70, 0, true, true, 42);    // partial tiles and steps
  checkLinear<half, half, half>(17, 130, 64, 0, true, false, 43);
  checkLinear<bfloat16, float, float>(65, 64, 33, 0, false, true, 44);
}

// Half and bfloat16 X and W run on the tensor cores (tc:: tiles): one tile
// and step, partial tiles, a partial last step of K, several steps, and an
// output type other than the inputs'.
TEST(CudaGemm, TensorCoreTiles) {
  static_assert(kTensorCoreGemm<half, half> && kTensorCoreGemm<bfloat16, bfloat16> &&
                !kTensorCoreGemm<half, float>);
  checkLinear<half, half, half>(64, 64, 32, 0, false, false, 51);
  checkLinear<half, half, float>(100, 70, 40, 0, true, true, 52);
  checkLinear<bfloat16, bfloat16, bfloat16>(33, 129, 96, 0, true, false, 53);
  checkLinear<bfloat16, bfloat16, float>(130, 20, 200, 0, false, true, 54);
}

/// One warp: D = A B + C through tc::mma16816, each lane packing its
/// fragments from A [16][16], B [8][16] (column n's k contiguous) and C
/// [16][8] by PTX's layout and writing its results back by it.
template <class T>
LLMC_GLOBAL void mmaKernel(const T *a, const T *b, const float *c, float *d) {
  LLMC_KERNEL_BEGIN();
  int lane = int(threadIdx.x), g = lane / 4, t = lane % 4;
  unsigned fa[4], fb[2];
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r % 2), k = 2 * t + 8 * (r / 2);
    fa[r] = tc::pack(a[row * 16 + k], a[row * 16 + k + 1]);
  }
  for (int r = 0; r < 2; ++r) {
    int k = 2 * t + 8 * r;
    fb[r] = tc::pack(b[g * 16 + k], b[g * 16 + k + 1]);
  }
  float acc[4];
  for (int i = 0; i < 4; ++i)
    acc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  tc::mma16816<T>(acc, fa, fb);
  for (int i = 0; i < 4; ++i)
    d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}

// PTX's m16n8k16 fragment layout, which the emulation reproduces and
// kernels may index (the GPU run holds the emulation to the instruction).
template <class T> void checkMma16816(unsigned seed) {
  auto a = randomValues<T>(16 * 16, 1.0f, seed);
  auto b = randomValues<T>(8 * 16, 1.0f, seed + 1);
  auto c = randomValues<float>(16 * 8, 1.0f, seed + 2);
  DeviceBuffer<T> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(16 * 8);
  ASSERT_EQ(launch(mmaKernel<T>, dim3(1), dim3(32), 0, nullptr, da.get(), db.get(), dc.get(),
                   dd.get()),
            "");
  ASSERT_EQ(synchronize(), "");
  auto ad = widen(a), bd = widen(b);
  std::vector<double> want(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      double sum = c[size_t(i * 8 + n)];
      for (int k = 0; k < 16; ++k)
        sum += ad[size_t(i * 16 + k)] * bd[size_t(n * 16 + k)];
      want[size_t(i * 8 + n)] = sum;
    }
  EXPECT_LE(relativeError(dd.download(), want), kF32Tolerance);
}

TEST(CudaTensorCore, Mma16816FragmentsAsPtxLaysThemOut) {
  checkMma16816<half>(71);
  checkMma16816<bfloat16>(72);
}

/// One warp: four 8 x 8 matrices of 16-bit values (matrix i's row r at
/// src[(8 i + r) * 8]) into shared memory by cp.async, rows 24 elements
/// apart (matrix 3's row 7 zero-filled), then each lane's registers from
/// tc::ldmatrix and tc::ldmatrixTrans into out [2][32][4].
LLMC_GLOBAL void ldmatrixKernel(const uint16_t *src, unsigned *out) {
  LLMC_KERNEL_BEGIN();
  LLMC_DYNAMIC_SHARED(uint16_t, rows);
  unsigned lane = threadIdx.x;
  asyncCopy16(rows + lane * 24, src + lane * 8, lane != 31);
  asyncCommit();
  asyncWait<0>();
  __syncthreads();
  unsigned r[4];
  tc::ldmatrix(r, rows + lane * 24);
  for (int i = 0; i < 4; ++i)
    out[lane * 4 + unsigned(i)] = r[i];
  tc::ldmatrixTrans(r, rows + lane * 24);
  for (int i = 0; i < 4; ++i)
    out[128 + lane * 4 + unsigned(i)] = r[i];
}

// PTX's ldmatrix layouts (the attention's fragments come from them), with
// the values computed here from PTX's description.
TEST(CudaTensorCore, LdmatrixFragmentsAsPtxLaysThemOut) {
  std::vector<uint16_t> src(256);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint16_t(i * 37 + 11);
  DeviceBuffer<uint16_t> dsrc(src);
  DeviceBuffer<unsigned> out(256);
  ASSERT_EQ(launch(ldmatrixKernel, dim3(1), dim3(32), 32 * 24 * sizeof(uint16_t), nullptr,
                   dsrc.get(), out.get()),
            "");
  std::vector<unsigned> got = out.download();
  auto at = [&](int m, int row, int col) {
    return m == 3 && row == 7 ? 0u : unsigned(src[size_t((8 * m + row) * 8 + col)]);
  };
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      int g = lane / 4, t = lane % 4;
      EXPECT_EQ(got[size_t(lane * 4 + i)], at(i, g, 2 * t) | at(i, g, 2 * t + 1) << 16)
          << "lane " << lane << " register " << i;
      EXPECT_EQ(got[size_t(128 + lane * 4 + i)], at(i, 2 * t, g) | at(i, 2 * t + 1, g) << 16)
          << "trans: lane " << lane << " register " << i;
    }
}

// On a GPU, 16-bit GEMMs go to cuBLASLt (Blas.h) when it opens; the GPU
// build requires it to (the CUDA toolkit's library, or LLMC_CUDA_CUBLASLT=0
// to test without). The emulation has none: gemm runs llmc's kernels.
TEST(CudaGemm, CublasLtWhereThere) {
  Blas blas;
  ASSERT_EQ(blas.open(), "");
#if defined(__CUDACC__)
  ASSERT_EQ(blas.ready(), Blas::wanted()) << "libcublasLt did not open";
  { // A library named by LLMC_CUDA_CUBLASLT that does not open: a clear error.
    const char *was = std::getenv("LLMC_CUDA_CUBLASLT");
    std::string saved = was ? was : "";
    setenv("LLMC_CUDA_CUBLASLT", "/nonexistent/libcublasLt.so", 1);
    Blas named;
    std::string e = named.open();
    if (was)
      setenv("LLMC_CUDA_CUBLASLT", saved.c_str(), 1);
    else
      unsetenv("LLMC_CUDA_CUBLASLT");
    EXPECT_NE(e.find("LLMC_CUDA_CUBLASLT names /nonexistent/libcublasLt.so, which does not open"),
              std::string::npos)
        << e;
    EXPECT_FALSE(named.ready());
  }
#else
  ASSERT_FALSE(blas.ready());
#endif
  if (blas.ready()) { // cuBLASLt itself takes these (no fallback hides a refusal)
    DeviceBuffer<half> x(size_t(64) * 64), w(size_t(64) * 64), y(size_t(64) * 64);
    bool ran = false;
    ASSERT_EQ(blas.matmul(x.get(), w.get(), (const half *)nullptr, (const half *)nullptr, y.get(),
                          64, 64, 64, nullptr, &ran),
              "");
    EXPECT_TRUE(ran);
  }
  checkLinear<half, half, half>(64, 64, 32, 0, false, false, 61, &blas);
  checkLinear<half, half, half>(100, 72, 40, 0, true, true, 62, &blas);
  checkLinear<bfloat16, bfloat16, bfloat16>(130, 128, 96, 0, true, true, 64, &blas);
  checkLinear<half, half, half>(300, 256, 512, 0, false, true, 66, &blas);
  // llmc's kernels: rows not 16-byte aligned (on an H200 cuBLASLt's result
  // for 100 x 70 x 40 with a residual was past this tolerance), f32 out.
  checkLinear<half, half, half>(100, 70, 40, 0, true, true, 62, &blas);
  checkLinear<half, half, half>(3, 37, 13, 0, true, false, 63, &blas);
  checkLinear<bfloat16, bfloat16, bfloat16>(130, 129, 96, 0, true, true, 64, &blas);
  checkLinear<half, half, float>(17, 64, 64, 0, true, true, 65, &blas);
}

// A merged projection's output in column ranges (q, k, v: three; gate and
// up: two), each a [M, width] block of its own: both forms, with split-K
// (the ranges written by the last block of a column group) and a column
// group that spans two ranges, and normGemv.
TEST(CudaGemv, OutputInColumnRanges) {
  checkLinear<half, half, half, Form::Simt>(2, 48, 512, 2, true, false, 120, nullptr, {32, 40});
  checkLinear<float, float, float, Form::Simt>(1, 20, 64, 1, false, false, 121, nullptr, {13, 0});
  checkLinear<half, half, float, Form::TensorCores>(8, 40, 256, 1, true, false, 122, nullptr,
                                                    {24, 0});
  checkLinear<bfloat16, bfloat16, bfloat16, Form::TensorCores>(5, 56, 512, 2, false, false, 123,
                                                               nullptr, {20, 44});
  checkNormGemv<half, half, half, Form::Simt>(2, 36, 256, 2, false, false, 0.0f, 124, {12, 30});
  checkNormGemv<half, half, half, Form::TensorCores>(8, 48, 512, 1, true, false, 1.0f, 125,
                                                     {32, 40});
}

/// swigluGemv (llm.swiglu folded into the decode GEMV), or gatedGemv with
/// another act (Gemma's GELU-gated product), against float64: y =
/// (act(gate) * up) W^T + bias + residual. (The kernel rounds act(gate) *
/// up to X as the element-wise kernel's output would be: within X's
/// storage epsilon of the unrounded reference.)
template <class W, class X, class Y, Form F = Form::Chosen>
void checkSwigluGemv(int m, int n, int k, int splits, bool withBias, bool withResidual,
                     unsigned seed, GemvSegments seg = {}, GateAct act = GateAct::Silu) {
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " splits=" + std::to_string(splits) + " form=" + std::to_string(int(F)) +
               " segments=" + std::to_string(seg.e1) + "," + std::to_string(seg.e2) +
               " act=" + std::to_string(int(act)));
  auto gate = randomValues<X>(size_t(m) * size_t(k), 4.0f, seed);
  auto up = randomValues<X>(size_t(m) * size_t(k), 1.0f, seed + 1);
  auto w = randomValues<W>(size_t(n) * size_t(k), 1.0f, seed + 2);
  auto bias = randomValues<W>(size_t(n), 1.0f, seed + 3);
  auto residual = randomValues<Y>(size_t(m) * size_t(n), 4.0f, seed + 4);
  DeviceBuffer<X> dg(gate), du(up);
  DeviceBuffer<W> dw(w), db(bias);
  DeviceBuffer<Y> dr(residual), dy(size_t(m) * size_t(n));
  DeviceBuffer<float> partial(size_t(splits) * size_t(m) * size_t(n));
  SplitCounters counters;
  const W *b = withBias ? db.get() : nullptr;
  const Y *r = withResidual ? dr.get() : nullptr;
  ASSERT_EQ((runGemv<F, GemvIn::Swiglu>(dg.get(),
                                        GemvPrologue<W, X>{nullptr, 0.0f, 0.0f, du.get(), act},
                                        dw.get(), b, r, dy.get(), partial.get(), counters.get(), m,
                                        n, k, splits, seg)),
            "");
  EXPECT_EQ(counters.leftNonzero(), 0u);
  auto gd = widen(gate), ud = widen(up), wd = widen(w), bd = widen(bias), rd = widen(residual);
  std::vector<double> want(size_t(m) * size_t(n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = withBias ? bd[size_t(j)] : 0.0;
      for (int e = 0; e < k; ++e) {
        size_t at = size_t(i) * size_t(k) + size_t(e);
        s += wd[size_t(j) * size_t(k) + size_t(e)] * gateReference(act, gd[at]) * ud[at];
      }
      if (withResidual)
        s += rd[size_t(i) * size_t(n) + size_t(j)];
      want[outputAt(seg, m, i, j, n)] = s;
    }
  EXPECT_LE(relativeError(dy.download(), want), tolerance<Y>() + storageEpsilon<X>());
}

// Each block computes its split's values of silu(gate) * up once into
// shared memory: one and several splits (each its own range of K, the
// last one's reaching past the last whole vector), K not a multiple of the
// vector width (element by element), both forms, f32 and 16-bit, and the
// output in column ranges.
TEST(CudaGemv, SwigluFoldedIn) {
  checkSwigluGemv<float, float, float>(1, 24, 512, 1, true, true, 130);
  checkSwigluGemv<half, half, half>(2, 40, 2048, 4, false, true, 131);
  checkSwigluGemv<half, half, float, Form::Simt>(1, 16, 1003, 1, true, false, 132);
  checkSwigluGemv<bfloat16, bfloat16, bfloat16, Form::Simt>(3, 33, 1024, 3, true, true, 133);
  checkSwigluGemv<half, half, half, Form::TensorCores>(8, 40, 1024, 2, true, true, 134);
  checkSwigluGemv<bfloat16, bfloat16, float, Form::TensorCores>(4, 17, 512, 1, false, false, 135);
  checkSwigluGemv<half, half, half, Form::TensorCores>(8, 48, 512, 4, false, false, 136,
                                                       {32, 0});
  // A split count that leaves the last splits without vectors (5 of them,
  // 8 splits).
  checkSwigluGemv<float, float, float, Form::Simt>(1, 8, 20, 8, false, false, 137);
  // f32 weights over half x: a split's range starts at a multiple of 4, not
  // of x's 8-value vectors (element by element).
  checkSwigluGemv<float, half, float, Form::Simt>(2, 24, 520, 4, true, false, 138);
}

// Gemma's GELU-gated product before the down projection (gatedGemv): the
// tanh and the erf GELU, in both forms, one and several splits, f32 and
// 16-bit. (Each act's formula is what fails if another act is taken: at
// gate values up to 4 the three differ by far more than the tolerance.)
TEST(CudaGemv, GeluGateFoldedIn) {
  for (GateAct act : {GateAct::GeluTanh, GateAct::GeluErf}) {
    checkSwigluGemv<float, float, float>(1, 24, 512, 1, true, true, 140, {}, act);
    checkSwigluGemv<half, half, half>(2, 40, 2048, 4, false, true, 141, {}, act);
    checkSwigluGemv<bfloat16, bfloat16, bfloat16, Form::Simt>(3, 33, 1024, 3, true, true, 142, {},
                                                               act);
    checkSwigluGemv<half, half, half, Form::TensorCores>(8, 40, 1024, 2, true, true, 143, {}, act);
    checkSwigluGemv<float, float, float, Form::Simt>(1, 8, 20, 8, false, false, 144, {}, act);
  }
}

TEST(CudaGemv, SplitCountFillsTheDevice) {
  EXPECT_EQ(gemvSplits(4096, 4096, 2, 132), 1);
  EXPECT_GT(gemvSplits(64, 8192, 2, 132), 1);
  EXPECT_EQ(gemvSplits(64, 64, 2, 132), 1);
}

TEST(CudaGemv, RejectsBadArguments) {
  EXPECT_NE((gemv<float, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       nullptr, 9, 4, 4, 1, nullptr)),
            "");
  EXPECT_NE((gemv<half, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      1, 4, 12, 2, nullptr)),
            "");
  // Split-K without the split counters, or with more column groups than
  // there are counters: refused.
  DeviceBuffer<float> partial(size_t(2 * 4));
  EXPECT_NE((gemv<float, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, partial.get(),
                                       nullptr, 1, 4, 64, 2, nullptr)),
            "");
  SplitCounters counters;
  EXPECT_NE((gemv<float, float, float>(nullptr, nullptr, nullptr, nullptr, nullptr, partial.get(),
                                       counters.get(), 1, (kSplitCounters + 1) * kGemvWarps, 64,
                                       2, nullptr)),
            "");
  // Output ranges out of order, past N, a second end without a first, or
  // with a residual (read as [M, N]): refused.
  DeviceBuffer<float> x(size_t(64)), w(size_t(8 * 64)), y(size_t(8));
  auto segmented = [&](GemvSegments seg, const float *residual) {
    return gemv<float, float, float>(x.get(), w.get(), nullptr, residual, y.get(), nullptr,
                                     nullptr, 1, 8, 64, 1, nullptr, seg);
  };
  EXPECT_EQ(segmented({3, 5}, nullptr), "");
  EXPECT_EQ(segmented({5, 3}, nullptr), "gemv: invalid output segments");
  EXPECT_EQ(segmented({8, 0}, nullptr), "gemv: invalid output segments");
  EXPECT_EQ(segmented({3, 8}, nullptr), "gemv: invalid output segments");
  EXPECT_EQ(segmented({0, 3}, nullptr), "gemv: invalid output segments");
  EXPECT_EQ(segmented({3, 0}, y.get()), "gemv: output segments with a residual");
  // swigluGemv without up, or rows larger than its shared memory.
  EXPECT_EQ((swigluGemv<float, float, float>(x.get(), nullptr, w.get(), nullptr, nullptr, y.get(),
                                             nullptr, nullptr, 1, 8, 64, 1, nullptr)),
            "gemv: invalid arguments");
  DeviceBuffer<half> big(size_t(2) * 16384);
  DeviceBuffer<half> bigW(size_t(8) * 16384), bigY(size_t(16));
  EXPECT_NE((swigluGemv<half, half, half>(big.get(), big.get(), bigW.get(), nullptr, nullptr,
                                          bigY.get(), nullptr, nullptr, 2, 8, 16384, 1, nullptr)),
            "");
}

//===----------------------------------------------------------------------===//
// rms_norm
//===----------------------------------------------------------------------===//

/// rmsNorm against float64; withAfter: y = after + norm (a norm after a
/// block added to the residual stream, Gemma 2's), written over `after`
/// itself when inPlace (the memory plan may give the sum after's place).
template <class X, class Wt, class Y>
void checkRmsNorm(int rows, int h, bool withResidual, float offset, unsigned seed,
                  bool withAfter = false, bool inPlace = false) {
  SCOPED_TRACE("rows=" + std::to_string(rows) + " h=" + std::to_string(h) +
               " after=" + std::to_string(withAfter) + " inPlace=" + std::to_string(inPlace));
  auto x = randomValues<X>(size_t(rows) * size_t(h), 2.0f, seed);
  auto r = randomValues<X>(size_t(rows) * size_t(h), 2.0f, seed + 1);
  auto w = randomValues<Wt>(size_t(h), 1.5f, seed + 2);
  auto a = randomValues<Y>(size_t(rows) * size_t(h), 4.0f, seed + 3);
  DeviceBuffer<X> dx(x), dr(r), dsum(x.size());
  DeviceBuffer<Wt> dw(w);
  DeviceBuffer<Y> dy(x.size()), da(a);
  float eps = 1e-5f;
  Y *out = inPlace ? da.get() : dy.get();
  ASSERT_EQ(rmsNorm(dx.get(), withResidual ? dr.get() : nullptr,
                    withResidual ? dsum.get() : nullptr, dw.get(), out, rows, h, eps, offset,
                    nullptr, withAfter ? da.get() : static_cast<const Y *>(nullptr)),
            "");
  auto xd = widen(x), rd = widen(r), wd = widen(w);
  std::vector<double> want(x.size()), sums(x.size());
  for (int i = 0; i < rows; ++i) {
    double ss = 0;
    for (int j = 0; j < h; ++j) {
      size_t at = size_t(i) * size_t(h) + size_t(j);
      // The norm is of the exact sum; only the stored sum is rounded to X.
      sums[at] = xd[at] + (withResidual ? rd[at] : 0.0);
      ss += sums[at] * sums[at];
    }
    double inv = 1.0 / std::sqrt(ss / h + eps);
    for (int j = 0; j < h; ++j) {
      size_t at = size_t(i) * size_t(h) + size_t(j);
      want[at] = sums[at] * inv * (wd[size_t(j)] + offset) +
                 (withAfter ? double(toFloat(a[at])) : 0.0);
    }
  }
  // (With after, two roundings to Y: the norm's, as llm.rms_norm's output
  // would be, and the sum's.)
  EXPECT_LE(relativeError(inPlace ? da.download() : dy.download(), want),
            tolerance<Y>() + (withAfter ? storageEpsilon<Y>() : 0.0));
  if (withResidual) {
    EXPECT_LE(relativeError(dsum.download(), sums), tolerance<X>());
  }
}

TEST(CudaRmsNorm, Plain) {
  checkRmsNorm<float, float, float>(3, 64, false, 0.0f, 1);
  checkRmsNorm<float, half, float>(2, 1000, false, 0.0f, 2);
  checkRmsNorm<half, half, half>(4, 768, false, 0.0f, 3);
}

// A norm after a block, added to the residual stream in the same launch
// (Gemma 2's and 3's sandwich norms): into another buffer and over the
// residual itself, f32 and half, Gemma's 1 + w.
TEST(CudaRmsNorm, AddedAfter) {
  checkRmsNorm<float, float, float>(1, 64, false, 1.0f, 11, true);
  checkRmsNorm<half, half, half>(3, 768, false, 0.0f, 12, true, true);
  checkRmsNorm<bfloat16, bfloat16, bfloat16>(2, 1000, false, 1.0f, 13, true, true);
}

/// rmsNormPair (Qwen 3's query and key head norms in one launch) against
/// float64: each norm with its own rows, weights, epsilon and offset.
template <class X, class Wt, class Y> void checkRmsNormPair(int rows1, int rows2, int h) {
  SCOPED_TRACE("rows=" + std::to_string(rows1) + "+" + std::to_string(rows2) +
               " h=" + std::to_string(h));
  auto x1 = randomValues<X>(size_t(rows1) * size_t(h), 2.0f, 21);
  auto x2 = randomValues<X>(size_t(rows2) * size_t(h), 3.0f, 22);
  auto w1 = randomValues<Wt>(size_t(h), 1.5f, 23), w2 = randomValues<Wt>(size_t(h), 1.5f, 24);
  DeviceBuffer<X> dx1(x1), dx2(x2);
  DeviceBuffer<Wt> dw1(w1), dw2(w2);
  DeviceBuffer<Y> dy1(x1.size()), dy2(x2.size());
  ASSERT_EQ(rmsNormPair(dx1.get(), dw1.get(), dy1.get(), rows1, 1e-6f, 0.0f, dx2.get(), dw2.get(),
                        dy2.get(), rows2, 1e-2f, 1.0f, h, nullptr),
            "");
  auto want = [&](const std::vector<X> &x, const std::vector<Wt> &w, double eps, double offset) {
    auto xd = widen(x), wd = widen(w);
    std::vector<double> y(xd.size());
    for (size_t r = 0; r < xd.size() / size_t(h); ++r) {
      double ss = 0;
      for (int j = 0; j < h; ++j)
        ss += xd[r * size_t(h) + size_t(j)] * xd[r * size_t(h) + size_t(j)];
      double inv = 1.0 / std::sqrt(ss / h + eps);
      for (int j = 0; j < h; ++j)
        y[r * size_t(h) + size_t(j)] = xd[r * size_t(h) + size_t(j)] * inv * (wd[size_t(j)] + offset);
    }
    return y;
  };
  EXPECT_LE(relativeError(dy1.download(), want(x1, w1, 1e-6, 0.0)), tolerance<Y>());
  EXPECT_LE(relativeError(dy2.download(), want(x2, w2, 1e-2, 1.0)), tolerance<Y>());
}

// Two norms in one launch: each half of the blocks takes its own rows,
// weights, epsilon (1e-2 against 1e-6 shows in the result) and offset.
TEST(CudaRmsNorm, Pair) {
  checkRmsNormPair<float, float, float>(2, 1, 16);
  checkRmsNormPair<half, half, half>(8, 2, 128);
  checkRmsNormPair<bfloat16, bfloat16, bfloat16>(32, 8, 64);
  EXPECT_EQ((rmsNormPair<float, float, float>(nullptr, nullptr, nullptr, 0, 0.0f, 0.0f, nullptr,
                                              nullptr, nullptr, 1, 0.0f, 0.0f, 16, nullptr)),
            "rms_norm: invalid arguments");
}

template <class X, class Wt, class Y> void checkLayerNorm(int rows, int h, bool withBias) {
  SCOPED_TRACE("rows=" + std::to_string(rows) + " h=" + std::to_string(h));
  auto x = randomValues<X>(size_t(rows) * size_t(h), 2.0f, 71);
  auto w = randomValues<Wt>(size_t(h), 1.5f, 72);
  auto b = randomValues<Wt>(size_t(h), 1.0f, 73);
  for (size_t i = 0; i < x.size(); ++i) // an offset the mean must remove
    x[i] = fromFloat<X>(toFloat(x[i]) + 3.0f);
  DeviceBuffer<X> dx(x);
  DeviceBuffer<Wt> dw(w), db(b);
  DeviceBuffer<Y> dy(x.size());
  ASSERT_EQ(layerNorm(dx.get(), dw.get(), withBias ? db.get() : nullptr, dy.get(), rows, h, 1e-5f,
                      nullptr),
            "");
  auto xd = widen(x), wd = widen(w), bd = widen(b);
  std::vector<double> want(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < h; ++j)
      mean += xd[size_t(r * h + j)];
    mean /= h;
    for (int j = 0; j < h; ++j)
      var += (xd[size_t(r * h + j)] - mean) * (xd[size_t(r * h + j)] - mean);
    var /= h;
    for (int j = 0; j < h; ++j)
      want[size_t(r * h + j)] = (xd[size_t(r * h + j)] - mean) / std::sqrt(var + 1e-5) *
                                    wd[size_t(j)] + (withBias ? bd[size_t(j)] : 0.0);
  }
  EXPECT_LE(relativeError(dy.download(), want), tolerance<Y>());
}

TEST(CudaLayerNorm, WithAndWithoutBias) {
  checkLayerNorm<float, float, float>(3, 64, true);
  checkLayerNorm<float, float, float>(2, 1000, false);
  checkLayerNorm<half, half, half>(4, 768, true);
}

TEST(CudaRmsNorm, WithResidualAndGemmaOffset) {
  checkRmsNorm<float, float, float>(5, 300, true, 1.0f, 4);
  checkRmsNorm<bfloat16, bfloat16, bfloat16>(2, 2048, true, 1.0f, 5);
}

//===----------------------------------------------------------------------===//
// rope, embedding, cache writes
//===----------------------------------------------------------------------===//

template <class T>
void checkRope(int b, int s, int n, int d, int r, bool interleaved, bool perBatch, bool inPlace) {
  SCOPED_TRACE("d=" + std::to_string(d) + " r=" + std::to_string(r) +
               (interleaved ? " interleaved" : "") + (perBatch ? " per-batch" : ""));
  int p = 50;
  RopeTables tables(p, r ? r : d);
  auto x = randomValues<T>(size_t(b) * size_t(s) * size_t(n) * size_t(d), 1.0f, 3);
  std::vector<int64_t> positions = ropePositions(b, s, perBatch, p);
  DeviceBuffer<T> dx(x), dy(x.size());
  DeviceBuffer<float> dc(tables.cosT), ds(tables.sinT);
  DeviceBuffer<int64_t> dp(positions);
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  T *out = inPlace ? dx.get() : dy.get();
  ASSERT_EQ(rope(dx.get(), out, dc.get(), ds.get(), dp.get(), perBatch, b, s, n, d, r, p,
                 interleaved, err.get(), nullptr),
            "");
  std::vector<T> got = inPlace ? dx.download() : dy.download();
  EXPECT_LE(relativeError(got, ropeReference(x, tables, positions, b, s, n, d, r, interleaved,
                                             perBatch)),
            tolerance<T>());
  EXPECT_EQ(err.download()[0], 0u);
}

TEST(CudaRope, HalfRotationAndInterleaved) {
  checkRope<float>(2, 5, 3, 16, 0, false, true, false);
  checkRope<float>(1, 7, 4, 32, 0, true, false, true);
  checkRope<half>(2, 3, 2, 64, 0, false, false, true);
  checkRope<bfloat16>(1, 4, 2, 64, 0, true, true, false);
}

TEST(CudaRope, PartialRotaryDimension) {
  checkRope<float>(1, 6, 2, 32, 16, false, false, false);
  checkRope<half>(2, 2, 3, 64, 32, true, true, true);
}

// Queries and keys (different head counts, either larger) in one launch,
// each against its float64 rope.
TEST(CudaRope, PairOfTensorsInOneLaunch) {
  for (auto [n0, n1] : {std::pair{8, 2}, std::pair{1, 3}}) {
    SCOPED_TRACE("n0=" + std::to_string(n0) + " n1=" + std::to_string(n1));
    int b = 2, s = 3, d = 32, r = 0, p = 40;
    RopeTables tables(p, d);
    std::vector<int64_t> positions = ropePositions(b, s, true, p);
    auto x0 = randomValues<half>(size_t(b * s * n0 * d), 1.0f, 7);
    auto x1 = randomValues<half>(size_t(b * s * n1 * d), 1.0f, 8);
    DeviceBuffer<half> dx0(x0), dx1(x1), dy0(x0.size()), dy1(x1.size());
    DeviceBuffer<float> dc(tables.cosT), ds(tables.sinT);
    DeviceBuffer<int64_t> dp(positions);
    DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
    ASSERT_EQ(ropePair(dx0.get(), dy0.get(), n0, dx1.get(), dy1.get(), n1, dc.get(), ds.get(),
                       dp.get(), true, b, s, d, r, p, false, err.get(), nullptr),
              "");
    EXPECT_LE(relativeError(dy0.download(),
                            ropeReference(x0, tables, positions, b, s, n0, d, r, false, true)),
              tolerance<half>());
    EXPECT_LE(relativeError(dy1.download(),
                            ropeReference(x1, tables, positions, b, s, n1, d, r, false, true)),
              tolerance<half>());
    EXPECT_EQ(err.download()[0], 0u);
  }
}

TEST(CudaRope, PositionOutsideTheTablesIsReported) {
  std::vector<float> x(2 * 8, 1.0f), table(4 * 4, 0.5f);
  std::vector<int64_t> positions = {1, 4}; // 4 is past the 4-row tables
  DeviceBuffer<float> dx(x), dc(table), ds(table);
  DeviceBuffer<int64_t> dp(positions);
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  ASSERT_EQ(rope(dx.get(), dx.get(), dc.get(), ds.get(), dp.get(), false, 1, 2, 1, 8, 0, 4, false,
                 err.get(), nullptr),
            "");
  unsigned long long word = err.download()[0];
  EXPECT_EQ(word >> 32, kPositionOutOfRange);
  EXPECT_EQ(word & 0xffffffffu, 1u);
  EXPECT_NE(describeDeviceError(word).find("position at index 1"), std::string::npos);
}

/// The rows gathered; with `scaled`, each value times sqrt(h) rounded to T
/// (Gemma's scaling), as float64's product rounded to T (the one rounding
/// the graph's Mul makes: exact for these types).
template <class T> void checkEmbedding(int h, bool scaled = false) {
  SCOPED_TRACE("h=" + std::to_string(h) + (scaled ? " scaled" : ""));
  int vocab = 11;
  auto table = randomValues<T>(size_t(vocab) * size_t(h), 1.0f, 9);
  std::vector<int64_t> ids = {3, 0, 10, 3, 7};
  T scale = fromFloat<T>(std::sqrt(float(h)));
  DeviceBuffer<T> dt(table), dout(ids.size() * size_t(h)), ds(std::vector<T>{scale});
  DeviceBuffer<int64_t> di(ids);
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  ASSERT_EQ(embedding(dt.get(), di.get(), dout.get(), int(ids.size()), vocab, h, err.get(), nullptr,
                      scaled ? ds.get() : nullptr),
            "");
  std::vector<T> got = dout.download();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int j = 0; j < h; ++j) {
      T x = table[size_t(ids[i]) * size_t(h) + size_t(j)];
      double want = scaled ? double(toFloat(fromFloat<T>(float(double(toFloat(x)) *
                                                                double(toFloat(scale))))))
                           : double(toFloat(x));
      ASSERT_EQ(double(toFloat(got[i * size_t(h) + size_t(j)])), want) << i << " " << j;
    }
  EXPECT_EQ(err.download()[0], 0u);
}

TEST(CudaEmbedding, GathersRows) {
  checkEmbedding<float>(64);
  checkEmbedding<half>(72);
  checkEmbedding<bfloat16>(13); // not a whole number of vectors
}

// Gemma's scaling of the embeddings (a Mul by sqrt(hidden)) in the gather's
// launch: 16-byte vectors and the element loop.
TEST(CudaEmbedding, ScalesRowsInTheSameLaunch) {
  checkEmbedding<float>(64, true);
  checkEmbedding<half>(72, true);
  checkEmbedding<bfloat16>(13, true);
  checkEmbedding<bfloat16>(2048, true);
}

TEST(CudaEmbedding, IdOutsideTheVocabularyIsReportedAndZeroed) {
  std::vector<float> table(4 * 8, 2.0f);
  std::vector<int64_t> ids = {1, -1, 4};
  DeviceBuffer<float> dt(table), dout(3 * 8);
  DeviceBuffer<int64_t> di(ids);
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  ASSERT_EQ(embedding(dt.get(), di.get(), dout.get(), 3, 4, 8, err.get(), nullptr), "");
  std::vector<float> got = dout.download();
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(got[size_t(j)], 2.0f);
    EXPECT_EQ(got[size_t(8 + j)], 0.0f);
    EXPECT_EQ(got[size_t(16 + j)], 0.0f);
  }
  unsigned long long word = err.download()[0];
  EXPECT_EQ(word >> 32, kTokenOutOfRange);
  EXPECT_TRUE((word & 0xffffffffu) == 1u || (word & 0xffffffffu) == 2u);
}

// The rows of the hidden state a prefill's logits tail runs on: rows row0
// .. row0 + r - 1 of each sequence, past the entry's last read as the last
// (a chunk's padding), row0 given by the host or read on the device (a
// captured graph's); 16-byte vectors and the element loop.
template <class T> void checkSelectRows(int h) {
  SCOPED_TRACE("h=" + std::to_string(h));
  int b = 2, s = 5;
  auto x = randomValues<T>(size_t(b * s * h), 1.0f, 4);
  DeviceBuffer<T> dx(x);
  for (auto [row0, r, onDevice] : {std::tuple{3, 4, false}, std::tuple{0, 1, false},
                                   std::tuple{4, 1, false}, std::tuple{0, 5, false},
                                   std::tuple{2, 1, true}, std::tuple{4, 2, true}}) {
    DeviceBuffer<T> dout(size_t(b * r * h));
    DeviceBuffer<int64_t> first(std::vector<int64_t>{row0});
    ASSERT_EQ(onDevice ? selectRows(dx.get(), dout.get(), b, s, h, first.get(), 0, r, nullptr)
                       : selectRows(dx.get(), dout.get(), b, s, h, nullptr, row0, r, nullptr),
              "");
    std::vector<T> got = dout.download();
    for (int q = 0; q < b; ++q)
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < h; ++j) {
          int row = std::min(row0 + i, s - 1);
          ASSERT_EQ(toFloat(got[size_t((q * r + i) * h + j)]),
                    toFloat(x[size_t((q * s + row) * h + j)]))
              << row0 << " " << r << ": " << q << " " << i << " " << j;
        }
  }
  DeviceBuffer<T> dout(size_t(b * h));
  EXPECT_NE(selectRows(dx.get(), dout.get(), b, s, h, nullptr, 5, 1, nullptr), ""); // past the entry
}

TEST(CudaSelectRows, RowsOfEachSequenceAndTheLastForPadding) {
  checkSelectRows<float>(64);
  checkSelectRows<half>(24);
  checkSelectRows<bfloat16>(13);
}

TEST(CudaCacheWrite, WritesRowsAtTheDevicePositionFromAStridedUpdate) {
  int b = 2, hkv = 3, cap = 10, s = 4, d = 8;
  // The update as [B, S, Hkv, D] (a projection's layout), read in place.
  auto update = randomValues<float>(size_t(b * s * hkv * d), 1.0f, 5);
  std::vector<half> cache(size_t(b * hkv * cap * d), fromFloat<half>(-7.0f));
  DeviceBuffer<half> dc(cache);
  DeviceBuffer<float> du(update);
  DeviceBuffer<int64_t> pos(std::vector<int64_t>{5});
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  ASSERT_EQ(cacheWrite(dc.get(), du.get(), pos.get(), b, hkv, cap, s, d, int64_t(s * hkv * d),
                       int64_t(hkv * d), int64_t(d), err.get(), nullptr),
            "");
  std::vector<half> got = dc.download();
  for (int bi = 0; bi < b; ++bi)
    for (int hi = 0; hi < hkv; ++hi)
      for (int row = 0; row < cap; ++row)
        for (int di = 0; di < d; ++di) {
          float v = toFloat(got[size_t(((bi * hkv + hi) * cap + row) * d + di)]);
          float want = row >= 5 && row < 9
                           ? toFloat(fromFloat<half>(update[size_t(((bi * s + row - 5) * hkv + hi) * d + di)]))
                           : -7.0f;
          ASSERT_EQ(v, want) << bi << " " << hi << " " << row << " " << di;
        }
  EXPECT_EQ(err.download()[0], 0u);
  // Past the capacity: reported, nothing written out of bounds.
  pos.upload({8});
  ASSERT_EQ(cacheWrite(dc.get(), du.get(), pos.get(), b, hkv, cap, s, d, int64_t(s * hkv * d),
                       int64_t(hkv * d), int64_t(d), err.get(), nullptr),
            "");
  EXPECT_EQ(err.download()[0] >> 32, kCacheOverflow);
}

// Every row of a cache [b, h, cap, d] written from -3.0: rows first ..
// first + s - 1 hold want(bi, hi, si, di) exactly, the others still -3.
template <class T, class Want>
void expectCacheRows(const std::vector<T> &got, int b, int h, int cap, int d, int first, int s,
                     Want want) {
  for (int bi = 0; bi < b; ++bi)
    for (int hi = 0; hi < h; ++hi)
      for (int row = 0; row < cap; ++row)
        for (int di = 0; di < d; ++di) {
          bool written = row >= first && row < first + s;
          ASSERT_EQ(toFloat(got[size_t(((bi * h + hi) * cap + row) * d + di)]),
                    written ? want(bi, hi, row - first, di) : -3.0f)
              << bi << " " << hi << " " << row << " " << di;
        }
}

// Keys read as [B, S, Hkv, D] and values as [B, Hkv, S, D] into their two
// caches in one launch: every row at the device position, nothing else.
TEST(CudaCacheWrite, PairOfCachesInOneLaunch) {
  int b = 2, hkv = 3, cap = 9, s = 2, d = 16;
  auto keys = randomValues<half>(size_t(b * s * hkv * d), 1.0f, 15);
  auto values = randomValues<half>(size_t(b * hkv * s * d), 1.0f, 16);
  std::vector<half> init(size_t(b * hkv * cap * d), fromFloat<half>(-3.0f));
  DeviceBuffer<half> kc(init), vc(init), dk(keys), dv(values);
  DeviceBuffer<int64_t> pos(std::vector<int64_t>{6});
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  ASSERT_EQ(cacheWritePair(kc.get(), dk.get(), int64_t(s * hkv * d), int64_t(hkv * d), int64_t(d),
                           vc.get(), dv.get(), int64_t(hkv * s * d), int64_t(d), int64_t(s * d),
                           pos.get(), b, hkv, cap, s, d, err.get(), nullptr),
            "");
  auto wantK = [&](int bi, int hi, int si, int di) {
    return toFloat(keys[size_t(((bi * s + si) * hkv + hi) * d + di)]);
  };
  ASSERT_NO_FATAL_FAILURE(expectCacheRows(kc.download(), b, hkv, cap, d, 6, s, wantK));
  auto wantV = [&](int bi, int hi, int si, int di) {
    return toFloat(values[size_t(((bi * hkv + hi) * s + si) * d + di)]);
  };
  ASSERT_NO_FATAL_FAILURE(expectCacheRows(vc.download(), b, hkv, cap, d, 6, s, wantV));
  EXPECT_EQ(err.download()[0], 0u);
}

// An attention's ropes and cache writes in one launch (ropeCacheWrite):
// queries and keys roped as float64 says, the key cache holding exactly
// the roped keys and the value cache exactly the values (read at
// [B, Hkv, S, D] strides) at the device position, nothing else written;
// partial rotary dimension, more query heads than keys or fewer; past the
// capacity: reported.
TEST(CudaCacheWrite, RopesAndCacheWritesInOneLaunch) {
  for (auto shape : {std::tuple{8, 2, 0}, std::tuple{1, 3, 16}}) {
    // (named ints, not structured bindings: the lambda below captures them)
    int nq = std::get<0>(shape), nkv = std::get<1>(shape), r = std::get<2>(shape);
    SCOPED_TRACE("nq=" + std::to_string(nq) + " nkv=" + std::to_string(nkv));
    int b = 2, s = 3, d = 32, p = 40, cap = 11;
    RopeTables tables(p, r ? r : d);
    std::vector<int64_t> positions = ropePositions(b, s, true, p);
    auto xq = randomValues<half>(size_t(b * s * nq * d), 1.0f, 17);
    auto xk = randomValues<half>(size_t(b * s * nkv * d), 1.0f, 18);
    auto values = randomValues<half>(size_t(b * nkv * s * d), 1.0f, 19);
    std::vector<half> init(size_t(b * nkv * cap * d), fromFloat<half>(-3.0f));
    DeviceBuffer<half> dxq(xq), dxk(xk), dyq(xq.size()), dyk(xk.size()), dv(values), kc(init),
        vc(init);
    DeviceBuffer<float> dc(tables.cosT), ds(tables.sinT);
    DeviceBuffer<int64_t> dp(positions), pos(std::vector<int64_t>{7});
    DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
    auto run = [&] {
      return ropeCacheWrite(dxq.get(), dyq.get(), nq, dxk.get(), dyk.get(), nkv, kc.get(),
                            vc.get(), dv.get(), int64_t(nkv * s * d), int64_t(d), int64_t(s * d),
                            dc.get(), ds.get(), dp.get(), true, pos.get(), b, s, d, r, p, false,
                            cap, err.get(), nullptr);
    };
    ASSERT_EQ(run(), "");
    EXPECT_LE(relativeError(dyq.download(),
                            ropeReference(xq, tables, positions, b, s, nq, d, r, false, true)),
              tolerance<half>());
    std::vector<half> yk = dyk.download();
    EXPECT_LE(relativeError(yk, ropeReference(xk, tables, positions, b, s, nkv, d, r, false, true)),
              tolerance<half>());
    auto wantK = [&](int bi, int hi, int si, int di) {
      return toFloat(yk[size_t(((bi * s + si) * nkv + hi) * d + di)]);
    };
    ASSERT_NO_FATAL_FAILURE(expectCacheRows(kc.download(), b, nkv, cap, d, 7, s, wantK));
    auto wantV = [&](int bi, int hi, int si, int di) {
      return toFloat(values[size_t(((bi * nkv + hi) * s + si) * d + di)]);
    };
    ASSERT_NO_FATAL_FAILURE(expectCacheRows(vc.download(), b, nkv, cap, d, 7, s, wantV));
    EXPECT_EQ(err.download()[0], 0u);
    pos.upload({9}); // rows 9 .. 11 of 11
    ASSERT_EQ(run(), "");
    EXPECT_EQ(err.download()[0] >> 32, kCacheOverflow);
  }
}

// The same launch with the heads' RMS norms before the ropes (HeadNorms:
// Qwen 3's and Gemma 3's in a prefill), a warp a head's row: queries and
// keys as float64 norms them (rounded to T, as the separate rms_norm writes
// them, with Gemma's weight offset for the keys) and then ropes them; the
// key cache exactly the roped keys, the value cache the values. Rows of 40
// and 128 channels (partial warps, several channels a lane), partial and
// interleaved rotary dimensions, f32 and f16. One norm alone: refused.
template <class T> void normRopeCacheWrite(int d, int r, bool interleaved) {
  SCOPED_TRACE("d=" + std::to_string(d) + " r=" + std::to_string(r) +
               (interleaved ? " interleaved" : ""));
  int b = 2, s = 3, nq = 4, nkv = 2, p = 40, cap = 9;
  float qEps = 1e-6f, kEps = 1e-5f, kOffset = 1.0f;
  RopeTables tables(p, r ? r : d);
  std::vector<int64_t> positions = ropePositions(b, s, true, p);
  auto xq = randomValues<T>(size_t(b * s * nq * d), 2.0f, 31);
  auto xk = randomValues<T>(size_t(b * s * nkv * d), 0.5f, 32);
  auto wq = randomValues<T>(size_t(d), 1.0f, 33), wk = randomValues<T>(size_t(d), 0.3f, 34);
  auto values = randomValues<T>(size_t(b * s * nkv * d), 1.0f, 35);
  std::vector<T> init(size_t(b * nkv * cap * d), fromFloat<T>(-3.0f));
  DeviceBuffer<T> dxq(xq), dxk(xk), dyq(xq.size()), dyk(xk.size()), dv(values), kc(init), vc(init),
      dwq(wq), dwk(wk);
  DeviceBuffer<float> dc(tables.cosT), ds(tables.sinT);
  DeviceBuffer<int64_t> dp(positions), pos(std::vector<int64_t>{5});
  DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
  auto run = [&](HeadNorms<T> norms) {
    // (values [B, S, Hkv, D], as a projection's)
    return ropeCacheWrite(dxq.get(), dyq.get(), nq, dxk.get(), dyk.get(), nkv, kc.get(), vc.get(),
                          dv.get(), int64_t(s * nkv * d), int64_t(nkv * d), int64_t(d), dc.get(),
                          ds.get(), dp.get(), true, pos.get(), b, s, d, r, p, interleaved, cap,
                          err.get(), nullptr, norms);
  };
  ASSERT_EQ(run(HeadNorms<T>{dwq.get(), dwk.get(), qEps, kEps, 0.0f, kOffset}), "");
  // The norms in float64, each row rounded to T as rmsNorm writes it.
  auto normed = [&](const std::vector<T> &x, const std::vector<T> &w, double eps, double offset) {
    std::vector<T> y(x.size());
    for (size_t row = 0; row < x.size() / size_t(d); ++row) {
      double squares = 0.0;
      for (int e = 0; e < d; ++e)
        squares += double(toFloat(x[row * size_t(d) + size_t(e)])) *
                   double(toFloat(x[row * size_t(d) + size_t(e)]));
      double inv = 1.0 / std::sqrt(squares / d + eps);
      for (int e = 0; e < d; ++e)
        y[row * size_t(d) + size_t(e)] = fromFloat<T>(float(
            double(toFloat(x[row * size_t(d) + size_t(e)])) * inv *
            (double(toFloat(w[size_t(e)])) + offset)));
    }
    return y;
  };
  // (two roundings to T on the way: the norm's and the rope's)
  double tol = 2 * tolerance<T>();
  EXPECT_LE(relativeError(dyq.download(), ropeReference(normed(xq, wq, qEps, 0.0), tables,
                                                        positions, b, s, nq, d, r, interleaved,
                                                        true)),
            tol);
  std::vector<T> yk = dyk.download();
  EXPECT_LE(relativeError(yk, ropeReference(normed(xk, wk, kEps, kOffset), tables, positions, b, s,
                                            nkv, d, r, interleaved, true)),
            tol);
  // (values [B, S, Hkv, D])
  auto wantK = [&](int bi, int hi, int si, int di) {
    return toFloat(yk[size_t(((bi * s + si) * nkv + hi) * d + di)]);
  };
  ASSERT_NO_FATAL_FAILURE(expectCacheRows(kc.download(), b, nkv, cap, d, 5, s, wantK));
  auto wantV = [&](int bi, int hi, int si, int di) {
    return toFloat(values[size_t(((bi * s + si) * nkv + hi) * d + di)]);
  };
  ASSERT_NO_FATAL_FAILURE(expectCacheRows(vc.download(), b, nkv, cap, d, 5, s, wantV));
  EXPECT_EQ(err.download()[0], 0u);
  EXPECT_EQ(run(HeadNorms<T>{dwq.get(), nullptr, qEps, kEps, 0.0f, 0.0f}),
            "rope and cache write: invalid arguments");
  pos.upload({7}); // rows 7 .. 9 of 9
  ASSERT_EQ(run(HeadNorms<T>{dwq.get(), dwk.get(), qEps, kEps, 0.0f, kOffset}), "");
  EXPECT_EQ(err.download()[0] >> 32, kCacheOverflow);
}

TEST(CudaCacheWrite, HeadNormsRopesAndCacheWritesInOneLaunch) {
  normRopeCacheWrite<float>(128, 0, false);
  normRopeCacheWrite<half>(128, 0, false);
  normRopeCacheWrite<half>(40, 16, false);
  normRopeCacheWrite<float>(40, 0, true);
}

TEST(CudaCacheWrite, Int8RowsAndScalesAsTheCpuRoundsThem) {
  // A [B, S, Hkv, D] f16 update into an int8 cache and its scales: every
  // value and scale equal to cpu::quantizeKvRow's (rows of 40 and of 160,
  // more than a warp's lanes), untouched rows keep their bytes.
  for (int d : {40, 160}) {
    SCOPED_TRACE("d=" + std::to_string(d));
    int b = 2, hkv = 3, cap = 10, s = 4;
    auto update = randomValues<half>(size_t(b * s * hkv * d), 3.0f, 7);
    // One row of zeros (scale 0) and one with exact halves (ties to even).
    for (int i = 0; i < d; ++i) {
      update[size_t(i)] = fromFloat<half>(0.0f);
      update[size_t(d + i)] = fromFloat<half>(i == 0 ? 127.0f : float(i % 8) - 3.5f);
    }
    std::vector<int8_t> cache(size_t(b * hkv * cap * d), int8_t(99));
    std::vector<float> scales(size_t(b * hkv * cap), -1.0f);
    DeviceBuffer<int8_t> dc(cache);
    DeviceBuffer<float> ds(scales);
    DeviceBuffer<half> du(update);
    DeviceBuffer<int64_t> pos(std::vector<int64_t>{5});
    DeviceBuffer<unsigned long long> err(std::vector<unsigned long long>{0});
    ASSERT_EQ(cacheWriteInt8(dc.get(), ds.get(), du.get(), pos.get(), b, hkv, cap, s, d,
                             int64_t(s * hkv * d), int64_t(hkv * d), int64_t(d), err.get(),
                             nullptr),
              "");
    std::vector<int8_t> got = dc.download();
    std::vector<float> gotScales = ds.download();
    std::vector<float> row(static_cast<size_t>(d));
    std::vector<int8_t> want(static_cast<size_t>(d));
    for (int bi = 0; bi < b; ++bi)
      for (int hi = 0; hi < hkv; ++hi)
        for (int r = 0; r < cap; ++r) {
          size_t at = size_t((bi * hkv + hi) * cap + r);
          if (r < 5 || r >= 9) {
            ASSERT_EQ(gotScales[at], -1.0f);
            ASSERT_EQ(got[at * size_t(d)], int8_t(99));
            continue;
          }
          for (int i = 0; i < d; ++i)
            row[size_t(i)] = toFloat(update[size_t(((bi * s + r - 5) * hkv + hi) * d + i)]);
          float scale = llmc::cpu::quantizeKvRow(row.data(), d, want.data());
          ASSERT_EQ(gotScales[at], scale) << bi << " " << hi << " " << r;
          for (int i = 0; i < d; ++i)
            ASSERT_EQ(int(got[at * size_t(d) + size_t(i)]), int(want[size_t(i)]))
                << bi << " " << hi << " " << r << " " << i;
        }
    EXPECT_EQ(err.download()[0], 0u);
    pos.upload({8});
    ASSERT_EQ(cacheWriteInt8(dc.get(), ds.get(), du.get(), pos.get(), b, hkv, cap, s, d,
                             int64_t(s * hkv * d), int64_t(hkv * d), int64_t(d), err.get(),
                             nullptr),
              "");
    EXPECT_EQ(err.download()[0] >> 32, kCacheOverflow);
  }
}

} // namespace
