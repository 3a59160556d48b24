//===- Pointwise.h - row-wise and elementwise templates: norms, SwiGLU ----===//
//
// rmsNormRow  y = x / sqrt(mean(x^2) + eps) * (scale + offset) over one row
//             of `n` (x, scale and y f32, Half or Bf16; computed in f32).
// swiglu      y = g * sigmoid(g) * u elementwise.
// softmaxRow  softmax or log-softmax of one row in f32: e^(x - max) / sum,
//             or x - max - log(sum), weights below the smallest normal
//             float 0; declines a row whose max or sum is not
//             finite (all -inf, an infinity, a NaN), which the caller
//             computes as the reference kernel does.
// fastExp     e^x in f32, branch-free (so `omp simd` loops vectorise it):
//             e^x = 2^k e^f, k = round(x log2 e) set in the exponent bits,
//             |f| <= ln(2)/2, e^f by its degree-6 Taylor polynomial
//             (relative error below 2.5e-7); inputs clamped to [-87.3, 88.3].
// fastTanh    tanh(x) in f32, branch-free: on t = |x|, t + t^3 R(t^2) below
//             0.625 (R of degree 5, least squares on Chebyshev nodes), else
//             1 - 2 / (e^2t + 1) by fastExp; the sign of x put back (so -0
//             stays -0, NaN stays NaN, +-inf give +-1). Relative error
//             below 1.5e-7 (about 2 ulps) over every float.
// fastErf     erf(x) in f32, branch-free: on t = |x|, t P(t^2) below 1 (P of
//             degree 6 fitted as R), else 1 - e^Q(t) (Q of degree 8 fitted to
//             log erfc over [1, 3.9375], t clamped there: erf rounds to 1 in
//             f32 from 3.9192); the sign put back. Relative error below
//             2e-7 for |x| < 1, absolute below 1.2e-7 above (2 ulps of 1).
//             The generated loops (GeneratedLoops.h) compute GELU with it
//             and tanh-GELU with fastTanh, 20-30 times faster than libm's
//             scalar erff and tanhf, which GCC cannot vectorise.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_POINTWISE_H
#define LLMC_RUNTIME_MODEL_KERNELS_POINTWISE_H

#include "runtime/src/model/kernels/Vec.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace llmc::model::kernels {

inline float fastExp(float x) {
  x = x < -87.3f ? -87.3f : x > 88.3f ? 88.3f : x;
  float k = std::nearbyint(x * 1.44269504088896341f);
  // f = x - k ln 2 with ln 2 in two parts, the first short enough that
  // k * it and the difference are exact, so f keeps its accuracy.
  float f = (x - k * 0.693145751953125f) - k * 1.42860682030941723e-6f;
  float p = 1.f / 720;
  p = p * f + 1.f / 120;
  p = p * f + 1.f / 24;
  p = p * f + 1.f / 6;
  p = p * f + 0.5f;
  p = p * f + 1.f;
  p = p * f + 1.f;
  int32_t bits = (int32_t(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float fastTanh(float x) {
  float t = std::fabs(x), u = x * x;
  float r = 2.314125421e-3f;
  r = r * u - 8.365823887e-3f;
  r = r * u + 2.177690528e-2f;
  r = r * u - 5.396049097e-2f;
  r = r * u + 1.333331019e-1f;
  r = r * u - 3.333333433e-1f;
  float small = t + t * u * r;
  float big = 1.f - 2.f / (fastExp(2.f * t) + 1.f);
  return std::copysign(t < 0.625f ? small : big, x);
}

inline float fastErf(float x) {
  float t = std::fabs(x), u = x * x;
  float p = 7.933485904e-5f;
  p = p * u - 8.034844068e-4f;
  p = p * u + 5.191218108e-3f;
  p = p * u - 2.685539983e-2f;
  p = p * u + 1.128362566e-1f;
  p = p * u - 3.761262894e-1f;
  p = p * u + 1.128379226f;
  float small = t * p;
  // Q in v = t - 2.46875, the middle of [1, 3.9375].
  float v = (t < 3.9375f ? t : 3.9375f) - 2.46875f;
  float q = 1.638483241e-6f;
  q = q * v - 1.369786969e-5f;
  q = q * v + 8.025400166e-5f;
  q = q * v - 4.349825322e-4f;
  q = q * v + 2.232071478e-3f;
  q = q * v - 1.113326475e-2f;
  q = q * v - 9.428628683e-1f;
  q = q * v - 5.293719292f;
  q = q * v - 7.640465260f;
  float big = 1.f - fastExp(q);
  return std::copysign(t >= 1.f ? big : small, x);
}

template <typename T>
void rmsNormRow(const T *x, const T *scale, float offset, float eps, T *y, int64_t n,
                float *row) {
  constexpr int L = VecF::kLanes;
  toF32(x, row, n);
  VecF s0 = VecF::zero();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    VecF v = VecF::load(row + i);
    s0 = VecF::fma(v, v, s0);
  }
  float ss = VecF::sum(s0);
  for (; i < n; ++i)
    ss += row[i] * row[i];
  float inv = 1.f / std::sqrt(ss / float(n) + eps);
  for (i = 0; i + L <= n; i += L)
    VecF::mul(VecF::load(row + i),
              VecF::mul(VecF::splat(inv), VecF::add(VecF::load(scale + i), VecF::splat(offset))))
        .store(y + i);
  for (; i < n; ++i)
    fromFloat(row[i] * inv * (toFloat(scale[i]) + offset), y[i]);
}

/// y[i] = g[i] * sigmoid(g[i]) * u[i], i < n, through f32 buffers of n.
template <typename T>
void swiglu(const T *g, const T *u, T *y, int64_t n, float *gs, float *us) {
  toF32(g, gs, n);
  toF32(u, us, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    gs[i] = gs[i] / (1.f + fastExp(-gs[i])) * us[i];
  fromF32(gs, y, n);
}

/// Softmax (log-softmax when `log`) of the row x of n into y, through the
/// f32 buffer `row` of n. Returns false, having written nothing, when the
/// row's max or its sum of exponentials is not finite or has a NaN.
template <typename T> bool softmaxRow(const T *x, T *y, int64_t n, float *row, bool log) {
  toF32(x, row, n);
  float mx = -INFINITY;
  int nan = 0;
#pragma omp simd reduction(max : mx) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    mx = row[i] > mx ? row[i] : mx;
    nan |= row[i] != row[i];
  }
  if (nan || !std::isfinite(mx))
    return false;
  // e^d below e^-87.3 is 0 here (fastExp clamps there): a masked score
  // (-inf, or the lowest float) weighs exactly nothing.
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    float d = row[i] - mx;
    row[i] = d < -87.3f ? 0.f : fastExp(d);
    sum += row[i];
  }
  if (!std::isfinite(sum) || !(sum > 0))
    return false;
  if (log) {
    float ls = std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      fromFloat((toFloat(x[i]) - mx) - ls, y[i]);
    return true;
  }
  // Results below the smallest normal float are 0 (off by less than
  // 1.2e-38): subnormal weights would slow every product that reads them.
  float inv = 1.f / sum;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float p = row[i] * inv;
    row[i] = p < 1.17549435e-38f ? 0.f : p;
  }
  fromF32(row, y, n);
  return true;
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_POINTWISE_H
