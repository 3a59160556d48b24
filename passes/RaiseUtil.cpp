//===- RaiseUtil.cpp - the matching helpers of llmc-raise-transformer -----===//
//
// What the steps (Raise.h) share: looking through operations and constants,
// and evaluating a slice of the program with the CPU kernels (activations,
// rope tables and masks are recognised by what they compute).
//
//===----------------------------------------------------------------------===//
#include "passes/Raise.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "passes/RaiseQuantized.h"
#include "runtime/src/cpu/Numeric.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace mlir::llmc::raise {

Operation *defOf(Value v, StringRef name) {
  Operation *d = v ? v.getDefiningOp() : nullptr;
  if (!d)
    return nullptr;
  StringRef n = d->getName().getStringRef();
  return n.consume_front("llm.") && n == name ? d : nullptr;
}


bool isLlmOp(Operation *op, StringRef name) {
  StringRef n = op->getName().getStringRef();
  return n.consume_front("llm.") && n == name;
}


SmallVector<Operation *> opsNamed(func::FuncOp func, StringRef name) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isLlmOp(op, name))
      ops.push_back(op);
  });
  return ops;
}


Value optionalOperand(Operation *op, unsigned i) {
  return i < op->getNumOperands() && !isNone(op->getOperand(i)) ? op->getOperand(i) : Value();
}


std::optional<double> scalarOf(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  auto d = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!d || d.getNumElements() != 1)
    return std::nullopt;
  Type e = d.getElementType();
  if (isa<FloatType>(e)) {
    APFloat f = *d.getValues<APFloat>().begin();
    bool lost = false;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  if (e.isInteger() && e.getIntOrFloatBitWidth() > 1)
    return double((*d.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

std::pair<Value, double> unscale(Value v) {
  if (Operation *m = defOf(v, "onnx.mul"))
    for (int side = 0; side < 2; ++side)
      if (std::optional<double> c = scalarOf(m->getOperand(side)))
        return {m->getOperand(1 - side), *c};
  if (Operation *d = defOf(v, "onnx.div"))
    if (std::optional<double> c = scalarOf(d->getOperand(1)); c && *c != 0)
      return {d->getOperand(0), 1 / *c};
  return {v, 1.0};
}

std::optional<Softcap> softcapOf(Value v) {
  Operation *outer = defOf(v, "onnx.mul");
  if (!outer)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    std::optional<double> cap = scalarOf(outer->getOperand(side));
    Operation *tanh = defOf(outer->getOperand(1 - side), "onnx.tanh");
    if (!cap || *cap <= 0 || !tanh)
      continue;
    auto [inner, f] = unscale(tanh->getOperand(0));
    if (std::abs(f * *cap - 1.0) <= 1e-6) // divided by the same cap
      return Softcap{inner, *cap, tanh};
  }
  return std::nullopt;
}


int64_t rankOf(Value v) {
  MaybeShape s = getShape(v.getType());
  return s ? int64_t(s->size()) : -1;
}


int64_t lastDim(Value v) {
  MaybeShape s = getShape(v.getType());
  return s && !s->empty() && s->back().isStatic() ? s->back().size : -1;
}


int64_t intAttrOr(Operation *op, StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getValue().getSExtValue();
  return dflt;
}


double floatAttrOr(Operation *op, StringRef name, double dflt) {
  if (auto a = op->getAttrOfType<FloatAttr>(name))
    return a.getValueAsDouble();
  return dflt;
}


bool isVectorConstant(Value v, int64_t size) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto type = dyn_cast<RankedTensorType>(c.getType());
  return type && type.getRank() == 1 && (size < 0 || type.getDimSize(0) == size);
}


bool reducesLastDimKept(Operation *reduce) {
  if (intAttrOr(reduce, "keepdims", 1) == 0)
    return false;
  int64_t rank = rankOf(reduce->getOperand(0));
  SmallVector<int64_t> axes;
  if (auto attr = reduce->getAttrOfType<DenseI64ArrayAttr>("axes")) {
    axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  } else if (auto attr = reduce->getAttrOfType<ArrayAttr>("axes")) {
    for (Attribute a : attr)
      axes.push_back(cast<IntegerAttr>(a).getInt());
  } else if (reduce->getNumOperands() > 1) {
    auto c = reduce->getOperand(1).getDefiningOp<ConstantOp>();
    if (!c)
      return false;
    auto d = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!d)
      return false;
    for (const APInt &a : d.getValues<APInt>())
      axes.push_back(a.getSExtValue());
  }
  return axes.size() == 1 && rank > 0 && (axes[0] == -1 || axes[0] == rank - 1);
}


