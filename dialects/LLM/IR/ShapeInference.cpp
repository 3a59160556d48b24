//===- ShapeInference.cpp - symbolic shapes and shared inference rules ---===//
#include "dialects/LLM/IR/ShapeInference.h"

#include "dialects/LLM/IR/LLMDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/ADT/APFloat.h"

#include <cstring>

using namespace mlir;
using namespace mlir::llmc;

MaybeShape mlir::llmc::getShape(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return std::nullopt;
  Shape shape;
  auto dims = dyn_cast_or_null<DimsAttr>(ranked.getEncoding());
  for (auto [i, size] : llvm::enumerate(ranked.getShape())) {
    Dim d{size, {}};
    if (dims && i < dims.getNames().size() && ShapedType::isDynamic(size) &&
        dims.getNames()[i] && !dims.getNames()[i].getValue().empty())
      d.name = dims.getNames()[i];
    shape.push_back(d);
  }
  return shape;
}

Type mlir::llmc::makeTensorType(const MaybeShape &shape, Type elementType) {
  if (!shape)
    return UnrankedTensorType::get(elementType);
  SmallVector<int64_t> sizes;
  SmallVector<StringAttr> names;
  bool anyName = false;
  MLIRContext *ctx = elementType.getContext();
  for (const Dim &d : *shape) {
    sizes.push_back(d.size);
    bool named = !d.isStatic() && d.name && !d.name.getValue().empty();
    names.push_back(named ? d.name : StringAttr::get(ctx, ""));
    anyName |= named;
  }
  Attribute encoding;
  if (anyName)
    encoding = DimsAttr::get(ctx, names);
  return RankedTensorType::get(sizes, elementType, encoding);
}

Type mlir::llmc::makeDynamicTensorType(int64_t rank, Type elementType) {
  return makeTensorType(Shape(rank, Dim::dynamic()), elementType);
}

std::optional<int64_t> mlir::llmc::boundedMul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > kMaxDimSize)
    return std::nullopt;
  return r;
}

std::optional<int64_t> mlir::llmc::boundedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) || r > kMaxDimSize)
    return std::nullopt;
  return r;
}

LogicalResult mlir::llmc::checkRank(std::optional<Location> loc, int64_t rank) {
  if (rank < 0 || rank > kMaxRank)
    return emitInferenceError(loc, "rank " + Twine(rank) + " exceeds llmc's limit of " +
                                       Twine(kMaxRank));
  return success();
}

LogicalResult mlir::llmc::checkTypeLimits(std::optional<Location> loc, Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return success();
  if (failed(checkRank(loc, ranked.getRank())))
    return failure();
  int64_t elements = 1;
  for (int64_t d : ranked.getShape()) {
    if (ShapedType::isDynamic(d))
      continue;
    std::optional<int64_t> e = boundedMul(elements, d);
    if (!e)
      return emitInferenceError(loc, "shape has more than 2^48 elements; the model is corrupt "
                                     "or beyond llmc's limits");
    elements = *e;
  }
  return success();
}

bool mlir::llmc::isNone(Value v) { return !v || isa<NoneType>(v.getType()); }

int64_t mlir::llmc::staticProduct(ArrayRef<Dim> dims) {
  int64_t product = 1;
  for (const Dim &d : dims) {
    if (!d.isStatic())
      return ShapedType::kDynamic;
    if (__builtin_mul_overflow(product, d.size, &product))
      return ShapedType::kDynamic;
  }
  return product;
}

bool mlir::llmc::areCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual)) {
    if (a == b)
      continue;
    auto ta = dyn_cast<TensorType>(a);
    auto tb = dyn_cast<TensorType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType())
      return false;
    if (!ta.hasRank() || !tb.hasRank())
      continue;
    if (ta.getRank() != tb.getRank())
      return false;
    for (auto [da, db] : llvm::zip(ta.getShape(), tb.getShape()))
      if (!ShapedType::isDynamic(da) && !ShapedType::isDynamic(db) && da != db)
        return false;
  }
  return true;
}

LogicalResult mlir::llmc::emitInferenceError(std::optional<Location> loc,
                                             const Twine &message) {
  if (loc)
    mlir::emitError(*loc) << message;
  return failure();
}

