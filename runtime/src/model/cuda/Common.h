//===- Common.h - reductions and helpers shared by the CUDA kernels -------===//
//
// Warp and block reductions (every thread gets the result), loads of a run
// of N elements as floats (16-byte vector loads where the run is a whole
// number of them), and the device error word: a kernel that finds bad data
// (a token id past the vocabulary, a position past the tables) records a
// code there with the first offending index instead of reading out of
// bounds, and the host reports it after the step.
//
// Split counters: a kernel whose blocks cut one piece of work (split-K
// GEMVs, split-KV decode attention) finishes it in the block that ends its
// group last (lastOfGroup), instead of a second launch that combines the
// splits. The counters are a per-context device array of kSplitCounters
// words, zero between launches: the last block returns its group's to zero.
//
// Blocks are one-dimensional in every llmc kernel; blockDim.x is a multiple
// of 32 and at most 1024.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_COMMON_H
#define LLMC_RUNTIME_MODEL_CUDA_COMMON_H

#include "runtime/src/model/cuda/Cuda.h"

namespace llmc::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

LLMC_DEVICE float warpSum(float v) {
  LLMC_UNROLL
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

LLMC_DEVICE float warpMax(float v) {
  LLMC_UNROLL
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

/// Each thread's v[m] summed over the block, in every thread, M sums at
/// once (two barriers in all). `scratch` is M * 32 floats of shared memory
/// that no other thread uses meanwhile; it is free again when this returns.
template <int M> LLMC_DEVICE void blockSums(float (&v)[M], float *scratch) {
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  LLMC_UNROLL
  for (int m = 0; m < M; ++m) {
    v[m] = warpSum(v[m]);
    if (lane == 0)
      scratch[m * 32 + int(warp)] = v[m];
  }
  __syncthreads();
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    v[m] = warpSum(lane < warps ? scratch[m * 32 + int(lane)] : 0.0f);
  __syncthreads();
}

/// The sum over the block, in every thread (blockSums of one value;
/// `scratch` 32 floats).
LLMC_DEVICE float blockSum(float v, float *scratch) {
  float one[1] = {v};
  blockSums<1>(one, scratch);
  return one[0];
}

/// The maximum over the block, in every thread (`scratch` 32 floats of
/// shared memory, free again when this returns).
LLMC_DEVICE float blockMax(float v, float *scratch) {
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warpMax(v);
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  v = warpMax(lane < warps ? scratch[lane] : -INFINITY);
  __syncthreads();
  return v;
}

/// Whether p is 16-byte aligned.
LLMC_HOST_DEVICE bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Loads p[0 .. N) as floats: 16-byte loads when N elements are a whole
/// number of them (p then 16-byte aligned), element loads otherwise.
template <int N, class T> LLMC_DEVICE void loadRun(const T *p, float (&out)[N]) {
  constexpr int kPerVector = int(16 / sizeof(T));
  if constexpr (N % kPerVector == 0) {
    LLMC_UNROLL
    for (int v = 0; v < N / kPerVector; ++v) {
      float part[kPerVector];
      loadFloats(p + v * kPerVector, part);
      LLMC_UNROLL
      for (int i = 0; i < kPerVector; ++i)
        out[v * kPerVector + i] = part[i];
    }
  } else {
    LLMC_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = toFloat(p[i]);
  }
}

/// Error codes of the device error word (0: none). The word holds
/// code << 32 | index for the first error recorded.
enum DeviceError : unsigned long long {
  kTokenOutOfRange = 1,
  kPositionOutOfRange = 2,
  kCacheOverflow = 3,
  kAssertFailed = 4, // index: which llm.assert_equal (the model's message table)
};

LLMC_DEVICE void recordError(unsigned long long *word, DeviceError code, long long index) {
  if (word)
    atomicCAS(word, 0ull, (static_cast<unsigned long long>(code) << 32) |
                              (static_cast<unsigned long long>(index) & 0xffffffffull));
}

/// What a device error word says, for a message ("" when it is 0).
inline std::string describeDeviceError(unsigned long long word) {
  if (!word)
    return {};
  unsigned long long index = word & 0xffffffffull;
  switch (word >> 32) {
  case kTokenOutOfRange:
    return "token id at index " + std::to_string(index) + " is outside the vocabulary";
  case kPositionOutOfRange:
    return "position at index " + std::to_string(index) + " is outside the rotary tables";
  case kCacheOverflow:
    return "cache write past its capacity (position " + std::to_string(index) + ")";
  case kAssertFailed:
    return "run-time check " + std::to_string(index) + " failed";
  default:
    return "device error " + std::to_string(word >> 32);
  }
}

/// launch() with `bytes` of dynamic shared memory, the kernel opted in to
/// them first when they pass the 48 KiB a block has without it (less the
/// KiB kept for a kernel's own static shared words, such as lastOfGroup's).
template <class... P, class... A>
std::string launchWithShared(void (*kernel)(P...), dim3 grid, dim3 block, size_t bytes,
                             Stream stream, A &&...args) {
  if (bytes > 47 * 1024) {
    std::string e = setMaxDynamicShared(kernel, bytes);
    if (!e.empty())
      return e;
  }
  return launch(kernel, grid, block, bytes, stream, std::forward<A>(args)...);
}

constexpr int kSplitCounters = 4096;

/// Called by every thread of a block once the block has written its share
/// of a group's work to global memory; `blocks` blocks share `counter`.
/// True (in every thread) in the block that finished the group last, which
/// then reads the others' shares past L1 (__ldcg: written by other
/// multiprocessors) and combines them. That block also returns the counter
/// to zero for the next launch.
LLMC_DEVICE bool lastOfGroup(unsigned *counter, unsigned blocks) {
  LLMC_SHARED(unsigned, lastTicket);
  __syncthreads(); // the block's share is written (as cooperative groups'
                   // grid barrier: one thread fences for the block)
  if (threadIdx.x == 0) {
    __threadfence(); // (cumulative) the share is visible before the count
    unsigned ticket = atomicAdd(counter, 1u);
    if (ticket == blocks - 1) {
      *counter = 0;    // every other block of the group has counted
      __threadfence(); // their shares are visible to this block after the barrier
    }
    lastTicket = ticket;
  }
  __syncthreads();
  return lastTicket == blocks - 1;
}

LLMC_HOST_DEVICE unsigned ceilDiv(unsigned long long a, unsigned long long b) {
  return unsigned((a + b - 1) / b);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_COMMON_H
