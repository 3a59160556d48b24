//===- RaiseExported.cpp - contrib and standard attention operators -------===//
//
// onnxruntime's com.microsoft GroupQueryAttention, RotaryEmbedding,
// MultiHeadAttention, Attention and EmbedLayerNormalization, and the ONNX
// standard RotaryEmbedding and Attention (opsets 23 and 24, with a static
// cache written by TensorScatter), as llm operations.
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
// onnxruntime's GroupQueryAttention
//===----------------------------------------------------------------------===//

/// Replaces `op`'s leading results with `values` (as many as it has).
void Raiser::replaceResults(Operation *op, ArrayRef<Value> values) {
  for (auto [r, v] : llvm::zip(op->getResults(), values))
    r.replaceAllUsesWith(v);
}

/// The attributes of an llm.attention.
SmallVector<NamedAttribute> Raiser::attentionAttrs(Builder &b, int64_t hq, int64_t hkv,
                                                  bool causal, double scale,
                                                  int64_t window, double softcap,
                                                  ArrayRef<float> sinks) {
  SmallVector<NamedAttribute> attrs{b.getNamedAttr("num_heads", b.getI64IntegerAttr(hq)),
                                    b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(hkv)),
                                    b.getNamedAttr("causal", b.getBoolAttr(causal)),
                                    b.getNamedAttr("window", b.getI64IntegerAttr(window)),
                                    b.getNamedAttr("scale", f32(b, scale)),
                                    b.getNamedAttr("softcap", f32(b, softcap))};
  if (!sinks.empty())
    attrs.push_back(b.getNamedAttr("sinks", b.getDenseF32ArrayAttr(sinks)));
  return attrs;
}

/// x[..., lo:hi] on the last axis.
Value Raiser::sliceLast(OpBuilder &b, Location loc, Value x, int64_t lo, int64_t hi) {
  return create<OnnxSliceOp>(b, loc,
                             {x, i64Constant(b, loc, {lo}), i64Constant(b, loc, {hi}),
                              i64Constant(b, loc, {-1}), i64Constant(b, loc, {1})});
}

/// Size `d` of `x` as an i64 scalar.
Value Raiser::sizeOf(OpBuilder &b, Location loc, Value x, int64_t d) {
  Value shape = create<OnnxShapeOp>(b, loc, {x});
  return create<OnnxGatherOp>(b, loc, {shape, i64Constant(b, loc, {d}, /*scalar=*/true)});
}

/// `value` once lhs == rhs holds at run time (llm.assert_equal).
Value Raiser::assertEqual(OpBuilder &b, Location loc, Value value, Value lhs, Value rhs,
                  StringRef message) {
  return create<AssertEqualOp>(b, loc, {value, lhs, rhs},
                               {b.getNamedAttr("message", b.getStringAttr(message))});
}

/// Present = past ++ new in [B, H, T, D]; the attention's [B, T, H, D].
std::pair<Value, Value> Raiser::appendToCache(OpBuilder &b, Location loc, Value past,
                                              Value newBshd) {
  auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}));
  Value present = create<OnnxTransposeOp>(b, loc, {newBshd}, {perm});
  if (past)
    present = create<OnnxConcatOp>(b, loc, {past, present},
                                   {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
  return {present, create<OnnxTransposeOp>(b, loc, {present}, {perm})};
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
void Raiser::raiseGroupQueryAttention(func::FuncOp func) {
  SmallVector<Operation *> ops = opsNamed(func, "ms.group_query_attention");
  for (Operation *g : ops) {
    auto operand = [&](unsigned i) { return optionalOperand(g, i); };
    bool unsupported = false;
    for (unsigned i = 10; i < g->getNumOperands(); ++i)
      unsupported |= i != 11 && bool(operand(i)); // bias, quantized caches, q/k norms
    int64_t nq = intAttrOr(g, "num_heads", 0), nkv = intAttrOr(g, "kv_num_heads", 0);
    // head_sink (a constant logit per head), or smooth_softmax's zeros.
    std::vector<float> sinks;
    if (Value sink = operand(11)) {
      std::optional<cpu::Tensor> t = constantOf(sink);
      std::optional<std::vector<double>> values = t ? floatsOf(*t) : std::nullopt;
      if (!values || int64_t(values->size()) != nq ||
          !llvm::all_of(*values, [](double v) { return std::isfinite(v); }))
        continue;
      sinks.assign(values->begin(), values->end());
    } else if (intAttrOr(g, "smooth_softmax", -1) > 0 && nq > 0) {
      sinks.assign(size_t(nq), 0.0f);
    }
    bool windowCache = intAttrOr(g, "sliding_window_cache", 0) != 0;
    int64_t window = intAttrOr(g, "local_window_size", -1);
    if (unsupported || intAttrOr(g, "causal", 1) != 1 || (windowCache && window <= 0) ||
        (g->getNumResults() > 3 && !g->getResult(3).use_empty()))
      continue;
    Value query = operand(0), key = operand(1), value = operand(2), pastK = operand(3),
          pastV = operand(4), seqlens = operand(5), total = operand(6), cosC = operand(7),
          sinC = operand(8), positionIds = operand(9);
    if (windowCache && !pastK)
      continue;
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
                       floatAttrOr(g, "softcap", 0.0), sinks));
    Value out = create<OnnxReshapeOp>(b, loc, {o, i64Constant(b, loc, {0, 0, nq * d})});
    // A window-sized cache's present (its evictions) stays the op's own:
    // llmc's cache replaces it (and the op) in llmc-insert-kv-cache.
    if (windowCache)
      replaceResults(g, {out});
    else
      replaceResults(g, {out, presentK, presentV});
  }
}

//===----------------------------------------------------------------------===//
// Older onnxruntime contrib forms (RotaryEmbedding, MultiHeadAttention,
// Attention, EmbedLayerNormalization)
//===----------------------------------------------------------------------===//

/// com.microsoft RotaryEmbedding on [B, S, hidden] with [B, S] positions
/// (or one offset) and constant caches -> llm.rope on [B, S, N, D].
void Raiser::raiseContribRotary(func::FuncOp func) {
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

/// com.microsoft MultiHeadAttention with q, k, v [B, S, N * D], BNSH past
/// and an optional additive attention_bias -> llm.attention (the bias as
/// its mask: simplifyMasks may then find it causal).
void Raiser::raiseMultiHeadAttention(func::FuncOp func) {
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
void Raiser::raiseContribAttention(func::FuncOp func) {
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
void Raiser::raiseEmbedLayerNorm(func::FuncOp func) {
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

//===----------------------------------------------------------------------===//
// ONNX RotaryEmbedding and Attention (opsets 23+)
//===----------------------------------------------------------------------===//

/// RotaryEmbedding -> llm.rope on [B, S, N, D] (from [B, N, S, D] or
/// [B, S, N * D] with num_heads), in either form of its caches: constant
/// [max_pos, R/2] tables with position ids, or (no position ids) cos/sin
/// already per position, [B, S, R/2], gathered from such tables or
/// computed in the graph from the positions: those are tabulated over the
/// positions they come from.
void Raiser::raiseOnnxRotary(func::FuncOp func) {
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

/// ONNX Attention without padded lengths or windows: past ++ new keys
/// (its present outputs), causal from is_causal, its mask, scale and
/// softcap -> llm.attention on [B, S, H, D].
void Raiser::raiseOnnxAttention(func::FuncOp func) {
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
std::optional<std::array<Value, 3>> Raiser::matchCacheScatter(Value x) {
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
void Raiser::raiseOnnxStaticCacheAttention(func::FuncOp func) {
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
