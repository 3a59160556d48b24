//===- Limits.h - sizes beyond which a model is taken as corrupt ----------===//
//
// Plain C++ (no MLIR) so that the protobuf reader shares them. Anything
// beyond these comes from a corrupt or hostile model; checking it keeps every
// size computation of the compiler and runtime far from int64 overflow.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LIMITS_H
#define LLMC_DIALECTS_LLM_IR_LIMITS_H

#include <cstdint>

namespace mlir::llmc {

/// Largest static dimension, and largest element count of one tensor.
constexpr int64_t kMaxDimSize = int64_t(1) << 48;
/// Largest tensor rank.
constexpr int64_t kMaxRank = 64;

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLM_IR_LIMITS_H
