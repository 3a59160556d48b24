//===- Passes.h - llmc passes ---------------------------------------------===//
#ifndef LLMC_PASSES_PASSES_H
#define LLMC_PASSES_PASSES_H

#include "dialects/Exec/IR/ExecDialect.h"
#include "dialects/LLM/IR/LLMDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::llmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::llmc

#endif // LLMC_PASSES_PASSES_H
