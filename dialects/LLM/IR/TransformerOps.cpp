//===- TransformerOps.cpp - transformer-level operations -----------------===//
//
// The transformer-level operations, the static KV cache and the flash forms
// (LLMTransformerOps.td).
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OpHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::ophelpers;

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

/// `sinks`, when given: one finite logit per query head.
static LogicalResult verifySinks(Operation *op, std::optional<ArrayRef<float>> sinks,
                                 std::optional<int64_t> heads) {
  if (!sinks)
    return success();
  if (heads && int64_t(sinks->size()) != *heads)
    return op->emitOpError("sinks has ") << sinks->size() << " logits for " << *heads
                                         << " query heads";
  for (float s : *sinks)
    if (!std::isfinite(s))
      return op->emitOpError("sinks must be finite");
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t hq = getNumHeads(), hkv = getNumKvHeads();
  if (failed(verifySinks(*this, getSinks(), hq)))
    return failure();
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
  if (failed(verifySinks(*this, getSinks(), getNumHeads())))
    return failure();
  return verifyCacheOperands(*this, getKCache(), getVCache(), getKvScales());
}
LogicalResult FlashAttentionOp::verify() {
  if (failed(verifySinks(*this, getSinks(), getNumHeads())))
    return failure();
  return verifyCacheOperands(*this, getKCache(), getVCache(), getKvScales());
}
LogicalResult AttentionCombineOp::verify() {
  return verifySinks(*this, getSinks(), staticDim(getPartial(), 2));
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
