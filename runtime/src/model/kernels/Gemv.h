//===- Gemv.h - the decode GEMV template the emitted models instantiate ---===//
//
// y[m, n] = x[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]) for a few rows
// m of x (decode: M = batch) and a [N, K] f32 weight as linear layers store
// it. Decode reads every weight once per token, so this loop is the
// memory-bound core of generation: each thread streams a contiguous block of
// weight rows, four rows at a time (four read streams for the prefetchers,
// x stays in L1), with FMA into four vector accumulators and the bias and
// residual added in the epilogue (no second pass over y).
//
// Header-only on purpose: libmodel.so compiles it with the artifact's
// -march, so AVX-512 (16 lanes) or AVX2 (8 lanes) is chosen at compile time
// (plain C++ otherwise).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_GEMV_H
#define LLMC_RUNTIME_MODEL_KERNELS_GEMV_H

#include "runtime/src/cpu/Numeric.h"

#include <algorithm>
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace llmc::model::kernels {

/// 16-bit weights as stored: IEEE half and bfloat16.
struct Half {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};
inline float toFloat(float x) { return x; }
inline float toFloat(Half h) { return cpu::halfToFloat(h.bits); }
inline float toFloat(Bf16 b) { return cpu::bf16ToFloat(b.bits); }

#if defined(__AVX512F__)
struct VecF {
  static constexpr int kLanes = 16;
  __m512 v;
  static VecF zero() { return {_mm512_setzero_ps()}; }
  static VecF load(const float *p) { return {_mm512_loadu_ps(p)}; }
  static VecF load(const Half *p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))};
  }
  static VecF load(const Bf16 *p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16))};
  }
  static VecF fma(VecF a, VecF b, VecF c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  static float sum(VecF a) { return _mm512_reduce_add_ps(a.v); }
};
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
struct VecF {
  static constexpr int kLanes = 8;
  __m256 v;
  static VecF zero() { return {_mm256_setzero_ps()}; }
  static VecF load(const float *p) { return {_mm256_loadu_ps(p)}; }
  static VecF load(const Half *p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)))};
  }
  static VecF load(const Bf16 *p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))};
  }
  static VecF fma(VecF a, VecF b, VecF c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
  static float sum(VecF a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};
#else
struct VecF {
  static constexpr int kLanes = 1;
  float v;
  static VecF zero() { return {0.f}; }
  static VecF load(const float *p) { return {*p}; }
  static VecF load(const Half *p) { return {toFloat(*p)}; }
  static VecF load(const Bf16 *p) { return {toFloat(*p)}; }
  static VecF fma(VecF a, VecF b, VecF c) { return {a.v * b.v + c.v}; }
  static float sum(VecF a) { return a.v; }
};
#endif

/// Rows [n0, n1) of y for every m < M. x [M, K], w [N, K] of f32, Half or
/// Bf16 (converted as loaded: 16-bit weights halve the bytes a step reads),
/// y [M, N] (row strides K, K, N); bias [N] and residual [M, N] may be null.
template <typename TW>
void gemvRows(const float *x, int64_t M, int64_t K, const TW *w, const float *bias,
              const float *residual, float *y, int64_t N, int64_t n0, int64_t n1) {
  constexpr int L = VecF::kLanes;
  const int64_t kv = K / L * L;
  auto finish = [&](int64_t m, int64_t n, float dot) {
    if (bias)
      dot += bias[n];
    if (residual)
      dot += residual[m * N + n];
    y[m * N + n] = dot;
  };
  int64_t n = n0;
  // 16-bit weights: one row at a time with two accumulators streams faster
  // than four rows at once (measured on the development VM: 20 vs 15 GB/s
  // on two cores).
  if constexpr (sizeof(TW) == 2) {
    const int64_t kv2 = K / (2 * L) * (2 * L);
    for (; n < n1; ++n) {
      const TW *wn = w + n * K;
      for (int64_t m = 0; m < M; ++m) {
        const float *xm = x + m * K;
        VecF a = VecF::zero(), b = VecF::zero();
        int64_t k = 0;
        for (; k < kv2; k += 2 * L) {
          a = VecF::fma(VecF::load(wn + k), VecF::load(xm + k), a);
          b = VecF::fma(VecF::load(wn + k + L), VecF::load(xm + k + L), b);
        }
        for (; k < kv; k += L)
          a = VecF::fma(VecF::load(wn + k), VecF::load(xm + k), a);
        float d = VecF::sum(a) + VecF::sum(b);
        for (; k < K; ++k)
          d += xm[k] * toFloat(wn[k]);
        finish(m, n, d);
      }
    }
    return;
  }
  for (; n + 4 <= n1; n += 4) {
    const TW *w0 = w + n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    for (int64_t m = 0; m < M; ++m) {
      const float *xm = x + m * K;
      VecF a0 = VecF::zero(), a1 = VecF::zero(), a2 = VecF::zero(), a3 = VecF::zero();
      for (int64_t k = 0; k < kv; k += L) {
        VecF xv = VecF::load(xm + k);
        a0 = VecF::fma(VecF::load(w0 + k), xv, a0);
        a1 = VecF::fma(VecF::load(w1 + k), xv, a1);
        a2 = VecF::fma(VecF::load(w2 + k), xv, a2);
        a3 = VecF::fma(VecF::load(w3 + k), xv, a3);
      }
      float d0 = VecF::sum(a0), d1 = VecF::sum(a1), d2 = VecF::sum(a2), d3 = VecF::sum(a3);
      for (int64_t k = kv; k < K; ++k) {
        d0 += xm[k] * toFloat(w0[k]), d1 += xm[k] * toFloat(w1[k]);
        d2 += xm[k] * toFloat(w2[k]), d3 += xm[k] * toFloat(w3[k]);
      }
      finish(m, n, d0), finish(m, n + 1, d1), finish(m, n + 2, d2), finish(m, n + 3, d3);
    }
  }
  for (; n < n1; ++n) {
    const TW *wn = w + n * K;
    for (int64_t m = 0; m < M; ++m) {
      const float *xm = x + m * K;
      VecF a = VecF::zero();
      for (int64_t k = 0; k < kv; k += L)
        a = VecF::fma(VecF::load(wn + k), VecF::load(xm + k), a);
      float d = VecF::sum(a);
      for (int64_t k = kv; k < K; ++k)
        d += xm[k] * toFloat(wn[k]);
      finish(m, n, d);
    }
  }
}

/// The same product for many rows of x (prefill): blocks of MB rows of x by
/// NB rows of w with MB x NB vector accumulators of partial dot products
/// along K (several FMAs per load), summed at the end: 4 x 4 with AVX-512's
/// 32 registers, 3 x 4 with AVX2's 16. The caller gives each thread a range
/// of w rows, so a block of them stays in L1 while x streams past (from L2).
template <typename TW>
void gemmRows(const float *x, int64_t M, int64_t K, const TW *w, const float *bias,
              const float *residual, float *y, int64_t N, int64_t n0, int64_t n1) {
  constexpr int L = VecF::kLanes;
#if defined(__AVX512F__)
  constexpr int MB = 4, NB = 4;
#else
  constexpr int MB = 3, NB = 4;
#endif
  const int64_t kv = K / L * L;
  auto finish = [&](int64_t m, int64_t n, float dot) {
    if (bias)
      dot += bias[n];
    if (residual)
      dot += residual[m * N + n];
    y[m * N + n] = dot;
  };
  int64_t n = n0;
  for (; n + NB <= n1; n += NB) {
    const TW *wr[NB];
    for (int j = 0; j < NB; ++j)
      wr[j] = w + (n + j) * K;
    int64_t m = 0;
    for (; m + MB <= M; m += MB) {
      const float *xr[MB];
      for (int i = 0; i < MB; ++i)
        xr[i] = x + (m + i) * K;
      VecF acc[MB][NB];
      for (auto &row : acc)
        for (VecF &a : row)
          a = VecF::zero();
      for (int64_t k = 0; k < kv; k += L) {
        VecF xv[MB];
        for (int i = 0; i < MB; ++i)
          xv[i] = VecF::load(xr[i] + k);
        for (int j = 0; j < NB; ++j) {
          VecF wv = VecF::load(wr[j] + k);
          for (int i = 0; i < MB; ++i)
            acc[i][j] = VecF::fma(xv[i], wv, acc[i][j]);
        }
      }
      for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) {
          float d = VecF::sum(acc[i][j]);
          for (int64_t k = kv; k < K; ++k)
            d += xr[i][k] * toFloat(wr[j][k]);
          finish(m + i, n + j, d);
        }
    }
    if (m < M) // the last rows of x: the GEMV form
      gemvRows(x + m * K, M - m, K, w, bias, residual ? residual + m * N : nullptr, y + m * N, N,
               n, n + NB);
  }
  if (n < n1)
    gemvRows(x, M, K, w, bias, residual, y, N, n, n1);
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_GEMV_H
