//===- Onnx.h - ONNX operations of static shape the fallback leaves ------===//
//
// Kernels for ONNX operations that an attention llmc does not recognise is
// written with (its scores and values as plain products, its softmax),
// so that such a model's attention stays on the device when its shapes are
// static (a TensorScatter cache of fixed length). The element-wise parts
// and copies are generated (GeneratedKernels.cpp); these are templates.
//
// Shapes and layouts (matmul)
//   A    [batch..., M, K] at a + offsetA(batch) + i * am + k * ak
//   B    [batch..., K, N] at b + offsetB(batch) + k * bk + j * bn
//   Y    [batch..., M, N], contiguous
//   The batch index runs over MatmulBatch's dims (up to kMatmulBatchDims,
//   numpy broadcasting: a broadcast dimension has stride 0 in that
//   operand). Any strides, so a transpose before the product needs no copy.
//   Floats of one type (f32, half, bfloat16); sums in f32 (as the CPU
//   target's matmul), the result rounded once.
//
// Tiling (matmul)
//   A block of 256 threads computes a 16 x 16 tile of Y: each thread one
//   element, K in steps of 16 through shared memory (A's and B's 16 x 16
//   tiles as floats). grid (N tiles x M tiles, batch). Simple on purpose:
//   it serves the fallback, whose products are a head's scores and values.
//
// Shapes and layouts (softmax)
//   x, y [outer, axis, inner], contiguous: softmax (or log-softmax) along
//   the middle dimension, in f32: max, sum of exp(x - max), then
//   exp(x - max) / sum (log: x - max - log(sum)), as the CPU kernel. A
//   line whose elements are all -inf gives NaN there too.
//
// Tiling (softmax)
//   One block per (outer, inner) line, kSoftmaxThreads threads striding
//   along the axis (stride `inner` between elements); block reductions.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ONNX_H
#define LLMC_RUNTIME_MODEL_CUDA_ONNX_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kMatmulBatchDims = 4;
constexpr int kMatmulTile = 16;

/// The batch dimensions of a matmul and each operand's element stride
/// along them (0 where the operand is broadcast). Unused dimensions: 1.
struct MatmulBatch {
  int rank = 0;
  long long dims[kMatmulBatchDims] = {1, 1, 1, 1};
  long long a[kMatmulBatchDims] = {0, 0, 0, 0};
  long long b[kMatmulBatchDims] = {0, 0, 0, 0};
};

template <class T>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kMatmulTile *kMatmulTile)
    matmulKernel(const T *a, const T *b, T *y, int m, int n, int k, long long am, long long ak,
                 long long bk, long long bn, MatmulBatch batch) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[kMatmulTile][kMatmulTile + 1], at);
  LLMC_SHARED(float[kMatmulTile][kMatmulTile + 1], bt);
  int tilesN = (n + kMatmulTile - 1) / kMatmulTile;
  int i0 = int(blockIdx.x) / tilesN * kMatmulTile, j0 = int(blockIdx.x) % tilesN * kMatmulTile;
  // (Every dimension, unrolled: an unused one has size 1 and stride 0, and
  // the parameter is read in place, not copied to local memory.)
  long long offA = 0, offB = 0, rest = blockIdx.y;
  LLMC_UNROLL
  for (int d = kMatmulBatchDims - 1; d >= 0; --d) {
    long long idx = rest % batch.dims[d];
    rest /= batch.dims[d];
    offA += idx * batch.a[d];
    offB += idx * batch.b[d];
  }
  int ty = int(threadIdx.x) / kMatmulTile, tx = int(threadIdx.x) % kMatmulTile;
  float sum = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kMatmulTile) {
    // at[ty][tx] = A[i0 + ty, k0 + tx]; bt[ty][tx] = B[k0 + ty, j0 + tx].
    int ia = i0 + ty, ka = k0 + tx, kb = k0 + ty, jb = j0 + tx;
    at[ty][tx] = ia < m && ka < k ? toFloat(a[offA + ia * am + ka * ak]) : 0.0f;
    bt[ty][tx] = kb < k && jb < n ? toFloat(b[offB + kb * bk + jb * bn]) : 0.0f;
    __syncthreads();
    LLMC_UNROLL
    for (int e = 0; e < kMatmulTile; ++e)
      sum = fmaf(at[ty][e], bt[e][tx], sum);
    __syncthreads();
  }
  int i = i0 + ty, j = j0 + tx;
  if (i < m && j < n)
    y[(long long)(blockIdx.y) * m * n + (long long)i * n + j] = fromFloat<T>(sum);
}

/// Y = A B over `batch` (see the top of the file); `batches` is the
/// product of batch.dims.
template <class T>
std::string matmul(const T *a, const T *b, T *y, int m, int n, int k, long long am, long long ak,
                   long long bk, long long bn, const MatmulBatch &batch, Stream stream) {
  if (m < 1 || n < 1 || k < 0 || batch.rank < 0 || batch.rank > kMatmulBatchDims)
    return "matmul: invalid arguments";
  long long batches = 1;
  for (int d = 0; d < batch.rank && batches <= 65535; ++d)
    batches *= batch.dims[d] >= 1 && batch.dims[d] <= 65535 ? batch.dims[d] : 65536;
  long long tiles = (long long)((m + kMatmulTile - 1) / kMatmulTile) *
                    ((n + kMatmulTile - 1) / kMatmulTile);
  if (batches > 65535 || tiles > 0x7fffffffLL) // (the grid's y and x limits)
    return "matmul: invalid arguments";
  return launch(matmulKernel<T>, dim3(unsigned(tiles), unsigned(batches)),
                dim3(kMatmulTile * kMatmulTile), 0, stream, a, b, y, m, n, k, am, ak, bk, bn,
                batch);
}

constexpr int kSoftmaxThreads = 256;

template <bool Log, class X, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kSoftmaxThreads)
    softmaxKernel(const X *x, Y *y, int axis, int inner) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], scratch);
  long long line = blockIdx.x;
  long long base = line / inner * (long long)axis * inner + line % inner;
  float mx = -INFINITY;
  for (int e = int(threadIdx.x); e < axis; e += int(blockDim.x))
    mx = fmaxf(mx, toFloat(x[base + (long long)e * inner]));
  mx = blockMax(mx, scratch);
  float sum = 0.0f;
  for (int e = int(threadIdx.x); e < axis; e += int(blockDim.x))
    sum += expf(toFloat(x[base + (long long)e * inner]) - mx);
  sum = blockSum(sum, scratch);
  float logSum = logf(sum);
  for (int e = int(threadIdx.x); e < axis; e += int(blockDim.x)) {
    float d = toFloat(x[base + (long long)e * inner]) - mx;
    y[base + (long long)e * inner] = fromFloat<Y>(Log ? d - logSum : expf(d) / sum);
  }
}

/// Softmax (log-softmax with `log`) of x [outer, axis, inner] along the
/// middle dimension into y (see the top of the file).
template <class X, class Y>
std::string softmax(const X *x, Y *y, long long outer, int axis, int inner, bool log,
                    Stream stream) {
  long long lines = outer * inner;
  if (outer < 1 || axis < 1 || inner < 1 || lines > 0x7fffffffLL)
    return "softmax: invalid arguments";
  return launch(log ? softmaxKernel<true, X, Y> : softmaxKernel<false, X, Y>,
                dim3(unsigned(lines)), dim3(kSoftmaxThreads), 0, stream, x, y, axis, inner);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ONNX_H
