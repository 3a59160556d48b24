//===- GpuDecodeSplits.h - how many key chunks a GPU's decode attention takes -===//
//
// The rule llmc-attention-to-flash applies with num-splits=0 (the CUDA
// target's), in plain C++ so that bench/cuda/decode_attention.cu times the
// count the compiler gives rather than a copy of its arithmetic.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_GPUDECODESPLITS_H
#define LLMC_PASSES_GPUDECODESPLITS_H

#include <algorithm>
#include <cstdint>

namespace llmc {

/// Blocks a GPU's decode attention should run to keep it busy: two for each
/// of an H100's or H200's 132 multiprocessors (a block per kv head, split
/// and sequence).
constexpr int64_t kGpuDecodeBlocks = 264;
/// The CUDA kernel's tile of keys: no split is given fewer.
constexpr int64_t kGpuDecodeTile = 32;
/// Nor more than this many tiles of a full cache: a block walks its split's
/// tiles one after another, so with many sequences (which alone make
/// kGpuDecodeBlocks) long splits left the GPU waiting on a few long chains:
/// at batch 8 and context 4096 a 1B Llama's 5 splits of 26 tiles read the
/// cache at about 1 TB/s on an H200.
constexpr int64_t kGpuDecodeMaxTiles = 8;
/// Nor more splits than this (each costs the partial results of its block,
/// B * splits * Hq * Dv floats, and a turn of the merge): a 128k cache
/// would otherwise ask for 512.
constexpr int64_t kGpuDecodeMaxSplits = 64;

/// The key chunks for `streams` (sequence, kv head) pairs over a cache of
/// `rows` rows: enough for kGpuDecodeBlocks blocks and for at most
/// kGpuDecodeMaxTiles tiles each over the whole cache, at most one per
/// kGpuDecodeTile rows and kGpuDecodeMaxSplits in all. At context 4096 a 1B
/// Llama (8 kv heads, batch 1) then reads its cache with 33 blocks per kv
/// head rather than 4 (which ran at 65 GB/s on an H200), and at batch 8
/// with 17 rather than 5. (The kernel counts the splits with keys on the
/// device: a short context leaves the rest idle.)
inline int64_t gpuDecodeSplits(int64_t streams, int64_t rows) {
  streams = std::max<int64_t>(1, streams);
  int64_t want = std::max((kGpuDecodeBlocks + streams - 1) / streams,
                          (rows + kGpuDecodeMaxTiles * kGpuDecodeTile - 1) /
                              (kGpuDecodeMaxTiles * kGpuDecodeTile));
  return std::clamp<int64_t>(
      want, 1, std::min(kGpuDecodeMaxSplits, (rows + kGpuDecodeTile - 1) / kGpuDecodeTile));
}

} // namespace llmc

#endif // LLMC_PASSES_GPUDECODESPLITS_H
