//===- LLMTransformerOps.td - transformer-level operations -*- tablegen -*-===//
//
// The operations that llmc-raise-transformer recognises in graph-level IR.
// Their semantics and layouts are defined here (not by ONNX). Activations
// use the [batch, seq, heads, head_dim] (BSHD) layout; weights the PyTorch
// [out_features, in_features] layout.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMTRANSFORMEROPS_TD
#define LLMC_DIALECTS_LLM_IR_LLMTRANSFORMEROPS_TD

def LLM_EmbeddingOp : LLM_InferredOp<"embedding"> {
  let summary = "token embedding lookup";
  let description = [{
    `table` is [vocab, hidden]; `ids` (i32/i64) of any shape; the result is
    ids.shape + [hidden]. An id outside [0, vocab) is an error at run time.

    ```mlir
    %h = llm.embedding %table, %ids : (tensor<32000x4096xf16>, tensor<?x?xi64>) -> tensor<?x?x4096xf16>
    ```
  }];
  let arguments = (ins LLM_FloatTensor:$table, LLM_IndexTensor:$ids);
  let results = (outs LLM_FloatTensor:$output);
}

def LLM_QuantizedEmbeddingOp : LLM_InferredOp<"quantized_embedding"> {
  let summary = "token embedding lookup in a table of 4- or 8-bit values";
  let description = [{
    `table` (ui8) is [vocab, G, group_size * bits / 8]: row v's hidden
    values in order, two per byte at 4 bits (low nibble first), the layout
    of llm.quantized_linear's weight; `scales` [vocab, G] (its element type
    is the result's); `zero_points` [vocab, G] (ui8) or none
    (2^(bits-1)). The result is ids.shape + [G * group_size]:
    (q - zp) * scale of the rows the ids name; only those rows are read. An
    id outside [0, vocab) is an error at run time.

    ```mlir
    %h = llm.quantized_embedding %q, %s, %none, %ids {bits = 4, group_size = 32}
        : (tensor<32000x128x16xui8>, tensor<32000x128xf16>, none, tensor<1x?xi64>) -> tensor<1x?x4096xf16>
    ```
  }];
  let arguments = (ins TensorOf<[UI8]>:$table, LLM_FloatTensor:$scales,
                   LLM_OptTensor:$zero_points, LLM_IndexTensor:$ids,
                   LLM_I64Attr:$bits, LLM_I64Attr:$group_size);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

def LLM_RmsNormOp : LLM_InferredOp<"rms_norm"> {
  let summary = "RMS normalisation over the last dimension";
  let description = [{
    y = x / sqrt(mean(x^2) + epsilon) * (weight + weight_offset), computed in
    f32; `weight` is [hidden]. `weight_offset = 1` expresses Gemma's
    (1 + w) scaling.

    ```mlir
    %y = llm.rms_norm %x, %w {epsilon = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins LLM_FloatTensor:$x, LLM_FloatTensor:$weight,
                   DefaultValuedAttr<F32Attr, "1.0e-06">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.0">:$weight_offset);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_LayerNormOp : LLM_InferredOp<"layer_norm"> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    y = (x - mean(x)) / sqrt(var(x) + epsilon) * weight + bias, computed in
    f32; `weight` and `bias` (optional) are [hidden].
  }];
  let arguments = (ins LLM_FloatTensor:$x, LLM_FloatTensor:$weight,
                   LLM_OptFloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_RopeOp : LLM_InferredOp<"rope"> {
  let summary = "rotary position embedding";
  let description = [{
    `x` is [B, S, N, D]; `cos` and `sin` are [max_pos, R/2] tables with
    R = `rotary_dim` (0 means D) and `positions` [B, S] (or [1, S], shared
    by the batch) holds each token's position, which must lie in the tables.
    The first R channels of every head are rotated: pairs (i, i + R/2) when
    `interleaved = false` (GPT-NeoX / Llama half rotation), pairs (2i, 2i + 1)
    when true (GPT-J); channels [R, D) pass through:

      out1 = x1 * cos[p, i] - x2 * sin[p, i]
      out2 = x2 * cos[p, i] + x1 * sin[p, i]
  }];
  let arguments = (ins LLM_FloatTensor:$x, LLM_FloatTensor:$cos, LLM_FloatTensor:$sin,
                   LLM_IndexTensor:$positions,
                   DefaultValuedAttr<BoolAttr, "false">:$interleaved,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$rotary_dim);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_AttentionOp : LLM_InferredOp<"attention"> {
  let summary = "scaled dot-product attention (MHA, GQA, MQA)";
  let description = [{
    `q` is [B, Sq, Hq, D], `k` [B, Skv, Hkv, D], `v` [B, Skv, Hkv, Dv]; the
    result is [B, Sq, Hq, Dv]. Query head h reads key/value head
    h / (Hq / Hkv). Scores are `scale` * q.k, then `softcap` * tanh(s /
    softcap) when softcap > 0, then the optional `mask` (rank 2 to 4,
    broadcast to [B, Hq, Sq, Skv]) is applied (i1: false removes the key;
    float: added), then softmax over the keys in f32.

    Query i sits at absolute position Skv - Sq + i (keys are the whole
    sequence so far). `causal` removes keys after that position; `window`
    > 0 also removes keys at or before position - window (sliding window of
    `window` keys); both need Sq <= Skv, attention without them (cross
    attention) does not. A query with no key left yields zeros.

    `sinks` (optional, one finite f32 logit per query head: gpt-oss's
    attention sinks; onnxruntime's head_sink, or zeros for its
    smooth_softmax) take part in each row's softmax as one more score that
    has no value: the row's weights are exp(s_j - m) / (sum_j exp(s_j - m)
    + exp(sink_h - m)), so they sum to less than one. The sink is compared
    with the scores after scale, softcap and mask. A query with no key left
    still yields zeros.

    ```mlir
    %o = llm.attention %q, %k, %v, %none {num_heads = 32, num_kv_heads = 8, causal = true, scale = 0.0883883461 : f32}
        : (tensor<1x?x32x128xf16>, tensor<1x?x8x128xf16>, tensor<1x?x8x128xf16>, none) -> tensor<1x?x32x128xf16>
    ```
  }];
  let arguments = (ins LLM_FloatTensor:$q, LLM_FloatTensor:$k, LLM_FloatTensor:$v,
                   LLM_OptTensor:$mask,
                   LLM_I64Attr:$num_heads, LLM_I64Attr:$num_kv_heads,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$window,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$sinks);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

def LLM_LinearOp : LLM_InferredOp<"linear"> {
  let summary = "x W^T (+ b)";
  let description = [{
    `x` is [..., K], `weight` [N, K], `bias` (optional) [N]; the result is
    [..., N], accumulated in f32.
  }];
  let arguments = (ins LLM_FloatTensor:$x, LLM_FloatTensor:$weight,
                   LLM_OptFloatTensor:$bias);
  let results = (outs LLM_FloatTensor:$output);
}

def LLM_QuantizedLinearOp : LLM_InferredOp<"quantized_linear"> {
  let summary = "x dequant(W)^T (+ b), W stored as 4- or 8-bit integers";
  let description = [{
    `x` is [..., K]; `weight` (ui8) is [N, G, group_size * bits / 8] with
    G = ceil(K / group_size): the quantized values q of row n, group g, in
    order along K, low bits first (two per byte for 4 bits, the layout of
    com.microsoft MatMulNBits); values past K are ignored. `scales` [N, G]
    (any float type); `zero_points` [N, G] (ui8, one value per byte) or none
    (then 2^(bits-1): symmetric). W[n, k] = (q[n, k] - zp[n, g]) * scales[n, g]
    with g = k / group_size. The result is [..., N] of x's element type,
    accumulated in f32. With `int8_activations` a kernel may round x to int8
    in blocks of 32 values (a scale per block) and use integer dot products;
    without it x is used as it is.

    ```mlir
    %y = llm.quantized_linear %x, %q, %s, %none, %none {bits = 4, group_size = 32}
        : (tensor<1x?x4096xf16>, tensor<11008x128x16xui8>, tensor<11008x128xf32>, none, none) -> tensor<1x?x11008xf16>
    ```
  }];
  let arguments = (ins LLM_FloatTensor:$x, TensorOf<[UI8]>:$weight, LLM_FloatTensor:$scales,
                   LLM_OptTensor:$zero_points, LLM_OptFloatTensor:$bias,
                   LLM_I64Attr:$bits, LLM_I64Attr:$group_size,
                   DefaultValuedAttr<BoolAttr, "false">:$int8_activations);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

def LLM_GeluOp : LLM_InferredOp<"gelu"> {
  let summary = "GELU activation (erf or tanh approximation)";
  let arguments = (ins LLM_FloatTensor:$x,
                   DefaultValuedAttr<BoolAttr, "false">:$approximate_tanh);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_SiluOp : LLM_InferredOp<"silu"> {
  let summary = "SiLU activation: x * sigmoid(x)";
  let arguments = (ins LLM_FloatTensor:$x);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_ReluOp : LLM_InferredOp<"relu"> {
  let summary = "ReLU activation, or its square (squared ReLU)";
  let description = [{
    max(x, 0), or max(x, 0)^2 when `squared` (the MLP activation of
    Primer and Nemotron-style models).
  }];
  let arguments = (ins LLM_FloatTensor:$x, DefaultValuedAttr<BoolAttr, "false">:$squared);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_SwigluOp : LLM_InferredOp<"swiglu"> {
  let summary = "SwiGLU gate: silu(gate) * up";
  let arguments = (ins LLM_FloatTensor:$gate, LLM_FloatTensor:$up);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_AssertEqualOp : LLM_Op<"assert_equal", [InferTypeOpAdaptorWithIsCompatible,
                                                 MemoryEffects<[MemWrite]>]> {
  let summary = "run-time check that two integer tensors are equal";
  let description = [{
    Returns `value` unchanged after checking that `lhs` and `rhs` (integer
    tensors of one size, or one of them a single element) are equal element
    by element; otherwise execution stops with an error that starts with
    `message`. Rewrites that are exact only for inputs keeping a protocol
    (onnxruntime-genai's `seqlens_k`, for instance) state it with this op,
    so an input outside the protocol is refused rather than computed
    differently. It has an effect, so it is never removed as dead.

    ```mlir
    %p = llm.assert_equal %start, %start, %past_len {message = "seqlens_k + 1 - S must equal the past length"}
        : (tensor<?xi64>, tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins LLM_Tensor:$value, LLM_IndexTensor:$lhs, LLM_IndexTensor:$rhs,
                   StrAttr:$message);
  let results = (outs LLM_Tensor:$output);
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
      return ::mlir::llmc::areCompatibleReturnTypes(l, r);
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      types.push_back(adaptor.getValue().getType());
      return ::mlir::success();
    }
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// The static KV cache (llmc-insert-kv-cache)
//===----------------------------------------------------------------------===//

def LLM_CacheUpdateOp : LLM_InferredOp<"cache_update"> {
  let summary = "write new keys or values into a static cache";
  let description = [{
    `cache` is [B, H, M, D] (M: the capacity chosen at compile time),
    `update` [B, H, S, D] and `pos` an i64 scalar: the result is `cache` with
    rows pos .. pos + S - 1 of every (batch, head) replaced by `update`.
    pos < 0 or pos + S > M is an error. Memory planning makes it in place.

    ```mlir
    %k1 = llm.cache_update %k0, %new, %pos : (tensor<1x8x4096x128xf16>, tensor<1x8x?x128xf16>, tensor<i64>) -> tensor<1x8x4096x128xf16>
    ```
  }];
  let arguments = (ins LLM_FloatTensor:$cache, LLM_FloatTensor:$update, LLM_I64Tensor:$pos);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_QuantizedCacheUpdateOp : LLM_Op<"quantized_cache_update",
    [Pure, InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "write new keys or values into a static int8 cache";
  let description = [{
    llm.cache_update for a cache of int8 values with one f32 scale per row
    (per batch, head and position): `cache` is [B, H, M, D] (i8), `scales`
    [B, H, M, 1] (f32), `update` [B, H, S, D] (any float type) and `pos` an
    i64 scalar. Each new row u (in f32) is stored as s = max|u| / 127 and
    q = round_half_even(u / s) (all zeros, s = 0, for a row of zeros); the
    results are `cache` and `scales` with rows pos .. pos + S - 1 replaced.
    A row reads back as q * s. pos < 0 or pos + S > M is an error. Memory
    planning makes both in place.

    ```mlir
    %k1, %ks1 = llm.quantized_cache_update %k0, %ks0, %new, %pos : (tensor<1x8x4096x128xi8>, tensor<1x8x4096x1xf32>, tensor<1x8x?x128xf16>, tensor<i64>) -> (tensor<1x8x4096x128xi8>, tensor<1x8x4096x1xf32>)
    ```
  }];
  let arguments = (ins TensorOf<[I8]>:$cache, TensorOf<[F32]>:$scales,
                   LLM_FloatTensor:$update, LLM_I64Tensor:$pos);
  let results = (outs TensorOf<[I8]>:$output, TensorOf<[F32]>:$output_scales);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
      return ::mlir::llmc::areCompatibleReturnTypes(l, r);
    }
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def LLM_CacheReadOp : LLM_InferredOp<"cache_read"> {
  let summary = "the first rows of a static cache";
  let description = [{
    Rows 0 .. `length` - 1 of a [B, H, M, D] cache: [B, H, length, D].
    `length` > M is an error.
  }];
  let arguments = (ins LLM_FloatTensor:$cache, LLM_I64Tensor:$length);
  let results = (outs LLM_FloatTensor:$output);
}

def LLM_CachedAttentionOp : LLM_InferredOp<"cached_attention"> {
  let summary = "attention of new queries over a static KV cache";
  let description = [{
    `q` is [B, S, Hq, D], `k_cache` [B, Hkv, M, D], `v_cache` [B, Hkv, M, Dv],
    `pos` an i64 scalar: the queries are the tokens at positions pos ..
    pos + S - 1 and the keys are cache rows 0 .. pos + S - 1 (written before,
    by llm.cache_update). Otherwise as llm.attention: query head h reads kv
    head h / (Hq / Hkv), scale, softcap, `causal` and `window` relative to
    the query's position, and its `sinks`. The result is [B, S, Hq, Dv].
    pos + S > M is an error. With `kv_scales` (k_scales, v_scales: [B, Hkv, M, 1] f32) the
    caches hold int8 (llm.quantized_cache_update): row j reads as
    cache[.., j, :] * scales[.., j, 0]; the flash forms take them the same
    way.
  }];
  let arguments = (ins LLM_FloatTensor:$q, LLM_CacheTensor:$k_cache,
                   LLM_CacheTensor:$v_cache, LLM_I64Tensor:$pos,
                   LLM_I64Attr:$num_heads, LLM_I64Attr:$num_kv_heads,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$window,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$sinks,
                   Variadic<TensorOf<[F32]>>:$kv_scales);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Flash forms (llmc-attention-to-flash)
//===----------------------------------------------------------------------===//

def LLM_FlashAttentionOp : LLM_InferredOp<"flash_attention"> {
  let summary = "cached attention as tiled online softmax (prefill)";
  let description = [{
    What llm.cached_attention computes, by the flash algorithm: for each
    block of `block_q` queries, the keys are visited in blocks of `block_k`
    (blocks wholly outside the causal range or the window are skipped), each
    block's scores update a running maximum, sum and weighted value
    accumulator in f32, and the result is the accumulator over the sum
    (plus exp(sink - maximum) with `sinks`). No more than block_q x block_k
    scores exist at once.
  }];
  let arguments = (ins LLM_FloatTensor:$q, LLM_CacheTensor:$k_cache,
                   LLM_CacheTensor:$v_cache, LLM_I64Tensor:$pos,
                   LLM_I64Attr:$num_heads, LLM_I64Attr:$num_kv_heads,
                   DefaultValuedAttr<BoolAttr, "true">:$causal,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$window,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<LLM_I64Attr, "64">:$block_q,
                   DefaultValuedAttr<LLM_I64Attr, "64">:$block_k,
                   OptionalAttr<DenseF32ArrayAttr>:$sinks,
                   Variadic<TensorOf<[F32]>>:$kv_scales);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

def LLM_DecodeAttentionPartialOp : LLM_Op<"decode_attention_partial",
    [Pure, InferTypeOpAdaptorWithIsCompatible]> {
  let summary = "split-KV attention of one new token: partial results per split";
  let description = [{
    `q` is [B, 1, Hq, D] at position `pos`; keys 0 .. pos (cache rows) are
    cut into at most `num_splits` contiguous chunks and each chunk's
    attention is computed alone: `partial` [B, num_splits, Hq, Dv] (the
    chunk's softmax-weighted values) and `lse` [B, num_splits, Hq] (the log
    of its softmax denominator, with its maximum; -inf and zeros for an empty
    chunk), both f32. llm.attention_combine merges them; the merged result
    does not depend on the cut, which is the target's: the CPU's chunks hold
    ceil((pos + 1) / num_splits) keys, the CUDA kernel's that rounded up to
    a whole number of its 32-key tiles (so a short context leaves the last
    splits empty rather than running many near-empty blocks).
  }];
  let arguments = (ins LLM_FloatTensor:$q, LLM_CacheTensor:$k_cache,
                   LLM_CacheTensor:$v_cache, LLM_I64Tensor:$pos,
                   LLM_I64Attr:$num_heads, LLM_I64Attr:$num_kv_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$window,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   LLM_I64Attr:$num_splits,
                   Variadic<TensorOf<[F32]>>:$kv_scales);
  let results = (outs TensorOf<[F32]>:$partial, TensorOf<[F32]>:$lse);
  let hasVerifier = 1;
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
      return ::mlir::llmc::areCompatibleReturnTypes(l, r);
    }
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def LLM_AttentionCombineOp : LLM_InferredOp<"attention_combine"> {
  let summary = "merge split-KV partial attention results";
  let description = [{
    out[b, 0, h] = sum_s exp(lse[b, s, h] - L) * partial[b, s, h] with
    L = log sum_s exp(lse[b, s, h]): the attention over all splits' keys.
    With `sinks` (llm.attention's, one per head; the partial results never
    include them) L also sums exp(sinks[h]): L = log(sum_s exp(lse[b, s, h])
    + exp(sinks[h])). The result is [B, 1, Hq, Dv] in f32.
  }];
  let arguments = (ins TensorOf<[F32]>:$partial, TensorOf<[F32]>:$lse,
                   OptionalAttr<DenseF32ArrayAttr>:$sinks);
  let results = (outs TensorOf<[F32]>:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion (llmc-fuse)
//===----------------------------------------------------------------------===//

def LLM_FusedOp : LLM_Op<"fused", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"::mlir::llmc::YieldOp">]> {
  let summary = "operations that run as one kernel";
  let description = [{
    The region's operations (its block arguments are `inputs`, its yield
    gives `outputs`) are one kernel of the generated code: intermediate
    values stay in registers or cache instead of memory. `kind` names the
    fusion ("norm_qkv_rope_cache", "attention", "linear_residual",
    "norm_gated_mlp", "elementwise"). Its meaning is the region's: the
    reference executor runs the operations inside in order.

    ```mlir
    %y = llm.fused "linear_residual" (%x, %w, %r) : (tensor<1x1x64xf32>, tensor<64x64xf32>, tensor<1x1x64xf32>) -> tensor<1x1x64xf32> {
    ^bb0(%a: tensor<1x1x64xf32>, %b: tensor<64x64xf32>, %c: tensor<1x1x64xf32>):
      %none = llm.none
      %0 = llm.linear %a, %b, %none : (tensor<1x1x64xf32>, tensor<64x64xf32>, none) -> tensor<1x1x64xf32>
      %1 = llm.onnx.add %0, %c : (tensor<1x1x64xf32>, tensor<1x1x64xf32>) -> tensor<1x1x64xf32>
      llm.yield %1 : tensor<1x1x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$kind);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body";
  let hasVerifier = 1;
}

def LLM_YieldOp : LLM_Op<"yield", [Pure, Terminator, HasParent<"::mlir::llmc::FusedOp">]> {
  let summary = "the results of an llm.fused region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

#endif // LLMC_DIALECTS_LLM_IR_LLMTRANSFORMEROPS_TD
