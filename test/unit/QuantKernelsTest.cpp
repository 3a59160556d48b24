//===- QuantKernelsTest.cpp - the quantized linear kernels (Quant.h) ------===//
//
// Built like ModelKernelsTest (plain x86-64, AVX2, AVX-512, and AVX-512 with
// VNNI), each program checking the code paths its -march selects against
// float64 references over random 4- and 8-bit weights, with and without
// zero points, group sizes that pad K and odd row counts:
//
// - the f32-activation kernels over the stored layout (Quant.h: the
//   group-at-a-time one and prefill's dequantized panels) against sum_k (q -
//   zp) * scale * x in float64;
// - the packed panels of QuantPanels.h (f32 scales, and f16 ones when every
//   scale is one): dequantized, bit for bit the stored layout's values; the
//   int8-activation kernel (decode's one row and VNNI prefill's several per
//   pass) against the same sum over x rounded as the kernel documents it
//   (per block of 32, scale max|x| / 127, nearest even), tightly, and
//   against the exact sum within the bound that rounding allows (sum_k
//   |w_k| * scale_block(k) / 2); the dequantized-panel prefill against the
//   exact sum.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/kernels/Quant.h"
#include "runtime/src/model/kernels/QuantPanels.h"

#include "test/unit/TargetCpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace llmc::model::kernels;

namespace {


struct Case {
  int64_t M, N, K, groupSize, bits;
  bool zeroPoints, bias, residual;
  bool halfScales = false; // scales rounded to f16, so the panels store them in two bytes
};

struct Weights {
  QuantShape shape;
  std::vector<uint8_t> q, zp;
  std::vector<float> scales;
  double w(int64_t n, int64_t k) const {
    int64_t g = k / shape.groupSize, i = k % shape.groupSize;
    const uint8_t *row = q.data() + n * shape.rowBytes() + g * shape.groupSize * shape.bits / 8;
    int64_t v = shape.bits == 8 ? row[i] : (row[i / 2] >> ((i % 2) * 4)) & 15;
    double z = zp.empty() ? double(int64_t(1) << (shape.bits - 1)) : double(zp[n * shape.groups + g]);
    return (double(v) - z) * double(scales[n * shape.groups + g]);
  }
};

Weights randomWeights(const Case &c, std::mt19937 &rng) {
  Weights w;
  w.shape = {c.N, c.K, (c.K + c.groupSize - 1) / c.groupSize, c.groupSize, c.bits};
  std::uniform_int_distribution<int> byte(0, 255), level(0, (1 << c.bits) - 1);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  w.q.resize(size_t(c.N * w.shape.rowBytes()));
  for (uint8_t &b : w.q) // every byte random: padding past K included
    b = uint8_t(byte(rng));
  w.scales.resize(size_t(c.N * w.shape.groups));
  for (float &s : w.scales)
    s = c.halfScales ? llmc::cpu::halfToFloat(llmc::cpu::floatToHalf(scale(rng))) : scale(rng);
  if (c.zeroPoints) {
    w.zp.resize(w.scales.size());
    for (uint8_t &z : w.zp)
      z = uint8_t(level(rng));
  }
  return w;
}

/// x as the int8 kernel rounds it (Quant.h, prepareActivations).
std::vector<double> roundedActivations(const std::vector<float> &x, int64_t M, int64_t K,
                                       std::vector<double> &blockScale) {
  std::vector<double> out(x.size());
  blockScale.assign(size_t(M * ((K + 31) / 32)), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b * 32 < K; ++b) {
      int64_t k0 = b * 32, k1 = std::min(K, k0 + 32);
      float amax = 0;
      for (int64_t k = k0; k < k1; ++k)
        amax = std::max(amax, std::fabs(x[m * K + k]));
      float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
      blockScale[m * ((K + 31) / 32) + b] = d;
      for (int64_t k = k0; k < k1; ++k)
        out[m * K + k] = double(std::nearbyint(x[m * K + k] * inv)) * double(d);
    }
  return out;
}

void check(const Case &c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K
                                    << " group=" << c.groupSize << " bits=" << c.bits
                                    << " zp=" << c.zeroPoints);
  std::mt19937 rng(seed);
  Weights w = randomWeights(c, rng);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(size_t(c.M * c.K)), bias(size_t(c.N)), residual(size_t(c.M * c.N));
  for (float &v : x)
    v = normal(rng);
  x[0] = 25.f; // an outlier in the first block
  for (float &v : bias)
    v = normal(rng);
  for (float &v : residual)
    v = normal(rng);
  const float *pb = c.bias ? bias.data() : nullptr, *pr = c.residual ? residual.data() : nullptr;
  const uint8_t *pz = w.zp.empty() ? nullptr : w.zp.data();
  std::vector<double> blockScale;
  std::vector<double> xr = roundedActivations(x, c.M, c.K, blockScale);

