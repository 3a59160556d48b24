//===- OpTable.h - the one table of importable ONNX operators ------------===//
//
// One entry per (domain, op_type, opset range): the builder that imports
// such a node and, optionally, a check for features llmc cannot compile.
// Adding an operator means adding its llm op (dialects/LLM/IR) and one entry
// here; docs/importer.md explains the steps.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PYTHON_FREE_FRONTEND_OPTABLE_H
#define LLMC_PYTHON_FREE_FRONTEND_OPTABLE_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace onnx {
class NodeProto;
}

namespace mlir::llmc {

class NodeImporter;
class OnnxModel;

/// The newest default-domain opset whose operator semantics llmc knows.
constexpr int64_t kNewestKnownOpset = 28;

struct OpTableEntry {
  using ImportFn = LogicalResult (*)(NodeImporter &);
  /// Returns "" when llmc can compile the node, else what it cannot.
  using CheckFn = std::string (*)(const onnx::NodeProto &, const OnnxModel &);

  llvm::StringRef domain;  // "" (ai.onnx) or "com.microsoft"
  llvm::StringRef opType;
  int64_t firstOpset;      // inclusive range of the domain's opset version
  int64_t lastOpset;
  ImportFn import;
  CheckFn check;           // may be null
  llvm::StringRef llmOp;   // the llm operation built (for docs and reports)
};

/// All entries, grouped by domain and sorted by op type.
llvm::ArrayRef<OpTableEntry> onnxOpTable();

/// The entry for a node of `opType` in `domain` at `opset`, or nullptr.
const OpTableEntry *lookupOnnxOp(llvm::StringRef domain, llvm::StringRef opType,
                                 int64_t opset);
/// Whether any entry exists for (domain, opType), at any opset.
bool isKnownOnnxOp(llvm::StringRef domain, llvm::StringRef opType);

} // namespace mlir::llmc

#endif // LLMC_PYTHON_FREE_FRONTEND_OPTABLE_H
