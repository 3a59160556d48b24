//===- OnnxOps.cpp - ai.onnx element-wise, linear and attention ops ------===//
//
// Element-wise, normalisation, linear algebra, indexing and the attention
// building blocks of ai.onnx (LLMOnnxOps.td).
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OpHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::ophelpers;

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