  std::vector<float> yf(size_t(c.M * c.N), -1.f), yi(size_t(c.M * c.N), -1.f);
  // Two ranges of rows, as two threads would split them.
  int64_t split = c.N / 2;
  // Scratch as a kernel gets it (kept from earlier calls): not zeroed.
  std::vector<float> scratchF(size_t(quantizedF32Scratch(w.shape, c.M)), NAN);
  quantizedRowsF32(x.data(), c.M, w.shape, w.q.data(), w.scales.data(), pz, pb, pr, yf.data(), 0,
                   split, scratchF.data());
  quantizedRowsF32(x.data(), c.M, w.shape, w.q.data(), w.scales.data(), pz, pb, pr, yf.data(),
                   split, c.N, scratchF.data());
  std::vector<float> yp(size_t(c.M * c.N), -1.f);
  std::vector<float> scratchP(size_t(quantizedPanelsScratch(w.shape)), NAN);
  quantizedRowsPanels(x.data(), c.M, w.shape, w.q.data(), w.scales.data(), pz, pb, pr, yp.data(),
                      0, split, scratchP.data());
  quantizedRowsPanels(x.data(), c.M, w.shape, w.q.data(), w.scales.data(), pz, pb, pr, yp.data(),
                      split, c.N, scratchP.data());
  // The packed panels, where the layer's groups are whole blocks of 32.
  QuantPanelShape ps;
  ps.n = c.N, ps.k = c.K, ps.groups = w.shape.groups, ps.groupSize = c.groupSize;
  ps.bits = c.bits, ps.zeroPoints = pz != nullptr;
  ps.halfScales = scalesFitHalf(w.scales.data(), int64_t(w.scales.size()));
  EXPECT_EQ(ps.halfScales, c.halfScales);
  bool intPath = ps.valid();
  std::vector<float> yq(size_t(c.M * c.N), -1.f);
  if (intPath) {
    std::vector<uint8_t> packed(size_t(ps.bytes()), 0xAB);
    packQuantPanels(ps, w.q.data(), w.scales.data(), pz, packed.data());
    // Dequantized: the stored layout's values, bit for bit.
    std::vector<float> panel(size_t(c.K * kQuantPanel)), row(size_t(c.K));
    for (int64_t p = 0; p < ps.panels(); ++p) {
      dequantizeQuantPanel(ps, packed.data(), p, panel.data());
      for (int64_t j = 0; j < kQuantPanel && p * kQuantPanel + j < c.N; ++j) {
        dequantizeRange(w.shape, w.q.data(), w.scales.data(), pz, p * kQuantPanel + j, 0, c.K,
                        row.data(), 1);
        for (int64_t k = 0; k < c.K; ++k)
          ASSERT_EQ(panel[size_t(k * kQuantPanel + j)], row[size_t(k)])
              << "panel " << p << " row " << j << " k " << k;
      }
    }
    QuantActivations xa;
    prepareQuantActivations(x.data(), c.M, c.K, ps.blocks(), xa);
    // Two ranges of panels, as two threads would split them.
    int64_t half = ps.panels() / 2;
    quantPanelRows(xa, ps, packed.data(), pb, pr, yi.data(), 0, half);
    quantPanelRows(xa, ps, packed.data(), pb, pr, yi.data(), half, ps.panels());
    // All panels in one call (decode passes over two at a time where it
    // can): the same arithmetic per output, so the same bits.
    std::vector<float> whole(size_t(c.M * c.N), -1.f);
    quantPanelRows(xa, ps, packed.data(), pb, pr, whole.data(), 0, ps.panels());
    for (size_t i = 0; i < whole.size(); ++i)
      ASSERT_EQ(whole[i], yi[i]) << "one call over all panels, output " << i;
    std::vector<float> scratchQ(size_t(quantPanelScratch(ps)), NAN);
    quantPanelRowsF32(x.data(), c.M, ps, packed.data(), pb, pr, yq.data(), 0, half,
                      scratchQ.data());
    quantPanelRowsF32(x.data(), c.M, ps, packed.data(), pb, pr, yq.data(), half, ps.panels(),
                      scratchQ.data());
  }
  int64_t blocks = (c.K + 31) / 32;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double exact = 0, rounded = 0, magnitude = 0, bound = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        double wk = w.w(n, k);
        exact += wk * x[m * c.K + k];
        rounded += wk * xr[m * c.K + k];
        magnitude += std::fabs(wk * x[m * c.K + k]);
        bound += std::fabs(wk) * blockScale[m * blocks + k / 32] / 2;
      }
      double epilogue = (pb ? pb[n] : 0.0) + (pr ? pr[m * c.N + n] : 0.0);
      double tol = 1e-5 * (magnitude + std::fabs(epilogue)) + 1e-6;
      ASSERT_NEAR(yf[m * c.N + n], exact + epilogue, tol) << "f32 path, m=" << m << " n=" << n;
      ASSERT_NEAR(yp[m * c.N + n], exact + epilogue, tol) << "panel path, m=" << m << " n=" << n;
      if (intPath) {
        ASSERT_NEAR(yq[m * c.N + n], exact + epilogue, tol)
            << "dequantized quant panels, m=" << m << " n=" << n;
        ASSERT_NEAR(yi[m * c.N + n], rounded + epilogue, tol) << "int8 path, m=" << m << " n=" << n;
        ASSERT_NEAR(yi[m * c.N + n], exact + epilogue, bound * 1.0001 + tol)
            << "int8 path beyond its rounding bound, m=" << m << " n=" << n;
      }
    }
}

