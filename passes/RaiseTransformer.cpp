//===- RaiseTransformer.cpp - recognise the transformer-level operations --===//
//
// Rewrites what exporters spell as ONNX operator sequences or onnxruntime
// contrib operators into the llm transformer ops:
//
// * norms are matched structurally (ReduceMean(Pow(x, 2)) + eps -> Sqrt ->
//   Reciprocal/Div -> Mul x -> Mul weight) or mapped from the fused ONNX and
//   com.microsoft operators (skip variants keep their sum as an Add);
// * pointwise activations are recognised by what they compute: the cone of
//   elementwise operations between one tensor and scalar constants is run on
//   sample values with its own CPU kernels and compared with GELU (erf and
//   tanh), SiLU, ReLU and squared ReLU, so every exporter's spelling of the
//   formula is caught;
// * MatMul/Gemm by a constant 2-D weight becomes llm.linear with the weight
//   transposed to [N, K] at compile time, taking a following bias Add;
// * Gather from a constant [vocab, hidden] table becomes llm.embedding;
// * silu(gate) * up becomes llm.swiglu.
//
//===----------------------------------------------------------------------===//
#include "passes/BuildHelpers.h"
#include "passes/KernelBridge.h"
#include "passes/Passes.h"
#include "passes/RaiseQuantized.h"
#include "passes/SymbolicShapes.h"
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

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISETRANSFORMERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// `v`'s defining operation when it is the llm op `name` ("onnx.mul").
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

/// The operations of `func` called `name` (without "llm."), in order.
SmallVector<Operation *> opsNamed(func::FuncOp func, StringRef name) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isLlmOp(op, name))
      ops.push_back(op);
  });
  return ops;
}

/// Operand i of `op`, or null when absent or none.
Value optionalOperand(Operation *op, unsigned i) {
  return i < op->getNumOperands() && !isNone(op->getOperand(i)) ? op->getOperand(i) : Value();
}

/// The value of a one-element integer or float constant.
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

int64_t rankOf(Value v) {
  MaybeShape s = getShape(v.getType());
  return s ? int64_t(s->size()) : -1;
}

/// The static size of `v`'s last dimension, or -1.
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

/// A constant of rank 1 whose size is `size` (any size when -1).
bool isVectorConstant(Value v, int64_t size) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto type = dyn_cast<RankedTensorType>(c.getType());
  return type && type.getRank() == 1 && (size < 0 || type.getDimSize(0) == size);
}

/// Whether a reduction over `axes` (operand 1 or attribute) is over the last
/// dimension only, keeping it.
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

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

struct RmsMatch {
  Value x, weight;
  double epsilon;
};

/// weight * (x * 1/sqrt(mean(x^2, -1) + eps)) in the spellings exporters use.
std::optional<RmsMatch> matchRmsNorm(Operation *mulW) {
  if (!isLlmOp(mulW, "onnx.mul"))
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Value w = mulW->getOperand(side), n = mulW->getOperand(1 - side);
    if (!isVectorConstant(w, -1))
      continue;
    // n = x * inv | inv * x | x / sd
    SmallVector<std::pair<Value, Value>> xAndSd; // (x, sd) candidates
    if (Operation *mul = defOf(n, "onnx.mul")) {
      for (int s2 = 0; s2 < 2; ++s2) {
        Value x = mul->getOperand(s2), inv = mul->getOperand(1 - s2);
        if (Operation *r = defOf(inv, "onnx.reciprocal"))
          xAndSd.push_back({x, r->getOperand(0)});
        else if (Operation *d = defOf(inv, "onnx.div"); d && scalarOf(d->getOperand(0)) == 1.0)
          xAndSd.push_back({x, d->getOperand(1)});
      }
    } else if (Operation *div = defOf(n, "onnx.div")) {
      xAndSd.push_back({div->getOperand(0), div->getOperand(1)});
    }
    for (auto [x, sd] : xAndSd) {
      Operation *sqrt = defOf(sd, "onnx.sqrt");
      Operation *add = sqrt ? defOf(sqrt->getOperand(0), "onnx.add") : nullptr;
      if (!add)
        continue;
      for (int s3 = 0; s3 < 2; ++s3) {
        std::optional<double> eps = scalarOf(add->getOperand(s3));
        Operation *mean = defOf(add->getOperand(1 - s3), "onnx.reduce_mean");
        if (!eps || !mean || !reducesLastDimKept(mean))
          continue;
        Value sq = mean->getOperand(0);
        bool squares = false;
        if (Operation *pow = defOf(sq, "onnx.pow"))
          squares = pow->getOperand(0) == x && scalarOf(pow->getOperand(1)) == 2.0;
        else if (Operation *m = defOf(sq, "onnx.mul"))
          squares = m->getOperand(0) == x && m->getOperand(1) == x;
        int64_t h = lastDim(x);
        if (squares && (h < 0 || isVectorConstant(w, h)))
          return RmsMatch{x, w, *eps};
      }
    }
  }
  return std::nullopt;
}

/// Only result 0 of `op` is read.
bool onlyFirstResultUsed(Operation *op) {
  for (OpResult r : op->getResults())
    if (r.getResultNumber() > 0 && !r.use_empty())
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Pointwise activations, recognised by evaluation
//===----------------------------------------------------------------------===//

bool isPointwise(Operation *op) {
  static const char *const kOps[] = {"onnx.add",  "onnx.sub",     "onnx.mul",     "onnx.div",
                                     "onnx.pow",  "onnx.erf",     "onnx.tanh",    "onnx.sigmoid",
                                     "onnx.sqrt", "onnx.neg",     "onnx.exp",     "onnx.reciprocal",
                                     "onnx.gelu", "ms.fast_gelu", "ms.quick_gelu", "onnx.swish",
                                     "onnx.relu", "onnx.max",     "onnx.clip"};
  for (const char *name : kOps)
    if (isLlmOp(op, name))
      return op->getNumResults() == 1;
  return false;
}

/// Elementwise operations from one tensor `x` and scalar constants to `root`.
struct Cone {
  Value x;
  SmallVector<Operation *> ops; // operands first, root last
};

constexpr size_t kMaxConeOps = 24;

/// Grows the cone (when `grow`) through operations whose only reader is inside it; the
/// first value that is neither a scalar constant nor such an operation is
/// `x`, and every other leaf must be `x` too.
bool collectCone(Operation *op, Cone &cone, llvm::SmallPtrSetImpl<Operation *> &seen,
                 bool grow) {
  if (!seen.insert(op).second)
    return true;
  if (cone.ops.size() >= kMaxConeOps)
    return false;
  for (Value v : op->getOperands()) {
    if (isNone(v) || scalarOf(v))
      continue;
    Operation *d = v.getDefiningOp();
    // (Read only here: once, or twice as in relu(x) * relu(x).)
    bool onlyHere = llvm::all_of(v.getUsers(), [&](Operation *u) { return u == op; });
    if (grow && v != cone.x && d && isPointwise(d) && onlyHere) {
      if (!collectCone(d, cone, seen, grow))
        return false;
      continue;
    }
    if (!cone.x)
      cone.x = v;
    else if (cone.x != v)
      return false;
  }
  cone.ops.push_back(op);
  return true;
}

/// Same element type, rank and static sizes.
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

enum class Activation { None, GeluErf, GeluTanh, Silu, Relu, ReluSquared };

double activation(Activation a, double x) {
  switch (a) {
  case Activation::GeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  case Activation::Silu: return x / (1 + std::exp(-x));
  case Activation::Relu: return std::max(x, 0.0);
  case Activation::ReluSquared: return x > 0 ? x * x : 0.0;
  case Activation::None: break;
  }
  return 0;
}

/// What the cone computes on f32 samples in [-8, 8], if it is one of the
/// known activations (within 1e-5 of the largest output).
std::optional<cpu::Tensor> evaluateSlice(ArrayRef<Operation *> ops,
                                         const llvm::DenseMap<Value, const cpu::Tensor *> &bound,
                                         Value v);
std::optional<std::vector<double>> floatsOf(const cpu::Tensor &t);

/// What the cone computes on samples in [-8, 8], in f32 whatever the
/// model's float type (its constants are widened), if it is one of the known
/// activations (within 1e-5 of the largest output).
Activation identify(const Cone &cone) {
  Type element = getElementTypeOrSelf(cone.x.getType());
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return Activation::None;
  std::vector<float> samples;
  for (int i = 0; i <= 320; ++i)
    samples.push_back(-8.0f + 0.05f * float(i));
  cpu::Tensor input = cpu::Tensor::wrap(cpu::DType::Float, {int64_t(samples.size())},
                                        samples.data());
  llvm::DenseMap<Value, const cpu::Tensor *> bound;
  bound[cone.x] = &input;
  std::deque<std::vector<float>> storage;
  std::deque<cpu::Tensor> widened;
  for (Operation *op : cone.ops)
    for (Value v : op->getOperands()) {
      auto c = v.getDefiningOp<ConstantOp>();
      if (!c || bound.count(v) || getElementTypeOrSelf(v.getType()).isF32() ||
          !isa<FloatType>(getElementTypeOrSelf(v.getType())))
        continue;
      auto t = constantTensor(c.getValue());
      std::optional<std::vector<double>> f = t ? floatsOf(*t) : std::nullopt;
      if (!t)
        llvm::consumeError(t.takeError());
      if (!f)
        return Activation::None;
      storage.emplace_back(f->begin(), f->end());
      widened.push_back(cpu::Tensor::wrap(cpu::DType::Float, t->shape(), storage.back().data()));
      bound[v] = &widened.back();
    }
  std::optional<cpu::Tensor> result = evaluateSlice(cone.ops, bound, cone.ops.back()->getResult(0));
  if (!result)
    return Activation::None;
  const cpu::Tensor &out = *result;
  if (out.dtype() != cpu::DType::Float || out.numel() != int64_t(samples.size()))
    return Activation::None;
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::Silu,
                       Activation::Relu, Activation::ReluSquared}) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      double want = activation(a, double(samples[i]));
      err = std::max(err, std::abs(double(out.data<float>()[i]) - want));
      scale = std::max(scale, std::abs(want));
    }
    if (err <= 1e-5 * scale)
      return a;
  }
  return Activation::None;
}


//===----------------------------------------------------------------------===//
// Rope
//===----------------------------------------------------------------------===//

std::optional<SmallVector<int64_t>> constInts(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  return readIntElements(c.getValue());
}

/// x[..., start:end] (unit steps, one axis: the last, of static size).
struct LastAxisSlice {
  Value x;
  int64_t start, end, step;
};

std::optional<LastAxisSlice> lastAxisSlice(Value v) {
  Operation *s = defOf(v, "onnx.slice");
  if (!s)
    return std::nullopt;
  Value x = s->getOperand(0);
  int64_t rank = rankOf(x), d = lastDim(x);
  auto starts = constInts(s->getOperand(1)), ends = constInts(s->getOperand(2));
  if (rank < 1 || d < 0 || !starts || !ends || starts->size() != 1 || ends->size() != 1)
    return std::nullopt;
  if (s->getNumOperands() > 3 && !isNone(s->getOperand(3))) {
    auto axes = constInts(s->getOperand(3));
    if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
      return std::nullopt;
  } else if (rank != 1) {
    return std::nullopt;
  }
  int64_t step = 1;
  if (s->getNumOperands() > 4 && !isNone(s->getOperand(4))) {
    auto steps = constInts(s->getOperand(4));
    if (!steps || steps->size() != 1 || (*steps)[0] <= 0)
      return std::nullopt;
    step = (*steps)[0];
  }
  auto clamp = [d](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + d : i, 0, d); };
  return LastAxisSlice{x, clamp((*starts)[0]), clamp((*ends)[0]), step};
}

/// concat(-x[..., D/2:], x[..., :D/2]) on the last axis: the half rotation
/// of x (GPT-NeoX / Llama); returns x.
Value rotateHalfOf(Value v) {
  Operation *cat = defOf(v, "onnx.concat");
  if (!cat || cat->getNumOperands() != 2)
    return {};
  int64_t axis = intAttrOr(cat, "axis", 0), rank = rankOf(v);
  if (axis != -1 && axis != rank - 1)
    return {};
  Operation *neg = defOf(cat->getOperand(0), "onnx.neg");
  auto hi = neg ? lastAxisSlice(neg->getOperand(0)) : std::nullopt;
  auto lo = lastAxisSlice(cat->getOperand(1));
  if (!hi || !lo || hi->x != lo->x)
    return {};
  int64_t d = lastDim(hi->x);
  if (d % 2 || lo->start != 0 || lo->end != d / 2 || hi->start != d / 2 || hi->end != d ||
      lo->step != 1 || hi->step != 1)
    return {};
  return hi->x;
}

