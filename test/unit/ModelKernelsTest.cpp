//===- ModelKernelsTest.cpp - the emitted models' kernel templates --------===//
//
// The templates in runtime/src/model/kernels are compiled into libmodel.so
// with the artifact's -march, so this file is built three times (CMake:
// plain x86-64, AVX2 + FMA + F16C, AVX-512) into three small programs, each
// checking the vector code it got against the scalar conversions of
// runtime/src/cpu/Numeric.h and float64 references. A program whose
// instructions this CPU lacks skips its tests.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/kernels/Decode.h"
#include "runtime/src/model/kernels/Gemv.h"
#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/Pointwise.h"

#include "test/unit/TargetCpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace llmc::model::kernels;
namespace cpu = llmc::cpu;

namespace {


uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Floats that exercise rounding: ties, subnormal results, overflow, NaN.
std::vector<float> awkwardFloats() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, 1e6f, -1e6f,
                          5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f,
                          6.097555e-5f, 1e-10f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), fromBits(0x7f800001u),
                          fromBits(0xffc12345u), std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min()};
  // Exact ties for f16 (bit 12 set, lower bits clear) and bf16 (bit 15).
  for (uint32_t base : {0x3f800000u, 0x3f802000u, 0x40490000u, 0xc0490000u})
    for (uint32_t tie : {0x1000u, 0x3000u, 0x8000u, 0x18000u})
      v.push_back(fromBits(base | tie));
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 4000; ++i)
    v.push_back(fromBits(any(rng)));
  while (v.size() % 64 != 3) // a tail the vector loop leaves to the scalar one
    v.push_back(float(v.size()) * 0.37f);
  return v;
}

TEST(ModelKernels, HalfToF32MatchesTheScalarConversion) {
  REQUIRE_TARGET();
  std::vector<Half> all(65536);
  for (uint32_t i = 0; i < 65536; ++i)
    all[i].bits = uint16_t(i);
  std::vector<float> got(all.size());
  toF32(all.data(), got.data(), int64_t(all.size()));
  for (uint32_t i = 0; i < 65536; ++i) {
    float want = cpu::halfToFloat(uint16_t(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << std::hex << i;
    } else {
      EXPECT_EQ(bitsOf(got[i]), bitsOf(want)) << std::hex << i;
    }
  }
}

TEST(ModelKernels, F32ToHalfAndBf16RoundLikeTheScalarConversion) {
  REQUIRE_TARGET();
  std::vector<float> v = awkwardFloats();
  std::vector<Half> h(v.size());
  std::vector<Bf16> b(v.size());
  fromF32(v.data(), h.data(), int64_t(v.size()));
  fromF32(v.data(), b.data(), int64_t(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t wantH = cpu::floatToHalf(v[i]), wantB = cpu::floatToBf16(v[i]);
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(cpu::halfToFloat(h[i].bits))) << v[i];
      EXPECT_TRUE(std::isnan(cpu::bf16ToFloat(b[i].bits))) << v[i];
      EXPECT_EQ(b[i].bits, wantB) << std::hex << bitsOf(v[i]);
    } else {
      EXPECT_EQ(h[i].bits, wantH) << std::hex << bitsOf(v[i]);
      EXPECT_EQ(b[i].bits, wantB) << std::hex << bitsOf(v[i]);
    }
  }
  // And back: bf16 -> f32 is exact.
  std::vector<float> back(v.size());
  toF32(b.data(), back.data(), int64_t(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isnan(v[i])) {
      EXPECT_EQ(bitsOf(back[i]), uint32_t(b[i].bits) << 16);
    }
  }
}

