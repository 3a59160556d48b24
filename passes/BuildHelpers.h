//===- BuildHelpers.h - small IR builders the passes share ----------------===//
#ifndef LLMC_PASSES_BUILDHELPERS_H
#define LLMC_PASSES_BUILDHELPERS_H

#include "dialects/LLM/IR/LLMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace mlir::llmc {

/// An llm operation's name without "llm." ("onnx.mul", "rope").
inline StringRef shortName(Operation *op) {
  StringRef n = op->getName().getStringRef();
  n.consume_front("llm.");
  return n;
}

/// Reshape, Squeeze, Unsqueeze, Flatten: their result is a view of their
/// input (no data moves).
inline bool isView(Operation *op) {
  StringRef n = shortName(op);
  return n == "onnx.reshape" || n == "onnx.squeeze" || n == "onnx.unsqueeze" ||
         n == "onnx.flatten";
}

/// An i64 constant: a scalar when `scalar`, a vector otherwise.
inline Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values,
                         bool scalar = false) {
  auto type = scalar ? RankedTensorType::get({}, b.getI64Type())
                     : RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, values)).getResult();
}

/// A constant of `type` holding `bytes` (its elements as stored) in a
/// resource blob named `key` (64-byte aligned).
inline Value blobConstant(OpBuilder &b, Location loc, RankedTensorType type,
                          ArrayRef<char> bytes, StringRef key) {
  return b
      .create<ConstantOp>(loc, DenseResourceElementsAttr::get(
                                   type, key,
                                   HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, 64)))
      .getResult();
}

/// An llm op with inferred result types, default-valued attributes stored
/// (result inference reads them); its first result.
template <typename OpT>
Value createOp(OpBuilder &b, Location loc, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
  NamedAttrList list(attrs);
  if (std::optional<RegisteredOperationName> name =
          RegisteredOperationName::lookup(OpT::getOperationName(), b.getContext()))
    name->populateDefaultAttrs(list);
  return b.create<OpT>(loc, operands, list.getAttrs())->getResult(0);
}

} // namespace mlir::llmc

#endif // LLMC_PASSES_BUILDHELPERS_H
