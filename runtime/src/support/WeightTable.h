//===- WeightTable.h - weights.bin's per-tensor checksums ------------------===//
//
// manifest.json's "weights.table" lists, for each stored tensor, a byte
// range of weights.bin and its XXH64. The ranges start at 0, follow one
// another and end at the file's size, so they cover every byte (padding
// included): a changed byte always fails the check of the range it lies
// in, and the error names that tensor. The runtime checks them when it
// loads an artifact (llmc_load_options.skip_weight_checksums turns that
// off); `llmc inspect --verify` checks them on demand.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SUPPORT_WEIGHTTABLE_H
#define LLMC_RUNTIME_SUPPORT_WEIGHTTABLE_H

#include "runtime/src/support/Json.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

struct WeightRange {
  std::string name;
  uint64_t offset = 0, bytes = 0;
  uint64_t xxh64 = 0;
};

/// Reads `weights` (manifest.json's "weights" object) into `out`; false with
/// `error` set when the table is missing, malformed, or does not cover
/// exactly `fileBytes` bytes.
bool readWeightTable(const json::Value &weights, uint64_t fileBytes,
                     std::vector<WeightRange> &out, std::string &error);

/// Checks every range of `data` against its checksum, on up to `threads`
/// threads (0: the hardware's). False with `error` naming the first
/// mismatching tensor (in file order).
bool checkWeights(const std::vector<WeightRange> &table, const void *data, std::string &error,
                  unsigned threads = 0);

} // namespace llmc

#endif // LLMC_RUNTIME_SUPPORT_WEIGHTTABLE_H