TEST(ModelKernels, ExpIsWithinTwoUlpsOfTheLibrary) {
  REQUIRE_TARGET();
  double worst = 0;
  for (float x = -87.f; x <= 88.f; x += 0.0173f) {
    double want = std::exp(double(x));
    double d = std::fabs(double(fastExp(x)) - want) / want;
    worst = std::isnan(d) ? INFINITY : std::max(worst, d);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(fastExp(-1000.f), fastExp(-87.3f)); // clamped, no garbage
  EXPECT_TRUE(std::isfinite(fastExp(1000.f)));
}

/// Every 211th float from 1e-30 to 12, and its negation: the binades
/// the polynomials and their switch points (0.625, 1, 3.9375) cover.
template <class F> void forSampledFloats(F &&check) {
  uint32_t bits = bitsOf(1e-30f);
  for (float x = 1e-30f; x <= 12.f; bits += 211, std::memcpy(&x, &bits, sizeof x)) {
    check(x);
    check(-x);
  }
}

TEST(ModelKernels, TanhIsWithinTwoUlpsOfFloat64) {
  REQUIRE_TARGET();
  double worst = 0;
  float at = 0;
  forSampledFloats([&](float x) {
    double want = std::tanh(double(x));
    double d = std::fabs(double(fastTanh(x)) - want) / std::fabs(want);
    if (!(d <= worst))
      worst = d, at = x;
  });
  EXPECT_LT(worst, 1.5e-7) << "at " << at;
  for (float x : {0.625f, std::nextafter(0.625f, 0.f)}) // the switch point
    EXPECT_NEAR(fastTanh(x), std::tanh(double(x)), 1.5e-7 * std::tanh(double(x)));
  EXPECT_EQ(fastTanh(INFINITY), 1.f);
  EXPECT_EQ(fastTanh(-INFINITY), -1.f);
  EXPECT_EQ(fastTanh(100.f), 1.f);
  EXPECT_TRUE(std::isnan(fastTanh(NAN)));
  EXPECT_EQ(bitsOf(fastTanh(-0.f)), bitsOf(-0.f));
  EXPECT_EQ(fastTanh(1e-40f), 1e-40f); // (subnormal: tanh x = x)
}

TEST(ModelKernels, ErfIsWithinTwoUlpsOfFloat64) {
  REQUIRE_TARGET();
  double worstRel = 0, worstAbs = 0;
  float atRel = 0, atAbs = 0;
  forSampledFloats([&](float x) {
    double want = std::erf(double(x)), got = fastErf(x);
    if (std::fabs(x) < 1) { // erf ~ 1.13 x: relative
      double d = std::fabs(got - want) / std::fabs(want);
      if (!(d <= worstRel))
        worstRel = d, atRel = x;
    } else { // towards +-1: absolute, against 2^-23 (an ulp of 1)
      double d = std::fabs(got - want);
      if (!(d <= worstAbs))
        worstAbs = d, atAbs = x;
    }
  });
  EXPECT_LT(worstRel, 2e-7) << "at " << atRel; // (1.83e-7 without FMA)
  EXPECT_LT(worstAbs, 1.2e-7) << "at " << atAbs;
  // Past 3.9192 erf rounds to 1 in f32: so must the clamped polynomial.
  for (float x : {3.92f, 3.9375f, 4.f, 10.f, 1e30f, INFINITY}) {
    EXPECT_EQ(fastErf(x), 1.f) << x;
    EXPECT_EQ(fastErf(-x), -1.f) << x;
  }
  EXPECT_TRUE(std::isnan(fastErf(NAN)));
  EXPECT_EQ(bitsOf(fastErf(-0.f)), bitsOf(-0.f));
  // GELU as the generated loops compute it, against float64.
  for (float x : {-6.f, -3.f, -1.f, -0.3f, 0.f, 0.3f, 1.f, 3.f, 6.f}) {
    double want = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(0.5f * x * (1.0f + fastErf(x * 0.7071067811865476f)), want, 4e-7) << x;
  }
}

template <typename T> std::vector<T> stored(const std::vector<float> &v) {
  std::vector<T> out(v.size());
  fromF32(v.data(), out.data(), int64_t(v.size()));
  return out;
}
template <typename T> std::vector<double> widened(const std::vector<T> &v) {
  std::vector<double> out;
  for (const T &x : v)
    out.push_back(toFloat(x));
  return out;
}

std::vector<float> randomFloats(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

template <typename T> void checkSwigluAndNorm(double tol) {
  const int64_t n = 203;
  std::vector<float> g = randomFloats(n, 1, 6.f), u = randomFloats(n, 2, 2.f);
  std::vector<T> gt = stored<T>(g), ut = stored<T>(u), y(n);
  std::vector<float> s1(n), s2(n);
  swiglu(gt.data(), ut.data(), y.data(), n, s1.data(), s2.data());
  std::vector<double> gd = widened(gt), ud = widened(ut);
  for (int64_t i = 0; i < n; ++i) {
    double want = gd[i] / (1 + std::exp(-gd[i])) * ud[i];
    EXPECT_NEAR(toFloat(y[i]), want, tol * (1 + std::fabs(want))) << i;
  }
  std::vector<float> scale = randomFloats(n, 3);
  std::vector<T> st = stored<T>(scale);
  std::vector<double> sd = widened(st);
  rmsNormRow(gt.data(), st.data(), 1.f, 1e-5f, y.data(), n, s1.data());
  double ss = 0;
  for (double x : gd)
    ss += x * x;
  double inv = 1 / std::sqrt(ss / double(n) + 1e-5);
  for (int64_t i = 0; i < n; ++i) {
    double want = gd[i] * inv * (sd[i] + 1);
    EXPECT_NEAR(toFloat(y[i]), want, tol * (1 + std::fabs(want))) << i;
  }
}

TEST(ModelKernels, SwigluAndRmsNormMatchFloat64) {
  REQUIRE_TARGET();
  checkSwigluAndNorm<float>(1e-6);
  checkSwigluAndNorm<Half>(1e-3);  // one f16 rounding of the result
  checkSwigluAndNorm<Bf16>(8e-3);  // one bf16 rounding
}

/// softmaxRow (and its log form) against float64 over the stored inputs: a
/// row with scores spread over 200 (e^-200 is far below the smallest
/// float: exactly 0 there, and nothing subnormal anywhere), masked entries
/// of -inf and of the lowest float (exactly 0), and the rows it declines
/// (all -inf, an infinity, a NaN), for which it writes nothing.
template <typename T> void checkSoftmax(double tol, double tiny) {
  const int64_t n = 203;
  std::vector<float> x = randomFloats(n, 21, 100.f);
  x[5] = -std::numeric_limits<float>::infinity();
  x[77] = std::numeric_limits<float>::lowest();
  // Two maxima (a sum of at least 2) and an entry e^-87.2 below them: its
  // weight, 6.6e-39, would be subnormal.
  x[0] = x[1] = 100.f;
  x[9] = 12.8f;
  std::vector<T> xt = stored<T>(x), y(n);
  std::vector<double> xd = widened(xt);
  std::vector<float> row(n);
  double mx = -INFINITY, sum = 0;
  for (double v : xd)
    mx = std::max(mx, v);
  for (double v : xd)
    sum += std::exp(v - mx);
  ASSERT_TRUE(softmaxRow(xt.data(), y.data(), n, row.data(), false));
  int zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    double want = std::exp(xd[i] - mx) / sum;
    float got = toFloat(y[i]);
    // (x - max in f32 is off by half an ulp of it: relative error in e^).
    double spread = std::isfinite(xd[i]) ? std::fabs(xd[i] - mx) : 0;
    EXPECT_NEAR(got, want, (tol + 6e-8 * spread) * want + tiny) << i;
    EXPECT_TRUE(got == 0 || std::fabs(got) >= std::numeric_limits<float>::min()) << i << " " << got;
    zeros += got == 0;
    if (xd[i] - mx < -87.3) {
      EXPECT_EQ(got, 0.f) << i;
    }
  }
  EXPECT_GT(zeros, 2); // the two masked entries and the far tail
  EXPECT_EQ(toFloat(y[5]), 0.f);
  EXPECT_EQ(toFloat(y[77]), 0.f);
  // One finite entry: exactly {1, 0}.
  std::vector<T> one = stored<T>({0.f, -std::numeric_limits<float>::infinity()}), pair(2);
  ASSERT_TRUE(softmaxRow(one.data(), pair.data(), 2, row.data(), false));
  EXPECT_EQ(toFloat(pair[0]), 1.f);
  EXPECT_EQ(toFloat(pair[1]), 0.f);
  // log-softmax of the finite ones (a row without masked entries).
  std::vector<float> f = randomFloats(n, 22, 30.f);
  std::vector<T> ft = stored<T>(f);
  std::vector<double> fd = widened(ft);
  mx = -INFINITY;
  sum = 0;
  for (double v : fd)
    mx = std::max(mx, v);
  for (double v : fd)
    sum += std::exp(v - mx);
  ASSERT_TRUE(softmaxRow(ft.data(), y.data(), n, row.data(), true));
  for (int64_t i = 0; i < n; ++i) {
    double want = fd[i] - mx - std::log(sum);
    EXPECT_NEAR(toFloat(y[i]), want, tol * (1 + std::fabs(want))) << i;
  }
  // Declined rows: nothing written.
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {-inf, inf, std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> b = randomFloats(n, 23);
    if (bad == -inf)
      std::fill(b.begin(), b.end(), -inf);
    else
      b[n - 1] = bad; // in the scalar tail of the vector loop
    std::vector<T> bt = stored<T>(b), untouched = stored<T>(std::vector<float>(n, 42.f));
    std::vector<T> out = untouched;
    for (bool log : {false, true}) {
      EXPECT_FALSE(softmaxRow(bt.data(), out.data(), n, row.data(), log)) << bad;
      EXPECT_EQ(std::memcmp(out.data(), untouched.data(), n * sizeof(T)), 0) << bad;
    }
  }
}

TEST(ModelKernels, SoftmaxRowMatchesFloat64) {
  REQUIRE_TARGET();
  // Within one rounding of the type (and the smallest normal float, or
  // half of f16's smallest subnormal, near 0).
  checkSoftmax<float>(2e-6, 1.2e-38);
  checkSoftmax<Half>(1e-3, 3e-8);
  checkSoftmax<Bf16>(8e-3, 1.2e-38);
}

/// y == x W^T + bias + residual in float64 (W as stored, widened), within
/// f32 rounding of the terms' magnitudes.
void expectLinear(const std::vector<float> &x, const std::vector<double> &wd,
                  const std::vector<float> &bias, const std::vector<float> &res,
                  const std::vector<float> &y, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = bias[size_t(n)] + res[size_t(m * N + n)], mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        want += double(x[size_t(m * K + k)]) * wd[size_t(n * K + k)];
        mag += std::fabs(double(x[size_t(m * K + k)]) * wd[size_t(n * K + k)]);
      }
      ASSERT_NEAR(y[size_t(m * N + n)], want, 1e-6 * (mag + 1)) << m << "," << n;
    }
}