FailureOr<int64_t> mlir::llmc::normalizeAxis(std::optional<Location> loc,
                                             int64_t axis, int64_t rank,
                                             StringRef what) {
  if (axis < -rank || axis >= rank)
    return emitInferenceError(loc, Twine(what) + " " + Twine(axis) +
                                       " is out of range for rank " + Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Shape> mlir::llmc::broadcastShapes(std::optional<Location> loc,
                                             ArrayRef<Dim> a, ArrayRef<Dim> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; a missing leading dim acts as 1.
    Dim da = i + a.size() >= rank ? a[i + a.size() - rank] : Dim::fixed(1);
    Dim db = i + b.size() >= rank ? b[i + b.size() - rank] : Dim::fixed(1);
    Dim &r = out[i];
    if (da.isStatic() && db.isStatic()) {
      if (da.size != db.size && da.size != 1 && db.size != 1)
        return emitInferenceError(loc, "operands are not broadcast-compatible: dimension " +
                                           Twine(da.size) + " vs " + Twine(db.size));
      r = Dim::fixed(da.size == 1 ? db.size : da.size);
    } else if (da.isStatic()) {
      // 1 broadcasts to the dynamic dim; any other size is what it must be.
      r = da.size == 1 ? db : da;
    } else if (db.isStatic()) {
      r = db.size == 1 ? da : db;
    } else {
      r = (da.name && da.name == db.name) ? da : Dim::dynamic();
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Constant operands
//===----------------------------------------------------------------------===//

std::optional<ArrayRef<char>> mlir::llmc::getRawElementBytes(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr)) {
    // i1 is bit-packed in DenseElementsAttr; callers read it through values.
    if (dense.getElementType().isInteger(1))
      return std::nullopt;
    return dense.getRawData();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    return blob->getData();
  }
  return std::nullopt;
}

namespace {
/// Bytes per stored element (sub-byte types take one byte each).
unsigned storageBytes(Type elementType) {
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return (bits + 7) / 8;
}

template <typename Fn>
bool forEachStoredElement(ElementsAttr attr, Fn &&fn) {
  Type elementType = attr.getShapedType().getElementType();
  if (!elementType.isIntOrFloat())
    return false;
  if (auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr)) {
    if (isa<FloatType>(elementType)) {
      for (APFloat v : dense.getValues<APFloat>())
        fn(APInt(), v, true);
    } else {
      for (APInt v : dense.getValues<APInt>())
        fn(v, APFloat(0.0), false);
    }
    return true;
  }
  std::optional<ArrayRef<char>> raw = getRawElementBytes(attr);
  if (!raw)
    return false;
  unsigned bytes = storageBytes(elementType);
  int64_t count = attr.getShapedType().getNumElements();
  if (raw->size() < uint64_t(count) * bytes)
    return false;
  unsigned bits = elementType.getIntOrFloatBitWidth();
  for (int64_t i = 0; i < count; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, raw->data() + i * bytes, bytes);
    APInt v(bits, word & (bits >= 64 ? ~0ull : ((1ull << bits) - 1)));
    if (auto ft = dyn_cast<FloatType>(elementType))
      fn(APInt(), APFloat(ft.getFloatSemantics(), v), true);
    else
      fn(v, APFloat(0.0), false);
  }
  return true;
}
} // namespace

std::optional<SmallVector<int64_t>> mlir::llmc::readIntElements(ElementsAttr attr) {
  Type elementType = attr.getShapedType().getElementType();
  if (!elementType.isInteger())
    return std::nullopt;
  bool isUnsigned = elementType.isUnsignedInteger() || elementType.isInteger(1);
  SmallVector<int64_t> out;
  if (!forEachStoredElement(attr, [&](const APInt &v, const APFloat &, bool) {
        out.push_back(isUnsigned ? int64_t(v.getZExtValue()) : v.getSExtValue());
      }))
    return std::nullopt;
  return out;
}

std::optional<SmallVector<double>> mlir::llmc::readDoubleElements(ElementsAttr attr) {
  Type elementType = attr.getShapedType().getElementType();
  bool isUnsigned = elementType.isUnsignedInteger() || elementType.isInteger(1);
  SmallVector<double> out;
  if (!forEachStoredElement(attr, [&](const APInt &i, const APFloat &f, bool isFloat) {
        if (isFloat)
          out.push_back(f.convertToDouble() /*exact widening for <= 64 bits*/);
        else
          out.push_back(isUnsigned ? double(i.getZExtValue()) : double(i.getSExtValue()));
      }))
    return std::nullopt;
  return out;
}

std::optional<SmallVector<int64_t>> mlir::llmc::getConstantInts(Value v) {
  ElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return readIntElements(attr);
}

std::optional<SmallVector<double>> mlir::llmc::getConstantDoubles(Value v) {
  ElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return readDoubleElements(attr);
}

