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

namespace mlir::llmc {
#define GEN_PASS_DEF_RAISETRANSFORMERPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::raise;

namespace {

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

} // namespace

void Raiser::raiseNorms(func::FuncOp func) {
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

void Raiser::raiseActivations(func::FuncOp func) {
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
void Raiser::raiseLinears(func::FuncOp func) {
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
Value Raiser::transposeWeight(OpBuilder &b, ConstantOp c) {
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

void Raiser::raiseEmbeddings(func::FuncOp func) {
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

void Raiser::raiseSwiglu(func::FuncOp func) {
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
void Raiser::raiseRope(func::FuncOp func) {
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

/// A table tabulated at compile time (`bytes` of `type`) as a constant at
/// the top of the function.
Value Raiser::tableConstant(ArrayRef<char> bytes, RankedTensorType type, StringRef key, Location loc) {
  OpBuilder b = OpBuilder::atBlockBegin(&root.getBody().front());
  auto attr = DenseResourceElementsAttr::get(
      type, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(uint64_t)));
  return b.create<ConstantOp>(loc, attr).getResult();
}

Value Raiser::tableConstant(const cpu::Tensor &rows, Type element, StringRef key, Location loc) {
  const char *src = static_cast<const char *>(rows.raw());
  return tableConstant(
      ArrayRef<char>(src, size_t(rows.numel()) * cpu::storageSize(rows.dtype())),
      RankedTensorType::get({rows.dim(0), rows.dim(1)}, element), key, loc);
}

/// The [max_pos, D/2] cos and sin tables, when both are functions of the
/// same positions, laid out alike, and repeat their first half (half
/// rotation).
std::optional<RopeTables> Raiser::makeTables(Value cosV, Value sinV, bool interleaved) {
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

void Raiser::sinkTransposesIntoNorms(func::FuncOp func) {
  SmallVector<Operation *> norms;
  func.walk([&](Operation *op) {
    if (isa<RmsNormOp, LayerNormOp>(op))
      norms.push_back(op);
  });
  for (Operation *norm : norms) {
    auto t = norm->getOperand(0).getDefiningOp<OnnxTransposeOp>();
    if (!t || !t.getPerm() || norm->getResult(0).use_empty() ||
        !llvm::all_of(norm->getResult(0).getUsers(),
                      [](Operation *u) { return isa<OnnxTransposeOp>(u); }))
      continue;
    ArrayRef<int64_t> perm = *t.getPerm();
    auto xt = dyn_cast<RankedTensorType>(t.getData().getType());
    auto nt = dyn_cast<RankedTensorType>(norm->getResult(0).getType());
    if (!xt || !nt || perm.empty() || perm.back() != int64_t(perm.size()) - 1 ||
        xt.getElementType() != nt.getElementType())
      continue;
    OpBuilder b(norm);
    Operation *moved = b.clone(*norm);
    moved->setOperand(0, t.getData());
    moved->getResult(0).setType(xt);
    Value back = create<OnnxTransposeOp>(b, norm->getLoc(), {moved->getResult(0)},
                                         {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
    if (!sameShapeAndType(back, norm->getResult(0))) {
      back.getDefiningOp()->erase();
      moved->erase();
      continue;
    }
    norm->getResult(0).replaceAllUsesWith(back);
  }
}

/// transpose(transpose(y, p1), p2) -> transpose(y, p1[p2]) or y.
void Raiser::foldTransposePairs(func::FuncOp func) {
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

void Raiser::eraseDead(func::FuncOp func) {
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

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

struct RaiseTransformerPass
    : mlir::llmc::impl::RaiseTransformerPassBase<RaiseTransformerPass> {
  using RaiseTransformerPassBase::RaiseTransformerPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Raiser r(func, maxPositions);
    // Each step sees the previous ones' results with the replaced
    // operations gone (a dead reader would still count as a use).
    for (void (Raiser::*step)(func::FuncOp) :
         {&Raiser::raiseNorms, &Raiser::raiseActivations, &Raiser::raiseLinears,
          &Raiser::raiseEmbeddings, &Raiser::raiseSwiglu, &Raiser::raiseRope,
          &Raiser::raiseSoftmax, &Raiser::raiseAttention, &Raiser::simplifyMasks,
          &Raiser::raiseGroupQueryAttention, &Raiser::raiseContribRotary,
          &Raiser::raiseOnnxRotary, &Raiser::raiseOnnxAttention,
          &Raiser::raiseOnnxStaticCacheAttention, &Raiser::raiseMultiHeadAttention,
          &Raiser::raiseContribAttention, &Raiser::raiseEmbedLayerNorm,
          &Raiser::simplifyMasks, &Raiser::sinkTransposesIntoNorms,
          &Raiser::foldTransposePairs}) {
      (r.*step)(func);
      r.eraseDead(func);
    }
    if (failed(refineResultTypes(func)))
      signalPassFailure();
  }
};

} // namespace
