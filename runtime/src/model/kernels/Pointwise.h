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
