//===- StorageFacts.cpp - which values share storage in the compiled code -===//
#include "passes/StorageFacts.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "passes/BuildHelpers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>

namespace mlir::llmc {

Value cacheSource(Value v) {
  while (true) {
    if (auto u = v.getDefiningOp<CacheUpdateOp>()) {
      v = u.getCache();
      continue;
    }
    if (auto u = v.getDefiningOp<QuantizedCacheUpdateOp>()) { // the cache, the scales
      v = u->getOperand(cast<OpResult>(v).getResultNumber());
      continue;
    }
    if (auto fused = v.getDefiningOp<FusedOp>()) {
      Value inner = cast<YieldOp>(fused.getRegion().front().getTerminator())
                        ->getOperand(cast<OpResult>(v).getResultNumber());
      Value start = cacheSource(inner);
      auto arg = dyn_cast<BlockArgument>(start);
      if (inner != start && arg && arg.getOwner() == &fused.getRegion().front()) {
        v = fused->getOperand(arg.getArgNumber());
        continue;
      }
    }
    return v;
  }
}

/// What a fused region's block argument stands for outside the region(s).
Value outside(Value v) {
  while (auto arg = dyn_cast<BlockArgument>(v)) {
    auto fused = dyn_cast<FusedOp>(arg.getOwner()->getParentOp());
    if (!fused)
      return v;
    v = fused->getOperand(arg.getArgNumber());
  }
  return v;
}

/// Whether `v`'s storage may change after it is computed: the caches
/// (function arguments updated in place, and what cache updates return,
/// also through fused regions) and the other arguments.
bool mayChange(Value v) {
  v = outside(v);
  return isa<BlockArgument>(v) || v.getDefiningOp<CacheUpdateOp>() || cacheSource(v) != v;
}

/// An onnx.slice (static shapes, steps of 1) whose result is `count`
/// segments of `len` elements of its input, segment c starting at element
/// base + c * stride: one sliced axis, every axis after it whole. count 1 is
/// one contiguous range (a view).
/// Elements [start, start + size) of `in`'s axis, every axis after it whole,
/// as segments of `in`.
static SliceSegments segmentsAlong(RankedTensorType in, int64_t axis, int64_t start, int64_t size) {
  SliceSegments seg;
  int64_t inner = 1;
  for (int64_t a = axis + 1; a < in.getRank(); ++a)
    inner *= in.getDimSize(a);
  for (int64_t a = 0; a < axis; ++a)
    seg.count *= in.getDimSize(a);
  seg.base = start * inner;
  seg.stride = in.getDimSize(axis) * inner;
  seg.len = size * inner;
  return seg;
}

std::optional<SliceSegments> sliceSegments(Operation *op) {
  if (op->getNumOperands() < 3 || op->getNumOperands() > 5)
    return std::nullopt;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() || in.getRank() != out.getRank())
    return std::nullopt;
  int64_t rank = in.getRank();
  auto operand = [&](unsigned i) { return outside(op->getOperand(i)); };
  auto starts = getConstantInts(operand(1));
  auto ends = getConstantInts(operand(2));
  std::optional<SmallVector<int64_t>> axes, steps;
  if (op->getNumOperands() > 3 && !isa_and_nonnull<NoneOp>(operand(3).getDefiningOp()))
    axes = getConstantInts(operand(3));
  else
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts ? int64_t(starts->size()) : 0));
  if (op->getNumOperands() > 4 && !isa_and_nonnull<NoneOp>(operand(4).getDefiningOp()))
    steps = getConstantInts(operand(4));
  else
    steps = SmallVector<int64_t>(starts ? starts->size() : 0, 1);
  if (!starts || !ends || !axes || !steps || starts->size() != axes->size() ||
      steps->size() != axes->size())
    return std::nullopt;
  SmallVector<int64_t> begin(rank, 0);
  for (auto [s, a, st] : llvm::zip(*starts, *axes, *steps)) {
    int64_t axis = a < 0 ? a + rank : a;
    if (axis < 0 || axis >= rank || st != 1)
      return std::nullopt;
    int64_t d = in.getDimSize(axis);
    begin[axis] = std::clamp<int64_t>(s < 0 ? s + d : s, 0, d);
  }
  // The sliced axis: the first whose extent changes (none: the whole input).
  int64_t axis = 0;
  while (axis < rank && out.getDimSize(axis) == in.getDimSize(axis))
    ++axis;
  for (int64_t a = 0; a < rank; ++a) {
    int64_t d = in.getDimSize(a), o = out.getDimSize(a);
    if (a == axis ? begin[a] + o > d : begin[a] != 0 || o != d)
      return std::nullopt;
  }
  if (axis == rank) {
    SliceSegments seg;
    seg.len = in.getNumElements();
    return seg;
  }
  return segmentsAlong(in, axis, begin[axis], out.getDimSize(axis));
}

