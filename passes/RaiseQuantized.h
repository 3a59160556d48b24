//===- RaiseQuantized.h - the quantized part of llmc-raise-transformer ----===//
#ifndef LLMC_PASSES_RAISEQUANTIZED_H
#define LLMC_PASSES_RAISEQUANTIZED_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::llmc {

/// com.microsoft MatMulNBits over constant 4/8-bit weights (no g_idx
/// beyond the blocks', not prepacked) -> llm.quantized_linear, weights kept
/// byte for byte. `none` gives the function's llm.none value.
void raiseMatMulNBits(func::FuncOp func, llvm::function_ref<Value()> none);

/// com.microsoft GatherBlockQuantized of a constant uint8-packed [vocab,
/// hidden] table gathered by row and quantized along it (4 or 8 bits, zero
/// points packed or none) -> llm.quantized_embedding, bytes kept as stored.
void raiseGatherBlockQuantized(func::FuncOp func, llvm::function_ref<Value()> none);

} // namespace mlir::llmc

#endif // LLMC_PASSES_RAISEQUANTIZED_H
