//===- LLMOps.cpp - inference and verification of llm operations ---------===//
//
// Shape rules that only one operation uses live next to it here; rules that
// several share are in ShapeInference.cpp. Inference doubles as the shape
// verifier: InferTypeOpInterface re-runs it when an operation is verified.
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"

#include "dialects/LLM/IR/OnnxDataType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <climits>
#include <map>

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// Split into more parts than this is taken as a corrupt model.
constexpr int64_t kMaxSplitOutputs = 4096;

Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }
MaybeShape shapeOf(Value v) { return getShape(v.getType()); }

/// The size of a dimension if the value is ranked and the dim is static.
std::optional<int64_t> staticDim(Value v, int64_t index) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || index < 0 || index >= t.getRank() || t.isDynamicDim(index))
    return std::nullopt;
  return t.getDimSize(index);
}

int64_t rankOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getRank() : -1;
}

/// Merges two views of the same dimension; fails on a static conflict.
FailureOr<Dim> mergeDims(std::optional<Location> loc, Dim a, Dim b,
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
FailureOr<Dim> divideDim(std::optional<Location> loc, Dim d, int64_t n,
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
Dim multiplyDim(Dim d, int64_t n) {
  if (n == 1)
    return d;
  if (!d.isStatic())
    return Dim::dynamic();
  std::optional<int64_t> r = boundedMul(d.size, n);
  return r ? Dim::fixed(*r) : Dim::dynamic();
}

Dim addDims(Dim a, Dim b) {
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
FailureOr<Type> onnxType(MLIRContext *ctx, std::optional<Location> loc,
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
MaybeShape statsShape(const MaybeShape &x, int64_t axis) {
  if (!x)
    return std::nullopt;
  Shape out;
  for (int64_t i = 0, e = x->size(); i < e; ++i)
    out.push_back(i < axis ? (*x)[i] : Dim::fixed(1));
  return out;
}

LogicalResult requireRank(std::optional<Location> loc, Value v, int64_t rank,
                          StringRef name) {
  int64_t r = rankOf(v);
  if (r >= 0 && r != rank)
    return emitInferenceError(loc, Twine(name) + " must have rank " + Twine(rank) +
                                       ", got " + Twine(r));
  return success();
}


/// A 1-D operand whose length is static, or nullopt.
std::optional<int64_t> vectorLength(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 1 || t.isDynamicDim(0))
    return std::nullopt;
  return t.getDimSize(0);
}

/// Checks that `v` is none or has one element (rank 0, or rank 1 of size 1).
LogicalResult requireScalarOrNone(Operation *op, Value v, StringRef name) {
  if (isNone(v))
    return success();
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (t && t.hasStaticShape() && t.getNumElements() != 1)
    return op->emitOpError() << name << " must be a scalar";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Common operations
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult ConstantOp::verify() {
  Type elementType = getValue().getShapedType().getElementType();
  if (isa<Float4E2M1Type, Float8E8M0Type>(elementType)) {
    if (!isa<DenseResourceElementsAttr>(getValue()))
      return emitOpError("a constant of ") << elementType << " must be a dense_resource blob";
    return success();
  }
  if (!elementType.isIntOrFloat())
    return emitOpError("element type must be an integer or floating-point type, got ")
           << elementType;
  return success();
}

OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult OnnxGeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult OnnxClipOp::verify() {
  for (auto [v, name] : {std::pair{getMin(), "min"}, std::pair{getMax(), "max"}}) {
    if (failed(requireScalarOrNone(*this, v, name)))
      return failure();
    if (!isNone(v) && elementOf(v) != elementOf(getInput()))
      return emitOpError() << name << " must have the input's element type";
  }
  return success();
}

LogicalResult OnnxModOp::verify() {
  if (isa<FloatType>(elementOf(getA())) && getFmod() != 1)
    return emitOpError("fmod must be 1 for floating-point operands");
  return success();
}

LogicalResult OnnxCastOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  FailureOr<Type> to = onnxType(ctx, loc, adaptor.getTo(), "cast target");
  if (failed(to))
    return failure();
  return inferSameShape(loc, adaptor.getInput(), *to, types);
}

LogicalResult OnnxWhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (elementOf(adaptor.getX()) != elementOf(adaptor.getY()))
    return emitInferenceError(loc, "X and Y must have the same element type");
  SmallVector<Type, 1> shape;
  if (failed(inferBroadcast(loc, adaptor.getOperands(), false, false, shape)))
    return failure();
  types.push_back(makeTensorType(getShape(shape[0]), elementOf(adaptor.getX())));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult OnnxLayerNormalizationOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  MaybeShape x = shapeOf(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  if (x) {
    FailureOr<int64_t> a = normalizeAxis(loc, axis, x->size());
    if (failed(a))
      return failure();
    axis = *a;
  }
  if (elementOf(adaptor.getScale()) != elementOf(adaptor.getX()) ||
      (!isNone(adaptor.getB()) && elementOf(adaptor.getB()) != elementOf(adaptor.getX())))
    return emitInferenceError(loc, "Scale and B must have X's element type");
  FailureOr<Type> stash = onnxType(ctx, loc, adaptor.getStashType(), "stash_type");
  if (failed(stash))
    return failure();
  types.push_back(adaptor.getX().getType());
  types.push_back(makeTensorType(statsShape(x, axis), *stash));
  types.push_back(makeTensorType(statsShape(x, axis), *stash));
  return success();
}

LogicalResult OnnxRMSNormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  MaybeShape x = shapeOf(adaptor.getX());
  if (x && failed(normalizeAxis(loc, adaptor.getAxis(), x->size())))
    return failure();
  types.push_back(makeTensorType(x, elementOf(adaptor.getScale())));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult OnnxMatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getA());
  if (elementType != elementOf(adaptor.getB()))
    return emitInferenceError(loc, "A and B must have the same element type");
  MaybeShape a = shapeOf(adaptor.getA()), b = shapeOf(adaptor.getB());
  if (!a || !b) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  if (a->empty() || b->empty())
    return emitInferenceError(loc, "MatMul operands must have rank >= 1");
  Shape aa = *a, bb = *b;
  if (aa.size() == 1)
    aa.insert(aa.begin(), Dim::fixed(1));
  if (bb.size() == 1)
    bb.push_back(Dim::fixed(1));
  if (failed(mergeDims(loc, aa.back(), bb[bb.size() - 2], "MatMul contraction dimension")))
    return failure();
  FailureOr<Shape> batch =
      broadcastShapes(loc, ArrayRef<Dim>(aa).drop_back(2), ArrayRef<Dim>(bb).drop_back(2));
  if (failed(batch))
    return failure();
  Shape out = *batch;
  if (a->size() > 1)
    out.push_back(aa[aa.size() - 2]);
  if (b->size() > 1)
    out.push_back(bb.back());
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxGemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getA());
  if (elementType != elementOf(adaptor.getB()))
    return emitInferenceError(loc, "A and B must have the same element type");
  if (failed(requireRank(loc, adaptor.getA(), 2, "A")) ||
      failed(requireRank(loc, adaptor.getB(), 2, "B")))
    return failure();
  MaybeShape a = shapeOf(adaptor.getA()), b = shapeOf(adaptor.getB());
  if (!a || !b) {
    types.push_back(makeDynamicTensorType(2, elementType));
    return success();
  }
  bool ta = adaptor.getTransA() != 0, tb = adaptor.getTransB() != 0;
  Dim m = (*a)[ta ? 1 : 0], ka = (*a)[ta ? 0 : 1];
  Dim kb = (*b)[tb ? 1 : 0], n = (*b)[tb ? 0 : 1];
  if (failed(mergeDims(loc, ka, kb, "Gemm contraction dimension")))
    return failure();
  Shape out{m, n};
  if (!isNone(adaptor.getC())) {
    MaybeShape c = shapeOf(adaptor.getC());
    if (c) {
      if (c->size() > 2)
        return emitInferenceError(loc, "C must have rank <= 2");
      FailureOr<Shape> bc = broadcastShapes(loc, out, *c);
      if (failed(bc))
        return failure();
      // Unidirectional: C broadcasts to [M, N], never the other way.
      for (auto [o, r] : llvm::zip(out, *bc))
        if (o.isStatic() && r.isStatic() && o.size != r.size)
          return emitInferenceError(loc, "C is not broadcastable to [M, N]");
    }
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

namespace {
/// One parsed operand (or output) term of an einsum equation.
struct EinsumTerm {
  SmallVector<char> labels; // '.' marks where the ellipsis sits
  bool hasEllipsis = false;
};

FailureOr<EinsumTerm> parseEinsumTerm(std::optional<Location> loc, StringRef s) {
  EinsumTerm term;
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i).starts_with("...")) {
      if (term.hasEllipsis)
        return emitInferenceError(loc, "einsum term '" + s + "' has two ellipses");
      term.hasEllipsis = true;
      term.labels.push_back('.');
      i += 3;
    } else if (llvm::isAlpha(s[i])) {
      term.labels.push_back(s[i++]);
    } else {
      return emitInferenceError(loc, "einsum term '" + s + "' has an invalid character");
    }
  }
  return term;
}
} // namespace