std::optional<SliceSegments> splitSegments(Operation *op, unsigned i) {
  if (shortName(op) != "onnx.split" || op->getNumOperands() < 1 || i >= op->getNumResults())
    return std::nullopt;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!in || !in.hasStaticShape())
    return std::nullopt;
  int64_t rank = in.getRank();
  auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
  int64_t axis = axisAttr ? axisAttr.getInt() : 0;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  // The parts' extents along the axis: result i starts after those before.
  int64_t at = 0, start = 0, size = 0;
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    auto t = dyn_cast<RankedTensorType>(op->getResult(r).getType());
    if (!t || !t.hasStaticShape() || t.getRank() != rank)
      return std::nullopt;
    for (int64_t a = 0; a < rank; ++a)
      if (a != axis && t.getDimSize(a) != in.getDimSize(a))
        return std::nullopt;
    if (r == i)
      start = at, size = t.getDimSize(axis);
    at += t.getDimSize(axis);
  }
  if (at != in.getDimSize(axis))
    return std::nullopt;
  return segmentsAlong(in, axis, start, size);
}

bool isStorageView(Operation *op) {
  if (op->getNumOperands() == 0 || op->getNumResults() != 1)
    return false;
  auto isStatic = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.hasStaticShape();
  };
  if ((isView(op) || shortName(op) == "onnx.identity") && isStatic(op->getOperand(0).getType()) &&
      isStatic(op->getResult(0).getType()))
    return true;
  if (shortName(op) != "onnx.slice")
    return false;
  std::optional<SliceSegments> seg = sliceSegments(op);
  return seg && seg->count == 1 && !mayChange(op->getOperand(0));
}

namespace {

RankedTensorType staticType(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t : RankedTensorType();
}

/// Whether the shapes and types of the onnx.matmul `op` fit a strided
/// product (stridedMatmul's conditions on the product itself).
bool stridedMatmulFits(Operation *op) {
  if (shortName(op) != "onnx.matmul" || op->getNumOperands() != 2 || op->getNumResults() != 1)
    return false;
  RankedTensorType a = staticType(op->getOperand(0)), b = staticType(op->getOperand(1)),
                   y = staticType(op->getResult(0));
  if (!a || !b || !y || a.getElementType() != y.getElementType() ||
      b.getElementType() != y.getElementType())
    return false;
  Type e = y.getElementType();
  if (!e.isF32() && !e.isF16() && !e.isBF16())
    return false;
  int64_t ra = a.getRank(), rb = b.getRank();
  int64_t matrixDims = (ra > 1) + (rb > 1);
  if (ra == 0 || rb == 0 || y.getRank() < matrixDims)
    return false;
  size_t batchDims = 0;
  int64_t batches = 1;
  for (int64_t d : y.getShape().drop_back(matrixDims))
    if (d != 1) {
      ++batchDims;
      batches *= d;
    }
  int64_t m = ra > 1 ? a.getDimSize(ra - 2) : 1, n = rb > 1 ? b.getShape().back() : 1;
  return batchDims <= StridedMatmul::kStridedBatchDims && batches >= 1 &&
         batches <= StridedMatmul::kStridedMaxBatches && m >= 1 && n >= 1;
}

} // namespace

llvm::SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

bool isTransposeReadInPlace(Operation *op) {
  if (shortName(op) != "onnx.transpose" || op->getNumResults() != 1 ||
      !staticType(op->getOperand(0)) || !staticType(op->getResult(0)))
    return false;
  Value y = op->getResult(0);
  if (!y.hasOneUse())
    return false;
  Operation *user = *y.getUsers().begin();
  return user->getBlock() == op->getBlock() && stridedMatmulFits(user) &&
         !mayChange(op->getOperand(0));
}

bool StridedMatmul::readsTranspose() const {
  return a != op->getOperand(0) || b != op->getOperand(1);
}