/// gemvRows / gemmRows against float64 over the weights as stored, with
/// shapes that leave row and column tails (N % 4, K % lanes).
template <typename T> void checkLinear(int64_t M, int64_t N, int64_t K, bool gemm) {
  std::vector<float> x = randomFloats(size_t(M * K), 11), w = randomFloats(size_t(N * K), 12),
                     bias = randomFloats(size_t(N), 13), res = randomFloats(size_t(M * N), 14);
  std::vector<T> wt = stored<T>(w);
  std::vector<double> wd = widened(wt);
  std::vector<float> y(size_t(M * N), -7.f);
  // Two "threads": the row ranges a pool would give.
  int64_t mid = (N / 2) / 16 * 16;
  for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, mid}, {mid, N}}) {
    if (gemm)
      gemmRows(x.data(), M, K, wt.data(), bias.data(), res.data(), y.data(), N, n0, n1);
    else
      gemvRows(x.data(), M, K, wt.data(), bias.data(), res.data(), y.data(), N, n0, n1);
  }
  expectLinear(x, wd, bias, res, y, M, N, K);
}

TEST(ModelKernels, GemvAndGemmMatchFloat64) {
  REQUIRE_TARGET();
  // Rows of x in passes of 2 (AVX2) or 4 (AVX-512) and a tail.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 70, 131}, {3, 37, 64}, {2, 131, 300},
                         {5, 70, 131}, {8, 37, 64}}) {
    checkLinear<float>(m, n, k, false);
    checkLinear<Half>(m, n, k, false);
    checkLinear<Bf16>(m, n, k, false);
  }
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{7, 70, 131}, {9, 33, 48}}) {
    checkLinear<float>(m, n, k, true);
    checkLinear<Half>(m, n, k, true);
    checkLinear<Bf16>(m, n, k, true);
  }
}