LogicalResult OnnxEinsumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitInferenceError(loc, "einsum needs at least one input");
  Type elementType = elementOf(inputs[0]);
  std::string eq;
  for (char c : adaptor.getEquation())
    if (!llvm::isSpace(c))
      eq.push_back(c);
  StringRef eqRef(eq);
  auto [lhs, rhs] = eqRef.split("->");
  bool explicitOutput = eqRef.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != inputs.size())
    return emitInferenceError(loc, "einsum equation has " + Twine(terms.size()) +
                                       " operand terms for " + Twine(inputs.size()) +
                                       " inputs");
  std::map<char, Dim> labelDims;
  std::map<char, int> labelCount;
  Shape ellipsis;
  bool anyUnranked = false;
  for (auto [term, input] : llvm::zip(terms, inputs)) {
    if (elementOf(input) != elementType)
      return emitInferenceError(loc, "einsum inputs must share an element type");
    FailureOr<EinsumTerm> parsed = parseEinsumTerm(loc, term);
    if (failed(parsed))
      return failure();
    MaybeShape shape = shapeOf(input);
    int64_t letters = parsed->labels.size() - (parsed->hasEllipsis ? 1 : 0);
    for (char c : parsed->labels)
      if (c != '.')
        ++labelCount[c];
    if (!shape) {
      anyUnranked = true;
      continue;
    }
    int64_t rank = shape->size();
    if (parsed->hasEllipsis ? rank < letters : rank != letters)
      return emitInferenceError(loc, "einsum term '" + term + "' does not match rank " +
                                         Twine(rank));
    int64_t ellipsisRank = rank - letters;
    int64_t d = 0;
    for (char c : parsed->labels) {
      if (c == '.') {
        FailureOr<Shape> b = broadcastShapes(
            loc, ellipsis, ArrayRef<Dim>(*shape).slice(d, ellipsisRank));
        if (failed(b))
          return failure();
        ellipsis = *b;
        d += ellipsisRank;
        continue;
      }
      Dim dim = (*shape)[d++];
      auto it = labelDims.find(c);
      if (it == labelDims.end()) {
        labelDims[c] = dim;
      } else if (it->second.isStatic() && it->second.size == 1) {
        it->second = dim;
      } else if (!(dim.isStatic() && dim.size == 1)) {
        FailureOr<Dim> m = mergeDims(loc, it->second, dim,
                                     "einsum label '" + Twine(c) + "'");
        if (failed(m))
          return failure();
        it->second = *m;
      }
    }
  }
  EinsumTerm out;
  if (explicitOutput) {
    FailureOr<EinsumTerm> parsed = parseEinsumTerm(loc, rhs);
    if (failed(parsed))
      return failure();
    out = *parsed;
    for (char c : out.labels)
      if (c != '.' && !labelCount.count(c))
        return emitInferenceError(loc, "einsum output label '" + Twine(c) +
                                           "' does not appear in the inputs");
  } else {
    // Implicit mode: the ellipsis, then labels used once, in alphabetical order.
    out.labels.push_back('.');
    out.hasEllipsis = true;
    for (auto [c, n] : labelCount)
      if (n == 1)
        out.labels.push_back(c);
  }
  if (anyUnranked) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  Shape result;
  for (char c : out.labels) {
    if (c == '.')
      result.append(ellipsis.begin(), ellipsis.end());
    else
      result.push_back(labelDims[c]);
  }
  types.push_back(makeTensorType(result, elementType));
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

LogicalResult OnnxGatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape data = shapeOf(adaptor.getData()), indices = shapeOf(adaptor.getIndices());
  if (!data || !indices) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  if (data->empty())
    return emitInferenceError(loc, "Gather data must have rank >= 1");
  FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), data->size());
  if (failed(axis))
    return failure();
  Shape out(data->begin(), data->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *axis + 1, data->end());
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxGatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  MaybeShape data = shapeOf(adaptor.getData()), indices = shapeOf(adaptor.getIndices());
  if (data && indices) {
    if (data->size() != indices->size())
      return emitInferenceError(loc, "GatherElements data and indices must have the same rank");
    if (failed(normalizeAxis(loc, adaptor.getAxis(), data->size())))
      return failure();
  }
  types.push_back(makeTensorType(indices, elementOf(adaptor.getData())));
  return success();
}

LogicalResult OnnxGatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape data = shapeOf(adaptor.getData()), indices = shapeOf(adaptor.getIndices());
  int64_t b = adaptor.getBatchDims();
  if (!data || !indices || indices->empty() || !indices->back().isStatic()) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t last = indices->back().size;
  int64_t r = data->size(), q = indices->size();
  if (b < 0 || b >= std::min(r, q) || last < 1 || last > r - b)
    return emitInferenceError(loc, "GatherND indices do not fit the data rank");
  Shape out(indices->begin(), indices->end() - 1);
  out.append(data->begin() + b + last, data->end());
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxScatterNDOp::verify() {
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError("unknown reduction \"") << r << "\"";
  if (elementOf(getUpdates()) != elementOf(getData()))
    return emitOpError("updates must have the data's element type");
  return success();
}

LogicalResult OnnxScatterElementsOp::verify() {
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError("unknown reduction \"") << r << "\"";
  if (elementOf(getUpdates()) != elementOf(getData()))
    return emitOpError("updates must have the data's element type");
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult OnnxReshapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  if (failed(requireRank(loc, adaptor.getShape(), 1, "shape")))
    return failure();
  std::optional<int64_t> n = vectorLength(adaptor.getShape());
  if (!n) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  if (failed(checkRank(loc, *n)))
    return failure();
  std::optional<SmallVector<int64_t>> values = getConstantInts(adaptor.getShape());
  if (!values) {
    types.push_back(makeDynamicTensorType(*n, elementType));
    return success();
  }
  MaybeShape in = shapeOf(adaptor.getData());
  bool allowZero = adaptor.getAllowzero() != 0;
  Shape out;
  int inferIndex = -1;
  // Input dims not yet accounted for by the output, to solve the -1 entry.
  SmallVector<Dim> pool;
  if (in)
    pool.assign(in->begin(), in->end());
  SmallVector<bool> used(pool.size(), false);
  for (auto [i, v] : llvm::enumerate(*values)) {
    if (v == -1) {
      if (inferIndex >= 0)
        return emitInferenceError(loc, "Reshape shape has more than one -1");
      inferIndex = i;
      out.push_back(Dim::dynamic());
    } else if (v == 0 && !allowZero) {
      if (in && int64_t(i) >= int64_t(in->size()))
        return emitInferenceError(loc, "Reshape shape copies dimension " + Twine(i) +
                                           " of a rank-" + Twine(in->size()) + " input");
      out.push_back(in ? (*in)[i] : Dim::dynamic());
      if (in)
        used[i] = true;
    } else if (v < 0) {
      return emitInferenceError(loc, "Reshape shape has invalid entry " + Twine(v));
    } else {
      out.push_back(Dim::fixed(v));
    }
  }
  if (allowZero && inferIndex >= 0 && llvm::is_contained(*values, 0))
    return emitInferenceError(loc, "Reshape with allowzero cannot combine 0 and -1");
  if (in) {
    // Cancel named dynamic dims that appear on both sides, then divide what
    // is left when it is static.
    SmallVector<Dim> rest;
    for (auto [i, d] : llvm::enumerate(out)) {
      if (int64_t(i) == inferIndex)
        continue;
      bool copied = values->operator[](i) == 0 && !allowZero;
      if (copied)
        continue;
      bool matched = false;
      if (!d.isStatic() && d.name)
        for (auto [j, p] : llvm::enumerate(pool))
          if (!used[j] && p.name == d.name) {
            used[j] = matched = true;
            break;
          }
      if (!matched)
        rest.push_back(d);
    }
    SmallVector<Dim> remaining;
    for (auto [j, p] : llvm::enumerate(pool))
      if (!used[j])
        remaining.push_back(p);
    int64_t inProduct = staticProduct(remaining);
    int64_t outProduct = staticProduct(rest);
    if (inferIndex >= 0) {
      if (!ShapedType::isDynamic(inProduct) && !ShapedType::isDynamic(outProduct)) {
        if (outProduct == 0 || inProduct % outProduct != 0)
          return emitInferenceError(loc, "Reshape cannot infer -1: " + Twine(inProduct) +
                                             " elements do not divide by " +
                                             Twine(outProduct));
        out[inferIndex] = Dim::fixed(inProduct / outProduct);
      } else if (remaining.size() == 1 && !remaining[0].isStatic() &&
                 !ShapedType::isDynamic(outProduct) && outProduct == 1) {
        out[inferIndex] = remaining[0]; // the one dim left moves over whole
      }
    } else if (!ShapedType::isDynamic(inProduct) && !ShapedType::isDynamic(outProduct) &&
               inProduct != outProduct) {
      return emitInferenceError(loc, "Reshape changes the element count from " +
                                         Twine(inProduct) + " to " + Twine(outProduct));
    }
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxFlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getInput());
  MaybeShape in = shapeOf(adaptor.getInput());
  if (!in) {
    types.push_back(makeDynamicTensorType(2, elementType));
    return success();
  }
  int64_t rank = in->size(), axis = adaptor.getAxis();
  if (axis < -rank || axis > rank)
    return emitInferenceError(loc, "Flatten axis " + Twine(axis) +
                                       " is out of range for rank " + Twine(rank));
  if (axis < 0)
    axis += rank;
  auto part = [](ArrayRef<Dim> dims) {
    if (dims.size() == 1)
      return dims[0];
    int64_t p = staticProduct(dims);
    return ShapedType::isDynamic(p) ? Dim::dynamic() : Dim::fixed(p);
  };
  ArrayRef<Dim> dims(*in);
  types.push_back(makeTensorType(Shape{part(dims.take_front(axis)), part(dims.drop_front(axis))},
                                 elementType));
  return success();
}

