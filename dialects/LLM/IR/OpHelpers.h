//===- OpHelpers.h - small inference helpers of the llm op files ---------===//
//
// Dimension arithmetic and operand checks that the operation files
// (LLMOps.cpp, OnnxOps.cpp, OnnxShapeOps.cpp, MsOps.cpp, TransformerOps.cpp)
// share. Private to dialects/LLM/IR: the passes have helpers of these names
// of their own, so these live in llmc::ophelpers.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_OPHELPERS_H
#define LLMC_DIALECTS_LLM_IR_OPHELPERS_H

#include "dialects/LLM/IR/OnnxDataType.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::llmc::ophelpers {

inline Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }
inline MaybeShape shapeOf(Value v) { return getShape(v.getType()); }

/// The size of a dimension if the value is ranked and the dim is static.
inline std::optional<int64_t> staticDim(Value v, int64_t index) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || index < 0 || index >= t.getRank() || t.isDynamicDim(index))
    return std::nullopt;
  return t.getDimSize(index);
}

inline int64_t rankOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getRank() : -1;
}

/// Merges two views of the same dimension; fails on a static conflict.
inline FailureOr<Dim> mergeDims(std::optional<Location> loc, Dim a, Dim b,
                         const Twine &what) {
  if (a.isStatic() && b.isStatic()) {
    if (a.size != b.size)
      return emitInferenceError(loc, what + " mismatch: " + Twine(a.size) +
                                         " vs " + Twine(b.size));
    return a;
  }
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  return a.name ? a : b;
}

/// d / n when d is static (and divisible), else dynamic.
inline FailureOr<Dim> divideDim(std::optional<Location> loc, Dim d, int64_t n,
                         const Twine &what) {
  if (n <= 0)
    return emitInferenceError(loc, what + ": the divisor must be positive");
  if (!d.isStatic())
    return Dim::dynamic();
  if (d.size % n != 0)
    return emitInferenceError(loc, what + ": " + Twine(d.size) +
                                       " is not divisible by " + Twine(n));
  return Dim::fixed(d.size / n);
}

/// d * n; sizes beyond llmc's limits become unknown (checkTypeLimits and the
/// runtime reject them where they matter).
inline Dim multiplyDim(Dim d, int64_t n) {
  if (n == 1)
    return d;
  if (!d.isStatic())
    return Dim::dynamic();
  std::optional<int64_t> r = boundedMul(d.size, n);
  return r ? Dim::fixed(*r) : Dim::dynamic();
}

inline Dim addDims(Dim a, Dim b) {
  if (a.isStatic() && b.isStatic()) {
    std::optional<int64_t> r = boundedAdd(a.size, b.size);
    return r ? Dim::fixed(*r) : Dim::dynamic();
  }
  if (a.isStatic() && a.size == 0)
    return b;
  if (b.isStatic() && b.size == 0)
    return a;
  return Dim::dynamic();
}

/// The type for an ONNX stash_type / dtype code, or an error.
inline FailureOr<Type> onnxType(MLIRContext *ctx, std::optional<Location> loc,
                         int64_t code, StringRef what) {
  Type t = getElementTypeForOnnx(ctx, int32_t(code));
  if (!t)
    return emitInferenceError(loc, Twine(what) + " " + Twine(code) +
                                       " is not a supported ONNX data type (" +
                                       onnxDataTypeName(int32_t(code)) + ")");
  return t;
}

/// Statistics shape of a normalisation over [axis, rank): dims before axis,
/// then ones.
inline MaybeShape statsShape(const MaybeShape &x, int64_t axis) {
  if (!x)
    return std::nullopt;
  Shape out;
  for (int64_t i = 0, e = x->size(); i < e; ++i)
    out.push_back(i < axis ? (*x)[i] : Dim::fixed(1));
  return out;
}

inline LogicalResult requireRank(std::optional<Location> loc, Value v, int64_t rank,
                          StringRef name) {
  int64_t r = rankOf(v);
  if (r >= 0 && r != rank)
    return emitInferenceError(loc, Twine(name) + " must have rank " + Twine(rank) +
                                       ", got " + Twine(r));
  return success();
}


/// A 1-D operand whose length is static, or nullopt.
inline std::optional<int64_t> vectorLength(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 1 || t.isDynamicDim(0))
    return std::nullopt;
  return t.getDimSize(0);
}

/// Checks that `v` is none or has one element (rank 0, or rank 1 of size 1).
inline LogicalResult requireScalarOrNone(Operation *op, Value v, StringRef name) {
  if (isNone(v))
    return success();
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (t && t.hasStaticShape() && t.getNumElements() != 1)
    return op->emitOpError() << name << " must be a scalar";
  return success();
}


} // namespace mlir::llmc::ophelpers

#endif // LLMC_DIALECTS_LLM_IR_OPHELPERS_H
