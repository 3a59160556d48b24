//===- Scratch.h - per-thread scratch buffers kept between calls ----------===//
//
// A kernel's temporary buffers (a row converted to f32, a table of offsets):
// per thread, kept between calls and grown to the largest size asked, so
// once a step has run, running it again allocates nothing. Buffers in use
// at the same time on one thread take different slots; a kernel that runs
// chunks on the pool uses chunk slots inside them (the calling thread runs
// chunks too). Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_SCRATCH_H
#define LLMC_RUNTIME_CPU_SCRATCH_H

#include "runtime/src/cpu/ThreadPool.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmc::cpu {

enum ScratchSlot {
  kScratchX,        // the caller's: an input as f32
  kScratchBias,     // the caller's: a second input
  kScratchResidual, // the caller's: a third input
  kScratchOut,      // the caller's: the result in f32
  kScratchAcc,      // the caller's: partial results
  kScratchMax,
  kScratchSum,
  kScratchIndex,    // the caller's: offsets or positions
  kScratchIndex2,
  kScratchChunk,    // inside a chunk of a parallel loop
  kScratchChunk2,
  kNumScratchSlots
};

/// At least n elements of the calling thread's buffer `slot` (contents
/// unspecified).
template <typename T> T *threadScratch(ScratchSlot slot, int64_t n) {
  thread_local std::vector<T> buffers[kNumScratchSlots];
  std::vector<T> &b = buffers[slot];
  if (b.size() < size_t(n))
    b.resize(size_t(n));
  return b.data();
}

/// Scratch for the chunks of one parallel loop: `per` elements for each of
/// the pool's threads, taken by the calling thread (which runs every call,
/// so its buffer grows once) before the loop; a chunk takes its thread's
/// share with get(). (A worker's own buffer would grow whenever it first
/// happened to take a larger chunk, which a warm-up cannot promise.)
template <typename T> struct ChunkScratch {
  T *base = nullptr;
  int64_t per = 0;
  const ThreadPool *pool = nullptr;
  T *get() const { return base + int64_t(pool->workerIndex()) * per; }
};
template <typename T>
ChunkScratch<T> chunkScratch(const ThreadPool &pool, ScratchSlot slot, int64_t per) {
  return {threadScratch<T>(slot, per * int64_t(pool.size())), per, &pool};
}

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_SCRATCH_H