LogicalResult OnnxTransposeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape in = shapeOf(adaptor.getData());
  if (!in) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t rank = in->size();
  SmallVector<int64_t> perm;
  if (auto p = adaptor.getPermAttr())
    perm.assign(p.asArrayRef().begin(), p.asArrayRef().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != rank)
    return emitInferenceError(loc, "perm has " + Twine(perm.size()) +
                                       " entries for rank " + Twine(rank));
  SmallVector<bool> seen(rank, false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitInferenceError(loc, "perm is not a permutation of [0, " + Twine(rank) + ")");
    seen[p] = true;
    out.push_back((*in)[p]);
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitInferenceError(loc, "Concat needs at least one input");
  Type elementType = elementOf(inputs[0]);
  MaybeShape out;
  int64_t axis = 0;
  for (Value v : inputs) {
    if (elementOf(v) != elementType)
      return emitInferenceError(loc, "Concat inputs must share an element type");
    MaybeShape s = shapeOf(v);
    if (!s) {
      types.push_back(UnrankedTensorType::get(elementType));
      return success();
    }
    if (!out) {
      FailureOr<int64_t> a = normalizeAxis(loc, adaptor.getAxis(), s->size());
      if (failed(a))
        return failure();
      axis = *a;
      out = *s;
      continue;
    }
    if (s->size() != out->size())
      return emitInferenceError(loc, "Concat inputs must have the same rank");
    for (int64_t i = 0, e = s->size(); i < e; ++i) {
      if (i == axis) {
        (*out)[i] = addDims((*out)[i], (*s)[i]);
        continue;
      }
      FailureOr<Dim> m = mergeDims(loc, (*out)[i], (*s)[i],
                                   "Concat dimension " + Twine(i));
      if (failed(m))
        return failure();
      (*out)[i] = *m;
    }
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxSplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getInput());
  MaybeShape in = shapeOf(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (in) {
    FailureOr<int64_t> a = normalizeAxis(loc, axis, in->size());
    if (failed(a))
      return failure();
    axis = *a;
  }
  Dim d = in ? (*in)[axis] : Dim::dynamic();
  SmallVector<Dim> sizes;
  if (!isNone(adaptor.getSplit())) {
    if (adaptor.getNumOutputs())
      return emitInferenceError(loc, "Split takes either split or num_outputs, not both");
    if (std::optional<SmallVector<int64_t>> v = getConstantInts(adaptor.getSplit())) {
      if (int64_t(v->size()) > kMaxSplitOutputs)
        return emitInferenceError(loc, "Split into more than " + Twine(kMaxSplitOutputs) +
                                           " outputs");
      int64_t total = 0;
      for (int64_t s : *v) {
        std::optional<int64_t> t = boundedAdd(total, s);
        if (!t)
          return emitInferenceError(loc, "Split sizes must be >= 0 and within limits");
        sizes.push_back(Dim::fixed(s));
        total = *t;
      }
      if (d.isStatic() && total != d.size)
        return emitInferenceError(loc, "Split sizes sum to " + Twine(total) +
                                           ", the dimension is " + Twine(d.size));
    } else if (std::optional<int64_t> n = vectorLength(adaptor.getSplit());
               n && *n <= kMaxSplitOutputs) {
      sizes.assign(*n, Dim::dynamic());
    } else {
      return emitInferenceError(loc, "Split needs a split input of static length");
    }
  } else if (auto n = adaptor.getNumOutputs()) {
    int64_t parts = *n;
    if (parts < 1 || parts > kMaxSplitOutputs)
      return emitInferenceError(loc, "num_outputs must be in [1, " + Twine(kMaxSplitOutputs) +
                                         "], got " + Twine(parts));
    if (d.isStatic()) {
      int64_t chunk = d.size / parts + (d.size % parts != 0);
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(Dim::fixed(std::max<int64_t>(0, std::min(chunk, d.size - chunk * i))));
    } else {
      sizes.assign(parts, parts == 1 ? d : Dim::dynamic());
    }
  } else {
    return emitInferenceError(loc, "Split needs a split input or num_outputs");
  }
  for (Dim s : sizes) {
    MaybeShape out = in;
    if (out)
      (*out)[axis] = s;
    types.push_back(makeTensorType(out, elementType));
  }
  return success();
}

namespace {
/// Output size of slicing a static dimension, with ONNX's clamping. Every
/// intermediate stays within [-1, dim], so no value overflows.
int64_t sliceSize(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
  if (start < 0)
    start = start < -dim ? -1 : start + dim;
  if (end < 0)
    end = end < -dim ? -1 : end + dim;
  // |step| without negating INT64_MIN.
  uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    return end <= start ? 0 : int64_t(1 + uint64_t(end - start - 1) / stride);
  }
  start = clamp(start, 0, dim - 1);
  end = clamp(end, -1, dim - 1);
  return start <= end ? 0 : int64_t(1 + uint64_t(start - end - 1) / stride);
}
} // namespace

LogicalResult OnnxSliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape in = shapeOf(adaptor.getData());
  if (!in) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t rank = in->size();
  auto starts = getConstantInts(adaptor.getStarts());
  auto ends = getConstantInts(adaptor.getEnds());
  std::optional<SmallVector<int64_t>> axes;
  if (isNone(adaptor.getAxes())) {
    std::optional<int64_t> n = starts ? int64_t(starts->size()) : vectorLength(adaptor.getStarts());
    if (n) {
      axes.emplace();
      for (int64_t i = 0; i < *n; ++i)
        axes->push_back(i);
    }
  } else {
    axes = getConstantInts(adaptor.getAxes());
  }
  std::optional<SmallVector<int64_t>> steps;
  if (!isNone(adaptor.getSteps()))
    steps = getConstantInts(adaptor.getSteps());
  if (!axes) {
    types.push_back(makeDynamicTensorType(rank, elementType));
    return success();
  }
  Shape out = *in;
  SmallVector<bool> seen(rank, false);
  for (auto [i, a] : llvm::enumerate(*axes)) {
    FailureOr<int64_t> axis = normalizeAxis(loc, a, rank, "Slice axis");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return emitInferenceError(loc, "Slice axis " + Twine(a) + " is repeated");
    seen[*axis] = true;
    if ((starts && i >= starts->size()) || (ends && i >= ends->size()) ||
        (steps && i >= steps->size()))
      return emitInferenceError(loc, "Slice starts, ends, axes and steps differ in length");
    int64_t step = 1;
    if (!isNone(adaptor.getSteps())) {
      if (!steps) {
        out[*axis] = Dim::dynamic();
        continue;
      }
      step = (*steps)[i];
      if (step == 0)
        return emitInferenceError(loc, "Slice step must not be 0");
    }
    if (!starts || !ends) {
      out[*axis] = Dim::dynamic();
      continue;
    }
    int64_t start = (*starts)[i], end = (*ends)[i];
    Dim d = (*in)[*axis];
    if (d.isStatic())
      out[*axis] = Dim::fixed(sliceSize(d.size, start, end, step));
    else if (!(start == 0 && step == 1 && end >= INT32_MAX))
      out[*axis] = Dim::dynamic();
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxSqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape in = shapeOf(adaptor.getData());
  if (!in) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t rank = in->size();
  Shape out;
  if (isNone(adaptor.getAxes())) {
    for (const Dim &d : *in) {
      if (!d.isStatic()) {
        // Whether this dim is removed is only known at run time.
        types.push_back(UnrankedTensorType::get(elementType));
        return success();
      }
      if (d.size != 1)
        out.push_back(d);
    }
    types.push_back(makeTensorType(out, elementType));
    return success();
  }
  std::optional<SmallVector<int64_t>> axes = getConstantInts(adaptor.getAxes());
  if (!axes) {
    std::optional<int64_t> n = vectorLength(adaptor.getAxes());
    types.push_back(n && *n <= rank ? makeDynamicTensorType(rank - *n, elementType)
                                    : UnrankedTensorType::get(elementType));
    return success();
  }
  SmallVector<bool> removed(rank, false);
  for (int64_t a : *axes) {
    FailureOr<int64_t> axis = normalizeAxis(loc, a, rank, "Squeeze axis");
    if (failed(axis))
      return failure();
    const Dim &d = (*in)[*axis];
    if (d.isStatic() && d.size != 1)
      return emitInferenceError(loc, "Squeeze axis " + Twine(a) + " has size " +
                                         Twine(d.size) + ", not 1");
    removed[*axis] = true;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (!removed[i])
      out.push_back((*in)[i]);
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxUnsqueezeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getData());
  MaybeShape in = shapeOf(adaptor.getData());
  std::optional<SmallVector<int64_t>> axes = getConstantInts(adaptor.getAxes());
  std::optional<int64_t> n = axes ? int64_t(axes->size()) : vectorLength(adaptor.getAxes());
  if (!in || !n) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t outRank = in->size() + *n;
  if (failed(checkRank(loc, outRank)))
    return failure();
  if (!axes) {
    types.push_back(makeDynamicTensorType(outRank, elementType));
    return success();
  }
  SmallVector<bool> inserted(outRank, false);
  for (int64_t a : *axes) {
    FailureOr<int64_t> axis = normalizeAxis(loc, a, outRank, "Unsqueeze axis");
    if (failed(axis))
      return failure();
    if (inserted[*axis])
      return emitInferenceError(loc, "Unsqueeze axis " + Twine(a) + " is repeated");
    inserted[*axis] = true;
  }
  Shape out;
  auto it = in->begin();
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? Dim::fixed(1) : *it++);
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getInput());
  if (failed(requireRank(loc, adaptor.getShape(), 1, "shape")))
    return failure();
  MaybeShape in = shapeOf(adaptor.getInput());
  std::optional<SmallVector<int64_t>> values = getConstantInts(adaptor.getShape());
  if (!in) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  if (!values) {
    std::optional<int64_t> n = vectorLength(adaptor.getShape());
    if (!n) {
      types.push_back(UnrankedTensorType::get(elementType));
      return success();
    }
    // Each output dim is the input's unless the shape entry overrides it.
    int64_t rank = std::max<int64_t>(in->size(), *n);
    if (failed(checkRank(loc, rank)))
      return failure();
    types.push_back(makeDynamicTensorType(rank, elementType));
    return success();
  }
  Shape target;
  for (int64_t v : *values) {
    if (v < 0)
      return emitInferenceError(loc, "Expand shape has negative entry " + Twine(v));
    target.push_back(Dim::fixed(v));
  }
  FailureOr<Shape> out = broadcastShapes(loc, *in, target);
  if (failed(out))
    return failure();
  types.push_back(makeTensorType(*out, elementType));
  return success();
}