/// `x` when v is x's pairs rotated (GPT-J's rotate_every_two):
/// Reshape(Concat(Unsqueeze(-x[.., 1::2], -1), Unsqueeze(x[.., ::2], -1)),
/// x's shape), the negation before or after the Unsqueeze.
Value rotateEveryTwoOf(Value v) {
  Operation *reshape = defOf(v, "onnx.reshape");
  Operation *cat = reshape ? defOf(reshape->getOperand(0), "onnx.concat") : nullptr;
  if (!cat || cat->getNumOperands() != 2 || rankOf(cat->getResult(0)) != rankOf(v) + 1 ||
      lastDim(cat->getResult(0)) != 2)
    return {};
  int64_t axis = intAttrOr(cat, "axis", 0), rank = rankOf(cat->getResult(0));
  if (axis != -1 && axis != rank - 1)
    return {};
  // Each side: an Unsqueeze of the last axis, the first also negated.
  auto unsqueezed = [&](Value u, bool negated) -> Value {
    if (negated)
      if (Operation *n = defOf(u, "onnx.neg"))
        u = n->getOperand(0), negated = false;
    Operation *un = defOf(u, "onnx.unsqueeze");
    if (!un)
      return {};
    Value in = un->getOperand(0);
    if (negated) {
      Operation *n = defOf(in, "onnx.neg");
      if (!n)
        return {};
      in = n->getOperand(0);
    }
    auto axes = un->getNumOperands() > 1 ? constInts(un->getOperand(1)) : std::nullopt;
    if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != rank - 1))
      return {};
    return in;
  };
  Value oddNeg = unsqueezed(cat->getOperand(0), true), even = unsqueezed(cat->getOperand(1), false);
  auto odd = oddNeg ? lastAxisSlice(oddNeg) : std::nullopt;
  auto evn = even ? lastAxisSlice(even) : std::nullopt;
  if (!odd || !evn || odd->x != evn->x || odd->step != 2 || evn->step != 2 || evn->start != 0 ||
      odd->start != 1 || lastDim(odd->x) % 2 || odd->end < lastDim(odd->x) - 1 ||
      evn->end < lastDim(odd->x) - 1 || !sameShapeAndType(v, odd->x))
    return {};
  return odd->x;
}

/// A value computed from one integer input (the positions) and constants,
/// tabulated per position: value[b, .., s, :] == rows[positions[b, s]].
struct PositionTable {
  Value positions;
  int64_t seqAxis;
  cpu::Tensor rows; // [maxPos, D], the value's element type
};

/// Runs `ops` (in order) with the values in `bound` given; the value of `v`.
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

/// Elementwise floats of a tensor as doubles (f32/f16/bf16/f64).
std::optional<std::vector<double>> floatsOf(const cpu::Tensor &t) {
  if (!cpu::isFloat(t.dtype()))
    return std::nullopt;
  std::vector<double> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = cpu::floatElement(t, int64_t(i));
  return out;
}

constexpr size_t kMaxSliceOps = 96;

/// The operations between `v` and its leaves, which must be constants and
/// `positions`; fails on a function argument or an operation without a
/// kernel on the way.
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

std::optional<PositionTable> tabulateWith(Value v, Value positions, int64_t maxPos);

/// Tabulates `v` over the nearest integer value of rank 1 or 2 that it is
/// computed from alone (with constants): the position ids, or the range an
/// export builds from the cache length.
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

struct RopeTables {
  Value cos, sin, positions;
  int64_t seqAxis;
};