//===----------------------------------------------------------------------===//
// Shared inference rules
//===----------------------------------------------------------------------===//

std::string mlir::llmc::typeToString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

LogicalResult mlir::llmc::inferSameAsOperand(std::optional<Location> loc,
                                             ValueRange operands, unsigned index,
                                             SmallVectorImpl<Type> &types) {
  if (operands.size() <= index || !isa<TensorType>(operands[index].getType()))
    return emitInferenceError(loc, "expected a tensor operand #" + Twine(index));
  types.push_back(operands[index].getType());
  return success();
}

LogicalResult mlir::llmc::inferSameAsOperandWithAxis(std::optional<Location> loc,
                                                     ValueRange operands,
                                                     unsigned index, int64_t axis,
                                                     SmallVectorImpl<Type> &types) {
  if (failed(inferSameAsOperand(loc, operands, index, types)))
    return failure();
  if (MaybeShape shape = getShape(operands[index].getType()))
    if (failed(normalizeAxis(loc, axis, shape->size())))
      return failure();
  return success();
}

LogicalResult mlir::llmc::inferSameShape(std::optional<Location> loc, Value v,
                                         Type elementType,
                                         SmallVectorImpl<Type> &types) {
  if (!v || !isa<TensorType>(v.getType()))
    return emitInferenceError(loc, "expected a tensor operand");
  types.push_back(makeTensorType(getShape(v.getType()), elementType));
  return success();
}

LogicalResult mlir::llmc::inferBroadcast(std::optional<Location> loc,
                                         ValueRange operands, bool resultBool,
                                         bool sameElementType,
                                         SmallVectorImpl<Type> &types) {
  if (operands.empty())
    return emitInferenceError(loc, "expected at least one operand");
  Type elementType = getElementTypeOrSelf(operands[0].getType());
  MaybeShape shape = Shape{};
  for (Value v : operands) {
    if (!isa<TensorType>(v.getType()))
      return emitInferenceError(loc, "expected tensor operands");
    if (sameElementType && getElementTypeOrSelf(v.getType()) != elementType)
      return emitInferenceError(loc, "operands have different element types: " +
                                         Twine(typeToString(elementType)) + " vs " +
                                         typeToString(getElementTypeOrSelf(v.getType())));
    MaybeShape s = getShape(v.getType());
    if (!s || !shape) {
      shape = std::nullopt;
      continue;
    }
    FailureOr<Shape> b = broadcastShapes(loc, *shape, *s);
    if (failed(b))
      return failure();
    shape = *b;
  }
  if (resultBool)
    elementType = IntegerType::get(elementType.getContext(), 1);
  types.push_back(makeTensorType(shape, elementType));
  return success();
}

LogicalResult mlir::llmc::inferReduce(std::optional<Location> loc, Value data,
                                      Value axes, bool keepdims,
                                      bool noopWithEmptyAxes,
                                      SmallVectorImpl<Type> &types) {
  Type elementType = getElementTypeOrSelf(data.getType());
  MaybeShape shape = getShape(data.getType());
  if (!shape) {
    types.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  int64_t rank = shape->size();
  SmallVector<int64_t> axisList;
  if (!isNone(axes)) {
    auto axesType = dyn_cast<RankedTensorType>(axes.getType());
    if (!axesType || axesType.getRank() != 1)
      return emitInferenceError(loc, "axes must be a 1-D tensor");
    std::optional<SmallVector<int64_t>> values = getConstantInts(axes);
    if (!values) {
      // Axes known only at run time: a dynamic empty list could mean "all".
      if (keepdims)
        types.push_back(makeDynamicTensorType(rank, elementType));
      else if (!axesType.isDynamicDim(0) && axesType.getDimSize(0) > 0)
        types.push_back(makeDynamicTensorType(rank - axesType.getDimSize(0), elementType));
      else
        types.push_back(UnrankedTensorType::get(elementType));
      return success();
    }
    axisList = *values;
  }
  if (axisList.empty()) {
    if (noopWithEmptyAxes) {
      types.push_back(data.getType());
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axisList.push_back(i);
  }
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axisList) {
    FailureOr<int64_t> n = normalizeAxis(loc, a, rank, "reduction axis");
    if (failed(n))
      return failure();
    if (reduced[*n])
      return emitInferenceError(loc, "reduction axis " + Twine(a) + " is repeated");
    reduced[*n] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back((*shape)[i]);
    else if (keepdims)
      out.push_back(Dim::fixed(1));
  }
  types.push_back(makeTensorType(out, elementType));
  return success();
}
