//===- OnnxShapeOps.cpp - ai.onnx shape operations -----------------------===//
//
// Shape manipulation, shapes and constants of ai.onnx (LLMOnnxOps.td).
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OpHelpers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <climits>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::ophelpers;

/// Split into more parts than this is taken as a corrupt model.
constexpr int64_t kMaxSplitOutputs = 4096;

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
