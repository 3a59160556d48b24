//===- TransformerStructure.h - what llmc-raise-transformer recognised ----===//
//
// Reads a raised function (after llmc-canonicalize and llmc-raise-transformer)
// as a decoder: embedding, layers of [norm, attention, norm, MLP], final norm
// and lm_head, and lists the computations left outside that structure. This
// is what `llmc check` reports.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_TRANSFORMERSTRUCTURE_H
#define LLMC_PASSES_TRANSFORMERSTRUCTURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::llmc {

struct TransformerStructure {
  /// Blocks before the first layer (embeddings).
  std::vector<std::string> prologue;
  /// One entry per layer: its blocks in order, e.g. {"rms_norm",
  /// "attention(GQA 32/8, rope, causal)", "rms_norm", "swiglu mlp"}.
  std::vector<std::vector<std::string>> layers;
  /// Blocks after the last layer (final norm, lm_head).
  std::vector<std::string> epilogue;
  /// Computations outside any recognised block: the op and its node name.
  struct Op {
    std::string op, node;
  };
  std::vector<Op> unrecognized;

  /// "embedding, 2 x [rms_norm, attention(...), rms_norm, swiglu mlp],
  /// rms_norm, lm_head": equal consecutive layers are counted.
  std::string summary() const;
};

/// The structure of a raised decoder function.
TransformerStructure describeTransformer(func::FuncOp func);

/// After llmc-insert-kv-cache: the model's past inputs whose own cache IO
/// the entry points keep (no recognised attention took them onto llmc's
/// cache: the fallback), by name, from any entry point of `module`.
std::vector<std::string> ownCacheInputs(ModuleOp module);

/// After llmc-insert-kv-cache: whether the entry points keep the token ids
/// and run the model over all of them at every step (the fallback for a
/// stateless export whose attention no pattern recognised).
bool keepsTokenHistory(ModuleOp module);

} // namespace mlir::llmc

#endif // LLMC_PASSES_TRANSFORMERSTRUCTURE_H
