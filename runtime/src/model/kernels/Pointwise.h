//===- Pointwise.h - row-wise and elementwise templates: norms, SwiGLU ----===//
//
// rmsNormRow  y = x / sqrt(mean(x^2) + eps) * (scale + offset) over one row
//             of `n` (x, scale and y f32, Half or Bf16; computed in f32).
// swiglu      y = g * sigmoid(g) * u elementwise.
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

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_POINTWISE_H