/// packPanels + packedRows against float64: N with a partial last panel and
/// an odd number of panels, M across several row tiles (and row blocks: 250
/// rows), the panels split between two "threads" at a tile boundary as
/// packedLinear splits them.
template <typename T> void checkPacked(int64_t M, int64_t N, int64_t K) {
  std::vector<float> x = randomFloats(size_t(M * K), 31), w = randomFloats(size_t(N * K), 32),
                     bias = randomFloats(size_t(N), 33), res = randomFloats(size_t(M * N), 34);
  std::vector<T> wt = stored<T>(w);
  std::vector<double> wd = widened(wt);
  int64_t panels = numPanels(N);
  std::vector<T> packed(size_t(panels * K * kPanel));
  packPanels(wt.data(), N, K, sizeof(T), packed.data());
  // The layout: element (k, j) of panel p is W[16p + j, k], zero past N.
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t k = 0; k < K; k += 7)
      for (int64_t j = 0; j < kPanel; ++j) {
        int64_t n = p * kPanel + j;
        ASSERT_EQ(toFloat(packed[size_t((p * K + k) * kPanel + j)]),
                  n < N ? toFloat(wt[size_t(n * K + k)]) : 0.f);
      }
  std::vector<float> y(size_t(M * N), -7.f);
  int64_t units = (panels + kTilePanels - 1) / kTilePanels, mid = units / 2 * kTilePanels;
  packedRows(x.data(), M, K, packed.data(), N, bias.data(), res.data(), y.data(), 0, mid);
  packedRows(x.data(), M, K, packed.data(), N, bias.data(), res.data(), y.data(), mid, panels);
  expectLinear(x, wd, bias, res, y, M, N, K);
  // The narrow (256-bit) tile of AVX-512 builds: the same bits.
  std::vector<float> narrow(y.size(), -7.f);
  packedRows(x.data(), M, K, packed.data(), N, bias.data(), res.data(), narrow.data(), 0, mid,
             true);
  packedRows(x.data(), M, K, packed.data(), N, bias.data(), res.data(), narrow.data(), mid,
             panels, true);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(narrow[i], y[i]) << i;
}