LogicalResult OnnxTileOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getInput());
  MaybeShape in = shapeOf(adaptor.getInput());
  if (!in) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  std::optional<int64_t> n = vectorLength(adaptor.getRepeats());
  if (n && *n != int64_t(in->size()))
    return emitInferenceError(loc, "Tile repeats has " + Twine(*n) +
                                       " entries for rank " + Twine(in->size()));
  std::optional<SmallVector<int64_t>> reps = getConstantInts(adaptor.getRepeats());
  Shape out = *in;
  for (int64_t i = 0, e = out.size(); i < e; ++i) {
    if (!reps) {
      out[i] = Dim::dynamic();
    } else if ((*reps)[i] < 0) {
      return emitInferenceError(loc, "Tile repeats must be >= 0");
    } else {
      out[i] = multiplyDim(out[i], (*reps)[i]);
    }
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult OnnxTopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getX());
  MaybeShape in = shapeOf(adaptor.getX());
  Type i64 = IntegerType::get(ctx, 64);
  if (in) {
    FailureOr<int64_t> axis = normalizeAxis(loc, adaptor.getAxis(), in->size());
    if (failed(axis))
      return failure();
    std::optional<SmallVector<int64_t>> k = getConstantInts(adaptor.getK());
    if (k && k->size() == 1) {
      Dim d = (*in)[*axis];
      if ((*k)[0] < 0 || (d.isStatic() && (*k)[0] > d.size))
        return emitInferenceError(loc, "TopK K = " + Twine((*k)[0]) +
                                           " is out of range for the axis");
      (*in)[*axis] = Dim::fixed((*k)[0]);
    } else {
      (*in)[*axis] = Dim::dynamic();
    }
  }
  types.push_back(makeTensorType(in, elementType));
  types.push_back(makeTensorType(in, i64));
  return success();
}

namespace {
LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> loc, Value data,
                             int64_t axisAttr, bool keepdims,
                             SmallVectorImpl<Type> &types) {
  Type i64 = IntegerType::get(ctx, 64);
  MaybeShape in = shapeOf(data);
  if (!in) {
    types.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(loc, axisAttr, in->size());
  if (failed(axis))
    return failure();
  if (keepdims)
    (*in)[*axis] = Dim::fixed(1);
  else
    in->erase(in->begin() + *axis);
  types.push_back(makeTensorType(in, i64));
  return success();
}
} // namespace

LogicalResult OnnxArgMaxOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferArgReduce(ctx, loc, adaptor.getData(), adaptor.getAxis(),
                        adaptor.getKeepdims() != 0, types);
}

LogicalResult OnnxArgMinOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferArgReduce(ctx, loc, adaptor.getData(), adaptor.getAxis(),
                        adaptor.getKeepdims() != 0, types);
}

//===----------------------------------------------------------------------===//
// Shape and constants
//===----------------------------------------------------------------------===//

LogicalResult OnnxShapeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Type i64 = IntegerType::get(ctx, 64);
  int64_t rank = rankOf(adaptor.getData());
  if (rank < 0) {
    types.push_back(makeDynamicTensorType(1, i64));
    return success();
  }
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::max<int64_t>(0, std::min(v, rank));
  };
  int64_t start = clamp(adaptor.getStart());
  int64_t end = adaptor.getEnd() ? clamp(*adaptor.getEnd()) : rank;
  types.push_back(RankedTensorType::get({std::max<int64_t>(0, end - start)}, i64));
  return success();
}

LogicalResult OnnxConstantOfShapeOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Type elementType = Float32Type::get(ctx);
  if (auto value = adaptor.getValueAttr())
    elementType = value.getShapedType().getElementType();
  if (failed(requireRank(loc, adaptor.getInput(), 1, "ConstantOfShape input")))
    return failure();
  if (std::optional<SmallVector<int64_t>> dims = getConstantInts(adaptor.getInput())) {
    Shape out;
    for (int64_t d : *dims) {
      if (d < 0)
        return emitInferenceError(loc, "ConstantOfShape dimension " + Twine(d) +
                                           " is negative");
      out.push_back(Dim::fixed(d));
    }
    types.push_back(makeTensorType(out, elementType));
    return success();
  }
  std::optional<int64_t> n = vectorLength(adaptor.getInput());
  if (n && failed(checkRank(loc, *n)))
    return failure();
  types.push_back(n ? makeDynamicTensorType(*n, elementType)
                    : UnrankedTensorType::get(elementType));
  return success();
}

LogicalResult OnnxConstantOfShapeOp::verify() {
  if (auto value = getValueAttr())
    if (value.getShapedType().getNumElements() != 1)
      return emitOpError("value must have exactly one element");
  return success();
}

LogicalResult OnnxRangeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getStart());
  for (Value v : adaptor.getOperands()) {
    if (elementOf(v) != elementType)
      return emitInferenceError(loc, "Range start, limit and delta must share a type");
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (t && t.hasStaticShape() && t.getNumElements() != 1)
      return emitInferenceError(loc, "Range start, limit and delta must be scalars");
  }
  auto start = getConstantDoubles(adaptor.getStart());
  auto limit = getConstantDoubles(adaptor.getLimit());
  auto delta = getConstantDoubles(adaptor.getDelta());
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 &&
      delta->size() == 1) {
    if ((*delta)[0] == 0)
      return emitInferenceError(loc, "Range delta must not be 0");
    double n = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
    if (!(n <= double(kMaxDimSize))) // also rejects NaN
      return emitInferenceError(loc, "Range has too many elements");
    types.push_back(RankedTensorType::get({int64_t(std::max(0.0, n))}, elementType));
    return success();
  }
  // Range(s, s + c, d) over integers with constants c and d has ceil(c / d)
  // elements whatever s is (the positions of the new tokens: start_pos to
  // start_pos + seq).
  Operation *sum = adaptor.getLimit().getDefiningOp();
  if (delta && delta->size() == 1 && (*delta)[0] != 0 && isa<IntegerType>(elementType) && sum &&
      isa<OnnxAddOp>(sum)) {
    Value start = adaptor.getStart(), a = sum->getOperand(0), b = sum->getOperand(1);
    std::optional<SmallVector<double>> c;
    if (a == start)
      c = getConstantDoubles(b);
    else if (b == start)
      c = getConstantDoubles(a);
    if (c && c->size() == 1) {
      double n = std::ceil((*c)[0] / (*delta)[0]);
      if (n <= double(kMaxDimSize)) {
        types.push_back(RankedTensorType::get({int64_t(std::max(0.0, n))}, elementType));
        return success();
      }
    }
  }
  types.push_back(makeDynamicTensorType(1, elementType));
  return success();
}

LogicalResult OnnxDropoutOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getData().getType());
  return inferSameShape(loc, adaptor.getData(), IntegerType::get(ctx, 1), types);
}

//===----------------------------------------------------------------------===//
// ONNX attention building blocks
//===----------------------------------------------------------------------===//

namespace {
/// Heads, sequence lengths and head sizes of one attention operand in either
/// the 4-D [B, H, S, D] or the 3-D [B, S, H*D] form.
struct HeadView {
  Dim batch, heads, seq, headSize;
};

FailureOr<HeadView> viewHeads(std::optional<Location> loc, Value v,
                              std::optional<int64_t> numHeads, StringRef name) {
  if (numHeads && (*numHeads <= 0 || *numHeads > kMaxDimSize))
    return emitInferenceError(loc, "the number of heads for " + Twine(name) + " (" +
                                       Twine(*numHeads) + ") is out of range");
  MaybeShape s = shapeOf(v);
  if (!s)
    return HeadView{Dim::dynamic(), numHeads ? Dim::fixed(*numHeads) : Dim::dynamic(),
                    Dim::dynamic(), Dim::dynamic()};
  if (s->size() == 4)
    return HeadView{(*s)[0], (*s)[1], (*s)[2], (*s)[3]};
  if (s->size() != 3)
    return emitInferenceError(loc, Twine(name) + " must have rank 3 or 4");
  if (!numHeads)
    return emitInferenceError(loc, Twine(name) +
                                       " is 3-D, so the number of heads attribute is required");
  FailureOr<Dim> head = divideDim(loc, (*s)[2], *numHeads, Twine(name) + " hidden size");
  if (failed(head))
    return failure();
  return HeadView{(*s)[0], Dim::fixed(*numHeads), (*s)[1], *head};
}
} // namespace

LogicalResult OnnxAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  std::optional<int64_t> qHeads = adaptor.getQNumHeads();
  std::optional<int64_t> kvHeads = adaptor.getKvNumHeads();
  int64_t rank = rankOf(adaptor.getQ());
  if (rankOf(adaptor.getK()) != rank || rankOf(adaptor.getV()) != rank)
    return emitInferenceError(loc, "Q, K and V must have the same rank");
  FailureOr<HeadView> q = viewHeads(loc, adaptor.getQ(), qHeads, "Q");
  FailureOr<HeadView> k = viewHeads(loc, adaptor.getK(), kvHeads, "K");
  FailureOr<HeadView> v = viewHeads(loc, adaptor.getV(), kvHeads, "V");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (failed(mergeDims(loc, q->headSize, k->headSize, "Q and K head size")) ||
      failed(mergeDims(loc, k->seq, v->seq, "K and V sequence length")))
    return failure();
  Dim total = k->seq;
  if (!isNone(adaptor.getPastKey())) {
    MaybeShape past = shapeOf(adaptor.getPastKey());
    if (past && past->size() != 4)
      return emitInferenceError(loc, "past_key must have rank 4");
    total = past ? addDims((*past)[2], k->seq) : Dim::dynamic();
  }
  Type qType = elementOf(adaptor.getQ()), vType = elementOf(adaptor.getV());
  if (rank == 4)
    types.push_back(makeTensorType(Shape{q->batch, q->heads, q->seq, v->headSize}, qType));
  else
    types.push_back(makeTensorType(
        Shape{q->batch, q->seq,
              q->heads.isStatic() ? multiplyDim(v->headSize, q->heads.size) : Dim::dynamic()},
        qType));
  types.push_back(makeTensorType(Shape{k->batch, k->heads, total, k->headSize},
                                 elementOf(adaptor.getK())));
  types.push_back(makeTensorType(Shape{v->batch, v->heads, total, v->headSize}, vType));
  types.push_back(makeTensorType(Shape{q->batch, q->heads, q->seq, total}, qType));
  return success();
}