FloatAttr f32(Builder &b, double v) { return b.getF32FloatAttr(float(v)); }



bool sameShapeAndType(Value a, Value b) {
  if (getElementTypeOrSelf(a.getType()) != getElementTypeOrSelf(b.getType()))
    return false;
  MaybeShape sa = getShape(a.getType()), sb = getShape(b.getType());
  if (!sa || !sb || sa->size() != sb->size())
    return false;
  for (auto [da, db] : llvm::zip(*sa, *sb))
    if (da.isStatic() && db.isStatic() && da.size != db.size)
      return false;
  return true;
}


std::optional<SmallVector<int64_t>> constInts(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  return readIntElements(c.getValue());
}



std::optional<cpu::Tensor> evaluateSlice(ArrayRef<Operation *> ops,
                                         const llvm::DenseMap<Value, const cpu::Tensor *> &bound,
                                         Value v) {
  llvm::DenseMap<Value, cpu::Tensor> values;
  std::deque<cpu::Tensor> constants; // stable addresses
  for (Operation *op : ops) {
    std::vector<const cpu::Tensor *> args;
    for (Value a : op->getOperands()) {
      if (isNone(a)) {
        args.push_back(nullptr);
      } else if (auto it = bound.find(a); it != bound.end()) {
        args.push_back(it->second);
      } else if (auto c = a.getDefiningOp<ConstantOp>()) {
        auto t = constantTensor(c.getValue());
        if (!t) {
          llvm::consumeError(t.takeError());
          return std::nullopt;
        }
        constants.push_back(std::move(*t));
        args.push_back(&constants.back());
      } else {
        auto found = values.find(a);
        if (found == values.end())
          return std::nullopt;
        args.push_back(&found->second);
      }
    }
    auto results = evaluateOp(op, args);
    if (!results) {
      llvm::consumeError(results.takeError());
      return std::nullopt;
    }
    for (auto [r, t] : llvm::zip(op->getResults(), *results))
      values[r] = std::move(t);
  }
  auto it = values.find(v);
  if (it == values.end())
    return std::nullopt;
  return std::move(it->second);
}


std::optional<cpu::Tensor> evaluateSlice(ArrayRef<Operation *> ops, Value positions,
                                         const cpu::Tensor &p, Value v) {
  llvm::DenseMap<Value, const cpu::Tensor *> bound;
  bound[positions] = &p;
  return evaluateSlice(ops, bound, v);
}


std::optional<std::vector<double>> floatsOf(const cpu::Tensor &t) {
  if (!cpu::isFloat(t.dtype()))
    return std::nullopt;
  std::vector<double> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = cpu::floatElement(t, int64_t(i));
  return out;
}



bool backwardSlice(Value v, Value positions, llvm::SetVector<Operation *> &slice) {
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value w = work.pop_back_val();
    if (isNone(w) || w.getDefiningOp<ConstantOp>() || w == positions)
      continue;
    Operation *op = w.getDefiningOp();
    if (!op)
      return false;
    if (!isa<LLMDialect>(op->getDialect()) || !kernelFor(op))
      return false;
    if (slice.insert(op) && slice.size() > kMaxSliceOps)
      return false;
    for (Value a : op->getOperands())
      work.push_back(a);
  }
  return true;
}



std::optional<PositionTable> tabulate(Value v, int64_t maxPos) {
  SmallVector<Value> candidates;
  llvm::DenseSet<Value> seen;
  SmallVector<Value> queue{v};
  for (size_t i = 0; i < queue.size() && queue.size() < 4 * kMaxSliceOps; ++i) {
    Value w = queue[i];
    Type e = getElementTypeOrSelf(w.getType());
    int64_t r = rankOf(w);
    if (w != v && (e.isInteger(64) || e.isInteger(32)) && (r == 1 || r == 2) &&
        !w.getDefiningOp<ConstantOp>())
      candidates.push_back(w);
    if (Operation *op = w.getDefiningOp())
      for (Value a : op->getOperands())
        if (!isNone(a) && seen.insert(a).second)
          queue.push_back(a);
  }
  for (Value p : candidates)
    if (std::optional<PositionTable> t = tabulateWith(v, p, maxPos))
      return t;
  return std::nullopt;
}