TEST(ModelKernels, PackedLinearMatchesFloat64) {
  REQUIRE_TARGET();
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 70, 131}, {2, 48, 64},
                         {5, 37, 19}, {13, 90, 77}, {30, 16, 33}, {250, 40, 24}}) {
    checkPacked<float>(m, n, k);
    checkPacked<Half>(m, n, k);
    checkPacked<Bf16>(m, n, k);
  }
}

/// softmax(scale q.k_j (softcapped)) . v_j over keys lo .. hi, in float64;
/// with a `sink` logit (-inf: none) in the softmax and no value of its own.
template <typename T>
std::vector<double> attendReference(const float *q, const T *kh, const T *vh, int64_t d,
                                    int64_t lo, int64_t hi, float scale, float softcap,
                                    double sink = -INFINITY) {
  std::vector<double> s, out(size_t(d), 0.0);
  double mx = -INFINITY, total = 0;
  for (int64_t j = lo; j <= hi; ++j) {
    double dot = 0;
    for (int64_t i = 0; i < d; ++i)
      dot += double(q[i]) * toFloat(kh[j * d + i]);
    dot *= scale;
    if (softcap > 0)
      dot = softcap * std::tanh(dot / softcap);
    s.push_back(dot);
    mx = std::max(mx, dot);
  }
  if (!s.empty() && sink > -INFINITY) {
    mx = std::max(mx, sink);
    total += std::exp(sink - mx);
  }
  for (double &e : s)
    total += (e = std::exp(e - mx));
  for (int64_t j = lo; j <= hi; ++j)
    for (int64_t i = 0; i < d; ++i)
      out[size_t(i)] += s[size_t(j - lo)] / total * toFloat(vh[j * d + i]);
  return out;
}