struct RaiseTransformerPass
    : mlir::llmc::impl::RaiseTransformerPassBase<RaiseTransformerPass> {
  using RaiseTransformerPassBase::RaiseTransformerPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    noneValue = {};
    // Each step sees the previous ones' results with the replaced
    // operations gone (a dead reader would still count as a use).
    for (void (RaiseTransformerPass::*step)(func::FuncOp) :
         {&RaiseTransformerPass::raiseNorms, &RaiseTransformerPass::raiseActivations,
          &RaiseTransformerPass::raiseLinears, &RaiseTransformerPass::raiseEmbeddings,
          &RaiseTransformerPass::raiseSwiglu, &RaiseTransformerPass::raiseRope,
          &RaiseTransformerPass::raiseSoftmax, &RaiseTransformerPass::raiseAttention, &RaiseTransformerPass::simplifyMasks,
          &RaiseTransformerPass::raiseGroupQueryAttention,
          &RaiseTransformerPass::raiseContribRotary,
          &RaiseTransformerPass::raiseOnnxRotary,
          &RaiseTransformerPass::raiseOnnxAttention,
          &RaiseTransformerPass::raiseOnnxStaticCacheAttention,
          &RaiseTransformerPass::raiseMultiHeadAttention,
          &RaiseTransformerPass::raiseContribAttention,
          &RaiseTransformerPass::raiseEmbedLayerNorm,
          &RaiseTransformerPass::simplifyMasks,
          &RaiseTransformerPass::foldTransposePairs}) {
      (this->*step)(func);
      eraseDead(func);
    }
    if (failed(refineResultTypes(func)))
      signalPassFailure();
  }

  template <typename OpT>
  Value create(OpBuilder &b, Location loc, ValueRange operands,
               ArrayRef<NamedAttribute> attrs = {}) {
    return createOp<OpT>(b, loc, operands, attrs);
  }

  /// One llm.none at the top of the function, for absent operands.
  Value noneValue;
  Value none(OpBuilder &, Location loc) {
    if (!noneValue) {
      func::FuncOp func = getOperation();
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      noneValue = b.create<NoneOp>(loc).getResult();
    }
    return noneValue;
  }

  void raiseNorms(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto eps = [&](double v) { return b.getNamedAttr("epsilon", f32(b, v)); };
      if (std::optional<RmsMatch> m = matchRmsNorm(op)) {
        op->getResult(0).replaceAllUsesWith(
            create<RmsNormOp>(b, loc, {m->x, m->weight}, {eps(m->epsilon)}));
        continue;
      }
      bool lastAxis = false;
      if (isLlmOp(op, "onnx.rms_normalization") || isLlmOp(op, "ms.simplified_layer_normalization") ||
          isLlmOp(op, "onnx.layer_normalization")) {
        int64_t axis = intAttrOr(op, "axis", -1), rank = rankOf(op->getOperand(0));
        lastAxis = axis == -1 || (rank > 0 && axis == rank - 1);
      }
      if (lastAxis && onlyFirstResultUsed(op) && isVectorConstant(op->getOperand(1), -1)) {
        Value x = op->getOperand(0), w = op->getOperand(1);
        if (isLlmOp(op, "onnx.layer_normalization")) {
          Value bias = op->getNumOperands() > 2 ? op->getOperand(2) : none(b, loc);
          op->getResult(0).replaceAllUsesWith(create<LayerNormOp>(
              b, loc, {x, w, bias}, {eps(floatAttrOr(op, "epsilon", 1e-5))}));
        } else {
          op->getResult(0).replaceAllUsesWith(
              create<RmsNormOp>(b, loc, {x, w}, {eps(floatAttrOr(op, "epsilon", 1e-5))}));
        }
        continue;
      }
      // Contrib GELUs with a bias: the Add joins the linear before them.
      if ((isLlmOp(op, "ms.fast_gelu") || isLlmOp(op, "ms.bias_gelu")) &&
          op->getNumOperands() == 2 && !isNone(op->getOperand(1)) &&
          getElementTypeOrSelf(op->getOperand(0).getType()) ==
              getElementTypeOrSelf(op->getOperand(1).getType())) {
        Value sum = create<OnnxAddOp>(b, loc, {op->getOperand(0), op->getOperand(1)});
        if (!sameShapeAndType(sum, op->getResult(0)))
          continue; // (the unused Add is erased at the end)
        bool tanhForm = isLlmOp(op, "ms.fast_gelu");
        op->getResult(0).replaceAllUsesWith(create<GeluOp>(
            b, loc, {sum}, {b.getNamedAttr("approximate_tanh", b.getBoolAttr(tanhForm))}));
        continue;
      }
      // Skip variants: s = input + skip (+ bias) stays as Adds (its 4th
      // result); the norm of s is raised.
      bool skipRms = isLlmOp(op, "ms.skip_simplified_layer_normalization");
      bool skipLayer = isLlmOp(op, "ms.skip_layer_normalization");
      if (!skipRms && !skipLayer)
        continue;
      if (!op->getResult(1).use_empty() || !op->getResult(2).use_empty())
        continue;
      Value gamma = op->getOperand(2);
      Value beta = skipLayer ? op->getOperand(3) : Value();
      Value bias = op->getOperand(skipLayer ? 4 : 3);
      if (!isVectorConstant(gamma, -1))
        continue;
      // (input + bias) + skip: the bias can then join input's projection.
      Value input = op->getOperand(0);
      if (!isNone(bias))
        input = create<OnnxAddOp>(b, loc, {input, bias});
      Value sum = create<OnnxAddOp>(b, loc, {input, op->getOperand(1)});
      double e = floatAttrOr(op, "epsilon", 1e-12);
      Value y = skipLayer ? create<LayerNormOp>(b, loc, {sum, gamma, beta}, {eps(e)})
                          : create<RmsNormOp>(b, loc, {sum, gamma}, {eps(e)});
      op->getResult(0).replaceAllUsesWith(y);
      op->getResult(3).replaceAllUsesWith(sum);
    }
  }

  void raiseActivations(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isPointwise(op))
        ops.push_back(op);
    });
    llvm::SmallPtrSet<Operation *, 16> replaced; // roots and the cones inside them
    for (Operation *root : llvm::reverse(ops)) {
      if (replaced.contains(root) || root->use_empty())
        continue;
      // The largest cone first, then the root alone (its producer may be an
      // elementwise op with a non-scalar operand, as a bias Add).
      Cone cone;
      Activation a = Activation::None;
      for (bool grow : {true, false}) {
        cone = Cone();
        llvm::SmallPtrSet<Operation *, 16> seen;
        if (collectCone(root, cone, seen, grow) && cone.x &&
            sameShapeAndType(root->getResult(0), cone.x) &&
            (a = identify(cone)) != Activation::None)
          break;
      }
      if (a == Activation::None)
        continue;
      OpBuilder b(root);
      Location loc = root->getLoc();
      Value y;
      if (a == Activation::Silu)
        y = create<SiluOp>(b, loc, {cone.x});
      else if (a == Activation::Relu || a == Activation::ReluSquared)
        y = create<ReluOp>(b, loc, {cone.x},
                           {b.getNamedAttr("squared", b.getBoolAttr(a == Activation::ReluSquared))});
      else
        y = create<GeluOp>(b, loc, {cone.x},
                           {b.getNamedAttr("approximate_tanh",
                                           b.getBoolAttr(a == Activation::GeluTanh))});
      root->getResult(0).replaceAllUsesWith(y);
      replaced.insert(cone.ops.begin(), cone.ops.end());
    }
  }

  /// MatMul/Gemm by a constant [K, N] weight -> linear with W^T; then a
  /// bias Add of a constant [N].
  void raiseLinears(func::FuncOp func) {
    OpBuilder b0(func.getContext());
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isLlmOp(op, "onnx.matmul") || isLlmOp(op, "onnx.gemm"))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      Value x = op->getOperand(0), w = op->getOperand(1);
      auto wc = w.getDefiningOp<ConstantOp>();
      auto wType = wc ? dyn_cast<RankedTensorType>(wc.getType()) : RankedTensorType();
      if (!wType || wType.getRank() != 2 || !isa<FloatType>(wType.getElementType()) ||
          rankOf(x) < 1)
        continue;
      bool gemm = isLlmOp(op, "onnx.gemm");
      Value bias;
      bool transposed = false; // w already [N, K]
      if (gemm) {
        if (floatAttrOr(op, "alpha", 1) != 1 || intAttrOr(op, "transA", 0) != 0)
          continue;
        transposed = intAttrOr(op, "transB", 0) != 0;
        if (op->getNumOperands() > 2 && !isNone(op->getOperand(2))) {
          int64_t n = transposed ? wType.getDimSize(0) : wType.getDimSize(1);
          if (floatAttrOr(op, "beta", 1) != 1 || !isVectorConstant(op->getOperand(2), n))
            continue;
          bias = op->getOperand(2);
        }
      }
      OpBuilder b(op);
      Value weight = transposed ? w : transposeWeight(b, wc);
      if (!weight)
        continue;
      Value y = create<LinearOp>(b, op->getLoc(), {x, weight, bias ? bias : none(b, op->getLoc())});
      op->getResult(0).replaceAllUsesWith(y);
    }
    raiseMatMulNBits(func, [&] { return none(b0, func.getLoc()); });
    raiseGatherBlockQuantized(func, [&] { return none(b0, func.getLoc()); });
    // Bias Adds.
    SmallVector<Operation *> adds = opsNamed(func, "onnx.add");
    for (Operation *add : adds)
      for (int side = 0; side < 2; ++side) {
        Operation *lin = add->getOperand(side).getDefiningOp();
        Value bias = add->getOperand(1 - side);
        if (!lin || !isa<LinearOp, QuantizedLinearOp>(lin) || !lin->getResult(0).hasOneUse() ||
            !isNone(lin->getOperands().back()) ||
            !isVectorConstant(bias, lastDim(lin->getResult(0))) ||
            getElementTypeOrSelf(bias.getType()) != getElementTypeOrSelf(lin->getResult(0).getType()))
          continue;
        // The same operation with the bias as its last operand.
        OpBuilder b(add);
        Operation *y = b.clone(*lin);
        y->setOperand(y->getNumOperands() - 1, bias);
        add->getResult(0).replaceAllUsesWith(y->getResult(0));
        break;
      }
  }

  /// The [N, K] transpose of a constant [K, N] weight, as a resource blob.
  Value transposeWeight(OpBuilder &b, ConstantOp c) {
    auto t = constantTensor(c.getValue());
    if (!t) {
      llvm::consumeError(t.takeError());
      return {};
    }
    auto type = cast<RankedTensorType>(c.getType());
    int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    size_t elem = cpu::storageSize(t->dtype());
    std::vector<char> bytes(size_t(k * n) * elem);
    const char *src = static_cast<const char *>(t->raw());
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(bytes.data() + size_t(j * k + i) * elem, src + size_t(i * n + j) * elem, elem);
    auto newType = RankedTensorType::get({n, k}, type.getElementType());
    std::string key = "weight_t";
    if (auto r = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
      key = r.getRawHandle().getKey().str() + "_t";
    auto attr = DenseResourceElementsAttr::get(
        newType, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t)));
    return b.create<ConstantOp>(c.getLoc(), attr).getResult();
  }

  void raiseEmbeddings(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "onnx.gather");
    for (Operation *op : ops) {
      auto table = op->getOperand(0).getDefiningOp<ConstantOp>();
      auto type = table ? dyn_cast<RankedTensorType>(table.getType()) : RankedTensorType();
      Type ids = getElementTypeOrSelf(op->getOperand(1).getType());
      if (!type || type.getRank() != 2 || !isa<FloatType>(type.getElementType()) ||
          intAttrOr(op, "axis", 0) != 0 || !(ids.isInteger(32) || ids.isInteger(64)) ||
          rankOf(op->getOperand(1)) < 1)
        continue;
      OpBuilder b(op);
      op->getResult(0).replaceAllUsesWith(
          create<EmbeddingOp>(b, op->getLoc(), {op->getOperand(0), op->getOperand(1)}));
    }
  }

  void raiseSwiglu(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "onnx.mul");
    for (Operation *op : ops)
      for (int side = 0; side < 2; ++side) {
        auto silu = op->getOperand(side).getDefiningOp<SiluOp>();
        Value up = op->getOperand(1 - side);
        if (!silu || !silu->getResult(0).hasOneUse() ||
            !sameShapeAndType(silu.getX(), up) || !sameShapeAndType(op->getResult(0), up))
          continue;
        OpBuilder b(op);
        op->getResult(0).replaceAllUsesWith(
            create<SwigluOp>(b, op->getLoc(), {silu.getX(), up}));
        break;
      }
  }


  /// x * cos + rotate_half(x) * sin, with cos and sin computed from the
  /// position ids: tabulated per position into [max_pos, D/2] tables.
  void raiseRope(func::FuncOp func) {
    SmallVector<Operation *> adds = opsNamed(func, "onnx.add");
    std::map<std::tuple<void *, void *, bool>, std::optional<RopeTables>> cache;
    for (Operation *add : adds) {
      for (int side = 0; side < 2; ++side) {
        Operation *m1 = defOf(add->getOperand(side), "onnx.mul");
        Operation *m2 = defOf(add->getOperand(1 - side), "onnx.mul");
        if (!m1 || !m2)
          continue;
        // m2 = rotate_half(x) * sin; m1 = x * cos.
        Value x, sinV, cosV;
        bool interleaved = false;
        for (int k = 0; k < 2 && !x; ++k)
          if (Value r = rotateHalfOf(m2->getOperand(k))) {
            x = r;
            sinV = m2->getOperand(1 - k);
          } else if (Value e = rotateEveryTwoOf(m2->getOperand(k))) {
            x = e, interleaved = true;
            sinV = m2->getOperand(1 - k);
          }
        if (!x)
          continue;
        if (m1->getOperand(0) == x)
          cosV = m1->getOperand(1);
        else if (m1->getOperand(1) == x)
          cosV = m1->getOperand(0);
        if (!cosV || rankOf(x) != 4 || !sameShapeAndType(add->getResult(0), x))
          continue;
        auto key = std::make_tuple(cosV.getAsOpaquePointer(), sinV.getAsOpaquePointer(),
                                   interleaved);
        if (!cache.count(key))
          cache[key] = makeTables(cosV, sinV, interleaved);
        const std::optional<RopeTables> &t = cache[key];
        if (!t || (t->seqAxis != 1 && t->seqAxis != 2))
          continue;
        OpBuilder b(add);
        Location loc = add->getLoc();
        auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
        Value in = t->seqAxis == 2 ? create<OnnxTransposeOp>(b, loc, {x}, {perm}) : x;
        Value positions = t->positions;
        if (rankOf(positions) == 1) // [S], shared by the batch: [1, S]
          positions = create<OnnxUnsqueezeOp>(
              b, loc, {positions, b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                      RankedTensorType::get({1}, b.getI64Type()),
                                      ArrayRef<int64_t>{0}))});
        Value y = create<RopeOp>(b, loc, {in, t->cos, t->sin, positions},
                                 {b.getNamedAttr("interleaved", b.getBoolAttr(interleaved))});
        if (t->seqAxis == 2)
          y = create<OnnxTransposeOp>(b, loc, {y}, {perm});
        add->getResult(0).replaceAllUsesWith(y);
        break;
      }
    }
  }

  /// The [max_pos, D/2] cos and sin tables, when both are functions of the
  /// same positions, laid out alike, and repeat their first half (half
  /// rotation).
  std::optional<RopeTables> makeTables(Value cosV, Value sinV, bool interleaved = false) {
    std::optional<PositionTable> c = tabulate(cosV, maxPositions),
                                 sn = tabulate(sinV, maxPositions);
    if (!c || !sn || c->positions != sn->positions || c->seqAxis != sn->seqAxis ||
        c->rows.shape() != sn->rows.shape() || c->rows.dtype() != sn->rows.dtype())
      return std::nullopt;
    int64_t maxPos = c->rows.dim(0), d = c->rows.dim(1), half = d / 2;
    size_t elem = cpu::storageSize(c->rows.dtype());
    if (d % 2)
      return std::nullopt;
    Type element = getElementTypeOrSelf(cosV.getType());
    auto type = RankedTensorType::get({maxPos, half}, element);
    auto halfTable = [&](const cpu::Tensor &rows, StringRef key) -> Value {
      const char *src = static_cast<const char *>(rows.raw());
      std::vector<char> bytes(size_t(maxPos * half) * elem);
      for (int64_t p = 0; p < maxPos; ++p) {
        const char *row = src + size_t(p * d) * elem;
        char *out = bytes.data() + size_t(p * half) * elem;
        if (interleaved) { // (f0, f0, f1, f1, ...): repeat_interleave
          for (int64_t i = 0; i < half; ++i) {
            if (std::memcmp(row + size_t(2 * i) * elem, row + size_t(2 * i + 1) * elem, elem))
              return {};
            std::memcpy(out + size_t(i) * elem, row + size_t(2 * i) * elem, elem);
          }
          continue;
        }
        if (std::memcmp(row, row + size_t(half) * elem, size_t(half) * elem) != 0)
          return {}; // not concat(f, f): not a half rotation of this form
        std::memcpy(out, row, size_t(half) * elem);
      }
      return tableConstant(bytes, type, key, cosV.getLoc());
    };
    Value cosT = halfTable(c->rows, "rope_cos");
    Value sinT = cosT ? halfTable(sn->rows, "rope_sin") : Value();
    if (!cosT || !sinT)
      return std::nullopt;
    return RopeTables{cosT, sinT, c->positions, c->seqAxis};
  }


  //===--------------------------------------------------------------------===//
  // Attention
  //===--------------------------------------------------------------------===//

  /// Static size of dimension d of v, or -1.
  static int64_t dimSize(Value v, int64_t d) {
    MaybeShape s = getShape(v.getType());
    if (!s || d >= int64_t(s->size()) || !(*s)[size_t(d)].isStatic())
      return -1;
    return (*s)[size_t(d)].size;
  }

  /// k [B, Hkv, T, D] when `v` is k repeated n times per head (HF's
  /// repeat_kv: Unsqueeze at 2, Expand to n, Reshape to [B, Hkv * n, T, D]);
  /// `v` itself otherwise.
  Value unrepeat(Value v, SymbolicShapes &sym) {
    Operation *reshape = defOf(v, "onnx.reshape");
    Operation *expand = reshape ? defOf(reshape->getOperand(0), "onnx.expand") : nullptr;
    Operation *unsq = expand ? defOf(expand->getOperand(0), "onnx.unsqueeze") : nullptr;
    if (!unsq || rankOf(v) != 4 || rankOf(expand->getResult(0)) != 5)
      return v;
    auto axes = unsq->getNumOperands() > 1 ? constInts(unsq->getOperand(1)) : std::nullopt;
    Value k = unsq->getOperand(0);
    Value e = expand->getResult(0);
    if (!axes || axes->size() != 1 || (*axes)[0] != 2 || rankOf(k) != 4)
      return v;
    int64_t hkv = dimSize(k, 1), n = dimSize(e, 2), h = dimSize(v, 1), d = dimSize(k, 3);
    if (hkv < 1 || n < 1 || d < 1 || h != hkv * n)
      return v;
    // Expand keeps every dimension but the new one: 1 or the size itself.
    const std::vector<SymExpr> *et = sym.lookup(expand->getOperand(1));
    Value u = unsq->getResult(0);
    if (!et || et->size() != 5 || !((*et)[2] == SymExpr::constant(n)))
      return v;
    for (int64_t i : {0, 1, 3, 4})
      if (!((*et)[size_t(i)] == SymExpr::constant(1) || (*et)[size_t(i)] == sym.dimOf(u, i)))
        return v;
    // Reshape merges the new dimension into the heads: [B, H, T, D], with
    // B and T spelled as 0 (copy) or -1 (the rest) or themselves.
    const std::vector<SymExpr> *rt = sym.lookup(reshape->getOperand(1));
    bool allowZero = intAttrOr(reshape, "allowzero", 0) != 0;
    if (!rt || rt->size() != 4)
      return v;
    auto is = [&](size_t i, int64_t c) { return (*rt)[i] == SymExpr::constant(c); };
    bool batchOk = (is(0, 0) && !allowZero) || (*rt)[0] == sym.dimOf(k, 0);
    bool headsOk = is(1, h);
    bool seqOk = is(2, -1) || (*rt)[2] == sym.dimOf(k, 2);
    bool dimOk = is(3, d) || (is(3, -1) && !is(2, -1));
    if (!batchOk || !headsOk || !seqOk || !dimOk)
      return v;
    return k;
  }

  /// k' when `v` is k' [B, H, T, D] with its last two dimensions swapped:
  /// Transpose(0, 1, 3, 2), or Reshape to [B * H, T, D], Transpose(0, 2, 1),
  /// Reshape to [B, H, D, T] (torch.onnx's spelling).
  Value untransposeKey(Value v, SymbolicShapes &sym) {
    if (auto t = v.getDefiningOp<OnnxTransposeOp>()) {
      if (t.getPerm() && *t.getPerm() == ArrayRef<int64_t>{0, 1, 3, 2})
        return t.getData();
      return {};
    }
    Operation *r2 = defOf(v, "onnx.reshape");
    auto t = r2 ? r2->getOperand(0).getDefiningOp<OnnxTransposeOp>() : OnnxTransposeOp();
    Operation *r1 = t ? defOf(t.getData(), "onnx.reshape") : nullptr;
    if (!r1 || !t.getPerm() || *t.getPerm() != ArrayRef<int64_t>{0, 2, 1})
      return {};
    Value k = r1->getOperand(0);
    const std::vector<SymExpr> *first = sym.lookup(r1->getOperand(1));
    const std::vector<SymExpr> *second = sym.lookup(r2->getOperand(1));
    if (rankOf(k) != 4 || !first || !second || first->size() != 3 || second->size() != 4)
      return {};
    SymExpr b = sym.dimOf(k, 0), h = sym.dimOf(k, 1), tt = sym.dimOf(k, 2), d = sym.dimOf(k, 3);
    bool merged = ((*first)[0] == SymExpr::constant(-1) || (*first)[0] == b * h) &&
                  (*first)[1] == tt && (*first)[2] == d;
    bool split = (*second)[0] == b && (*second)[1] == h && (*second)[2] == d &&
                 (*second)[3] == tt;
    return merged && split ? k : Value();
  }

  /// x scaled by a scalar constant (Mul or Div), with the factor; x and 1
  /// otherwise.
  static std::pair<Value, double> unscale(Value v) {
    if (Operation *m = defOf(v, "onnx.mul"))
      for (int side = 0; side < 2; ++side)
        if (std::optional<double> c = scalarOf(m->getOperand(side)))
          return {m->getOperand(1 - side), *c};
    if (Operation *d = defOf(v, "onnx.div"))
      if (std::optional<double> c = scalarOf(d->getOperand(1)); c && *c != 0)
        return {d->getOperand(0), 1 / *c};
    return {v, 1.0};
  }

  /// A softmax over the last axis written out, as exporters of a
  /// hand-written attention emit it: Exp(x - ReduceMax(x)) / ReduceSum(..)
  /// (both reductions over the last axis, kept; or times Reciprocal of the
  /// sum), or without the maximum (Exp(x) / ReduceSum(Exp(x)): the same
  /// function, which onnx.softmax computes without overflow) ->
  /// onnx.softmax(x, axis = -1).
  void raiseSoftmax(func::FuncOp func) {
    SmallVector<Operation *> quotients = opsNamed(func, "onnx.div");
    for (Operation *mul : opsNamed(func, "onnx.mul"))
      quotients.push_back(mul);
    for (Operation *div : quotients) {
      Value e = div->getOperand(0), denominator = div->getOperand(1);
      if (isLlmOp(div, "onnx.mul")) { // e * Reciprocal(sum), either side
        Operation *r = defOf(denominator, "onnx.reciprocal");
        if (!r && (r = defOf(e, "onnx.reciprocal")))
          e = div->getOperand(1);
        if (!r)
          continue;
        denominator = r->getOperand(0);
      }
      Operation *exp = defOf(e, "onnx.exp");
      Operation *sum = defOf(denominator, "onnx.reduce_sum");
      if (!exp || !sum || sum->getOperand(0) != e || !reducesLastDimKept(sum))
        continue;
      Value x = exp->getOperand(0);
      if (Operation *sub = defOf(x, "onnx.sub"))
        if (Operation *max = defOf(sub->getOperand(1), "onnx.reduce_max");
            max && max->getOperand(0) == sub->getOperand(0) && reducesLastDimKept(max))
          x = sub->getOperand(0);
      OpBuilder b(div);
      Value y = create<OnnxSoftmaxOp>(b, div->getLoc(), {x},
                                      {b.getNamedAttr("axis", b.getI64IntegerAttr(-1))});
      if (sameShapeAndType(y, div->getResult(0)))
        div->getResult(0).replaceAllUsesWith(y); // (else the unused one is erased)
    }
  }

  /// A scalar constant of the float type `t`.
  static Value floatScalar(OpBuilder &b, Location loc, FloatType t, double v) {
    APFloat f(v);
    bool lost = false;
    f.convert(t.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(RankedTensorType::get({}, t), f))
        .getResult();
  }

  /// Scores masked by replacement, Where(keep, s, fill) or Where(drop,
  /// fill, s) with a fill at or below -6e4 (-inf, the type's lowest, -1e9):
  /// s and the additive mask Where(keep, 0, fill) of s's type. Both remove
  /// the same keys from any row that keeps one (exp(fill - max) is 0 there);
  /// they differ only in a row with no key kept, which the causal and
  /// padding masks an export builds have only for padded queries.
  std::optional<std::pair<Value, Value>> whereMasked(Value scores) {
    Operation *w = defOf(scores, "onnx.where");
    auto ft = dyn_cast<FloatType>(getElementTypeOrSelf(scores.getType()));
    if (!w || !ft || !getElementTypeOrSelf(w->getOperand(0).getType()).isInteger(1))
      return std::nullopt;
    for (int kept : {1, 2}) {
      std::optional<double> fill = scalarOf(w->getOperand(3 - kept));
      if (!fill || !(*fill <= -6e4))
        continue;
      OpBuilder b(w);
      Location loc = w->getLoc();
      Value zero = floatScalar(b, loc, ft, 0), low = floatScalar(b, loc, ft, *fill);
      Value mask = create<OnnxWhereOp>(
          b, loc, {w->getOperand(0), kept == 1 ? zero : low, kept == 1 ? low : zero});
      return std::make_pair(w->getOperand(kept), mask);
    }
    return std::nullopt;
  }

  /// softmax(scale * Q K^T + mask) V, as HF's eager attention writes it,
  /// with Q [B, H, S, D] and K, V [B, Hkv, T, D] (repeated to H heads); the
  /// mask added, or applied by a Where (whereMasked).
  void raiseAttention(func::FuncOp func) {
    SymbolicShapes sym(func);
    SmallVector<Operation *> softmaxes = opsNamed(func, "onnx.softmax");
    for (Operation *sm : softmaxes) {
      Value scores = sm->getOperand(0);
      int64_t axis = intAttrOr(sm, "axis", -1), rank = rankOf(scores);
      if (rank != 4 || (axis != -1 && axis != 3))
        continue;
      // The probabilities, maybe with NaN rows (every key masked) zeroed.
      Value probs = sm->getResult(0);
      for (Operation *user : probs.getUsers())
        if (isLlmOp(user, "onnx.where") && user->getOperand(2) == probs &&
            scalarOf(user->getOperand(1)) == 0.0)
          if (Operation *nan = defOf(user->getOperand(0), "onnx.is_nan");
              nan && nan->getOperand(0) == probs &&
              llvm::all_of(probs.getUsers(), [&](Operation *u) { return u == user || u == nan; })) {
            probs = user->getResult(0);
            break;
          }
      // A softmax computed in another float type, between a Cast of the
      // scores and a Cast of the probabilities (HF's eager attention's
      // softmax(dtype=float32).to(q.dtype) in a half-precision export): the
      // attention's own accumulation is at least float32.
      if (probs.hasOneUse())
        if (Operation *back = probs.getUses().begin()->getOwner();
            isLlmOp(back, "onnx.cast") && isa<FloatType>(getElementTypeOrSelf(back->getResult(0).getType())))
          if (Operation *in = defOf(scores, "onnx.cast");
              in && isa<FloatType>(getElementTypeOrSelf(in->getOperand(0).getType()))) {
            scores = in->getOperand(0);
            probs = back->getResult(0);
          }
      if (!probs.hasOneUse())
        continue;
      Operation *pv = probs.getUses().begin()->getOwner();
      if (!isLlmOp(pv, "onnx.matmul") || pv->getOperand(0) != probs)
        continue;
      // scores = (Q K^T) * c + mask
      Value mask;
      Value qk = scores;
      if (auto masked = whereMasked(scores)) {
        std::tie(qk, mask) = *masked;
      } else if (Operation *add = defOf(scores, "onnx.add")) {
        for (int side = 0; side < 2 && !mask; ++side)
          if (defOf(add->getOperand(side), "onnx.matmul") ||
              unscale(add->getOperand(side)).second != 1.0) {
            qk = add->getOperand(side);
            mask = add->getOperand(1 - side);
          }
        if (!mask)
          continue;
      }
      // softcap * tanh(scores / softcap) (Gemma 2), after the scaling.
      double softcap = 0;
      if (Operation *outer = defOf(qk, "onnx.mul"))
        for (int side = 0; side < 2 && softcap == 0; ++side) {
          std::optional<double> cap = scalarOf(outer->getOperand(side));
          Operation *tanh = defOf(outer->getOperand(1 - side), "onnx.tanh");
          if (!cap || *cap <= 0 || !tanh)
            continue;
          auto [inner, f] = unscale(tanh->getOperand(0));
          if (std::abs(f * *cap - 1.0) <= 1e-6) { // divided by the same cap
            softcap = *cap;
            qk = inner;
          }
        }
      auto [product, c] = unscale(qk);
      Operation *mm = defOf(product, "onnx.matmul");
      if (!mm)
        continue;
      auto [qv, a] = unscale(mm->getOperand(0));
      auto [ktv, bscale] = unscale(mm->getOperand(1));
      Value kRep = untransposeKey(ktv, sym);
      if (!kRep)
        continue;
      Value vRep = pv->getOperand(1);
      Value k = unrepeat(kRep, sym), v = unrepeat(vRep, sym);
      int64_t hq = dimSize(qv, 1), hkv = dimSize(k, 1), d = dimSize(qv, 3);
      double scale = a * bscale * c;
      if (rankOf(qv) != 4 || rankOf(k) != 4 || rankOf(v) != 4 || hq < 1 || hkv < 1 ||
          hq % hkv || dimSize(v, 1) != hkv || d < 1 || dimSize(k, 3) != d || !(scale > 0))
        continue;
      Type element = getElementTypeOrSelf(qv.getType());
      if (getElementTypeOrSelf(k.getType()) != element ||
          getElementTypeOrSelf(v.getType()) != element ||
          (mask && (!isa<FloatType>(getElementTypeOrSelf(mask.getType())) ||
                    rankOf(mask) < 2 || rankOf(mask) > 4)))
        continue; // (a scalar or vector added to the scores is not a mask)
      OpBuilder b(pv);
      Location loc = pv->getLoc();
      auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      auto toBshd = [&](Value x) { return create<OnnxTransposeOp>(b, loc, {x}, {perm}); };
      Value out = create<AttentionOp>(
          b, loc, {toBshd(qv), toBshd(k), toBshd(v), mask ? mask : none(b, loc)},
          attentionAttrs(b, hq, hkv, /*causal=*/false, scale, 0, softcap));
      Value y = toBshd(out);
      if (!sameShapeAndType(y, pv->getResult(0)))
        continue;
      pv->getResult(0).replaceAllUsesWith(y);
    }
  }


  //===--------------------------------------------------------------------===//
  // Masks
  //===--------------------------------------------------------------------===//

  /// What a mask keeps, from evaluating its construction: causal (query i
  /// sees keys up to its position Skv - Sq + i), a window, and whether the
  /// function argument `padding` (attention_mask, [B, Skv]) removes keys.
  struct MaskMeaning {
    int64_t window = 0;
    Value padding;
  };

  /// Mask values: 0 keeps a key, -inf or anything at or below -6e4 removes
  /// it (exp underflows to 0 next to any kept key; f16 masks use -65504; a
  /// bool mask: true keeps); anything else is not a plain mask.
  static std::optional<std::vector<int8_t>> keptOf(const cpu::Tensor &m) {
    std::vector<int8_t> kept(size_t(m.numel()));
    if (m.dtype() == cpu::DType::Bool) {
      for (size_t i = 0; i < kept.size(); ++i)
        kept[i] = m.data<uint8_t>()[i] != 0;
      return kept;
    }
    auto f = floatsOf(m);
    if (!f)
      return std::nullopt;
    for (size_t i = 0; i < kept.size(); ++i) {
      if ((*f)[i] == 0)
        kept[i] = 1;
      else if ((*f)[i] <= -6e4)
        kept[i] = 0;
      else
        return std::nullopt;
    }
    return kept;
  }

  std::optional<MaskMeaning> analyseMask(AttentionOp attn, SymbolicShapes &sym) {
    Value mask = attn.getMask();
    // The slice down to constants, function arguments, and values only
    // whose shapes matter (operands of Shape).
    llvm::SetVector<Operation *> slice;
    llvm::SetVector<Value> args, shaped;
    SmallVector<Value> work{mask};
    while (!work.empty()) {
      Value w = work.pop_back_val();
      if (isNone(w) || w.getDefiningOp<ConstantOp>())
        continue;
      if (isa<BlockArgument>(w)) {
        args.insert(w);
        continue;
      }
      Operation *op = w.getDefiningOp();
      if (!isa<LLMDialect>(op->getDialect()) || !kernelFor(op))
        return std::nullopt;
      if (slice.insert(op) && slice.size() > kMaxSliceOps)
        return std::nullopt;
      if (isLlmOp(op, "onnx.shape")) {
        shaped.insert(op->getOperand(0));
        continue;
      }
      for (Value a : op->getOperands())
        work.push_back(a);
    }
    // A value needed whole is computed (or an argument); one only measured
    // is bound to zeros of its shape.
    SmallVector<Value> leaves(args.begin(), args.end());
    for (Value v : shaped)
      if (!args.contains(v) && !(v.getDefiningOp() && slice.contains(v.getDefiningOp())))
        leaves.push_back(v);
    // At most one argument whose values (not just shape) matter.
    Value padding;
    for (Value a : args)
      for (Operation *user : a.getUsers())
        if (slice.contains(user) && !isLlmOp(user, "onnx.shape")) {
          if (padding && padding != a)
            return std::nullopt;
          padding = a;
        }
    Type pe = padding ? getElementTypeOrSelf(padding.getType()) : Type();
    if (padding && (rankOf(padding) != 2 || !(pe.isInteger(64) || pe.isInteger(32))))
      return std::nullopt;
    SmallVector<Operation *> ops(slice.begin(), slice.end());
    llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

    // Every symbol the argument shapes and the attention's sizes mention.
    SmallVector<std::pair<Value, int64_t>> dims;
    for (Value a : leaves)
      for (int64_t d = 0; d < rankOf(a); ++d)
        dims.push_back({a, d});
    if (llvm::any_of(leaves, [](Value a) { return rankOf(a) < 0; }))
      return std::nullopt;
    SymExpr batch = sym.dimOf(attn.getQ(), 0), sq = sym.dimOf(attn.getQ(), 1),
            skv = sym.dimOf(attn.getK(), 1);
    std::set<unsigned> symbols;
    for (auto [a, d] : dims)
      for (unsigned id : sym.dimOf(a, d).symbols())
        symbols.insert(id);
    for (const SymExpr *e : {&batch, &sq, &skv})
      for (unsigned id : e->symbols())
        symbols.insert(id);

    // Sizes the program equates (exports may name one size differently in
    // different inputs): the mask is [., ., Sq, Skv], k and v have one
    // length, the padding argument is [B, Skv]. Each equation fixes one
    // symbol in terms of the others.
    std::vector<SymExpr> equations{sym.dimOf(attn.getK(), 1) - sym.dimOf(attn.getV(), 1)};
    if (rankOf(mask) == 4) {
      equations.push_back(sym.dimOf(mask, 2) - sq);
      equations.push_back(sym.dimOf(mask, 3) - skv);
    }
    if (padding) {
      equations.push_back(sym.dimOf(padding, 0) - batch);
      equations.push_back(sym.dimOf(padding, 1) - skv);
    }
    // Inputs named alike but for their digits (past_key_values.0.key and
    // .1.key) are taken to have equal sizes when making bindings; exports
    // may give each its own symbols. (Bindings the program rejects are
    // skipped, so this only chooses what is tested.)
    func::FuncOp func = attn->getParentOfType<func::FuncOp>();
    std::map<std::string, Value> firstOfClass;
    for (BlockArgument a : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "llm.name");
      if (!name || rankOf(a) < 0)
        continue;
      std::string key;
      for (char ch : name.getValue())
        if (!std::isdigit(static_cast<unsigned char>(ch)))
          key += ch;
        else if (key.empty() || key.back() != '#')
          key += '#';
      key += "/" + std::to_string(rankOf(a));
      auto [it, fresh] = firstOfClass.try_emplace(key, a);
      if (!fresh)
        for (int64_t d = 0; d < rankOf(a); ++d)
          equations.push_back(sym.dimOf(a, d) - sym.dimOf(it->second, d));
    }
    // Solved preferably for unnamed sizes, then for sizes the attention's
    // own B, Sq, Skv do not mention, so those stay free.
    std::set<unsigned> primary;
    for (const SymExpr *e : {&batch, &sq, &skv})
      for (unsigned id : e->symbols())
        primary.insert(id);
    auto rank = [&](unsigned id) {
      return sym.isNamed(id) ? (primary.count(id) ? 2 : 1) : 0;
    };
    std::map<unsigned, SymExpr> dependent;
    // Whether `id` is `e`'s symbol or one a dependent symbol of `e` is
    // solved in terms of (an equation stated twice, as the mask's and the
    // padding's Skv = T, must not solve T for S and then S for T: both
    // would be dependent and neither free).
    std::function<bool(const SymExpr &, unsigned)> mentions = [&](const SymExpr &e,
                                                                  unsigned id) {
      for (unsigned s : e.symbols())
        if (s == id || (dependent.count(s) && mentions(dependent.at(s), id)))
          return true;
      return false;
    };
    for (const SymExpr &e : equations) {
      if (e.isConstant())
        continue;
      std::vector<unsigned> ids = e.symbols();
      llvm::stable_sort(ids, [&](unsigned a, unsigned b) { return rank(a) < rank(b); });
      for (unsigned id : ids)
        if (!dependent.count(id))
          if (std::optional<SymExpr> solved = e.solveFor(id); solved && !mentions(*solved, id)) {
            dependent[id] = *solved;
            break;
          }
    }
    size_t numSymbols = sym.symbolNames().size();
    auto complete = [&](std::vector<int64_t> b) -> std::optional<std::vector<int64_t>> {
      for (size_t round = 0; round <= dependent.size(); ++round)
        for (auto &[id, e] : dependent)
          if (std::optional<int64_t> v = e.evaluate(b))
            b[id] = *v;
      for (const SymExpr &e : equations)
        if (e.evaluate(b) != 0)
          return std::nullopt;
      if (llvm::any_of(b, [](int64_t v) { return v < 0; }))
        return std::nullopt;
      return b;
    };
    // Bindings: small random sizes, and each free symbol alone made long.
    std::vector<std::vector<int64_t>> bindings;
    std::mt19937 gen(1234);
    // Sizes may be 0 (an empty past) except the batch's.
    std::set<unsigned> batchSymbols;
    for (unsigned id : batch.symbols())
      batchSymbols.insert(id);
    auto floorOf = [&](unsigned id) { return batchSymbols.count(id) ? 1 : 0; };
    for (int t = 0; t < 12; ++t) {
      std::vector<int64_t> b(numSymbols, 1);
      for (unsigned id : symbols)
        b[id] = std::max<int64_t>(floorOf(id), int64_t(gen() % 6));
      if (auto c = complete(b))
        bindings.push_back(*c);
    }
    // Each free size alone made long, the others 1 or as small as allowed
    // (exports may accept a multi-token step only with an empty past).
    for (unsigned id : symbols)
      if (!dependent.count(id))
        for (int64_t len : {int64_t(maxPositions), int64_t(2048), int64_t(64)})
          for (bool smallest : {false, true}) {
            std::vector<int64_t> b(numSymbols, 1);
            if (smallest)
              for (unsigned other : symbols)
                b[other] = floorOf(other);
            b[id] = len;
            if (auto c = complete(b))
              bindings.push_back(*c);
          }

    std::optional<int64_t> window; // from the first binding that shows one
    std::vector<std::vector<int8_t>> keptSets;
    struct Trial {
      int64_t b, sq, skv;
      std::vector<int8_t> kept, pad;
    };
    std::vector<Trial> trials;
    size_t tested = 0;
    bool longTested = false; // a window up to this many keys would show
    bool multiQueryTested = false;
    for (const std::vector<int64_t> &binding : bindings) {
      auto B = batch.evaluate(binding), Sq = sq.evaluate(binding), Skv = skv.evaluate(binding);
      if (!B || !Sq || !Skv || *B < 1 || *Sq < 1 || *Skv < *Sq || *B * *Sq * *Skv > (1 << 22))
        continue;
      std::deque<cpu::Tensor> inputs;
      std::deque<std::vector<char>> storage;
      llvm::DenseMap<Value, const cpu::Tensor *> bound;
      bool ok = true;
      std::vector<int8_t> pad;
      for (Value a : leaves) {
        cpu::Shape shape;
        for (int64_t d = 0; d < rankOf(a); ++d) {
          auto n = sym.dimOf(a, d).evaluate(binding);
          if (!n || *n < 0) {
            ok = false;
            break;
          }
          shape.push_back(*n);
        }
        if (!ok)
          break;
        auto dtype = cpu::DType(getOnnxCodeForElementType(getElementTypeOrSelf(a.getType())));
        int64_t count = cpu::numElements(shape);
        storage.emplace_back(size_t(count) * cpu::storageSize(dtype), 0);
        if (a == padding) {
          // Keys kept at random (every other binding all kept).
          if (shape.size() != 2 || shape[0] != *B || shape[1] != *Skv) {
            ok = false;
            break;
          }
          pad.assign(size_t(count), 1);
          if (tested % 2)
            for (int8_t &p : pad)
              p = gen() % 4 != 0;
          for (int64_t i = 0; i < count; ++i) {
            if (dtype == cpu::DType::Int64)
              reinterpret_cast<int64_t *>(storage.back().data())[i] = pad[size_t(i)];
            else
              reinterpret_cast<int32_t *>(storage.back().data())[i] = pad[size_t(i)];
          }
        }
        inputs.push_back(cpu::Tensor::wrap(dtype, shape, storage.back().data()));
        bound[a] = &inputs.back();
      }
      if (!ok)
        continue;
      // A binding the export's own computation rejects (or that gives a
      // mask the attention would reject) is not a valid input: skipped.
      auto m = evaluateSlice(ops, bound, mask);
      auto fits = [](int64_t have, int64_t want) { return have == want || have == 1; };
      if (!m || m->rank() != 4 || !fits(m->dim(0), *B) || !fits(m->dim(2), *Sq) ||
          m->dim(3) != *Skv)
        continue;
      ++tested;
      longTested |= *Skv >= std::min<int64_t>(maxPositions, 2048);
      multiQueryTested |= *Sq >= 2;
      auto kept = keptOf(*m);
      if (!kept)
        return std::nullopt;
      // Broadcast to [B, Sq, Skv]; every head must see the same pattern.
      int64_t mb = m->dim(0), heads = m->dim(1), ms = m->dim(2);
      auto at = [&](int64_t x, int64_t h, int64_t i, int64_t j) {
        return (*kept)[size_t(((( mb == 1 ? 0 : x) * heads + h) * ms + (ms == 1 ? 0 : i)) * *Skv + j)];
      };
      Trial t{*B, *Sq, *Skv, {}, pad};
      t.kept.resize(size_t(*B * *Sq * *Skv));
      for (int64_t x = 0; x < *B; ++x)
        for (int64_t i = 0; i < *Sq; ++i)
          for (int64_t j = 0; j < *Skv; ++j) {
            int8_t k0 = at(x, 0, i, j);
            for (int64_t h = 1; h < heads; ++h)
              if (at(x, h, i, j) != k0)
                return std::nullopt;
            t.kept[size_t((x * *Sq + i) * *Skv + j)] = k0;
          }
      // The window: the widest span of kept keys ending at the query, in
      // rows whose keys are all unpadded.
      for (int64_t x = 0; x < *B && !window; ++x)
        for (int64_t i = 0; i < *Sq; ++i) {
          int64_t pos = *Skv - *Sq + i, first = 0;
          const int8_t *row = t.kept.data() + (x * *Sq + i) * *Skv;
          while (first <= pos && !row[first])
            ++first;
          bool unpadded = pad.empty() || std::all_of(pad.begin() + x * *Skv,
                                                      pad.begin() + (x + 1) * *Skv,
                                                      [](int8_t p) { return p != 0; });
          if (unpadded && first > 0 && first <= pos)
            window = pos - first + 1;
        }
      trials.push_back(std::move(t));
    }
    if (tested < 4 || !longTested || !multiQueryTested)
      return std::nullopt;
    int64_t w = window.value_or(0);
    for (const Trial &t : trials)
      for (int64_t x = 0; x < t.b; ++x)
        for (int64_t i = 0; i < t.sq; ++i)
          for (int64_t j = 0; j < t.skv; ++j) {
            int64_t pos = t.skv - t.sq + i;
            bool want = j <= pos && (w == 0 || j > pos - w) &&
                        (t.pad.empty() || t.pad[size_t(x * t.skv + j)]);
            if (bool(t.kept[size_t((x * t.sq + i) * t.skv + j)]) != want)
              return std::nullopt;
          }
    return MaskMeaning{w, padding};
  }

  /// A mask that evaluation shows to be causal (with a window, and the keys
  /// an attention_mask argument removes) becomes `causal`/`window` and a
  /// boolean [B, 1, 1, Skv] mask from that argument, or no mask.
  void simplifyMasks(func::FuncOp func) {
    SymbolicShapes sym(func);
    SmallVector<AttentionOp> attns;
    func.walk([&](AttentionOp op) {
      if (!isNone(op.getMask()) && !op.getCausal())
        attns.push_back(op);
    });
    llvm::DenseMap<Value, std::optional<MaskMeaning>> cache;
    llvm::DenseMap<Value, Value> paddingMasks;
    for (AttentionOp attn : attns) {
      Value mask = attn.getMask();
      if (!cache.count(mask))
        cache[mask] = analyseMask(attn, sym);
      const std::optional<MaskMeaning> &meaning = cache[mask];
      if (!meaning)
        continue;
      Value newMask;
      if (meaning->padding) {
        Value &pm = paddingMasks[meaning->padding];
        if (!pm) {
          OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
          Location loc = attn.getLoc();
          Value flags = create<OnnxCastOp>(b, loc, {meaning->padding},
                                           {b.getNamedAttr("to", b.getI64IntegerAttr(9))});
          Value axes = b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                                     RankedTensorType::get({2}, b.getI64Type()),
                                                     ArrayRef<int64_t>{1, 2}));
          pm = create<OnnxUnsqueezeOp>(b, loc, {flags, axes});
        }
        newMask = pm;
      } else {
        OpBuilder b(attn);
        newMask = none(b, attn.getLoc());
      }
      attn.getMaskMutable().assign(newMask);
      attn.setCausal(true);
      attn.setWindow(meaning->window);
    }
  }


  //===--------------------------------------------------------------------===//
  // onnxruntime's GroupQueryAttention
  //===--------------------------------------------------------------------===//

  /// Replaces `op`'s leading results with `values` (as many as it has).
  static void replaceResults(Operation *op, ArrayRef<Value> values) {
    for (auto [r, v] : llvm::zip(op->getResults(), values))
      r.replaceAllUsesWith(v);
  }

  /// The attributes of an llm.attention.
  static SmallVector<NamedAttribute> attentionAttrs(Builder &b, int64_t hq, int64_t hkv,
                                                    bool causal, double scale,
                                                    int64_t window = 0, double softcap = 0) {
    return {b.getNamedAttr("num_heads", b.getI64IntegerAttr(hq)),
            b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(hkv)),
            b.getNamedAttr("causal", b.getBoolAttr(causal)),
            b.getNamedAttr("window", b.getI64IntegerAttr(window)),
            b.getNamedAttr("scale", f32(b, scale)),
            b.getNamedAttr("softcap", f32(b, softcap))};
  }


  /// x[..., lo:hi] on the last axis.
  Value sliceLast(OpBuilder &b, Location loc, Value x, int64_t lo, int64_t hi) {
    return create<OnnxSliceOp>(b, loc,
                               {x, i64Constant(b, loc, {lo}), i64Constant(b, loc, {hi}),
                                i64Constant(b, loc, {-1}), i64Constant(b, loc, {1})});
  }

  /// Size `d` of `x` as an i64 scalar.
  Value sizeOf(OpBuilder &b, Location loc, Value x, int64_t d) {
    Value shape = create<OnnxShapeOp>(b, loc, {x});
    return create<OnnxGatherOp>(b, loc, {shape, i64Constant(b, loc, {d}, /*scalar=*/true)});
  }

  /// `value` once lhs == rhs holds at run time (llm.assert_equal).
  Value assertEqual(OpBuilder &b, Location loc, Value value, Value lhs, Value rhs,
                    StringRef message) {
    return create<AssertEqualOp>(b, loc, {value, lhs, rhs},
                                 {b.getNamedAttr("message", b.getStringAttr(message))});
  }

  /// GroupQueryAttention with past/present IO becomes rope, a concat of the
  /// past and new keys and values (the present outputs) and a causal
  /// llm.attention. That is its meaning for unpadded sequences, the
  /// protocol onnxruntime-genai drives it with: seqlens_k[b] + 1 - S is the
  /// past length P for every b and total_sequence_length is P + S. Two
  /// llm.assert_equal state it, so other inputs are refused at run time
  /// rather than computed differently. A window-sized cache
  /// (sliding_window_cache = 1, the builder's default for sliding-window
  /// layers) holds only the last positions in C rows: the attention reads
  /// the rows it holds ++ new with the window, which is exact whatever C,
  /// and on llmc's full cache (where the rows held are all P) too; the op
  /// stays for its present outputs until llmc's cache replaces them.
  void raiseGroupQueryAttention(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "ms.group_query_attention");
    for (Operation *g : ops) {
      auto operand = [&](unsigned i) { return optionalOperand(g, i); };
      bool unsupported = false;
      for (unsigned i = 10; i < g->getNumOperands(); ++i)
        unsupported |= bool(operand(i)); // bias, sinks, quantized caches, q/k norms
      bool windowCache = intAttrOr(g, "sliding_window_cache", 0) != 0;
      int64_t window = intAttrOr(g, "local_window_size", -1);
      if (unsupported || intAttrOr(g, "smooth_softmax", -1) > 0 ||
          intAttrOr(g, "causal", 1) != 1 || (windowCache && window <= 0) ||
          (g->getNumResults() > 3 && !g->getResult(3).use_empty()))
        continue;
      Value query = operand(0), key = operand(1), value = operand(2), pastK = operand(3),
            pastV = operand(4), seqlens = operand(5), total = operand(6), cosC = operand(7),
            sinC = operand(8), positionIds = operand(9);
      if (windowCache && !pastK)
        continue;
      int64_t nq = intAttrOr(g, "num_heads", 0), nkv = intAttrOr(g, "kv_num_heads", 0);
      int64_t hidden = lastDim(query);
      bool packed = !key;
      if (nq <= 0 || nkv <= 0 || nq % nkv || rankOf(query) != 3 || hidden <= 0 ||
          (packed && value) || !seqlens || !total)
        continue;
      int64_t d = packed ? hidden / (nq + 2 * nkv) : hidden / nq;
      if (d <= 0 || hidden != (packed ? (nq + 2 * nkv) * d : nq * d))
        continue;
      Type element = getElementTypeOrSelf(query.getType());
      if (!packed && (lastDim(key) != nkv * d || !value || lastDim(value) != nkv * d ||
                      getElementTypeOrSelf(key.getType()) != element))
        continue;
      if (bool(pastK) != bool(pastV) ||
          (pastK && (rankOf(pastK) != 4 || getElementTypeOrSelf(pastK.getType()) != element ||
                     getElementTypeOrSelf(pastV.getType()) != element)))
        continue;
      bool rotary = intAttrOr(g, "do_rotary", 0) != 0;
      int64_t rot = 0;
      if (rotary) {
        auto cc = cosC ? cosC.getDefiningOp<ConstantOp>() : ConstantOp();
        auto ct = cc ? dyn_cast<RankedTensorType>(cc.getType()) : RankedTensorType();
        if (!ct || ct.getRank() != 2 || !sinC || sinC.getType() != cosC.getType() ||
            2 * ct.getDimSize(1) > d)
          continue;
        rot = 2 * ct.getDimSize(1) == d ? 0 : 2 * ct.getDimSize(1);
      }
      OpBuilder b(g);
      Location loc = g->getLoc();
      // q, k, v as [B, S, heads, d].
      Value q3 = packed ? sliceLast(b, loc, query, 0, nq * d) : query;
      Value k3 = packed ? sliceLast(b, loc, query, nq * d, (nq + nkv) * d) : key;
      Value v3 = packed ? sliceLast(b, loc, query, (nq + nkv) * d, (nq + 2 * nkv) * d) : value;
      auto heads = [&](Value x, int64_t n) {
        return create<OnnxReshapeOp>(b, loc, {x, i64Constant(b, loc, {0, 0, n, d})});
      };
      Value q4 = heads(q3, nq), k4 = heads(k3, nkv), v4 = heads(v3, nkv);
      // The protocol, and the positions it gives.
      Value s = sizeOf(b, loc, query, 1);
      Value past = pastK ? sizeOf(b, loc, pastK, 2) : i64Constant(b, loc, {0}, true);
      auto i64 = b.getNamedAttr("to", b.getI64IntegerAttr(7));
      Value start = create<OnnxSubOp>(
          b, loc,
          {create<OnnxAddOp>(b, loc,
                             {create<OnnxCastOp>(b, loc, {seqlens}, {i64}),
                              i64Constant(b, loc, {1}, true)}),
           s});
      // The rows of the past the new keys follow: all of it, or for a
      // window-sized cache of C rows the ones it holds after P positions:
      // P while P <= C, else P less G = C - W + 1 rows for every eviction.
      Value held = past;
      if (!windowCache) {
        start = assertEqual(b, loc, start, start, past,
                            "GroupQueryAttention: seqlens_k + 1 - sequence length must be the "
                            "past length for every sequence (padded batches are not supported)");
        start = assertEqual(b, loc, start, create<OnnxCastOp>(b, loc, {total}, {i64}),
                            create<OnnxAddOp>(b, loc, {past, s}),
                            "GroupQueryAttention: total_sequence_length must be the past length "
                            "plus the sequence length");
      } else {
        Value p = create<OnnxGatherOp>(b, loc, {start, i64Constant(b, loc, {0}, true)});
        p = assertEqual(b, loc, p, start, p,
                        "GroupQueryAttention: every sequence of the batch must hold as many "
                        "positions (padded batches are not supported)");
        p = assertEqual(b, loc, p, create<OnnxCastOp>(b, loc, {total}, {i64}),
                        create<OnnxAddOp>(b, loc, {p, s}),
                        "GroupQueryAttention: total_sequence_length must be the positions "
                        "before plus the sequence length");
        // (C >= W, which the op itself requires; G is kept >= 1 so that no
        // input divides by zero.)
        Value w = i64Constant(b, loc, {window}, true), c = past;
        Value one = i64Constant(b, loc, {1}, true);
        Value g1 = create<OnnxMaxOp>(
            b, loc, {create<OnnxAddOp>(b, loc, {create<OnnxSubOp>(b, loc, {c, w}), one}), one});
        Value over = create<OnnxMaxOp>(
            b, loc, {create<OnnxSubOp>(b, loc, {p, c}), i64Constant(b, loc, {0}, true)});
        Value evictions = create<OnnxDivOp>(
            b, loc, {create<OnnxSubOp>(b, loc, {create<OnnxAddOp>(b, loc, {over, g1}), one}), g1});
        held = create<OnnxSubOp>(b, loc, {p, create<OnnxMulOp>(b, loc, {g1, evictions})});
      }
      Value positions = positionIds;
      if (!positions) {
        Value steps = create<OnnxRangeOp>(
            b, loc, {i64Constant(b, loc, {0}, true), s, i64Constant(b, loc, {1}, true)});
        positions = create<OnnxAddOp>(
            b, loc,
            {create<OnnxUnsqueezeOp>(b, loc, {start, i64Constant(b, loc, {1})}),
             create<OnnxUnsqueezeOp>(b, loc, {steps, i64Constant(b, loc, {0})})});
      }
      if (rotary) {
        SmallVector<NamedAttribute> ropeAttrs{
            b.getNamedAttr("interleaved", b.getBoolAttr(intAttrOr(g, "rotary_interleaved", 0))),
            b.getNamedAttr("rotary_dim", b.getI64IntegerAttr(rot))};
        q4 = create<RopeOp>(b, loc, {q4, cosC, sinC, positions}, ropeAttrs);
        k4 = create<RopeOp>(b, loc, {k4, cosC, sinC, positions}, ropeAttrs);
      }
      // present = past ++ new, [B, kv_heads, T, d] (of a window-sized
      // cache: the rows it holds ++ new, what the attention reads).
      auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      Value presentK = create<OnnxTransposeOp>(b, loc, {k4}, {perm});
      Value presentV = create<OnnxTransposeOp>(b, loc, {v4}, {perm});
      auto axis2 = b.getNamedAttr("axis", b.getI64IntegerAttr(2));
      if (pastK) {
        auto rows = [&](Value x) -> Value {
          if (!windowCache)
            return x;
          return create<OnnxSliceOp>(
              b, loc,
              {x, i64Constant(b, loc, {0}),
               create<OnnxUnsqueezeOp>(b, loc, {held, i64Constant(b, loc, {0})}),
               i64Constant(b, loc, {2}), i64Constant(b, loc, {1})});
        };
        presentK = create<OnnxConcatOp>(b, loc, {rows(pastK), presentK}, {axis2});
        presentV = create<OnnxConcatOp>(b, loc, {rows(pastV), presentV}, {axis2});
      }
      double scale = floatAttrOr(g, "scale", 1.0 / std::sqrt(double(d)));
      Value o = create<AttentionOp>(
          b, loc,
          {q4, create<OnnxTransposeOp>(b, loc, {presentK}, {perm}),
           create<OnnxTransposeOp>(b, loc, {presentV}, {perm}), none(b, loc)},
          attentionAttrs(b, nq, nkv, /*causal=*/true, scale, window > 0 ? window : 0,
                         floatAttrOr(g, "softcap", 0.0)));
      Value out = create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, nq * d})});
      // A window-sized cache's present (its evictions) stays the op's own:
      // llmc's cache replaces it (and the op) in llmc-insert-kv-cache.
      if (windowCache)
        replaceResults(g, {out});
      else
        replaceResults(g, {out, presentK, presentV});
    }
  }


  //===--------------------------------------------------------------------===//
  // Older onnxruntime contrib forms (RotaryEmbedding, MultiHeadAttention,
  // Attention, EmbedLayerNormalization)
  //===--------------------------------------------------------------------===//

  /// com.microsoft RotaryEmbedding on [B, S, hidden] with [B, S] positions
  /// (or one offset) and constant caches -> llm.rope on [B, S, N, D].
  void raiseContribRotary(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "ms.rotary_embedding");
    for (Operation *r : ops) {
      Value x = r->getOperand(0), pos = r->getOperand(1), cosC = r->getOperand(2),
            sinC = r->getOperand(3);
      auto ct = dyn_cast<RankedTensorType>(cosC.getType());
      int64_t hidden = lastDim(x), numHeads = intAttrOr(r, "num_heads", 0),
              rot = intAttrOr(r, "rotary_embedding_dim", 0);
      if (intAttrOr(r, "is_packed_batching", 0) || floatAttrOr(r, "scale", 1.0) != 1.0 ||
          rankOf(x) != 3 || hidden <= 0 || !ct ||
          ct.getRank() != 2 || ct.isDynamicDim(1) || sinC.getType() != cosC.getType() ||
          !cosC.getDefiningOp<ConstantOp>() || !sinC.getDefiningOp<ConstantOp>())
        continue;
      int64_t d = numHeads > 0 ? hidden / numHeads : (rot > 0 ? rot : ct.getDimSize(1) * 2);
      if (d <= 0 || hidden % d)
        continue;
      if (rot == 0)
        rot = std::min(d, ct.getDimSize(1) * 2);
      if (rot > d || rot % 2 || ct.getDimSize(1) != rot / 2)
        continue;
      OpBuilder b(r);
      Location loc = r->getLoc();
      Value positions = pos;
      if (rankOf(pos) == 1 || (rankOf(pos) == 2 && dimSize(pos, 1) == 1 && dimSize(pos, 0) == 1)) {
        continue; // the offset form: left as it is (not used by the exports seen)
      }
      if (rankOf(pos) != 2)
        continue;
      Value x4 = create<OnnxReshapeOp>(b, loc, {x, i64Constant(b, loc, {0, 0, hidden / d, d})});
      Value y = create<RopeOp>(
          b, loc, {x4, cosC, sinC, positions},
          {b.getNamedAttr("interleaved", b.getBoolAttr(intAttrOr(r, "interleaved", 0))),
           b.getNamedAttr("rotary_dim", b.getI64IntegerAttr(rot == d ? 0 : rot))});
      r->getResult(0).replaceAllUsesWith(
          create<OnnxReshapeOp>(b, loc, {y, i64Constant(b, loc, {0, 0, hidden})}));
    }
  }

  /// Present = past ++ new in [B, H, T, D]; the attention's [B, T, H, D].
  std::pair<Value, Value> appendToCache(OpBuilder &b, Location loc, Value past, Value newBshd) {
    auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    Value present = create<OnnxTransposeOp>(b, loc, {newBshd}, {perm});
    if (past)
      present = create<OnnxConcatOp>(b, loc, {past, present},
                                     {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
    return {present, create<OnnxTransposeOp>(b, loc, {present}, {perm})};
  }

  /// com.microsoft MultiHeadAttention with q, k, v [B, S, N * D], BNSH past
  /// and an optional additive attention_bias -> llm.attention (the bias as
  /// its mask: simplifyMasks may then find it causal).
  void raiseMultiHeadAttention(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "ms.multi_head_attention");
    for (Operation *m : ops) {
      auto operand = [&](unsigned i) { return optionalOperand(m, i); };
      Value q = operand(0), k = operand(1), v = operand(2), bias = operand(5),
            pastK = operand(6), pastV = operand(7);
      int64_t n = intAttrOr(m, "num_heads", 0), hidden = q ? lastDim(q) : -1;
      if (operand(3) || operand(4) || operand(8) || operand(9) || !k || !v || n <= 0 ||
          hidden <= 0 || hidden % n || rankOf(q) != 3 || rankOf(k) != 3 || rankOf(v) != 3 ||
          lastDim(k) != hidden || lastDim(v) != hidden || bool(pastK) != bool(pastV) ||
          (pastK && (rankOf(pastK) != 4 || rankOf(pastV) != 4)) ||
          (m->getNumResults() > 3 && !m->getResult(3).use_empty()) ||
          (bias && rankOf(bias) != 4))
        continue;
      int64_t d = hidden / n;
      Type element = getElementTypeOrSelf(q.getType());
      if (getElementTypeOrSelf(k.getType()) != element ||
          (pastK && getElementTypeOrSelf(pastK.getType()) != element))
        continue;
      OpBuilder b(m);
      Location loc = m->getLoc();
      auto heads = [&](Value x) {
        return create<OnnxReshapeOp>(b, loc, {x, i64Constant(b, loc, {0, 0, n, d})});
      };
      auto [presentK, kAttn] = appendToCache(b, loc, pastK, heads(k));
      auto [presentV, vAttn] = appendToCache(b, loc, pastV, heads(v));
      Value o = create<AttentionOp>(
          b, loc, {heads(q), kAttn, vAttn, bias ? bias : none(b, loc)},
          attentionAttrs(b, n, n, intAttrOr(m, "unidirectional", 0) != 0,
                         floatAttrOr(m, "scale", 1.0 / std::sqrt(double(d)))));
      replaceResults(m, {create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, hidden})}),
                         presentK, presentV});
    }
  }

  /// com.microsoft Attention (GPT-2 as onnxruntime fuses it): the packed
  /// QKV projection, a [2, B, N, P, D] past, a raw [B, T] key mask and
  /// `unidirectional` -> llm.linear, llm.attention (causal, the mask as a
  /// boolean [B, 1, 1, T]) and the stacked present.
  void raiseContribAttention(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "ms.attention");
    for (Operation *a : ops) {
      auto operand = [&](unsigned i) { return optionalOperand(a, i); };
      Value x = operand(0), w = operand(1), bias = operand(2), mask = operand(3),
            past = operand(4);
      int64_t n = intAttrOr(a, "num_heads", 0), hidden = lastDim(x);
      auto wc = w ? w.getDefiningOp<ConstantOp>() : ConstantOp();
      auto wt = wc ? dyn_cast<RankedTensorType>(wc.getType()) : RankedTensorType();
      if (operand(5) || operand(6) || a->getAttr("qkv_hidden_sizes") ||
          intAttrOr(a, "do_rotary", 0) || intAttrOr(a, "past_present_share_buffer", 0) ||
          n <= 0 || rankOf(x) != 3 || hidden <= 0 || hidden % n || !wt || wt.getRank() != 2 ||
          wt.getDimSize(0) != hidden || wt.getDimSize(1) != 3 * hidden ||
          (bias && !isVectorConstant(bias, 3 * hidden)) || (past && rankOf(past) != 5) ||
          (a->getNumResults() > 1 && !a->getResult(1).use_empty() && !past))
        continue;
      Type maskType = mask ? getElementTypeOrSelf(mask.getType()) : Type();
      if (mask && (rankOf(mask) != 2 || !(maskType.isInteger(32) || maskType.isInteger(64))))
        continue; // only the raw [B, T] key mask
      int64_t d = hidden / n;
      OpBuilder b(a);
      Location loc = a->getLoc();
      Value weight = transposeWeight(b, wc);
      if (!weight)
        continue;
      Value qkv = create<LinearOp>(b, loc, {x, weight, bias ? bias : none(b, loc)});
      auto part = [&](int64_t i) {
        Value slice = sliceLast(b, loc, qkv, i * hidden, (i + 1) * hidden);
        return create<OnnxReshapeOp>(b, loc, {slice, i64Constant(b, loc, {0, 0, n, d})});
      };
      auto pastPart = [&](int64_t i) -> Value {
        if (!past)
          return {};
        return create<OnnxGatherOp>(b, loc, {past, i64Constant(b, loc, {i}, /*scalar=*/true)});
      };
      auto [presentK, kAttn] = appendToCache(b, loc, pastPart(0), part(1));
      auto [presentV, vAttn] = appendToCache(b, loc, pastPart(1), part(2));
      Value keep = none(b, loc);
      if (mask) {
        Value flags = create<OnnxCastOp>(b, loc, {mask}, {b.getNamedAttr("to", b.getI64IntegerAttr(9))});
        keep = create<OnnxUnsqueezeOp>(b, loc, {flags, i64Constant(b, loc, {1, 2})});
      }
      Value o = create<AttentionOp>(
          b, loc, {part(0), kAttn, vAttn, keep},
          attentionAttrs(b, n, n, intAttrOr(a, "unidirectional", 0) != 0,
                         floatAttrOr(a, "scale", 1.0 / std::sqrt(double(d)))));
      a->getResult(0).replaceAllUsesWith(
          create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, hidden})}));
      if (a->getNumResults() > 1 && past) {
        Value zero = i64Constant(b, loc, {0});
        Value stacked = create<OnnxConcatOp>(
            b, loc,
            {create<OnnxUnsqueezeOp>(b, loc, {presentK, zero}),
             create<OnnxUnsqueezeOp>(b, loc, {presentV, zero})},
            {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
        a->getResult(1).replaceAllUsesWith(stacked);
      }
    }
  }

  /// com.microsoft EmbedLayerNormalization without segments or mask:
  /// word and position embeddings, their sum (its third result) and a
  /// layer norm.
  void raiseEmbedLayerNorm(func::FuncOp func) {
    SmallVector<Operation *> ops = opsNamed(func, "ms.embed_layer_normalization");
    for (Operation *e : ops) {
      auto operand = [&](unsigned i) { return optionalOperand(e, i); };
      Value ids = operand(0), word = operand(2), posTable = operand(3), gamma = operand(5),
            beta = operand(6), positions = operand(8);
      auto isTable = [](Value t) {
        auto c = t ? t.getDefiningOp<ConstantOp>() : ConstantOp();
        auto type = c ? dyn_cast<RankedTensorType>(c.getType()) : RankedTensorType();
        return type && type.getRank() == 2;
      };
      if (operand(1) || operand(4) || operand(7) || !ids || !isTable(word) ||
          !isTable(posTable) || !positions || rankOf(positions) != 2 || !gamma ||
          !isVectorConstant(gamma, -1) || (beta && !isVectorConstant(beta, -1)) ||
          (e->getNumResults() > 1 && !e->getResult(1).use_empty()))
        continue;
      OpBuilder b(e);
      Location loc = e->getLoc();
      Value sum = create<OnnxAddOp>(b, loc,
                                    {create<EmbeddingOp>(b, loc, {word, ids}),
                                     create<EmbeddingOp>(b, loc, {posTable, positions})});
      Value y = create<LayerNormOp>(
          b, loc, {sum, gamma, beta ? beta : none(b, loc)},
          {b.getNamedAttr("epsilon", f32(b, floatAttrOr(e, "epsilon", 1e-12)))});
      e->getResult(0).replaceAllUsesWith(y);
      if (e->getNumResults() > 2)
        e->getResult(2).replaceAllUsesWith(sum);
    }
  }


  //===--------------------------------------------------------------------===//
  // ONNX RotaryEmbedding and Attention (opsets 23+)
  //===--------------------------------------------------------------------===//

  /// RotaryEmbedding -> llm.rope on [B, S, N, D] (from [B, N, S, D] or
  /// [B, S, N * D] with num_heads), in either form of its caches: constant
  /// [max_pos, R/2] tables with position ids, or (no position ids) cos/sin
  /// already per position, [B, S, R/2], gathered from such tables or
  /// computed in the graph from the positions: those are tabulated over the
  /// positions they come from.
  void raiseOnnxRotary(func::FuncOp func) {
    // Tabulated once per (cos, sin) pair: every layer's rope reads the same.
    std::map<std::pair<void *, void *>, std::optional<std::array<Value, 3>>> tables;
    for (Operation *r : opsNamed(func, "onnx.rotary_embedding")) {
      Value x = r->getOperand(0), cosC = r->getOperand(1), sinC = r->getOperand(2),
            pos = optionalOperand(r, 3);
      auto ct = dyn_cast<RankedTensorType>(cosC.getType());
      if (!ct || ct.isDynamicDim(ct.getRank() - 1) || sinC.getType() != cosC.getType())
        continue;
      int64_t rank = rankOf(x), d = -1, heads = -1;
      if (rank == 4) {
        d = lastDim(x), heads = dimSize(x, 1);
      } else if (rank == 3) {
        heads = intAttrOr(r, "num_heads", 0);
        d = heads > 0 && lastDim(x) > 0 && lastDim(x) % heads == 0 ? lastDim(x) / heads : -1;
      }
      int64_t rot = intAttrOr(r, "rotary_embedding_dim", 0);
      if (d <= 0 || heads <= 0)
        continue;
      if (rot == 0)
        rot = d;
      if (rot > d || rot % 2 || ct.getDimSize(ct.getRank() - 1) != rot / 2)
        continue;
      Value cosT = cosC, sinT = sinC;
      if (pos) {
        if (rankOf(pos) != 2 || ct.getRank() != 2 || !cosC.getDefiningOp<ConstantOp>() ||
            !sinC.getDefiningOp<ConstantOp>())
          continue;
      } else {
        if (ct.getRank() != 3)
          continue;
        auto key = std::make_pair(cosC.getAsOpaquePointer(), sinC.getAsOpaquePointer());
        if (!tables.count(key)) {
          std::optional<PositionTable> c = tabulate(cosC, maxPositions),
                                       sn = tabulate(sinC, maxPositions);
          tables[key] = std::nullopt;
          if (c && sn && c->positions == sn->positions && c->seqAxis == 1 && sn->seqAxis == 1 &&
              c->rows.shape() == sn->rows.shape() && c->rows.dim(1) == rot / 2)
            tables[key] = std::array<Value, 3>{
                tableConstant(c->rows, ct.getElementType(), "rope_cos", cosC.getLoc()),
                tableConstant(sn->rows, ct.getElementType(), "rope_sin", sinC.getLoc()),
                c->positions};
        }
        if (!tables[key])
          continue;
        cosT = (*tables[key])[0], sinT = (*tables[key])[1], pos = (*tables[key])[2];
      }
      OpBuilder b(r);
      Location loc = r->getLoc();
      if (rankOf(pos) == 1) // [S], shared by the batch: [1, S]
        pos = create<OnnxUnsqueezeOp>(b, loc, {pos, i64Constant(b, loc, {0})});
      auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      Value in = rank == 4 ? create<OnnxTransposeOp>(b, loc, {x}, {perm})
                           : create<OnnxReshapeOp>(b, loc,
                                                   {x, i64Constant(b, loc, {0, 0, heads, d})});
      Value y = create<RopeOp>(
          b, loc, {in, cosT, sinT, pos},
          {b.getNamedAttr("interleaved", b.getBoolAttr(intAttrOr(r, "interleaved", 0))),
           b.getNamedAttr("rotary_dim", b.getI64IntegerAttr(rot == d ? 0 : rot))});
      y = rank == 4 ? create<OnnxTransposeOp>(b, loc, {y}, {perm})
                    : create<OnnxReshapeOp>(b, loc, {y, i64Constant(b, loc, {0, 0, heads * d})});
      r->getResult(0).replaceAllUsesWith(y);
    }
  }

  /// A table tabulated at compile time (`bytes` of `type`) as a constant at
  /// the top of the function.
  Value tableConstant(ArrayRef<char> bytes, RankedTensorType type, StringRef key, Location loc) {
    OpBuilder b = OpBuilder::atBlockBegin(&getOperation().getBody().front());
    auto attr = DenseResourceElementsAttr::get(
        type, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t)));
    return b.create<ConstantOp>(loc, attr).getResult();
  }
  Value tableConstant(const cpu::Tensor &rows, Type element, StringRef key, Location loc) {
    const char *src = static_cast<const char *>(rows.raw());
    return tableConstant(
        ArrayRef<char>(src, size_t(rows.numel()) * cpu::storageSize(rows.dtype())),
        RankedTensorType::get({rows.dim(0), rows.dim(1)}, element), key, loc);
  }

  /// ONNX Attention without padded lengths or windows: past ++ new keys
  /// (its present outputs), causal from is_causal, its mask, scale and
  /// softcap -> llm.attention on [B, S, H, D].
  void raiseOnnxAttention(func::FuncOp func) {
    SymbolicShapes sym(func);
    for (Operation *a : opsNamed(func, "onnx.attention")) {
      Value q = a->getOperand(0), k = a->getOperand(1), v = a->getOperand(2),
            mask = optionalOperand(a, 3), pastK = optionalOperand(a, 4),
            pastV = optionalOperand(a, 5);
      int64_t rank = rankOf(q);
      if (optionalOperand(a, 6) || intAttrOr(a, "left_window_size", -1) >= 0 ||
          intAttrOr(a, "right_window_size", -1) >= 0 || (rank != 3 && rank != 4) ||
          rankOf(k) != rank || rankOf(v) != rank || bool(pastK) != bool(pastV) ||
          (a->getNumResults() > 3 && !a->getResult(3).use_empty()) ||
          (mask && (rankOf(mask) < 2 || rankOf(mask) > 4)))
        continue;
      int64_t hq, hkv, d, dv;
      if (rank == 4) {
        hq = dimSize(q, 1), hkv = dimSize(k, 1), d = lastDim(q), dv = lastDim(v);
      } else {
        hq = intAttrOr(a, "q_num_heads", 0), hkv = intAttrOr(a, "kv_num_heads", 0);
        d = hq > 0 && lastDim(q) % hq == 0 ? lastDim(q) / hq : -1;
        dv = hkv > 0 && lastDim(v) % hkv == 0 ? lastDim(v) / hkv : -1;
      }
      if (hq <= 0 || hkv <= 0 || hq % hkv || d <= 0 || dv <= 0)
        continue;
      // ONNX's causal mask puts query i at past + i; llm.attention at
      // (past + new keys) - queries + i: the same only with as many new keys
      // as queries.
      if (intAttrOr(a, "is_causal", 0)) {
        int64_t axis = rank == 4 ? 2 : 1;
        if (!(sym.dimOf(q, axis) == sym.dimOf(k, axis)))
          continue;
      }
      // The mask must cover every key (opset 24 pads a shorter one with
      // -inf): checked here when the sizes are static; otherwise
      // llm.attention refuses a mask of another width at run time (and
      // llmc-raise-transformer's mask analysis replaces one built from the
      // attention mask, whose width it then knows).
      if (mask) {
        int64_t cols = lastDim(mask), keys = rank == 4 ? dimSize(k, 2) : dimSize(k, 1);
        int64_t past = pastK ? dimSize(pastK, 2) : 0;
        if (cols >= 0 && keys >= 0 && past >= 0 && cols != keys + past)
          continue;
      }
      OpBuilder b(a);
      Location loc = a->getLoc();
      auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      // [B, H, S, D] for the caches, [B, S, H, D] for llm.attention.
      auto toBhsd = [&](Value x, int64_t h, int64_t dim) -> Value {
        if (rank == 4)
          return x;
        Value bshd = create<OnnxReshapeOp>(b, loc, {x, i64Constant(b, loc, {0, 0, h, dim})});
        return create<OnnxTransposeOp>(b, loc, {bshd}, {perm});
      };
      Value kb = toBhsd(k, hkv, d), vb = toBhsd(v, hkv, dv);
      auto axis2 = b.getNamedAttr("axis", b.getI64IntegerAttr(2));
      Value presentK = pastK ? create<OnnxConcatOp>(b, loc, {pastK, kb}, {axis2}) : kb;
      Value presentV = pastV ? create<OnnxConcatOp>(b, loc, {pastV, vb}, {axis2}) : vb;
      Value qs = rank == 4 ? create<OnnxTransposeOp>(b, loc, {q}, {perm})
                           : create<OnnxReshapeOp>(b, loc, {q, i64Constant(b, loc, {0, 0, hq, d})});
      Value o = create<AttentionOp>(
          b, loc,
          {qs, create<OnnxTransposeOp>(b, loc, {presentK}, {perm}),
           create<OnnxTransposeOp>(b, loc, {presentV}, {perm}), mask ? mask : none(b, loc)},
          attentionAttrs(b, hq, hkv, intAttrOr(a, "is_causal", 0) != 0,
                         floatAttrOr(a, "scale", 1.0 / std::sqrt(double(d))), 0,
                         floatAttrOr(a, "softcap", 0.0)));
      Value y = rank == 4 ? create<OnnxTransposeOp>(b, loc, {o}, {perm})
                          : create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, hq * dv})});
      if (!sameShapeAndType(y, a->getResult(0)))
        continue;
      replaceResults(a, {y, presentK, presentV});
    }
  }

  /// TensorScatter(past, new, write_indices) on the sequence axis of a
  /// [B, H, capacity, D] or [B, capacity, H * D] cache, in linear mode:
  /// (past, new, write_indices).
  static std::optional<std::array<Value, 3>> matchCacheScatter(Value x) {
    Operation *s = x.getDefiningOp();
    int64_t rank = rankOf(x);
    if (!s || shortName(s) != "onnx.tensor_scatter" || s->getNumOperands() < 3 ||
        !optionalOperand(s, 2) || (rank != 3 && rank != 4))
      return std::nullopt;
    int64_t axis = intAttrOr(s, "axis", -2);
    auto mode = s->getAttrOfType<StringAttr>("mode");
    if ((axis != rank - 2 && axis != -2) || (mode && mode.getValue() != "linear"))
      return std::nullopt;
    return std::array<Value, 3>{s->getOperand(0), s->getOperand(1), s->getOperand(2)};
  }

  /// ONNX Attention over a static cache (opset 24): keys and values are
  /// TensorScatter(past, new, write_indices) into caches of a fixed length,
  /// [B, H, capacity, D] with 4-D Q/K/V or [B, capacity, H * D] with 3-D
  /// ones, nonpad_kv_seqlen counts the valid keys and is_causal aligns the
  /// queries bottom-right. When every sequence of the batch writes at the
  /// same index P and nonpad_kv_seqlen is P + S (the uniform-batch protocol,
  /// stated by two llm.assert_equal) that is a causal llm.attention over
  /// past[:P] ++ new (in [B, H, T, D], the form llmc-insert-kv-cache maps
  /// onto its own cache). The scatters stay (they are the present outputs);
  /// the inputs holding write indices and valid lengths get an `llm.role`
  /// so later passes can bind them.
  void raiseOnnxStaticCacheAttention(func::FuncOp func) {
    SymbolicShapes sym(func);
    for (Operation *a : opsNamed(func, "onnx.attention")) {
      Value q = a->getOperand(0), nonpad = optionalOperand(a, 6);
      int64_t rank = rankOf(q);
      if (!nonpad || optionalOperand(a, 3) || optionalOperand(a, 4) || optionalOperand(a, 5) ||
          (rank != 3 && rank != 4) || intAttrOr(a, "is_causal", 0) != 1 ||
          intAttrOr(a, "left_window_size", -1) >= 0 || intAttrOr(a, "right_window_size", -1) >= 0 ||
          llvm::any_of(a->getResults().drop_front(), [](Value r) { return !r.use_empty(); }))
        continue;
      auto sk = matchCacheScatter(a->getOperand(1)), sv = matchCacheScatter(a->getOperand(2));
      if (!sk || !sv || (*sk)[2] != (*sv)[2] || rankOf(a->getOperand(1)) != rank)
        continue;
      auto [pastK, newK, writeIndex] = *sk;
      Value pastV = (*sv)[0], newV = (*sv)[1];
      int64_t seqAxis = rank - 2, hq, hkv, d, dv;
      if (rank == 4) {
        hq = dimSize(q, 1), hkv = dimSize(pastK, 1), d = lastDim(q), dv = lastDim(pastV);
        if (dimSize(pastV, 1) != hkv)
          continue;
      } else {
        hq = intAttrOr(a, "q_num_heads", 0), hkv = intAttrOr(a, "kv_num_heads", 0);
        d = hq > 0 && lastDim(q) % hq == 0 ? lastDim(q) / hq : -1;
        dv = hkv > 0 && lastDim(pastV) % hkv == 0 ? lastDim(pastV) / hkv : -1;
        if (hkv <= 0 || lastDim(pastK) != hkv * d)
          continue;
      }
      if (hq <= 0 || hkv <= 0 || hq % hkv || d <= 0 || dv <= 0 ||
          !(sym.dimOf(q, seqAxis) == sym.dimOf(newK, seqAxis)) ||
          !(sym.dimOf(q, seqAxis) == sym.dimOf(newV, seqAxis)))
        continue;
      OpBuilder b(a);
      Location loc = a->getLoc();
      auto i64 = b.getNamedAttr("to", b.getI64IntegerAttr(7));
      Value index = create<OnnxCastOp>(b, loc, {writeIndex}, {i64});
      Value start = create<OnnxGatherOp>(b, loc, {index, i64Constant(b, loc, {0}, true)});
      start = assertEqual(b, loc, start, index, start,
                          "TensorScatter: every sequence of the batch must write at the same "
                          "index (padded batches are not supported)");
      start = assertEqual(b, loc, start, create<OnnxCastOp>(b, loc, {nonpad}, {i64}),
                          create<OnnxAddOp>(b, loc, {start, sizeOf(b, loc, q, seqAxis)}),
                          "Attention: nonpad_kv_seqlen must be the write index plus the "
                          "sequence length");
      Value end = create<OnnxUnsqueezeOp>(b, loc, {start, i64Constant(b, loc, {0})});
      auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      // [B, H, T, D] from a 4-D cache as it is, from a 3-D one split into heads.
      auto bhsd = [&](Value x, int64_t dim) -> Value {
        if (rank == 4)
          return x;
        Value bshd = create<OnnxReshapeOp>(b, loc, {x, i64Constant(b, loc, {0, 0, hkv, dim})});
        return create<OnnxTransposeOp>(b, loc, {bshd}, {perm});
      };
      auto present = [&](Value past, Value fresh, int64_t dim) {
        Value head = create<OnnxSliceOp>(b, loc,
                                         {past, i64Constant(b, loc, {0}), end,
                                          i64Constant(b, loc, {seqAxis}), i64Constant(b, loc, {1})});
        return create<OnnxConcatOp>(b, loc, {bhsd(head, dim), bhsd(fresh, dim)},
                                    {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
      };
      Value qs = rank == 4 ? create<OnnxTransposeOp>(b, loc, {q}, {perm})
                           : create<OnnxReshapeOp>(b, loc, {q, i64Constant(b, loc, {0, 0, hq, d})});
      Value o = create<AttentionOp>(
          b, loc,
          {qs, create<OnnxTransposeOp>(b, loc, {present(pastK, newK, d)}, {perm}),
           create<OnnxTransposeOp>(b, loc, {present(pastV, newV, dv)}, {perm}), none(b, loc)},
          attentionAttrs(b, hq, hkv, /*causal=*/true,
                         floatAttrOr(a, "scale", 1.0 / std::sqrt(double(d))), 0,
                         floatAttrOr(a, "softcap", 0.0)));
      Value y = rank == 4 ? create<OnnxTransposeOp>(b, loc, {o}, {perm})
                          : create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, hq * dv})});
      if (!sameShapeAndType(y, a->getResult(0)))
        continue;
      a->getResult(0).replaceAllUsesWith(y);
      for (auto [value, role] : {std::pair{writeIndex, "write_indices"},
                                 std::pair{nonpad, "kv_valid_length"}})
        if (auto arg = dyn_cast<BlockArgument>(value); arg && arg.getOwner() == &func.front())
          func.setArgAttr(arg.getArgNumber(), "llm.role", b.getStringAttr(role));
    }
  }

  /// transpose(transpose(y, p1), p2) -> transpose(y, p1[p2]) or y.
  void foldTransposePairs(func::FuncOp func) {
    SmallVector<OnnxTransposeOp> ops;
    func.walk([&](OnnxTransposeOp op) { ops.push_back(op); });
    for (OnnxTransposeOp outer : ops) {
      auto inner = outer.getData().getDefiningOp<OnnxTransposeOp>();
      if (!inner || !outer.getPerm() || !inner.getPerm())
        continue;
      ArrayRef<int64_t> p1 = *inner.getPerm(), p2 = *outer.getPerm();
      if (p1.size() != p2.size())
        continue;
      SmallVector<int64_t> q;
      bool identity = true;
      for (size_t i = 0; i < p2.size(); ++i) {
        q.push_back(p1[size_t(p2[i])]);
        identity &= q.back() == int64_t(i);
      }
      Value y = inner.getData();
      if (!identity) {
        OpBuilder b(outer);
        y = create<OnnxTransposeOp>(b, outer.getLoc(), {y},
                                    {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(q))});
      }
      if (!sameShapeAndType(y, outer.getResult()))
        continue;
      outer.getResult().replaceAllUsesWith(y);
    }
  }

  void eraseDead(func::FuncOp func) {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) { ops.push_back(op); });
      for (Operation *op : llvm::reverse(ops))
        if (isa<LLMDialect>(op->getDialect()) && op->getNumResults() > 0 &&
            isOpTriviallyDead(op)) {
          op->erase();
          changed = true;
        }
    }
  }
};

} // namespace
