//===- XxHash64.h - XXH64 for the per-tensor checksums of weights.bin ------===//
//
// The 64-bit xxHash (XXH64, seed 0), as its specification defines it: fast
// enough (several GB/s a core) to check every tensor of weights.bin when an
// artifact loads. llmc compile writes the same digests with LLVM's
// llvm::xxHash64, which the unit tests compare this implementation with.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SUPPORT_XXHASH64_H
#define LLMC_RUNTIME_SUPPORT_XXHASH64_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace llmc {

uint64_t xxHash64(const void *data, size_t size, uint64_t seed = 0);

/// 16 lowercase hex digits, most significant first (how manifest.json
/// writes a digest).
std::string hex64(uint64_t value);

} // namespace llmc

#endif // LLMC_RUNTIME_SUPPORT_XXHASH64_H