LogicalResult OnnxAttentionOp::verify() {
  auto qShape = getShape(getQ().getType());
  std::optional<int64_t> hq = getQNumHeads(), hkv = getKvNumHeads();
  if (qShape && qShape->size() == 4) {
    hq = staticDim(getQ(), 1);
    hkv = staticDim(getK(), 1);
  }
  if (hq && hkv && (*hkv <= 0 || *hq % *hkv != 0))
    return emitOpError("q_num_heads (") << *hq << ") must be a multiple of kv_num_heads ("
                                        << *hkv << ")";
  if (isNone(getPastKey()) != isNone(getPastValue()))
    return emitOpError("past_key and past_value must be given together");
  if (!isNone(getNonpadKvSeqlen()) && !isNone(getPastKey()))
    return emitOpError("nonpad_kv_seqlen cannot be used with past_key/past_value");
  if (getQkMatmulOutputMode() < 0 || getQkMatmulOutputMode() > 3)
    return emitOpError("qk_matmul_output_mode must be 0, 1, 2 or 3");
  if (auto p = getSoftmaxPrecision())
    if (*p != 1 && *p != 10 && *p != 11 && *p != 16)
      return emitOpError("softmax_precision must be 1, 10, 11 or 16");
  if (getIsCausal() != 0 && getIsCausal() != 1)
    return emitOpError("is_causal must be 0 or 1");
  Value mask = getAttnMask();
  if (!isNone(mask) && !elementOf(mask).isInteger(1) && elementOf(mask) != elementOf(getQ()))
    return emitOpError("attn_mask must be boolean or of Q's element type");
  return success();
}

LogicalResult OnnxRotaryEmbeddingOp::verify() {
  int64_t rank = rankOf(getX());
  if (rank >= 0 && rank != 3 && rank != 4)
    return emitOpError("X must have rank 3 or 4");
  if (rank == 3 && (!getNumHeads() || *getNumHeads() <= 0))
    return emitOpError("num_heads is required for 3-D input");
  int64_t cacheRank = isNone(getPositionIds()) ? 3 : 2;
  for (Value c : {getCosCache(), getSinCache()})
    if (rankOf(c) >= 0 && rankOf(c) != cacheRank)
      return emitOpError("cos_cache and sin_cache must have rank ")
             << cacheRank << (cacheRank == 2 ? " with position_ids" : " without position_ids");
  if (getRotaryEmbeddingDim() < 0 || getRotaryEmbeddingDim() % 2 != 0)
    return emitOpError("rotary_embedding_dim must be even and >= 0");
  if (getInterleaved() != 0 && getInterleaved() != 1)
    return emitOpError("interleaved must be 0 or 1");
  return success();
}

LogicalResult OnnxTensorScatterOp::verify() {
  if (getMode() != "linear" && getMode() != "circular")
    return emitOpError("mode must be \"linear\" or \"circular\"");
  int64_t rank = rankOf(getPastCache());
  if (rank >= 0) {
    if (rankOf(getUpdate()) >= 0 && rankOf(getUpdate()) != rank)
      return emitOpError("update must have the rank of past_cache");
    int64_t axis = getAxis() < 0 ? getAxis() + rank : getAxis();
    if (axis <= 0 || axis >= rank)
      return emitOpError("axis must name a non-batch dimension of past_cache");
  }
  if (elementOf(getUpdate()) != elementOf(getPastCache()))
    return emitOpError("update must have past_cache's element type");
  return success();
}

//===----------------------------------------------------------------------===//
// com.microsoft operators
//===----------------------------------------------------------------------===//

namespace {
/// Q/K/V hidden sizes of com.microsoft Attention.
FailureOr<std::array<int64_t, 3>> msAttentionHiddenSizes(std::optional<Location> loc,
                                                        Value weights,
                                                        std::optional<ArrayRef<int64_t>> qkv) {
  if (qkv) {
    if (qkv->size() != 3)
      return emitInferenceError(loc, "qkv_hidden_sizes must have 3 entries");
    for (int64_t s : *qkv)
      if (s <= 0 || s > kMaxDimSize)
        return emitInferenceError(loc, "qkv_hidden_sizes entries must be positive and "
                                       "within llmc's limits");
    return std::array<int64_t, 3>{(*qkv)[0], (*qkv)[1], (*qkv)[2]};
  }
  std::optional<int64_t> w = staticDim(weights, 1);
  if (!w)
    return std::array<int64_t, 3>{ShapedType::kDynamic, ShapedType::kDynamic,
                                  ShapedType::kDynamic};
  if (*w % 3 != 0)
    return emitInferenceError(loc, "weights' second dimension " + Twine(*w) +
                                       " is not divisible by 3");
  return std::array<int64_t, 3>{*w / 3, *w / 3, *w / 3};
}

Dim dimOrDynamic(int64_t v) { return ShapedType::isDynamic(v) ? Dim::dynamic() : Dim::fixed(v); }

/// The total sequence length seen by a raw attention mask ([B, T] or
/// [B, S, T]), when `total` is not already known.
Dim totalFromMask(Value mask, Dim total) {
  if (total.isStatic() || total.name || isNone(mask))
    return total;
  MaybeShape m = shapeOf(mask);
  if (m && (m->size() == 2 || m->size() == 3))
    return m->back();
  return total;
}
} // namespace

LogicalResult MsAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  Type elementType = elementOf(adaptor.getInput());
  if (failed(requireRank(loc, adaptor.getInput(), 3, "input")) ||
      failed(requireRank(loc, adaptor.getWeights(), 2, "weights")))
    return failure();
  std::optional<ArrayRef<int64_t>> qkv;
  if (auto a = adaptor.getQkvHiddenSizesAttr())
    qkv = a.asArrayRef();
  auto sizes = msAttentionHiddenSizes(loc, adaptor.getWeights(), qkv);
  if (failed(sizes))
    return failure();
  int64_t n = adaptor.getNumHeads();
  if (n <= 0 || n > kMaxDimSize)
    return emitInferenceError(loc, "num_heads must be positive and within llmc's limits");
  MaybeShape in = shapeOf(adaptor.getInput());
  Dim b = in ? (*in)[0] : Dim::dynamic(), s = in ? (*in)[1] : Dim::dynamic();
  types.push_back(makeTensorType(Shape{b, s, dimOrDynamic((*sizes)[2])}, elementType));
  Dim head = ShapedType::isDynamic((*sizes)[1]) ? Dim::dynamic()
                                                : Dim::fixed((*sizes)[1] / n);
  Dim total = s;
  if (!isNone(adaptor.getPast())) {
    MaybeShape past = shapeOf(adaptor.getPast());
    if (past && past->size() != 5)
      return emitInferenceError(loc, "past must have rank 5");
    if (adaptor.getPastPresentShareBuffer() != 0) {
      types.push_back(adaptor.getPast().getType());
      return success();
    }
    total = past ? addDims((*past)[3], s) : Dim::dynamic();
    // A raw [B, T] or [B, S, T] mask spans the total sequence.
    total = totalFromMask(adaptor.getMaskIndex(), total);
  }
  types.push_back(makeTensorType(Shape{Dim::fixed(2), b, Dim::fixed(n), total, head},
                                 elementType));
  return success();
}

LogicalResult MsAttentionOp::verify() {
  std::optional<ArrayRef<int64_t>> qkv;
  if (auto a = getQkvHiddenSizesAttr())
    qkv = a.asArrayRef();
  auto sizes = msAttentionHiddenSizes(getLoc(), getWeights(), qkv);
  if (failed(sizes))
    return failure();
  int64_t n = getNumHeads();
  for (int64_t s : *sizes)
    if (!ShapedType::isDynamic(s) && (s <= 0 || s % n != 0))
      return emitOpError("hidden sizes must be positive multiples of num_heads (")
             << n << ")";
  if (qkv)
    if (std::optional<int64_t> w = staticDim(getWeights(), 1))
      if ((*qkv)[0] + (*qkv)[1] + (*qkv)[2] != *w)
        return emitOpError("qkv_hidden_sizes must sum to the weights' second dimension");
  std::optional<int64_t> hin = staticDim(getInput(), 2), win = staticDim(getWeights(), 0);
  if (hin && win && *hin != *win)
    return emitOpError("input hidden size ") << *hin << " does not match weights (" << *win << ")";
  if (getUnidirectional() != 0 && getUnidirectional() != 1)
    return emitOpError("unidirectional must be 0 or 1");
  return success();
}

namespace {
/// Shapes of MultiHeadAttention operands: query hidden size, key/value forms.
struct MhaView {
  Dim batch, seq, kvSeq, qHidden, vHidden, headSize, vHeadSize;
};

FailureOr<MhaView> viewMha(std::optional<Location> loc, Value query, Value key,
                           Value value, int64_t n) {
  MhaView view{Dim::dynamic(), Dim::dynamic(), Dim::dynamic(), Dim::dynamic(),
               Dim::dynamic(), Dim::dynamic(), Dim::dynamic()};
  MaybeShape q = shapeOf(query);
  if (!q)
    return view;
  view.batch = (*q)[0];
  view.seq = (*q)[1];
  if (q->size() == 5) { // packed QKV [B, S, N, 3, h]
    view.headSize = view.vHeadSize = (*q)[4];
    view.qHidden = view.vHidden = multiplyDim((*q)[4], n);
    view.kvSeq = view.seq;
    return view;
  }
  if (q->size() != 3)
    return emitInferenceError(loc, "query must have rank 3 or 5");
  view.qHidden = (*q)[2];
  FailureOr<Dim> h = divideDim(loc, (*q)[2], n, "query hidden size / num_heads");
  if (failed(h))
    return failure();
  view.headSize = *h;
  MaybeShape k = isNone(key) ? MaybeShape() : shapeOf(key);
  if (isNone(key))
    return emitInferenceError(loc, "key is required unless query is packed QKV");
  if (k) {
    if (k->size() == 5) { // packed KV [B, L, N, 2, h]
      view.kvSeq = (*k)[1];
      view.vHeadSize = (*k)[4];
      view.vHidden = multiplyDim((*k)[4], n);
      return view;
    }
    view.kvSeq = k->size() == 4 ? (*k)[2] : (*k)[1];
  }
  MaybeShape v = isNone(value) ? MaybeShape() : shapeOf(value);
  if (v) {
    if (v->size() == 4) {
      view.vHeadSize = (*v)[3];
      view.vHidden = multiplyDim((*v)[3], n);
    } else {
      view.vHidden = (*v)[2];
      FailureOr<Dim> hv = divideDim(loc, (*v)[2], n, "value hidden size / num_heads");
      if (failed(hv))
        return failure();
      view.vHeadSize = *hv;
    }
  }
  return view;
}
} // namespace

