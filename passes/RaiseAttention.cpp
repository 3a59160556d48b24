//===- RaiseAttention.cpp - attention written as MatMul and a softmax -----===//
//
// softmax(scale * Q K^T + mask) V as HF's eager attention writes it (and a
// hand-written one: a softmax written out, a mask applied with Where, a
// softmax computed in f32 between Casts) becomes llm.attention; a mask is
// recognised as causal (with a window and the attention mask's padding) by
// evaluating its construction (docs/passes.md).
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

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Static size of dimension d of v, or -1.
int64_t Raiser::dimSize(Value v, int64_t d) {
  MaybeShape s = getShape(v.getType());
  if (!s || d >= int64_t(s->size()) || !(*s)[size_t(d)].isStatic())
    return -1;
  return (*s)[size_t(d)].size;
}

/// k [B, Hkv, T, D] when `v` is k repeated n times per head (HF's
/// repeat_kv: Unsqueeze at 2, Expand to n, Reshape to [B, Hkv * n, T, D]);
/// `v` itself otherwise.
Value Raiser::unrepeat(Value v, SymbolicShapes &sym) {
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
Value Raiser::untransposeKey(Value v, SymbolicShapes &sym) {
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

/// A softmax over the last axis written out, as exporters of a
/// hand-written attention emit it: Exp(x - ReduceMax(x)) / ReduceSum(..)
/// (both reductions over the last axis, kept; or times Reciprocal of the
/// sum), or without the maximum (Exp(x) / ReduceSum(Exp(x)): the same
/// function, which onnx.softmax computes without overflow) ->
/// onnx.softmax(x, axis = -1).
void Raiser::raiseSoftmax(func::FuncOp func) {
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
Value Raiser::floatScalar(OpBuilder &b, Location loc, FloatType t, double v) {
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(RankedTensorType::get({}, t),
                                                          b.getFloatAttr(t, v)))
      .getResult();
}

/// Scores masked by replacement, Where(keep, s, fill) or Where(drop,
/// fill, s) with a fill at or below -6e4 (-inf, the type's lowest, -1e9):
/// s and the additive mask Where(keep, 0, fill) of s's type. Both remove
/// the same keys from any row that keeps one (exp(fill - max) is 0 there);
/// they differ only in a row with no key kept, which the causal and
/// padding masks an export builds have only for padded queries.
std::optional<std::pair<Value, Value>> Raiser::whereMasked(Value scores) {
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

/// The logits of a sink column ([B, H, S, 1]: one logit per head,
/// broadcast over the batch and the rows): an Expand of a [1, H, 1, 1] or
/// [H, 1, 1] value computed from constants alone (gpt-oss's
/// sinks.reshape(1, -1, 1, 1).expand(...), maybe cast), evaluated in that
/// value's type; finite.
std::optional<std::vector<float>> Raiser::sinkLogits(Value column) {
  Operation *expand = defOf(column, "onnx.expand");
  int64_t heads = dimSize(column, 1);
  if (!expand || rankOf(column) != 4 || heads < 1 || dimSize(column, 3) != 1)
    return std::nullopt;
  Value e = expand->getOperand(0);
  int64_t r = rankOf(e);
  if (r < 3 || r > 4)
    return std::nullopt;
  for (int64_t d = 0; d < r; ++d) // right-aligned with [B, H, S, 1]
    if (dimSize(e, d) != (d == r - 3 ? heads : 1))
      return std::nullopt;
  // The value's computation: reshapes, (un)squeezes and casts of a constant.
  SmallVector<Operation *> chain;
  Value root = e;
  while (Operation *op = root.getDefiningOp()) {
    if (!isLlmOp(op, "onnx.reshape") && !isLlmOp(op, "onnx.unsqueeze") &&
        !isLlmOp(op, "onnx.squeeze") && !isLlmOp(op, "onnx.cast") &&
        !isLlmOp(op, "onnx.identity"))
      break;
    chain.insert(chain.begin(), op);
    root = op->getOperand(0);
  }
  if (!constantOf(root))
    return std::nullopt;
  for (Operation *op : chain) // (shapes and axes: constants too)
    for (Value a : op->getOperands().drop_front())
      if (!isNone(a) && !constantOf(a))
        return std::nullopt;
  std::optional<cpu::Tensor> t =
      chain.empty() ? constantOf(root) : evaluateSlice(chain, {}, e);
  std::optional<std::vector<double>> values = t ? floatsOf(*t) : std::nullopt;
  if (!values || int64_t(values->size()) != heads)
    return std::nullopt;
  std::vector<float> logits;
  for (double v : *values) {
    if (!std::isfinite(v))
      return std::nullopt;
    logits.push_back(float(v));
  }
  return logits;
}

/// softmax(Concat(scores, sink column)) on the last axis with the sink's
/// column sliced off the probabilities (gpt-oss's attention sinks; the
/// column last or first): the scores and the sliced probabilities, and
/// `sinks` set to the heads' logits.
std::optional<std::pair<Value, Value>> Raiser::withoutSinks(Value scores, Value probs,
                                                            std::vector<float> &sinks) {
  Operation *cat = defOf(scores, "onnx.concat");
  int64_t axis = cat ? intAttrOr(cat, "axis", 0) : 0;
  if (!cat || cat->getNumOperands() != 2 || rankOf(scores) != 4 || (axis != -1 && axis != 3) ||
      !probs.hasOneUse())
    return std::nullopt;
  Operation *slice = probs.getUses().begin()->getOwner();
  if (!isLlmOp(slice, "onnx.slice") || slice->getOperand(0) != probs)
    return std::nullopt;
  auto starts = constInts(slice->getOperand(1)), ends = constInts(slice->getOperand(2));
  Value axesV = optionalOperand(slice, 3), stepsV = optionalOperand(slice, 4);
  auto axes = axesV ? constInts(axesV) : std::nullopt;
  std::optional<SmallVector<int64_t>> steps =
      stepsV ? constInts(stepsV) : SmallVector<int64_t>{1};
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 ||
      axes->size() != 1 || steps->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != 3) ||
      (*steps)[0] != 1)
    return std::nullopt;
  int64_t start = (*starts)[0], end = (*ends)[0];
  for (int column = 0; column < 2; ++column) { // the sink's operand
    std::optional<std::vector<float>> logits = sinkLogits(cat->getOperand(column));
    if (!logits)
      continue;
    Value kept = cat->getOperand(1 - column);
    int64_t keys = dimSize(kept, 3);
    bool dropsSink = column == 1 ? start == 0 && (end == -1 || (keys > 0 && end == keys))
                                 : start == 1 && (end >= (int64_t(1) << 31) - 1 ||
                                                  (keys > 0 && end == keys + 1));
    if (!dropsSink)
      continue;
    sinks = std::move(*logits);
    return std::make_pair(kept, slice->getResult(0));
  }
  return std::nullopt;
}

/// softmax(scale * Q K^T + mask) V, as HF's eager attention writes it,
/// with Q [B, H, S, D] and K, V [B, Hkv, T, D] (repeated to H heads); the
/// mask added, or applied by a Where (whereMasked).
void Raiser::raiseAttention(func::FuncOp func) {
  SymbolicShapes sym(func);
  SmallVector<Operation *> softmaxes = opsNamed(func, "onnx.softmax");
  for (Operation *sm : softmaxes) {
    Value scores = sm->getOperand(0);
    int64_t axis = intAttrOr(sm, "axis", -1), rank = rankOf(scores);
    if (rank != 4 || (axis != -1 && axis != 3))
      continue;
    // softmax(x - max(x)) is softmax(x) (gpt-oss subtracts the maximum).
    if (Operation *sub = defOf(scores, "onnx.sub"))
      if (Operation *max = defOf(sub->getOperand(1), "onnx.reduce_max");
          max && max->getOperand(0) == sub->getOperand(0) && reducesLastDimKept(max))
        scores = sub->getOperand(0);
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
          isLlmOp(back, "onnx.cast") &&
          isa<FloatType>(getElementTypeOrSelf(back->getResult(0).getType())))
        if (Operation *in = defOf(scores, "onnx.cast");
            in && isa<FloatType>(getElementTypeOrSelf(in->getOperand(0).getType()))) {
          scores = in->getOperand(0);
          probs = back->getResult(0);
        }
    // Attention sinks: a logit per head in each row's softmax, its
    // probability dropped before the values.
    std::vector<float> sinks;
    if (auto plain = withoutSinks(scores, probs, sinks))
      std::tie(scores, probs) = *plain;
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
    if (std::optional<Softcap> capped = softcapOf(qk)) {
      softcap = capped->cap;
      qk = capped->x;
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
        hq % hkv || dimSize(v, 1) != hkv || d < 1 || dimSize(k, 3) != d || !(scale > 0) ||
        (!sinks.empty() && int64_t(sinks.size()) != hq))
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
        attentionAttrs(b, hq, hkv, /*causal=*/false, scale, 0, softcap, sinks));
    Value y = toBshd(out);
    if (!sameShapeAndType(y, pv->getResult(0)))
      continue;
    pv->getResult(0).replaceAllUsesWith(y);
  }
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// Mask values: 0 keeps a key, -inf or anything at or below -6e4 removes
/// it (exp underflows to 0 next to any kept key; f16 masks use -65504; a
/// bool mask: true keeps); anything else is not a plain mask.
std::optional<std::vector<int8_t>> Raiser::keptOf(const cpu::Tensor &m) {
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

std::optional<Raiser::MaskMeaning> Raiser::analyseMask(AttentionOp attn, SymbolicShapes &sym) {
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
void Raiser::simplifyMasks(func::FuncOp func) {
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
