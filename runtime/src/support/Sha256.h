//===- Sha256.h - SHA-256 for the runtime's artifact checks ---------------===//
//
// FIPS 180-4 SHA-256, streaming. The runtime links no LLVM; it checks
// libmodel.so and (on request) weights.bin against manifest.json with this.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SUPPORT_SHA256_H
#define LLMC_RUNTIME_SUPPORT_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace llmc {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  /// The digest as 64 lowercase hex digits; the object is then spent.
  std::string hexDigest();

private:
  void block(const uint8_t *p);
  uint32_t h[8];
  uint8_t buffer[64];
  size_t used = 0;
  uint64_t total = 0;
};

/// The hex digest of a file, or "" with `error` set.
std::string sha256File(const std::string &path, std::string &error);

} // namespace llmc

#endif // LLMC_RUNTIME_SUPPORT_SHA256_H
