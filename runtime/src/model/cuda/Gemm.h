//===- Gemm.h - prefill linear layers: C = A W^T (+ bias) (+ residual) ----===//
//
// Shapes and layouts
//   a         [M, K] of X, row-major (M: the prefill's tokens)
//   w         [N, K] of W, row-major (llm.linear's weight, as gemv reads it),
//             read through a row reader: DenseRows here, QuantRows for
//             4- and 8-bit weights (QuantGemv.h)
//   bias      [N] of B (W's type for gemm) or null; residual [M, N] of Y
//             or null (added last)
//   c         [M, N] of Y
//
// Tiling
//   The SIMT form, for every architecture and the host emulation: a block
//   of 256 threads computes a 64 x 64 tile of C, each thread 4 x 4 of it in
//   registers, over K in steps of 16 staged in shared memory (A and W tiles
//   stored k-major, rows padded). Sums in f32. Edges load zeros.
//   The tensor-core path (cuBLASLt, or mma tiles) replaces it on a GPU for
//   the prefill benchmark; this one is the reference the tests hold both to.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_GEMM_H
#define LLMC_RUNTIME_MODEL_CUDA_GEMM_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kGemmTile = 64, kGemmStep = 16, kGemmThreads = 256;

/// A row-major float weight: W[n, k] as f32.
template <class W> struct DenseRows {
  const W *w;
  int k;
  LLMC_DEVICE float operator()(int n, int kk) const {
    return toFloat(w[size_t(n) * size_t(k) + size_t(kk)]);
  }
};

template <class R, class B, class X, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kGemmThreads)
    gemmKernel(const X *a, R w, const B *bias, const Y *residual, Y *c, int m, int n, int k) {
  LLMC_SHARED(float[kGemmStep][kGemmTile + 4], as);
  LLMC_SHARED(float[kGemmStep][kGemmTile + 4], ws);
  int tid = int(threadIdx.x), ty = tid / 16, tx = tid % 16;
  int m0 = int(blockIdx.y) * kGemmTile, n0 = int(blockIdx.x) * kGemmTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kGemmStep) {
    for (int e = tid; e < kGemmTile * kGemmStep; e += kGemmThreads) {
      int r = e / kGemmStep, kk = e % kGemmStep;
      bool inK = k0 + kk < k;
      as[kk][r] = inK && m0 + r < m ? toFloat(a[size_t(m0 + r) * size_t(k) + size_t(k0 + kk)]) : 0.0f;
      ws[kk][r] = inK && n0 + r < n ? w(n0 + r, k0 + kk) : 0.0f;
    }
    __syncthreads();
    LLMC_UNROLL
    for (int kk = 0; kk < kGemmStep; ++kk) {
      float av[4], wv[4];
      LLMC_UNROLL
      for (int i = 0; i < 4; ++i) {
        av[i] = as[kk][ty * 4 + i];
        wv[i] = ws[kk][tx * 4 + i];
      }
      LLMC_UNROLL
      for (int i = 0; i < 4; ++i)
        LLMC_UNROLL
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
    }
    __syncthreads();
  }
  LLMC_UNROLL
  for (int i = 0; i < 4; ++i) {
    int row = m0 + ty * 4 + i;
    if (row >= m)
      continue;
    LLMC_UNROLL
    for (int j = 0; j < 4; ++j) {
      int col = n0 + tx * 4 + j;
      if (col >= n)
        continue;
      float v = acc[i][j];
      if (bias)
        v += toFloat(bias[col]);
      size_t at = size_t(row) * size_t(n) + size_t(col);
      if (residual)
        v += toFloat(residual[at]);
      c[at] = fromFloat<Y>(v);
    }
  }
}

/// Launches C = A W^T (+ bias) (+ residual) over the row reader `w`.
template <class R, class B, class X, class Y>
std::string gemmRows(const X *a, R w, const B *bias, const Y *residual, Y *c, int m, int n, int k,
                     Stream stream) {
  if (m < 1 || n < 1 || k < 1)
    return "gemm: invalid arguments";
  return launch(gemmKernel<R, B, X, Y>, dim3(ceilDiv(n, kGemmTile), ceilDiv(m, kGemmTile)),
                dim3(kGemmThreads), 0, stream, a, w, bias, residual, c, m, n, k);
}

template <class W, class X, class Y>
std::string gemm(const X *a, const W *w, const W *bias, const Y *residual, Y *c, int m, int n, int k,
                 Stream stream) {
  return gemmRows(a, DenseRows<W>{w, k}, bias, residual, c, m, n, k, stream);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_GEMM_H
