//===- OnnxImporter.h - ONNX model -> llm dialect -------------------------===//
//
// Builds a module with one function, @main, from an OnnxModel: graph inputs
// become arguments (named by `llm.name`, symbolic dims as #llm.dims), each
// node becomes the llm operation its op-table entry builds, initializers
// become llm.constant (weights as dense_resource blobs that reference the
// model's memory without copying), graph outputs are returned.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PYTHON_FREE_FRONTEND_ONNXIMPORTER_H
#define LLMC_PYTHON_FREE_FRONTEND_ONNXIMPORTER_H

#include "python-free-frontend/OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class DialectRegistry;
} // namespace mlir

namespace mlir::llmc {

/// Registers the dialects that imported modules use.
void registerImportDialects(DialectRegistry &registry);

struct ImportOptions {
  /// Name of the function that holds the graph.
  std::string functionName = "main";
  /// Tensors with at most this many elements are stored inline (dense<...>),
  /// larger ones as dense_resource blobs that reference the model's data.
  int64_t inlineElementLimit = 64;
};

/// One node llmc cannot import or cannot compile.
struct UnsupportedNode {
  enum Kind {
    UnknownOp,          // no table entry for (domain, op_type)
    UnsupportedOpset,   // an entry exists, not for this opset version
    UnsupportedFeature, // imported, but uses a feature llmc cannot compile
  };
  Kind kind;
  std::string domain;
  std::string opType;
  int64_t opset = -1;
  std::string node;   // OnnxModel::describe-style node name
  std::string reason; // for UnsupportedOpset / UnsupportedFeature
};

/// Every node of `model` that llmc cannot import or compile, in graph order.
std::vector<UnsupportedNode> findUnsupportedNodes(const OnnxModel &model);

/// Groups unsupported nodes by operator: one line per (domain, op, reason)
/// with all its node names.
std::string formatUnsupported(const std::vector<UnsupportedNode> &nodes);

/// Imports `model` into `ctx`. The returned module references the model's
/// memory (dense_resource blobs): `model` must outlive it. Fails with every
/// unknown operator listed, or with the first node that cannot be built.
llvm::Expected<OwningOpRef<ModuleOp>>
importOnnxModel(MLIRContext &ctx, const OnnxModel &model,
                const ImportOptions &options = {});

} // namespace mlir::llmc

#endif // LLMC_PYTHON_FREE_FRONTEND_ONNXIMPORTER_H