std::optional<PositionTable> tabulateWith(Value v, Value positions, int64_t maxPos) {
  llvm::SetVector<Operation *> slice;
  if (!backwardSlice(v, positions, slice))
    return std::nullopt;
  Type pe = getElementTypeOrSelf(positions.getType());
  int64_t pRank = rankOf(positions);
  if (!(pe.isInteger(64) || pe.isInteger(32)) || (pRank != 1 && pRank != 2))
    return std::nullopt;
  SmallVector<Operation *> ops(slice.begin(), slice.end());
  llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  bool i32 = pe.isInteger(32);
  auto positionTensor = [&](int64_t b, int64_t s, const std::vector<int64_t> &vals,
                            std::vector<int64_t> &store64, std::vector<int32_t> &store32) {
    store64 = vals;
    store32.assign(vals.begin(), vals.end());
    cpu::Shape shape = pRank == 1 ? cpu::Shape{b * s} : cpu::Shape{b, s};
    return i32 ? cpu::Tensor::wrap(cpu::DType::Int32, shape, store32.data())
               : cpu::Tensor::wrap(cpu::DType::Int64, shape, store64.data());
  };
  // Every position once: [1, maxPos].
  std::vector<int64_t> iota(static_cast<size_t>(maxPos));
  std::vector<int64_t> p64;
  std::vector<int32_t> p32;
  for (int64_t i = 0; i < maxPos; ++i)
    iota[size_t(i)] = i;
  auto all = evaluateSlice(ops, positions, positionTensor(1, maxPos, iota, p64, p32), v);
  if (!all) {
    // The export's own limit (a Gather from a [max_pos, D] cache): the most
    // positions it accepts.
    int64_t lo = 0, hi = maxPos;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      std::vector<int64_t> prefix(iota.begin(), iota.begin() + mid);
      if (evaluateSlice(ops, positions, positionTensor(1, mid, prefix, p64, p32), v))
        lo = mid;
      else
        hi = mid;
    }
    if (lo < 16)
      return std::nullopt;
    maxPos = lo;
    iota.resize(size_t(maxPos));
    all = evaluateSlice(ops, positions, positionTensor(1, maxPos, iota, p64, p32), v);
  }
  if (!all || all->rank() < 2)
    return std::nullopt;
  int64_t rank = all->rank(), d = all->dim(rank - 1), seqAxis = -1;
  for (int64_t a = 0; a + 1 < rank; ++a) {
    if (all->dim(a) == maxPos && seqAxis < 0)
      seqAxis = a;
    else if (all->dim(a) != 1)
      return std::nullopt;
  }
  if (seqAxis < 0)
    return std::nullopt;
  auto table = floatsOf(*all);
  // Scattered positions in two sequences: each row must be its position's.
  std::vector<int64_t> probe;
  for (int64_t i = 0; i < 10; ++i)
    probe.push_back((i * 7 + 3) % maxPos);
  int64_t batches = pRank == 1 ? 1 : 2; // [S] positions are shared by the batch
  probe.resize(size_t(batches * 5));
  auto two = evaluateSlice(ops, positions, positionTensor(batches, 5, probe, p64, p32), v);
  if (!table || !two || two->rank() != rank || two->dim(rank - 1) != d ||
      two->dim(seqAxis) != 5)
    return std::nullopt;
  int64_t batchAxis = -1;
  for (int64_t a = 0; a + 1 < rank; ++a)
    if (a != seqAxis && two->dim(a) != 1) {
      if (two->dim(a) != batches || batchAxis >= 0)
        return std::nullopt;
      batchAxis = a;
    }
  auto got = floatsOf(*two);
  if (!got)
    return std::nullopt;
  cpu::Shape strides(size_t(rank), 0);
  for (int64_t a = rank - 1, st = 1; a >= 0; --a) {
    strides[size_t(a)] = st;
    st *= two->dim(a);
  }
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t s = 0; s < 5; ++s)
      for (int64_t j = 0; j < d; ++j) {
        int64_t at = s * strides[size_t(seqAxis)] + j +
                     (batchAxis >= 0 ? b * strides[size_t(batchAxis)] : 0);
        double want = (*table)[size_t(probe[size_t(b * 5 + s)] * d + j)];
        if (std::abs((*got)[size_t(at)] - want) > 1e-6 * std::max(1.0, std::abs(want)))
          return std::nullopt;
      }
  PositionTable t{positions, seqAxis, cpu::Tensor()};
  t.rows = std::move(*all);
  t.rows = t.rows.view({maxPos, d});
  return t;
}


//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

} // namespace mlir::llmc::raise
