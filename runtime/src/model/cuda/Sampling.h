//===- Sampling.h - token choice on the device ----------------------------===//
//
// argmax   logits: rows of V values (f32, or the model's type), row r at
//          r * rowStride (rowStride >= V: e.g. one position of each
//          sequence of [B, S, V] logits), ids int32 [rows]:
//          the first index of the largest value (the runtime's greedy rule;
//          NaN is never chosen unless the row holds nothing else, then 0).
//          One block per row: each thread scans a strided share, then a
//          warp and block reduction of (value, index) pairs. In greedy
//          decoding only these ids cross to the host.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H
#define LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kArgmaxThreads = 512;

/// Whether (v, i) comes before (best, at) in the greedy order.
LLMC_DEVICE bool takes(float v, int i, float best, int at) {
  return v > best || (v == best && i < at);
}

/// The warp's first largest (best, at), in every lane.
LLMC_DEVICE void warpArgmax(float &best, int &at) {
  LLMC_UNROLL
  for (int o = 16; o > 0; o >>= 1) {
    float v = __shfl_xor_sync(kFullMask, best, o);
    int i = __shfl_xor_sync(kFullMask, at, o);
    if (takes(v, i, best, at))
      best = v, at = i;
  }
}

template <class T>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kArgmaxThreads)
    argmaxKernel(const T *logits, int32_t *ids, int vocab, size_t rowStride) {
  LLMC_SHARED(float[32], bestValue);
  LLMC_SHARED(int[32], bestIndex);
  const T *row = logits + size_t(blockIdx.x) * rowStride;
  float best = -INFINITY;
  int at = vocab; // none yet
  for (int i = int(threadIdx.x); i < vocab; i += int(blockDim.x)) {
    float v = toFloat(row[i]);
    if (takes(v, i, best, at))
      best = v, at = i;
  }
  warpArgmax(best, at);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    bestValue[warp] = best;
    bestIndex[warp] = at;
  }
  __syncthreads();
  if (warp != 0)
    return;
  best = lane < blockDim.x / 32 ? bestValue[lane] : -INFINITY;
  at = lane < blockDim.x / 32 ? bestIndex[lane] : vocab;
  warpArgmax(best, at);
  if (lane == 0)
    ids[blockIdx.x] = at < vocab ? at : 0;
}

template <class T>
std::string argmax(const T *logits, int32_t *ids, int rows, int vocab, size_t rowStride,
                   Stream stream) {
  if (rows < 1 || vocab < 1 || rowStride < size_t(vocab))
    return "argmax: invalid arguments";
  return launch(argmaxKernel<T>, dim3(unsigned(rows)), dim3(kArgmaxThreads), 0, stream, logits, ids,
                vocab, rowStride);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H