LogicalResult MsMultiHeadAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  int64_t n = adaptor.getNumHeads();
  if (n <= 0 || n > kMaxDimSize)
    return emitInferenceError(loc, "num_heads must be positive and within llmc's limits");
  FailureOr<MhaView> view =
      viewMha(loc, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(), n);
  if (failed(view))
    return failure();
  Type elementType = elementOf(adaptor.getQuery());
  Dim total = view->kvSeq;
  if (!isNone(adaptor.getPastKey()) && rankOf(adaptor.getKey()) != 4) {
    MaybeShape past = shapeOf(adaptor.getPastKey());
    if (past && past->size() != 4)
      return emitInferenceError(loc, "past_key must have rank 4");
    total = past ? addDims((*past)[2], view->kvSeq) : Dim::dynamic();
    total = totalFromMask(adaptor.getKeyPaddingMask(), total);
  }
  types.push_back(makeTensorType(Shape{view->batch, view->seq, view->vHidden}, elementType));
  types.push_back(makeTensorType(Shape{view->batch, Dim::fixed(n), total, view->headSize},
                                 elementType));
  types.push_back(makeTensorType(Shape{view->batch, Dim::fixed(n), total, view->vHeadSize},
                                 elementType));
  types.push_back(makeTensorType(Shape{view->batch, Dim::fixed(n), view->seq, total},
                                 elementType));
  return success();
}

LogicalResult MsMultiHeadAttentionOp::verify() {
  if (isNone(getPastKey()) != isNone(getPastValue()))
    return emitOpError("past_key and past_value must be given together");
  if (getUnidirectional() != 0 && getUnidirectional() != 1)
    return emitOpError("unidirectional must be 0 or 1");
  if (rankOf(getQuery()) == 5 && (!isNone(getKey()) || !isNone(getValue())))
    return emitOpError("packed QKV query takes no key or value");
  if (rankOf(getKey()) == 3 && isNone(getValue()))
    return emitOpError("a 3-D key needs a value");
  return success();
}

LogicalResult MsGroupQueryAttentionOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getQuery(), 3, "query")))
    return failure();
  int64_t nq = adaptor.getNumHeads(), nkv = adaptor.getKvNumHeads();
  if (nq <= 0 || nkv <= 0 || nq > kMaxDimSize || nq % nkv != 0)
    return emitInferenceError(loc, "num_heads must be a positive multiple of kv_num_heads");
  MaybeShape q = shapeOf(adaptor.getQuery());
  Dim b = q ? (*q)[0] : Dim::dynamic(), s = q ? (*q)[1] : Dim::dynamic();
  bool packed = isNone(adaptor.getKey());
  FailureOr<Dim> head = divideDim(loc, q ? (*q)[2] : Dim::dynamic(),
                                  packed ? nq + 2 * nkv : nq, "query hidden size");
  if (failed(head))
    return failure();
  Type elementType = elementOf(adaptor.getQuery());
  Type cacheType = isNone(adaptor.getPastKey()) ? elementType : elementOf(adaptor.getPastKey());
  Dim cacheHead = *head;
  if (!isNone(adaptor.getPastKey())) {
    MaybeShape past = shapeOf(adaptor.getPastKey());
    if (past && past->size() != 4)
      return emitInferenceError(loc, "past_key must have rank 4");
    if (past)
      cacheHead = (*past)[3]; // a 4-bit cache packs two values per byte
  }
  types.push_back(makeTensorType(Shape{b, s, multiplyDim(*head, nq)}, elementType));
  types.push_back(makeTensorType(Shape{b, Dim::fixed(nkv), Dim::dynamic(), cacheHead}, cacheType));
  types.push_back(makeTensorType(Shape{b, Dim::fixed(nkv), Dim::dynamic(), cacheHead}, cacheType));
  types.push_back(makeTensorType(Shape{b, Dim::fixed(nq), s, Dim::dynamic()}, elementType));
  return success();
}

LogicalResult MsGroupQueryAttentionOp::verify() {
  if (isNone(getKey()) != isNone(getValue()))
    return emitOpError("key and value must be given together");
  if (isNone(getPastKey()) != isNone(getPastValue()))
    return emitOpError("past_key and past_value must be given together");
  if (getDoRotary() != 0 && (isNone(getCosCache()) || isNone(getSinCache())))
    return emitOpError("do_rotary needs cos_cache and sin_cache");
  if (getCausal() == 0 && getLocalWindowSize() != -1)
    return emitOpError("local_window_size must be -1 when causal is 0");
  for (StringRef q : {getKQuantType(), getVQuantType()})
    if (q != "NONE" && q != "PER_TENSOR" && q != "PER_CHANNEL")
      return emitOpError("unknown quantization type \"") << q << "\"";
  if (getQkOutput() < 0 || getQkOutput() > 2)
    return emitOpError("qk_output must be 0, 1 or 2");
  return success();
}

LogicalResult MsRotaryEmbeddingOp::verify() {
  int64_t rank = rankOf(getInput());
  if (rank >= 0 && rank != 3 && rank != 4)
    return emitOpError("input must have rank 3 or 4");
  for (Value c : {getCosCache(), getSinCache()})
    if (rankOf(c) >= 0 && rankOf(c) != 2)
      return emitOpError("cos_cache and sin_cache must have rank 2");
  if (getRotaryEmbeddingDim() < 0 || getRotaryEmbeddingDim() % 2 != 0)
    return emitOpError("rotary_embedding_dim must be even and >= 0");
  if (getRotaryEmbeddingDim() > 0 && rank == 3 && getNumHeads() <= 0)
    return emitOpError("num_heads is required with rotary_embedding_dim on 3-D input");
  int64_t posRank = rankOf(getPositionIds());
  if (posRank >= 0 && posRank != 1 && posRank != 2)
    return emitOpError("position_ids must have rank 1 or 2");
  return success();
}

namespace {
/// The [.., 1] statistics type of the com.microsoft skip norms (f32).
Type lastDimStats(Value input) {
  MaybeShape s = shapeOf(input);
  if (s && !s->empty())
    s->back() = Dim::fixed(1);
  return makeTensorType(s, Float32Type::get(input.getContext()));
}

LogicalResult inferSkipNorm(std::optional<Location> loc, Value input, Value skip,
                            SmallVectorImpl<Type> &types) {
  if (elementOf(input) != elementOf(skip))
    return emitInferenceError(loc, "input and skip must share an element type");
  MaybeShape in = shapeOf(input), sk = shapeOf(skip);
  if (in && sk) {
    if (in->size() != 2 && in->size() != 3)
      return emitInferenceError(loc, "input must have rank 2 or 3");
    if (sk->empty() || failed(mergeDims(loc, in->back(), sk->back(), "hidden size")))
      return failure();
  }
  types.push_back(input.getType());
  types.push_back(lastDimStats(input));
  types.push_back(lastDimStats(input));
  types.push_back(input.getType());
  return success();
}
} // namespace

LogicalResult MsSkipLayerNormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferSkipNorm(loc, adaptor.getInput(), adaptor.getSkip(), types);
}

LogicalResult MsSkipSimplifiedLayerNormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferSkipNorm(loc, adaptor.getInput(), adaptor.getSkip(), types);
}

LogicalResult MsSimplifiedLayerNormalizationOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  MaybeShape x = shapeOf(adaptor.getX());
  int64_t axis = adaptor.getAxis();
  if (x) {
    FailureOr<int64_t> a = normalizeAxis(loc, axis, x->size());
    if (failed(a))
      return failure();
    axis = *a;
  }
  FailureOr<Type> stash = onnxType(ctx, loc, adaptor.getStashType(), "stash_type");
  if (failed(stash))
    return failure();
  types.push_back(makeTensorType(x, elementOf(adaptor.getScale())));
  types.push_back(makeTensorType(statsShape(x, axis), *stash));
  return success();
}

LogicalResult MsFastGeluOp::verify() {
  if (!isNone(getBias()) && rankOf(getBias()) >= 0 && rankOf(getBias()) != 1)
    return emitOpError("bias must be 1-D");
  return success();
}

LogicalResult MsBiasGeluOp::verify() {
  if (rankOf(getB()) >= 0 && rankOf(getB()) != 1)
    return emitOpError("B must be 1-D");
  return success();
}

LogicalResult MsEmbedLayerNormalizationOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getInputIds(), 2, "input_ids")) ||
      failed(requireRank(loc, adaptor.getWordEmbedding(), 2, "word_embedding")))
    return failure();
  MaybeShape ids = shapeOf(adaptor.getInputIds());
  MaybeShape word = shapeOf(adaptor.getWordEmbedding());
  Dim b = ids ? (*ids)[0] : Dim::dynamic(), s = ids ? (*ids)[1] : Dim::dynamic();
  Dim h = word ? (*word)[1] : Dim::dynamic();
  Type elementType = elementOf(adaptor.getWordEmbedding());
  types.push_back(makeTensorType(Shape{b, s, h}, elementType));
  types.push_back(makeTensorType(Shape{b}, IntegerType::get(ctx, 32)));
  types.push_back(makeTensorType(Shape{b, s, h}, elementType));
  return success();
}

LogicalResult MsMatMulNBitsOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  MaybeShape a = shapeOf(adaptor.getA());
  Type elementType = elementOf(adaptor.getA());
  if (!a) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  if (a->empty())
    return emitInferenceError(loc, "A must have rank >= 1");
  if (failed(mergeDims(loc, a->back(), Dim::fixed(adaptor.getK()), "A's last dimension vs K")))
    return failure();
  a->back() = Dim::fixed(adaptor.getN());
  types.push_back(makeTensorType(a, elementType));
  return success();
}

namespace {

/// Values per stored element of GatherBlockQuantized's data: uint8 packs
/// 8 / bits, int4/uint4 hold one.
int64_t gbqPacking(Type dataElement, int64_t bits) {
  return dataElement.isInteger(8) && bits > 0 && bits < 8 ? 8 / bits : 1;
}

} // namespace

