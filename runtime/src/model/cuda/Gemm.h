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
//   Tensor cores (gemmTensorCore: X and W both half, or both bfloat16 on
//   sm_80 and later, or X half or bfloat16 and W 4- or 8-bit (QuantGemv.h's
//   qgemm without its scratch copy: the weight tile dequantized and rounded
//   to X's type as it is staged); sm_75 has no bfloat16 tiles and takes the SIMT form): a
//   block of 4 warps computes a 64 x 64 tile of C, each warp 32 x 32 of it as
//   2 x 2 WMMA accumulators of 16 x 16 (f32), over K in steps of 32 staged
//   in shared memory (A and W tiles row-major with k contiguous, rows
//   padded to 40 elements: W's rows are B's columns); the accumulators go
//   through a shared f32 tile for the epilogue. The host emulation runs the
//   same kernel (Cuda.h's tc::).
//   The SIMT form, for every other type (f32 X, or X and W of different
//   types): a block of 256 threads computes a 64 x 64 tile of C, each
//   thread 4 x 4 of it in registers, over K in steps of 16 staged in shared
//   memory (A and W tiles stored k-major, rows padded).
//   Sums in f32 either way. Edges load zeros.
//   On a GPU with cuBLASLt (Blas.h), gemm hands 16-bit X = W = Y to it
//   instead; the kernels here run the rest, and everything on the emulation.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_GEMM_H
#define LLMC_RUNTIME_MODEL_CUDA_GEMM_H

#include "runtime/src/model/cuda/Blas.h"
#include "runtime/src/model/cuda/Common.h"

#include <type_traits>

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

/// C[row, col] = v (+ bias[col]) (+ residual[row, col]), C [., n].
template <class B, class Y>
LLMC_DEVICE void storeLinear(float v, const B *bias, const Y *residual, Y *c, int row, int col,
                             int n) {
  if (bias)
    v += toFloat(bias[col]);
  size_t at = size_t(row) * size_t(n) + size_t(col);
  if (residual)
    v += toFloat(residual[at]);
  c[at] = fromFloat<Y>(v);
}

template <class R, class B, class X, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kGemmThreads)
    gemmKernel(const X *a, R w, const B *bias, const Y *residual, Y *c, int m, int n, int k) {
  LLMC_KERNEL_BEGIN();
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
      storeLinear(acc[i][j], bias, residual, c, row, col, n);
    }
  }
}

constexpr int kTcTile = 64, kTcStep = 32, kTcThreads = 128;
constexpr int kTcLd = kTcStep + 8, kTcOutLd = kTcTile + 4; // padded rows (WMMA: multiples of 8, 4)

/// gemmTensorCore's shared memory: 32-byte aligned, as WMMA's tiles must be.
template <class T> struct alignas(32) TcShared {
  T a[kTcTile][kTcLd];
  T w[kTcTile][kTcLd];
  float c[kTcTile][kTcOutLd];
};

/// W[n, k] in T for the tensor-core tiles: a dense weight's element as it
/// is, a row reader's f32 value (a dequantized one) rounded to T.
template <class T, class R> LLMC_DEVICE T tileWeight(const R &w, int n, int k) {
  return fromFloat<T>(w(n, k));
}
template <class T> LLMC_DEVICE T tileWeight(const DenseRows<T> &w, int n, int k) {
  return w.w[size_t(n) * size_t(w.k) + size_t(k)];
}