/// A cache of T over the values `x`: stored as T, or (int8) each row of
/// `d` as int8 with its scale in `scales` (cpu::quantizeKvRow); `exact`
/// gets the values the cache holds, in f32.
template <typename T>
std::vector<T> cacheOf(const std::vector<float> &x, int64_t d, std::vector<float> &scales,
                       std::vector<float> &exact) {
  std::vector<T> c(x.size());
  exact.resize(x.size());
  if constexpr (std::is_same_v<T, int8_t>) {
    scales.resize(x.size() / size_t(d));
    for (size_t r = 0; r < scales.size(); ++r) {
      scales[r] = llmc::cpu::quantizeKvRow(x.data() + r * size_t(d), d, c.data() + r * size_t(d));
      for (int64_t i = 0; i < d; ++i)
        exact[r * size_t(d) + size_t(i)] = float(c[r * size_t(d) + size_t(i)]) * scales[r];
    }
  } else {
    c = stored<T>(x);
    for (size_t i = 0; i < x.size(); ++i)
      exact[i] = toFloat(c[i]);
  }
  return c;
}

/// decodeAttentionHeads and prefillAttentionRows against attendReference,
/// over a GQA cache (6 query heads, 2 kv heads) of two sequences; int8
/// caches (T = int8_t) against float64 over the values they hold; with
/// `withSinks`, a sink logit per query head (below, among and above the
/// scores).
template <typename T>
void checkAttention(int64_t window, float softcap, bool causal, int64_t d = 40,
                    int64_t capacity = 23, int64_t pos = 9, int64_t s = 5, double tol = 2e-6,
                    int64_t hq = 6, int64_t hkv = 2, bool withSinks = false) {
  const int64_t b = 2;
  const float scale = 0.3f;
  std::vector<double> sinkValues;
  for (int64_t h = 0; h < hq; ++h)
    sinkValues.push_back(h % 3 == 0 ? -20.0 : h % 3 == 1 ? 0.75 : 4.5);
  const double *sinks = withSinks ? sinkValues.data() : nullptr;
  auto sinkAt = [&](int64_t h) { return withSinks ? sinkValues[size_t(h)] : -INFINITY; };
  std::vector<float> ksv, vsv, kx, vx;
  std::vector<T> k = cacheOf<T>(randomFloats(size_t(b * hkv * capacity * d), 22, 2.f), d, ksv, kx);
  std::vector<T> v = cacheOf<T>(randomFloats(size_t(b * hkv * capacity * d), 23), d, vsv, vx);
  const float *ks = ksv.empty() ? nullptr : ksv.data();
  const float *vs = vsv.empty() ? nullptr : vsv.data();
  auto head = [&](const std::vector<float> &c, int64_t bi, int64_t h) {
    return c.data() + (bi * hkv + h / (hq / hkv)) * capacity * d;
  };
  const int64_t group = hq / hkv;
  std::vector<float> scratch(size_t(std::max({prefillAttentionScratch(capacity, d),
                                               attendByKeyScratch(capacity, d, d),
                                               group * (capacity + 3)})));
  // Decode: one query per sequence at pos, the query heads of each kv head
  // together.
  std::vector<float> q = randomFloats(size_t(b * hq * d), 21, 2.f), out(size_t(b * hq * d));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hk = 0; hk < hkv; ++hk)
      decodeAttentionHeads(q.data(), k.data(), v.data(), ks, vs, out.data(), bi, hk, hq, hkv, d,
                           d, capacity, pos, window, scale, softcap, scratch.data(), sinks);
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      std::vector<double> want = attendReference(q.data() + (bi * hq + h) * d, head(kx, bi, h),
                                                 head(vx, bi, h), d, lo, pos, scale, softcap,
                                                 sinkAt(h));
      for (int64_t i = 0; i < d; ++i)
        EXPECT_NEAR(out[size_t((bi * hq + h) * d + i)], want[size_t(i)], std::max(tol, 2e-6))
            << h << "," << i;
    }
  // Split-KV: the keys of each kv head in 1, 2, 3 and 7 ranges (the rows'
  // partials at the strides the runtime uses), merged.
  for (int64_t splits : {1, 2, 3, 7}) {
    std::vector<float> acc(static_cast<size_t>(group * splits * d)), row(static_cast<size_t>(d));
    std::vector<float> m(static_cast<size_t>(group * splits)), l(m.size());
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hk = 0; hk < hkv; ++hk) {
        for (int64_t sp = 0; sp < splits; ++sp)
          decodeAttentionSplit(q.data(), k.data(), v.data(), ks, vs, bi, hk, sp, splits, hq, hkv,
                               d, d, capacity, pos, window, scale, softcap, scratch.data(),
                               acc.data() + sp * d, splits * d, m.data() + sp, l.data() + sp,
                               splits);
        for (int64_t g = 0; g < group; ++g) {
          int64_t h = hk * group + g;
          combineSplits(acc.data() + g * splits * d, m.data() + g * splits,
                        l.data() + g * splits, splits, d, row.data(), sinkOf(sinks, h));
          for (int64_t i = 0; i < d; ++i)
            EXPECT_NEAR(row[size_t(i)], out[size_t((bi * hq + h) * d + i)], 2e-6)
                << splits << "," << h << "," << i;
        }
      }
  }
  // Prefill: s queries at pos .. pos + s - 1, rows split in two ranges.
  std::vector<float> qp = randomFloats(size_t(b * s * hq * d), 24, 2.f), op(qp.size(), -9.f);
  int64_t rows = b * hq * s;
  for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 7}, {7, 8}, {8, rows}})
    prefillAttentionRows(qp.data(), k.data(), v.data(), ks, vs, op.data(), s, hq, hkv, d, d, capacity,
                         pos, causal, window, scale, softcap, r0, r1, scratch.data(), sinks);
  // The same queries through shortPrefillAttention (a kv head's rows a
  // vector's lanes at a time), every unit.
  std::vector<float> os(qp.size(), -9.f);
  for (int64_t u = 0; u < b * hkv * shortPrefillPasses(s, hq, hkv); ++u)
    shortPrefillAttention(qp.data(), k.data(), v.data(), ks, vs, os.data(), s, hq, hkv, d, d,
                          capacity, pos, causal, window, scale, softcap, u, scratch.data(),
                          sinks);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t h = 0; h < hq; ++h) {
        int64_t p = pos + i, hi = causal ? p : pos + s - 1;
        int64_t from = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
        size_t at = size_t(((bi * s + i) * hq + h) * d);
        std::vector<double> want = attendReference(qp.data() + at, head(kx, bi, h),
                                                   head(vx, bi, h), d, from, hi, scale, softcap,
                                                   sinkAt(h));
        for (int64_t t = 0; t < d; ++t) {
          EXPECT_NEAR(op[at + size_t(t)], want[size_t(t)], tol) << i << "," << h << "," << t;
          EXPECT_NEAR(os[at + size_t(t)], want[size_t(t)], tol) << i << "," << h << "," << t;
        }
      }
}