LogicalResult MsGatherBlockQuantizedOp::inferReturnTypes(MLIRContext *,
                                                         std::optional<Location> loc,
                                                         Adaptor adaptor,
                                                         SmallVectorImpl<Type> &types) {
  MaybeShape data = shapeOf(adaptor.getData()), indices = shapeOf(adaptor.getIndices());
  Type elementType = elementOf(adaptor.getScales());
  if (!data || !indices) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t rank = int64_t(data->size());
  if (rank == 0)
    return emitInferenceError(loc, "data must have rank >= 1");
  FailureOr<int64_t> g = normalizeAxis(loc, adaptor.getGatherAxis(), rank, "gather_axis");
  if (failed(g) || failed(normalizeAxis(loc, adaptor.getQuantizeAxis(), rank, "quantize_axis")))
    return failure();
  int64_t pack = gbqPacking(elementOf(adaptor.getData()), adaptor.getBits());
  Dim &last = data->back();
  if (last.isStatic()) {
    std::optional<int64_t> unpacked = boundedMul(last.size, pack);
    if (!unpacked)
      return emitInferenceError(loc, "data's unpacked last dimension is beyond llmc's limits");
    last = Dim::fixed(*unpacked);
  } else if (pack != 1) {
    last = Dim::dynamic();
  }
  Shape out(data->begin(), data->begin() + *g);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *g + 1, data->end());
  if (failed(checkRank(loc, int64_t(out.size()))))
    return failure();
  types.push_back(makeTensorType(out, elementType));
  return success();
}

LogicalResult MsGatherBlockQuantizedOp::verify() {
  int64_t bits = getBits(), bs = getBlockSize();
  Type data = elementOf(getData());
  if (data.isInteger(8) ? (bits != 2 && bits != 4 && bits != 8) : bits != 4)
    return emitOpError("bits must be 2, 4 or 8 for uint8 data and 4 for int4/uint4, got ")
           << bits;
  if (bs < 16 || bs > kMaxDimSize || (bs & (bs - 1)) != 0)
    return emitOpError("block_size must be a power of two >= 16, got ") << bs;
  auto zp = getZeroPoints().getType();
  if (!isa<NoneType>(zp) && getElementTypeOrSelf(zp) != data)
    return emitOpError("zero_points must have data's element type");
  return success();
}

LogicalResult MsMatMulNBitsOp::verify() {
  int64_t bits = getBits(), bs = getBlockSize(), k = getK(), n = getN();
  if (bits < 2 || bits > 8)
    return emitOpError("bits must be in [2, 8], got ") << bits;
  if (bs < 16 || (bs & (bs - 1)) != 0)
    return emitOpError("block_size must be a power of two >= 16, got ") << bs;
  if (k <= 0 || n <= 0 || k > kMaxDimSize || n > kMaxDimSize || bs > kMaxDimSize)
    return emitOpError("K, N and block_size must be positive and within llmc's limits");
  if (getWeightPrepacked() != 0)
    return success();
  int64_t blocks = k / bs + (k % bs != 0), blob = bs * bits / 8;
  std::optional<int64_t> packed = boundedMul(n, blocks);
  packed = packed ? boundedMul(*packed, blob) : std::nullopt;
  std::optional<int64_t> scaleCount = boundedMul(n, blocks);
  if (!packed || !scaleCount)
    return emitOpError("the quantized weight of K = ") << k << ", N = " << n
                                                      << " is beyond llmc's limits";
  auto b = dyn_cast<RankedTensorType>(getB().getType());
  if (b && b.hasStaticShape() && b.getNumElements() != 0) {
    if (b.getRank() == 3 &&
        (b.getDimSize(0) != n || b.getDimSize(1) != blocks || b.getDimSize(2) != blob))
      return emitOpError("B must be [") << n << ", " << blocks << ", " << blob << "]";
    if (b.getNumElements() != *packed)
      return emitOpError("B must hold ") << *packed << " bytes";
  }
  auto s = dyn_cast<RankedTensorType>(getScales().getType());
  if (s && s.hasStaticShape() && s.getNumElements() != 0 && s.getNumElements() != *scaleCount)
    return emitOpError("scales must hold N * k_blocks = ") << *scaleCount << " values";
  if (elementOf(getScales()) != elementOf(getA()))
    return emitOpError("scales must have A's element type");
  return success();
}

//===----------------------------------------------------------------------===//
// Transformer level
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getTable(), 2, "table")))
    return failure();
  MaybeShape ids = shapeOf(adaptor.getIds());
  MaybeShape table = shapeOf(adaptor.getTable());
  if (ids)
    ids->push_back(table ? (*table)[1] : Dim::dynamic());
  types.push_back(makeTensorType(ids, elementOf(adaptor.getTable())));
  return success();
}

namespace {
/// The storage of llm.quantized_linear and llm.quantized_embedding: `values`
/// (ui8) [rows, G, group_size * bits / 8] of 4- or 8-bit values, `scales`
/// and optional ui8 `zeroPoints` [rows, G].
LogicalResult verifyQuantizedStorage(Operation *op, Value values, StringRef name,
                                     StringRef rows, Value scales, Value zeroPoints,
                                     int64_t bits, int64_t gs) {
  if (bits != 4 && bits != 8)
    return op->emitOpError("bits must be 4 or 8, got ") << bits;
  if (gs < 1 || gs > kMaxDimSize || (gs * bits) % 8 != 0)
    return op->emitOpError("group_size must be positive and fill whole bytes, got ") << gs;
  std::optional<int64_t> blob = staticDim(values, 2);
  if (blob && *blob != gs * bits / 8)
    return op->emitOpError() << name << " must be [" << rows << ", G, " << gs * bits / 8
                             << "] for " << bits << "-bit groups of " << gs << ", got "
                             << values.getType();
  auto likeGroups = [&](Value v, StringRef what) -> LogicalResult {
    if (rankOf(v) != 2)
      return op->emitOpError() << what << " must be [" << rows << ", G], got " << v.getType();
    for (int64_t d = 0; d < 2; ++d) {
      std::optional<int64_t> a = staticDim(v, d), b = staticDim(values, d);
      if (a && b && *a != *b)
        return op->emitOpError() << what << " " << v.getType() << " does not match " << name
                                 << " " << values.getType();
    }
    return success();
  };
  if (failed(likeGroups(scales, "scales")))
    return failure();
  if (isNone(zeroPoints))
    return success();
  if (!elementOf(zeroPoints).isUnsignedInteger(8))
    return op->emitOpError("zero_points must be ui8, got ") << zeroPoints.getType();
  return likeGroups(zeroPoints, "zero_points");
}
} // namespace

LogicalResult QuantizedEmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getTable(), 3, "table")))
    return failure();
  MaybeShape ids = shapeOf(adaptor.getIds());
  std::optional<int64_t> groups = staticDim(adaptor.getTable(), 1);
  int64_t gs = adaptor.getGroupSize();
  if (ids)
    ids->push_back(groups && gs > 0 ? Dim::fixed(*groups * gs) : Dim::dynamic());
  types.push_back(makeTensorType(ids, elementOf(adaptor.getScales())));
  return success();
}

LogicalResult QuantizedEmbeddingOp::verify() {
  return verifyQuantizedStorage(*this, getTable(), "table", "vocab", getScales(), getZeroPoints(),
                                getBits(), getGroupSize());
}

namespace {
LogicalResult verifyLastDimVector(Operation *op, Value x, Value w, StringRef name) {
  if (isNone(w))
    return success();
  int64_t r = rankOf(w);
  if (r >= 0 && r != 1)
    return op->emitOpError() << name << " must be 1-D";
  std::optional<int64_t> wd = staticDim(w, 0);
  std::optional<int64_t> xd = rankOf(x) > 0 ? staticDim(x, rankOf(x) - 1) : std::nullopt;
  if (wd && xd && *wd != *xd)
    return op->emitOpError() << name << " has " << *wd << " elements for a last dimension of "
                             << *xd;
  return success();
}
} // namespace

LogicalResult RmsNormOp::verify() { return verifyLastDimVector(*this, getX(), getWeight(), "weight"); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyLastDimVector(*this, getX(), getWeight(), "weight")))
    return failure();
  return verifyLastDimVector(*this, getX(), getBias(), "bias");
}

LogicalResult RopeOp::verify() {
  if (rankOf(getX()) >= 0 && rankOf(getX()) != 4)
    return emitOpError("x must be [batch, seq, heads, head_dim]");
  for (Value c : {getCos(), getSin()})
    if (rankOf(c) >= 0 && rankOf(c) != 2)
      return emitOpError("cos and sin must be [max_pos, rotary_dim / 2]");
  if (rankOf(getPositions()) >= 0 && rankOf(getPositions()) != 2)
    return emitOpError("positions must be [batch, seq]");
  int64_t r = getRotaryDim();
  std::optional<int64_t> d = staticDim(getX(), 3);
  if (r < 0 || r % 2 != 0 || (d && r > *d))
    return emitOpError("rotary_dim must be even and at most the head size");
  int64_t rot = r ? r : d.value_or(ShapedType::kDynamic);
  std::optional<int64_t> half = staticDim(getCos(), 1);
  if (half && !ShapedType::isDynamic(rot) && *half != rot / 2)
    return emitOpError("cos has ") << *half << " columns, expected rotary_dim / 2 = " << rot / 2;
  return success();
}

/// [B, S, Hq, Dv] from q [B, S, Hq, D] and values [.., Dv] (attention over
/// a sequence or a cache): q's shape with the values' last size.
static LogicalResult inferAttentionResult(std::optional<Location> loc, Value q, Value k, Value v,
                                          const char *kName, const char *vName,
                                          SmallVectorImpl<Type> &types) {
  for (auto [x, name] : {std::pair{q, "q"}, std::pair{k, kName}, std::pair{v, vName}})
    if (failed(requireRank(loc, x, 4, name)))
      return failure();
  MaybeShape qs = shapeOf(q), vs = shapeOf(v);
  if (!qs) {
    types.push_back(makeDynamicTensorType(4, elementOf(q)));
    return success();
  }
  Shape out = *qs;
  out[3] = vs ? (*vs)[3] : Dim::dynamic();
  types.push_back(makeTensorType(out, elementOf(q)));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferAttentionResult(loc, adaptor.getQ(), adaptor.getK(), adaptor.getV(), "k", "v",
                              types);
}

