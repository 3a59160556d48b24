//===- Norm.h - RMS and layer normalisation --------------------------------===//
//
// Shapes and layouts (rmsNorm)
//   x, residual, sum, y   [rows, H], row-major (residual and sum may be null)
//   weight                [H]
//   h = x (+ residual); sum = h when given (the residual stream for the next
//   layer); y = h / sqrt(mean(h^2) + eps) * (weight + offset), f32 inside;
//   with `after` ([rows, H], Y), y = after + that (rounded to Y first): a
//   norm after a block added to the residual stream (Gemma 2's and 3's).
//
// rmsNormPair: two such norms (no residual, sum or after) of rows of one
// length in one launch, a block a row of either.
//
// layerNorm: y = (x - mean) / sqrt(var + eps) * weight (+ bias), the same
// layouts without the residual.
//
// Tiling
//   One block per row, kNormThreads threads striding over H; sums are block
//   reductions (the variance a second pass over the row, around the mean). h is read a second time for the output
//   (from L1/L2: a row is at most a few KiB). y may alias x or sum.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_NORM_H
#define LLMC_RUNTIME_MODEL_CUDA_NORM_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kNormThreads = 256;

/// Row `row` of an RMS norm by the whole block (rmsNormKernel's, and each
/// half of rmsNormPairKernel's).
template <class X, class Wt, class Y>
LLMC_DEVICE void rmsNormRow(const X *x, const X *residual, X *sum, const Wt *weight, Y *y, int h,
                            float eps, float offset, const Y *after, size_t row, float *scratch) {
  size_t base = row * size_t(h);
  float squares = 0.0f;
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    float v = toFloat(x[base + size_t(i)]);
    if (residual)
      v += toFloat(residual[base + size_t(i)]);
    squares = fmaf(v, v, squares);
  }
  float total = blockSum(squares, scratch);
  float inv = rsqrtf(total / float(h) + eps);
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    float v = toFloat(x[base + size_t(i)]);
    if (residual)
      v += toFloat(residual[base + size_t(i)]);
    if (sum)
      sum[base + size_t(i)] = fromFloat<X>(v);
    Y normed = fromFloat<Y>(v * inv * (toFloat(weight[i]) + offset));
    y[base + size_t(i)] = after ? fromFloat<Y>(toFloat(after[base + size_t(i)]) + toFloat(normed))
                                : normed;
  }
}

template <class X, class Wt, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kNormThreads)
    rmsNormKernel(const X *x, const X *residual, X *sum, const Wt *weight, Y *y, int h, float eps,
                  float offset, const Y *after) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], scratch);
  rmsNormRow(x, residual, sum, weight, y, h, eps, offset, after, size_t(blockIdx.x), scratch);
}

/// One of rmsNormPair's two norms.
template <class X, class Wt, class Y> struct RmsNormRows {
  const X *x;
  const Wt *weight;
  Y *y;
  int rows;
  float eps, offset;
};

template <class X, class Wt, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kNormThreads)
    rmsNormPairKernel(RmsNormRows<X, Wt, Y> a, RmsNormRows<X, Wt, Y> b, int h) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], scratch);
  int row = int(blockIdx.x);
  const RmsNormRows<X, Wt, Y> &n = row < a.rows ? a : b;
  rmsNormRow<X, Wt, Y>(n.x, nullptr, nullptr, n.weight, n.y, h, n.eps, n.offset, nullptr,
                       size_t(row < a.rows ? row : row - a.rows), scratch);
}

template <class X, class Wt, class Y>
std::string rmsNorm(const X *x, const X *residual, X *sum, const Wt *weight, Y *y, int rows, int h,
                    float eps, float offset, Stream stream, const Y *after = nullptr) {
  if (rows < 1 || h < 1)
    return "rms_norm: invalid arguments";
  return launch(rmsNormKernel<X, Wt, Y>, dim3(unsigned(rows)), dim3(kNormThreads), 0, stream, x,
                residual, sum, weight, y, h, eps, offset, after);
}

template <class X, class Wt, class Y>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kNormThreads)
    layerNormKernel(const X *x, const Wt *weight, const Wt *bias, Y *y, int h, float eps) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], scratch);
  size_t base = size_t(blockIdx.x) * size_t(h);
  float sum = 0.0f;
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x))
    sum += toFloat(x[base + size_t(i)]);
  float mean = blockSum(sum, scratch) / float(h);
  float squares = 0.0f;
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    float d = toFloat(x[base + size_t(i)]) - mean;
    squares = fmaf(d, d, squares);
  }
  float inv = rsqrtf(blockSum(squares, scratch) / float(h) + eps);
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x)) {
    float v = (toFloat(x[base + size_t(i)]) - mean) * inv * toFloat(weight[i]);
    if (bias)
      v += toFloat(bias[i]);
    y[base + size_t(i)] = fromFloat<Y>(v);
  }
}

/// Two RMS norms of rows of one length in one launch (Qwen 3's and Gemma
/// 3's of the query heads and the key heads): rows1 + rows2 blocks.
template <class X, class Wt, class Y>
std::string rmsNormPair(const X *x1, const Wt *weight1, Y *y1, int rows1, float eps1,
                        float offset1, const X *x2, const Wt *weight2, Y *y2, int rows2,
                        float eps2, float offset2, int h, Stream stream) {
  if (rows1 < 1 || rows2 < 1 || h < 1)
    return "rms_norm: invalid arguments";
  return launch(rmsNormPairKernel<X, Wt, Y>, dim3(unsigned(rows1 + rows2)), dim3(kNormThreads), 0,
                stream, RmsNormRows<X, Wt, Y>{x1, weight1, y1, rows1, eps1, offset1},
                RmsNormRows<X, Wt, Y>{x2, weight2, y2, rows2, eps2, offset2}, h);
}

template <class X, class Wt, class Y>
std::string layerNorm(const X *x, const Wt *weight, const Wt *bias, Y *y, int rows, int h,
                      float eps, Stream stream) {
  if (rows < 1 || h < 1)
    return "layer_norm: invalid arguments";
  return launch(layerNormKernel<X, Wt, Y>, dim3(unsigned(rows)), dim3(kNormThreads), 0, stream, x,
                weight, bias, y, h, eps);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_NORM_H