TEST(ModelKernels, AttentionOverTheCacheMatchesFloat64) {
  REQUIRE_TARGET();
  checkAttention<float>(0, 0.f, true);
  checkAttention<Half>(0, 0.f, true);
  checkAttention<Bf16>(4, 0.f, true);
  checkAttention<float>(0, 4.f, true);
  checkAttention<float>(0, 0.f, false);
  // Several tiles of query rows and blocks of keys (partial ones too), a
  // head size that is a whole number of vectors, and one too large for a
  // tile (row by row); f32 sums over up to 58 keys of 64 products round
  // more than 2e-6 from float64.
  checkAttention<float>(0, 0.f, true, 64, 70, 21, 37, 1e-5);
  checkAttention<Half>(9, 0.f, true, 48, 70, 3, 29, 1e-5);
  checkAttention<float>(0, 3.f, false, 24, 70, 30, 19, 1e-5);
  checkAttention<Bf16>(0, 0.f, true, 260, 40, 5, 11, 1e-5);
  // int8 caches with per-row scales (llm.quantized_cache_update): the
  // kernels read the int8 rows and scale the dot products and weights.
  checkAttention<int8_t>(0, 0.f, true, 40, 23, 9, 5, 4e-6);
  checkAttention<int8_t>(4, 2.f, true, 40, 23, 9, 5, 4e-6);
  checkAttention<int8_t>(0, 0.f, false, 64, 70, 21, 37, 1e-5);
  checkAttention<int8_t>(9, 0.f, true, 48, 70, 3, 29, 1e-5);
  checkAttention<int8_t>(0, 0.f, true, 260, 40, 5, 11, 1e-5);
  // Query heads per kv head past one pass of rows (10 / 2), one each (MHA),
  // and a head size with a tail past the vectors.
  checkAttention<float>(0, 0.f, true, 40, 23, 9, 5, 4e-6, 10, 2);
  checkAttention<int8_t>(3, 0.f, true, 24, 30, 20, 5, 4e-6, 4, 4);
  checkAttention<Half>(0, 2.f, true, 72, 30, 25, 5, 1e-5, 8, 1);
  // Verification-sized runs: one query, and 4 of each of 4 query heads per
  // kv head (16 rows: two passes of attendByKey's 8 lanes on x86).
  checkAttention<float>(0, 0.f, true, 64, 40, 30, 1, 1e-5);
  checkAttention<Half>(5, 0.f, true, 64, 40, 30, 4, 1e-5, 8, 2);
  checkAttention<int8_t>(0, 0.f, true, 64, 40, 30, 4, 1e-5, 8, 2);
}

TEST(ModelKernels, AttentionSinksMatchFloat64) {
  REQUIRE_TARGET();
  // Every form (decode, split-KV merge, prefill tiles and rows, the short
  // prefill's lanes) with a sink per query head: a window, softcap, int8
  // caches, a head too large for a tile, verification-sized runs.
  checkAttention<float>(0, 0.f, true, 40, 23, 9, 5, 2e-6, 6, 2, true);
  checkAttention<Half>(4, 2.f, true, 48, 70, 21, 37, 1e-5, 6, 2, true);
  checkAttention<int8_t>(9, 0.f, false, 64, 70, 3, 29, 1e-5, 6, 2, true);
  checkAttention<Bf16>(0, 0.f, true, 260, 40, 5, 11, 1e-5, 6, 2, true);
  checkAttention<float>(5, 0.f, true, 64, 40, 30, 4, 1e-5, 8, 2, true);
}

} // namespace
