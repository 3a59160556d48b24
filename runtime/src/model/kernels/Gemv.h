//===- Gemv.h - the decode GEMV template the emitted models instantiate ---===//
//
// y[m, n] = x[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]) for a few rows
// m of x (decode: M = batch) and a [N, K] weight (f32, f16 or bf16, widened
// to f32 as loaded) as linear layers store it. Decode reads every weight
// once per token, so this loop is the memory-bound core of generation: each
// thread streams a contiguous block of weight rows, four rows at a time
// (x loaded once for four FMAs and kept in L1), with a software prefetch
// ahead of the stream, and the bias and residual added in the epilogue (no
// second pass over y).
//
// Header-only on purpose: libmodel.so compiles it with the artifact's
// -march, so AVX-512 (16 lanes) or AVX2 (8 lanes) is chosen at compile time
// (plain C++ otherwise).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_GEMV_H
#define LLMC_RUNTIME_MODEL_KERNELS_GEMV_H

#include "runtime/src/model/kernels/Vec.h"

#include <algorithm>
#include <cstdint>

namespace llmc::model::kernels {

/// Rows [n0, n1) of y for every m < M. x [M, K], w [N, K] of f32, Half or
/// Bf16 (converted as loaded: 16-bit weights halve the bytes a step reads),
/// y [M, N] (row strides K, K, N); bias [N] and residual [M, N] may be null.
template <typename TW>
void gemvRows(const float *x, int64_t M, int64_t K, const TW *w, const float *bias,
              const float *residual, float *y, int64_t N, int64_t n0, int64_t n1) {
  constexpr int L = VecF::kLanes;
  const int64_t kv = K / L * L;
  auto finish = [&](int64_t m, int64_t n, float dot) {
    y[m * N + n] = linearEpilogue(dot, bias, residual, m, n, N);
  };
  int64_t n = n0;
  // A software prefetch kPrefetch bytes ahead in the four rows' contiguous
  // block, walking it at the rate the loop consumes it (one line per 64
  // bytes read). 16-bit weights need it most: their loop converts as it
  // loads, holds more work per byte in flight, and the hardware prefetchers
  // alone left it at 17 GB/s on two cores of the development VM with
  // 768-wide rows, against 27 for f32. On the 125M Llama of bench/ it took
  // f16 decode from 11.6 to 7.4 ms per token and f32 from 13.5 to 12.5
  // (2, 4, 6 and 8 KiB tried: 4-6 best).
  constexpr int64_t kPrefetch = 4096;
  constexpr int64_t kStepBytes = 4 * L * int64_t(sizeof(TW));
  constexpr bool prefetch = kStepBytes >= 64;
  for (; n + 4 <= n1; n += 4) {
    const TW *w0 = w + n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    for (int64_t m = 0; m < M; ++m) {
      const float *xm = x + m * K;
      VecF a0 = VecF::zero(), a1 = VecF::zero(), a2 = VecF::zero(), a3 = VecF::zero();
      const char *ahead = reinterpret_cast<const char *>(w0) + kPrefetch;
      for (int64_t k = 0; k < kv; k += L, ahead += kStepBytes) {
        if constexpr (prefetch) {
          if (m == 0)
            for (int64_t b = 0; b < kStepBytes; b += 64)
              prefetchLine(ahead + b);
        }
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
    y[m * N + n] = linearEpilogue(dot, bias, residual, m, n, N);
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