TEST(QuantKernels, FourBitMatchesFloat64) {
  REQUIRE_TARGET();
  uint32_t seed = 1;
  for (int64_t K : {32, 64, 96, 160, 1056, 1024})
    for (int64_t group : {int64_t(16), int64_t(32), int64_t(64), int64_t(128), K})
      for (bool zp : {false, true})
        for (int64_t M : {1, 3, 13, 29})
          check({M, 37, K, group, 4, zp, M == 3, M != 1, M == 13}, seed++);
}

TEST(QuantKernels, EightBitMatchesFloat64) {
  REQUIRE_TARGET();
  uint32_t seed = 100;
  for (int64_t K : {32, 96, 160, 192, 1024, 1056})
    for (int64_t group : {int64_t(32), int64_t(128), K}) // K: one group per output channel
      for (bool zp : {false, true})
        for (int64_t M : {1, 2, 9})
          check({M, 21, K, group, 8, zp, M == 2, M == 9, M == 9}, seed++);
}

TEST(QuantKernels, ZeroActivationsGiveTheEpilogue) {
  REQUIRE_TARGET();
  // A block of zeros has scale 0: no division by zero, no NaN.
  Case c{2, 8, 64, 32, 4, true, true, true};
  std::mt19937 rng(3);
  Weights w = randomWeights(c, rng);
  std::vector<float> x(size_t(c.M * c.K), 0.f), bias(8, 1.5f), residual(16, 0.25f), y(16);
  QuantPanelShape ps;
  ps.n = c.N, ps.k = c.K, ps.groups = 2, ps.groupSize = 32, ps.bits = 4, ps.zeroPoints = true;
  std::vector<uint8_t> packed(size_t(ps.bytes()));
  packQuantPanels(ps, w.q.data(), w.scales.data(), w.zp.data(), packed.data());
  QuantActivations xa;
  prepareQuantActivations(x.data(), c.M, c.K, ps.blocks(), xa);
  quantPanelRows(xa, ps, packed.data(), bias.data(), residual.data(), y.data(), 0, ps.panels());
  for (float v : y)
    EXPECT_EQ(v, 1.75f);
}

