//===- Calibration.h - statistics of the inputs of linear layers ----------===//
//
// What GPTQ needs to know of a model's activations: for every linear layer
// (an llm.linear with a constant weight), the Gram matrix H = sum x^T x of
// its input rows x over calibration tokens. The compile driver collects
// them by running the float model (compiler/Executor/Calibrate.h), writes
// them to a file, and llmc-quantize-weights reads the file (its
// `calibration` option).
//
// A layer is known by its weight's fingerprint (the first 8 bytes, as a
// little-endian u64, of the SHA-256 of its bytes as stored) and shape, so the statistics find their layer in every bucket's
// function whatever the order or the names. Layers that read the same input
// (q, k and v; gate and up) share one matrix.
//
// The file, little-endian: "LLMCCAL1"; u64 inputs; per input u64 K, u64
// rows (the rows summed), K x K f32 (row-major); u64 layers; per layer u64
// fingerprint, u64 N, u64 K, u64 input index.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CALIBRATION_H
#define LLMC_PASSES_CALIBRATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::llmc {

struct CalibrationStats {
  struct Input {
    int64_t k = 0, rows = 0;
    std::vector<double> gram; // K x K
  };
  struct Layer {
    uint64_t fingerprint = 0;
    int64_t n = 0, k = 0, input = 0;
  };
  std::vector<Input> inputs;
  std::vector<Layer> layers;

  /// The layer whose weight has this fingerprint and shape, or null.
  const Layer *find(uint64_t fingerprint, int64_t n, int64_t k) const;

  /// The file's bytes.
  std::string serialize() const;
  llvm::Error write(llvm::StringRef path) const;
  /// Checks and reads a file's bytes (sizes, indices in range, finite
  /// values); `name` names it in errors.
  static llvm::Expected<CalibrationStats> parse(llvm::StringRef data, llvm::StringRef name);
  static llvm::Expected<CalibrationStats> read(llvm::StringRef path);
};

/// The fingerprint of a weight: the first 8 bytes (little-endian) of the
/// SHA-256 of its bytes as stored.
uint64_t weightFingerprint(llvm::ArrayRef<uint8_t> bytes);

/// A tensor's bytes as stored (a cpu::Tensor, or anything with raw() and
/// bytes()).
template <typename T> llvm::ArrayRef<uint8_t> storedBytes(const T &t) {
  return {static_cast<const uint8_t *>(t.raw()), t.bytes()};
}

} // namespace mlir::llmc

#endif // LLMC_PASSES_CALIBRATION_H