template <class T, class R, class B, class Y>
LLMC_DEVICE void gemmTensorCoreTile(const T *a, R w, const B *bias, const Y *residual, Y *c,
                                    int m, int n, int k) {
  LLMC_SHARED(TcShared<T>, s);
  int tid = int(threadIdx.x), warp = tid / 32;
  int wm = warp / 2 * 32, wn = warp % 2 * 32; // the warp's 32 x 32 of the tile
  int m0 = int(blockIdx.y) * kTcTile, n0 = int(blockIdx.x) * kTcTile;
  tc::Acc acc[2][2];
  LLMC_UNROLL
  for (int i = 0; i < 2; ++i)
    LLMC_UNROLL
    for (int j = 0; j < 2; ++j)
      tc::zero(acc[i][j]);
  const T zero = fromFloat<T>(0.0f);
  for (int k0 = 0; k0 < k; k0 += kTcStep) {
    for (int e = tid; e < kTcTile * kTcStep; e += kTcThreads) {
      int r = e / kTcStep, kk = e % kTcStep;
      bool inK = k0 + kk < k;
      s.a[r][kk] = inK && m0 + r < m ? a[size_t(m0 + r) * size_t(k) + size_t(k0 + kk)] : zero;
      s.w[r][kk] = inK && n0 + r < n ? tileWeight<T>(w, n0 + r, k0 + kk) : zero;
    }
    __syncthreads();
    LLMC_UNROLL
    for (int ks = 0; ks < kTcStep; ks += 16) {
      tc::FragA<T> fa[2];
      tc::FragB<T> fb[2];
      LLMC_UNROLL
      for (int i = 0; i < 2; ++i) {
        tc::loadA(fa[i], &s.a[wm + 16 * i][ks], kTcLd);
        tc::loadB(fb[i], &s.w[wn + 16 * i][ks], kTcLd);
      }
      LLMC_UNROLL
      for (int i = 0; i < 2; ++i)
        LLMC_UNROLL
        for (int j = 0; j < 2; ++j)
          tc::mma(acc[i][j], fa[i], fb[j]);
    }
    __syncthreads();
  }
  LLMC_UNROLL
  for (int i = 0; i < 2; ++i)
    LLMC_UNROLL
    for (int j = 0; j < 2; ++j)
      tc::store(&s.c[wm + 16 * i][wn + 16 * j], acc[i][j], kTcOutLd);
  __syncthreads();
  for (int e = tid; e < kTcTile * kTcTile; e += kTcThreads) {
    int r = e / kTcTile, col = e % kTcTile, row = m0 + r, cn = n0 + col;
    if (row >= m || cn >= n)
      continue;
    storeLinear(s.c[r][col], bias, residual, c, row, cn, n);
  }
}

template <class T, class R, class B, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kTcThreads)
    gemmTensorCoreKernel(const T *a, R w, const B *bias, const Y *residual, Y *c, int m, int n,
                         int k) {
  LLMC_KERNEL_BEGIN();
  if constexpr (std::is_same_v<T, bfloat16> && !tc::kBf16)
    return; // sm_75's build has no bfloat16 tiles: gemm never launches it there (tc::bf16())
  else
    gemmTensorCoreTile(a, w, bias, residual, c, m, n, k);
}

/// Whether X is a type the tensor-core tiles take (half, bfloat16).
template <class X>
constexpr bool kTensorCoreType = std::is_same_v<X, half> || std::is_same_v<X, bfloat16>;

/// Whether gemm<W, X, Y> runs on the tensor cores.
template <class W, class X>
constexpr bool kTensorCoreGemm = std::is_same_v<W, X> && kTensorCoreType<X>;

/// Launches C = A W^T (+ bias) (+ residual) over the row reader `w`: with
/// TENSOR_CORES (and X half or bfloat16, and sm_80 or later for bfloat16)
/// on the tensor cores with W's values rounded to X's type, else the SIMT
/// tiles with W's values in f32. (A template argument, so that a call that
/// never takes the tensor cores builds no kernel for them.)
template <bool TENSOR_CORES = false, class R, class B, class X, class Y>
std::string gemmRows(const X *a, R w, const B *bias, const Y *residual, Y *c, int m, int n, int k,
                     Stream stream) {
  if (m < 1 || n < 1 || k < 1)
    return "gemm: invalid arguments";
  if constexpr (TENSOR_CORES && kTensorCoreType<X>)
    if (!std::is_same_v<X, bfloat16> || tc::bf16())
      return launch(gemmTensorCoreKernel<X, R, B, Y>, dim3(ceilDiv(n, kTcTile), ceilDiv(m, kTcTile)),
                    dim3(kTcThreads), 0, stream, a, w, bias, residual, c, m, n, k);
  return launch(gemmKernel<R, B, X, Y>, dim3(ceilDiv(n, kGemmTile), ceilDiv(m, kGemmTile)),
                dim3(kGemmThreads), 0, stream, a, w, bias, residual, c, m, n, k);
}

/// C = A W^T (+ bias) (+ residual): through `blas` (cuBLASLt, Blas.h) when
/// it is ready and W, X and Y are one 16-bit type, else llmc's kernels.
template <class W, class X, class Y>
std::string gemm(const X *a, const W *w, const W *bias, const Y *residual, Y *c, int m, int n, int k,
                 Stream stream, Blas *blas = nullptr) {
  if constexpr (kTensorCoreGemm<W, X>) {
    if (m < 1 || n < 1 || k < 1)
      return "gemm: invalid arguments";
    if constexpr (std::is_same_v<W, Y>)
      if (blas && blas->ready()) {
        bool ran = false;
        std::string e = blas->matmul(a, w, bias, residual, c, m, n, k, stream, &ran);
        if (!e.empty() || ran)
          return e;
      }
  }
  return gemmRows<kTensorCoreGemm<W, X>>(a, DenseRows<W>{w, k}, bias, residual, c, m, n, k,
                                         stream);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_GEMM_H
