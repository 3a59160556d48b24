//===- Passes.h - llmc passes ---------------------------------------------===//
#ifndef LLMC_PASSES_PASSES_H
#define LLMC_PASSES_PASSES_H

#include "dialects/Exec/IR/ExecDialect.h"
#include "dialects/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::llmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Registers `llmc-pipeline{max-seq=N batch=B,... prefill-buckets=S,...}`:
/// llmc-canonicalize, llmc-raise-transformer, llmc-insert-kv-cache,
/// llmc-bucket-shapes, llmc-canonicalize.
void registerLLMCPipeline();

/// Re-infers the result types of every operation of `func`, in order, keeping
/// the more refined of the current and inferred type, and updates the
/// signature from the return (what llmc-infer-shapes does). Fails, with a
/// diagnostic, where a current type conflicts with inference.
LogicalResult refineResultTypes(func::FuncOp func);

} // namespace mlir::llmc

#endif // LLMC_PASSES_PASSES_H
