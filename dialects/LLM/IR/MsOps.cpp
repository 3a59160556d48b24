//===- MsOps.cpp - com.microsoft operations ------------------------------===//
//
// The com.microsoft contrib operators (LLMMsOps.td).
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OpHelpers.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::ophelpers;

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