LogicalResult AttentionOp::verify() {
  int64_t hq = getNumHeads(), hkv = getNumKvHeads();
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    return emitOpError("num_heads (") << hq << ") must be a positive multiple of num_kv_heads ("
                                      << hkv << ")";
  if (auto d = staticDim(getQ(), 2); d && *d != hq)
    return emitOpError("q has ") << *d << " heads, num_heads is " << hq;
  for (Value t : {getK(), getV()})
    if (auto d = staticDim(t, 2); d && *d != hkv)
      return emitOpError("k/v have ") << *d << " heads, num_kv_heads is " << hkv;
  auto dq = staticDim(getQ(), 3), dk = staticDim(getK(), 3);
  if (dq && dk && *dq != *dk)
    return emitOpError("q and k head sizes differ: ") << *dq << " vs " << *dk;
  auto sk = staticDim(getK(), 1), sv = staticDim(getV(), 1);
  if (sk && sv && *sk != *sv)
    return emitOpError("k and v sequence lengths differ");
  if (getWindow() < 0)
    return emitOpError("window must be >= 0");
  if (getSoftcap().convertToFloat() < 0)
    return emitOpError("softcap must be >= 0");
  if (!(getScale().convertToFloat() > 0))
    return emitOpError("scale must be positive");
  Value mask = getMask();
  if (!isNone(mask) && !elementOf(mask).isInteger(1) && !isa<FloatType>(elementOf(mask)))
    return emitOpError("mask must be i1 or floating point");
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getWeight(), 2, "weight")))
    return failure();
  MaybeShape x = shapeOf(adaptor.getX()), w = shapeOf(adaptor.getWeight());
  if (x && x->empty())
    return emitInferenceError(loc, "x must have rank >= 1");
  if (x && w) {
    if (failed(mergeDims(loc, x->back(), (*w)[1], "in_features")))
      return failure();
    x->back() = (*w)[0];
  } else if (x) {
    x->back() = Dim::dynamic();
  }
  if (!isNone(adaptor.getBias())) {
    if (failed(requireRank(loc, adaptor.getBias(), 1, "bias")))
      return failure();
    MaybeShape b = shapeOf(adaptor.getBias());
    if (b && w && failed(mergeDims(loc, (*b)[0], (*w)[0], "bias length")))
      return failure();
  }
  types.push_back(makeTensorType(x, elementOf(adaptor.getX())));
  return success();
}

LogicalResult QuantizedLinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getWeight(), 3, "weight")))
    return failure();
  MaybeShape x = shapeOf(adaptor.getX()), w = shapeOf(adaptor.getWeight());
  if (x && x->empty())
    return emitInferenceError(loc, "x must have rank >= 1");
  if (x)
    x->back() = w ? (*w)[0] : Dim::dynamic();
  types.push_back(makeTensorType(x, elementOf(adaptor.getX())));
  return success();
}

LogicalResult QuantizedLinearOp::verify() {
  if (failed(verifyQuantizedStorage(*this, getWeight(), "weight", "N", getScales(),
                                    getZeroPoints(), getBits(), getGroupSize())))
    return failure();
  int64_t gs = getGroupSize();
  std::optional<int64_t> n = staticDim(getWeight(), 0), groups = staticDim(getWeight(), 1);
  std::optional<int64_t> k = staticDim(getX(), rankOf(getX()) - 1);
  if (k && groups && *groups != (*k + gs - 1) / gs)
    return emitOpError("weight has ") << *groups << " groups of " << gs << " but K = " << *k
                                      << " needs " << (*k + gs - 1) / gs;
  if (!isNone(getBias())) {
    std::optional<int64_t> b = vectorLength(getBias());
    if (rankOf(getBias()) != 1 || (b && n && *b != *n))
      return emitOpError("bias must be [N], got ") << getBias().getType();
  }
  return success();
}

LogicalResult SwigluOp::verify() {
  if (failed(verifyCompatibleShape(getGate().getType(), getUp().getType())) ||
      elementOf(getGate()) != elementOf(getUp()))
    return emitOpError("gate and up must have the same shape and element type");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/LLM/IR/LLMOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Static KV cache
//===----------------------------------------------------------------------===//

LogicalResult CacheReadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getCache(), 4, "cache")))
    return failure();
  MaybeShape c = shapeOf(adaptor.getCache());
  if (!c) {
    types.push_back(makeDynamicTensorType(4, elementOf(adaptor.getCache())));
    return success();
  }
  Shape out = *c;
  out[2] = Dim::dynamic();
  types.push_back(makeTensorType(out, elementOf(adaptor.getCache())));
  return success();
}

LogicalResult QuantizedCacheUpdateOp::inferReturnTypes(MLIRContext *,
                                                      std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getCache().getType());
  types.push_back(adaptor.getScales().getType());
  return success();
}

LogicalResult QuantizedCacheUpdateOp::verify() {
  for (auto [v, name] : {std::pair{getCache(), "cache"}, std::pair{getScales(), "scales"},
                         std::pair{getUpdate(), "update"}})
    if (int64_t r = rankOf(v); r >= 0 && r != 4)
      return emitOpError() << name << " must have rank 4";
  for (int64_t axis : {0, 1, 2}) {
    auto c = staticDim(getCache(), axis), s = staticDim(getScales(), axis);
    if (c && s && *c != *s)
      return emitOpError("scales must be [B, H, M, 1] for a [B, H, M, D] cache");
  }
  if (auto s = staticDim(getScales(), 3); s && *s != 1)
    return emitOpError("scales must be [B, H, M, 1] for a [B, H, M, D] cache");
  for (int64_t axis : {0, 1, 3}) {
    auto c = staticDim(getCache(), axis), u = staticDim(getUpdate(), axis);
    if (c && u && *c != *u)
      return emitOpError("update does not fit the cache in dimension ") << axis;
  }
  return success();
}

/// k_cache and v_cache are float with no kv_scales, or int8 with two
/// [B, Hkv, M, 1] scales (llm.quantized_cache_update's layout).
static LogicalResult verifyCacheOperands(Operation *op, Value k, Value v, ValueRange scales) {
  bool int8 = elementOf(k).isInteger(8);
  if (int8 != elementOf(v).isInteger(8))
    return op->emitOpError("k_cache and v_cache must both be int8 or both be float");
  if (scales.size() != (int8 ? 2u : 0u))
    return op->emitOpError(int8 ? "int8 caches need their two kv_scales (k, v)"
                                : "float caches take no kv_scales");
  for (auto [cache, s] : llvm::zip(ValueRange{k, v}, scales)) {
    if (int64_t r = rankOf(s); r >= 0 && r != 4)
      return op->emitOpError("kv_scales must be [B, Hkv, M, 1]");
    for (int64_t axis : {0, 1, 2}) {
      auto c = staticDim(cache, axis), d = staticDim(s, axis);
      if (c && d && *c != *d)
        return op->emitOpError("kv_scales must be [B, Hkv, M, 1] for their cache");
    }
    if (auto d = staticDim(s, 3); d && *d != 1)
      return op->emitOpError("kv_scales must be [B, Hkv, M, 1] for their cache");
  }
  return success();
}

LogicalResult CachedAttentionOp::verify() {
  return verifyCacheOperands(*this, getKCache(), getVCache(), getKvScales());
}
LogicalResult FlashAttentionOp::verify() {
  return verifyCacheOperands(*this, getKCache(), getVCache(), getKvScales());
}
LogicalResult DecodeAttentionPartialOp::verify() {
  return verifyCacheOperands(*this, getKCache(), getVCache(), getKvScales());
}

LogicalResult CachedAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferAttentionResult(loc, adaptor.getQ(), adaptor.getKCache(), adaptor.getVCache(),
                              "k_cache", "v_cache", types);
}

//===----------------------------------------------------------------------===//
// Flash forms
//===----------------------------------------------------------------------===//

LogicalResult FlashAttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferAttentionResult(loc, adaptor.getQ(), adaptor.getKCache(), adaptor.getVCache(),
                              "k_cache", "v_cache", types);
}

LogicalResult DecodeAttentionPartialOp::inferReturnTypes(MLIRContext *ctx,
                                                         std::optional<Location> loc,
                                                         Adaptor adaptor,
                                                         SmallVectorImpl<Type> &types) {
  for (auto [v, name] : {std::pair{adaptor.getQ(), "q"}, std::pair{adaptor.getKCache(), "k_cache"},
                         std::pair{adaptor.getVCache(), "v_cache"}})
    if (failed(requireRank(loc, v, 4, name)))
      return failure();
  int64_t splits = adaptor.getNumSplits();
  if (splits <= 0)
    return emitOptionalError(loc, "num_splits must be positive");
  MaybeShape q = shapeOf(adaptor.getQ()), v = shapeOf(adaptor.getVCache());
  Type f32 = Float32Type::get(ctx);
  Dim b = q ? (*q)[0] : Dim::dynamic(), h = q ? (*q)[2] : Dim::dynamic();
  Dim dv = v ? (*v)[3] : Dim::dynamic();
  types.push_back(makeTensorType(Shape{b, Dim::fixed(splits), h, dv}, f32));
  types.push_back(makeTensorType(Shape{b, Dim::fixed(splits), h}, f32));
  return success();
}

LogicalResult AttentionCombineOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &types) {
  if (failed(requireRank(loc, adaptor.getPartial(), 4, "partial")) ||
      failed(requireRank(loc, adaptor.getLse(), 3, "lse")))
    return failure();
  MaybeShape p = shapeOf(adaptor.getPartial());
  Shape out = p ? Shape{(*p)[0], Dim::fixed(1), (*p)[2], (*p)[3]}
                : Shape{Dim::dynamic(), Dim::fixed(1), Dim::dynamic(), Dim::dynamic()};
  types.push_back(makeTensorType(out, Float32Type::get(ctx)));
  return success();
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region takes ") << body.getNumArguments() << " arguments for "
                                        << getInputs().size() << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("region argument types differ from the inputs");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getOutputs().getTypes())
    return emitOpError("yield types differ from the results");
  return success();
}
