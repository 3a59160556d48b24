//===- NodeImporter.h - what an op-table builder sees of one node ---------===//
//
// An op-table builder turns one ONNX node into llm operations. It reads the
// node's inputs (a missing optional input is the `none` value), converts its
// attributes, creates operations through `create<OpTy>` (which checks the
// attributes, infers result types and verifies the operation, so a bad node
// is an error, never a crash) and finally binds the node's outputs.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PYTHON_FREE_FRONTEND_NODEIMPORTER_H
#define LLMC_PYTHON_FREE_FRONTEND_NODEIMPORTER_H

#include "python-free-frontend/OnnxModel.h"

#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"

#include <onnx/onnx_pb.h>

namespace mlir::llmc {

class ModelImporter;

class NodeImporter {
public:
  NodeImporter(ModelImporter &model, const onnx::NodeProto &node, int64_t opset,
               Location loc);

  const onnx::NodeProto &node() const { return onnxNode; }
  int64_t opset() const { return opsetVersion; }
  Location loc() const { return location; }
  OpBuilder &builder();
  MLIRContext *context();

  unsigned numInputs() const { return onnxNode.input_size(); }
  unsigned numOutputs() const { return onnxNode.output_size(); }
  /// Whether input `i` is given (present and not the empty name).
  bool hasInput(unsigned i) const;
  /// Input `i`, or the none value when it is missing.
  Value input(unsigned i);
  Value none();

  /// The attribute called `name`, or nullptr.
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  std::optional<int64_t> intAttr(llvm::StringRef name) const;
  std::optional<float> floatAttr(llvm::StringRef name) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;
  /// Converts one ONNX attribute to its MLIR form (INT -> i64, FLOAT -> f32,
  /// STRING -> string, INTS/FLOATS -> dense arrays, TENSOR -> elements).
  FailureOr<Attribute> convertAttr(const onnx::AttributeProto &attr);
  /// Converts every attribute of the node; one not in `known` (and not in
  /// `ignored`) is an error: llmc never drops semantics silently.
  LogicalResult convertAttributes(llvm::ArrayRef<llvm::StringRef> known,
                                  NamedAttrList &out,
                                  llvm::ArrayRef<llvm::StringRef> ignored = {});

  /// A 1-D (or, with `scalar`, rank-0) i64 constant.
  Value constantI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  /// A rank-0 constant of floating-point `elementType` holding `value`.
  Value constantFloat(double value, Type elementType);

  /// Creates an OpTy with the given operands and attributes: fills default
  /// attributes, checks attribute kinds, infers result types, verifies.
  template <typename OpTy>
  FailureOr<OpTy> create(ValueRange operands, NamedAttrList attrs = {}) {
    MLIRContext *ctx = context();
    auto name = RegisteredOperationName::lookup(OpTy::getOperationName(), ctx);
    name->populateDefaultAttrs(attrs);
    DictionaryAttr dict = attrs.getDictionary(ctx);
    typename OpTy::Adaptor adaptor(operands, dict);
    if (failed(adaptor.verify(location)))
      return failure();
    llvm::SmallVector<Type> types;
    if (failed(OpTy::inferReturnTypes(ctx, location, adaptor, types)))
      return failure();
    for (Type t : types)
      if (failed(checkTypeLimits(location, t)))
        return failure();
    OperationState state(location, OpTy::getOperationName(), operands, types,
                         attrs.getAttrs());
    Operation *op = builder().create(state);
    if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
      op->erase();
      return failure();
    }
    return cast<OpTy>(op);
  }

  /// Binds the node's outputs, in order, to `results` (empty output names are
  /// skipped; more outputs than results is an error).
  LogicalResult setOutputs(ValueRange results);

  /// An error at this node.
  InFlightDiagnostic emitError();

private:
  ModelImporter &parent;
  const onnx::NodeProto &onnxNode;
  int64_t opsetVersion;
  Location location;
};

} // namespace mlir::llmc

#endif // LLMC_PYTHON_FREE_FRONTEND_NODEIMPORTER_H