std::optional<StridedMatmul> stridedMatmul(Operation *op) {
  if (!stridedMatmulFits(op))
    return std::nullopt;
  // Each operand as it is read: a transpose read in place as its input
  // with the transpose's strides, else the value itself, contiguous.
  struct Operand {
    Value v;
    llvm::SmallVector<int64_t> shape, strides;
  };
  auto operand = [&](Value v) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    Operand o{v, llvm::SmallVector<int64_t>(shape), contiguousStrides(shape)};
    Operation *t = v.getDefiningOp();
    if (t && isTransposeReadInPlace(t)) {
      o.v = t->getOperand(0);
      llvm::SmallVector<int64_t> in =
          contiguousStrides(cast<RankedTensorType>(o.v.getType()).getShape());
      auto perm = t->getAttrOfType<DenseI64ArrayAttr>("perm");
      for (size_t d = 0; d < o.strides.size(); ++d)
        o.strides[d] = in[size_t(perm ? perm[d] : int64_t(in.size() - 1 - d))];
    }
    return o;
  };
  Operand a = operand(op->getOperand(0)), b = operand(op->getOperand(1));
  if (a.shape.size() == 1) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b.shape.size() == 1) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  StridedMatmul s;
  s.op = op;
  s.a = a.v;
  s.b = b.v;
  s.m = a.shape[a.shape.size() - 2];
  s.k = a.shape.back();
  s.n = b.shape.back();
  s.aRow = a.strides[a.strides.size() - 2];
  s.aCol = a.strides.back();
  s.bRow = b.strides[b.strides.size() - 2];
  s.bCol = b.strides.back();
  // Batch dimensions aligned from the right; those of size 1 dropped (an
  // operand broadcast along one reads stride 0 there).
  size_t rank = std::max(a.shape.size(), b.shape.size()) - 2;
  for (size_t d = 0; d < rank; ++d) {
    auto at = [&](const Operand &o) -> std::pair<int64_t, int64_t> {
      size_t own = o.shape.size() - 2;
      if (d + own < rank)
        return {1, 0};
      size_t i = d + own - rank;
      return {o.shape[i], o.shape[i] == 1 ? 0 : o.strides[i]};
    };
    auto [da, sa] = at(a);
    auto [db, sb] = at(b);
    int64_t size = std::max(da, db);
    if (size == 1)
      continue;
    s.dims.push_back(size);
    s.aBatch.push_back(da == 1 ? 0 : sa);
    s.bBatch.push_back(db == 1 ? 0 : sb);
  }
  return s;
}

Operation *foldedResidualAdd(Operation *linear, Value *residual) {
  if (!isa<LinearOp, QuantizedLinearOp>(linear))
    return nullptr;
  Value result = linear->getResult(0);
  Type element = getElementTypeOrSelf(result.getType());
  if (!result.hasOneUse() || !(element.isF32() || element.isF16() || element.isBF16()))
    return nullptr;
  Operation *user = *result.getUsers().begin();
  if (shortName(user) != "onnx.add" || user->getBlock() != linear->getBlock() ||
      user->getResult(0).getType() != result.getType())
    return nullptr;
  Value other = user->getOperand(0) == result ? user->getOperand(1) : user->getOperand(0);
  bool before = isa<BlockArgument>(other)
                    ? cast<BlockArgument>(other).getOwner() == linear->getBlock()
                    : other.getDefiningOp()->getBlock() == linear->getBlock() &&
                          other.getDefiningOp()->isBeforeInBlock(linear);
  if (other.getType() != result.getType() || !before)
    return nullptr;
  if (residual)
    *residual = other;
  return user;
}

int64_t arenaBytesOf(Type type, int64_t bound, bool *bounded) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return -1;
  Type e = t.getElementType();
  int64_t bits = e.isIntOrFloat() ? e.getIntOrFloatBitWidth() : 0;
  if (bits == 0)
    return -1;
  int64_t n = 1;
  for (int64_t d : t.getShape()) {
    if (ShapedType::isDynamic(d)) {
      if (bounded)
        *bounded = true;
      d = bound;
    }
    n *= d;
  }
  return (n * std::max<int64_t>(bits, 8) + 7) / 8;
}

int64_t arenaBound(Operation *op) {
  auto f = dyn_cast<func::FuncOp>(op);
  int64_t capacity = 0;
  for (unsigned i = 0; f && i < f.getNumArguments(); ++i) {
    auto name = f.getArgAttrOfType<StringAttr>(i, "llm.name");
    auto t = dyn_cast<RankedTensorType>(f.getArgument(i).getType());
    if (name && t && name.getValue().starts_with("cache.") && t.getRank() == 4 &&
        !t.isDynamicDim(2))
      capacity = std::max(capacity, t.getDimSize(2));
  }
  return capacity > 0 ? capacity : 1;
}

} // namespace mlir::llmc