TEST(QuantKernels, ActivationsRoundAsDocumented) {
  REQUIRE_TARGET();
  // Per block of 32: scale = max|x| / 127, q = x * (1 / scale) rounded to
  // nearest even, clamped to +-127, and the block's sum; zeros past K. The
  // vector path (whole blocks) and the scalar one (the row's tail) alike.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t K : {32, 64, 100, 768}) {
    const int64_t M = 3, blocks = (K + 31) / 32;
    std::vector<float> x(size_t(M * K));
    for (float &v : x)
      v = normal(rng);
    // Row 1, block 0: max 127 (scale 1, so x * inv = x) with ties both ways.
    float ties[] = {127.f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, -126.5f};
    for (int i = 0; i < 7; ++i)
      x[size_t(K + i)] = ties[i];
    for (int64_t k = 7; k < std::min<int64_t>(K, 32); ++k)
      x[size_t(K + k)] = 0.f;
    // Row 2, block 0: all zeros (scale 0, no division).
    for (int64_t k = 0; k < 32; ++k)
      x[size_t(2 * K + k)] = 0.f;
    QuantActivations xa;
    xa.q.assign(7, 99); // stale contents of an earlier call
    prepareQuantActivations(x.data(), M, K, blocks, xa);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t b = 0; b < blocks; ++b) {
        float amax = 0;
        for (int64_t k = b * 32; k < std::min(K, b * 32 + 32); ++k)
          amax = std::max(amax, std::fabs(x[size_t(m * K + k)]));
        float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
        ASSERT_EQ(xa.scaleRow(m)[b], d) << "m " << m << " block " << b;
        int32_t sum = 0;
        for (int64_t i = 0; i < 32; ++i) {
          int64_t k = b * 32 + i;
          double want = 0;
          if (k < K)
            want = std::clamp(std::nearbyint(double(x[size_t(m * K + k)] * inv)), -127.0, 127.0);
          ASSERT_EQ(xa.qRow(m)[k], int8_t(want)) << "m " << m << " k " << k;
          sum += int32_t(want);
        }
        ASSERT_EQ(xa.sumRow(m)[b], sum) << "m " << m << " block " << b;
      }
    if (K >= 7) {
      const int8_t *r1 = xa.qRow(1);
      EXPECT_EQ(r1[0], 127);
      EXPECT_EQ(r1[1], 2);
      EXPECT_EQ(r1[2], -4);
      EXPECT_EQ(r1[3], 0);
      EXPECT_EQ(r1[4], 0);
      EXPECT_EQ(r1[5], 2);
      EXPECT_EQ(r1[6], -126);
      EXPECT_EQ(xa.scaleRow(2)[0], 0.f);
    }
  }
}

TEST(QuantKernels, PanelShapes) {
  // Records: blocks, then 16 scales (2 or 4 bytes), then 16 zero points.
  QuantPanelShape s;
  s.n = 40, s.k = 100, s.groups = 4, s.groupSize = 32, s.bits = 4;
  EXPECT_TRUE(s.valid());
  EXPECT_EQ(s.panels(), 3);
  EXPECT_EQ(s.recordBytes(), 256 + 64);
  s.halfScales = true, s.zeroPoints = true;
  EXPECT_EQ(s.recordBytes(), 256 + 32 + 16);
  EXPECT_EQ(s.bytes(), 3 * 4 * (256 + 32 + 16));
  s.bits = 8, s.groupSize = 64, s.groups = 2;
  EXPECT_EQ(s.recordBytes(), 2 * 512 + 32 + 16);
  s.groupSize = 48; // not whole blocks of 32
  EXPECT_FALSE(s.valid());
  s.groupSize = 64, s.groups = 3; // does not cover K once
  EXPECT_FALSE(s.valid());
  // Scales fit two bytes only when every one is exactly an f16.
  float exact[] = {0.f, 0.5f, -0.0009765625f, 65504.f};
  float inexact[] = {0.5f, 0.1f};
  EXPECT_TRUE(scalesFitHalf(exact, 4));
  EXPECT_FALSE(scalesFitHalf(inexact, 2));
}

} // namespace
