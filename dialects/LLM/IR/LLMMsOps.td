//===- LLMMsOps.td - onnxruntime com.microsoft operators --*- tablegen -*-===//
//
// One operation per onnxruntime contrib operator that LLM exports use
// (onnxruntime.transformers fusions and the onnxruntime-genai model builder).
// Semantics follow onnxruntime's ContribOperators documentation; inputs keep
// their documented order, so newer optional inputs are appended.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMMSOPS_TD
#define LLMC_DIALECTS_LLM_IR_LLMMSOPS_TD

def LLM_MsAttentionOp : LLM_MsOp<"attention"> {
  let summary = "com.microsoft Attention: fused QKV projection + attention";
  let description = [{
    `input` [B, S, Hin] is projected by `weights` [Hin, Hq + Hk + Hv] (+ `bias`)
    into Q, K and V (sizes from `qkv_hidden_sizes`, or three equal parts),
    split into `num_heads` heads. `past` is [2, B, N, P, h] (K then V); the
    present state is [2, B, N, P + S, h]. `unidirectional = 1` applies a
    causal mask aligned to the end of the key sequence. `mask_index` is a
    raw 0/1 mask ([B, T] or [B, S, T]) or one of the index forms of the
    contrib spec; masked scores get `mask_filter_value` (default -10000).
    Output is [B, S, Hv].
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$weights,
                   LLM_OptFloatTensor:$bias, LLM_OptIndexTensor:$mask_index,
                   LLM_OptFloatTensor:$past, LLM_OptFloatTensor:$attention_bias,
                   LLM_OptIndexTensor:$past_sequence_length,
                   LLM_I64Attr:$num_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$unidirectional,
                   OptionalAttr<F32Attr>:$scale,
                   OptionalAttr<F32Attr>:$mask_filter_value,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$do_rotary,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$past_present_share_buffer,
                   OptionalAttr<DenseI64ArrayAttr>:$qkv_hidden_sizes,
                   OptionalAttr<LLM_I64Attr>:$rotary_embedding_dim);
  let results = (outs LLM_FloatTensor:$output, LLM_FloatTensor:$present);
  let hasVerifier = 1;
}

def LLM_MsMultiHeadAttentionOp : LLM_MsOp<"multi_head_attention"> {
  let summary = "com.microsoft MultiHeadAttention";
  let description = [{
    Self or cross attention over already-projected Q, K, V ([B, S, N*h] and
    [B, L, N*h]; packed QKV [B, S, N, 3, h] and packed KV [B, L, N, 2, h], or
    K/V given directly as [B, N, L, h]). `bias` adds the projection bias.
    `key_padding_mask` is [B], [3B + 2], [B, L], [B, T] or [B, S, T] (0 =
    padding). `attention_bias` is added to the scaled scores. `past_key` /
    `past_value` [B, N, P, h] are concatenated with the new K/V to give the
    present state. `unidirectional = 1` masks future keys (aligned to the end).
  }];
  let arguments = (ins LLM_FloatTensor:$query, LLM_OptFloatTensor:$key,
                   LLM_OptFloatTensor:$value, LLM_OptFloatTensor:$bias,
                   LLM_OptIndexTensor:$key_padding_mask,
                   LLM_OptFloatTensor:$attention_bias,
                   LLM_OptFloatTensor:$past_key, LLM_OptFloatTensor:$past_value,
                   LLM_OptIndexTensor:$past_sequence_length,
                   LLM_OptIndexTensor:$cache_indirection,
                   LLM_I64Attr:$num_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$unidirectional,
                   OptionalAttr<F32Attr>:$scale,
                   OptionalAttr<F32Attr>:$mask_filter_value);
  let results = (outs LLM_FloatTensor:$output, LLM_FloatTensor:$present_key,
                 LLM_FloatTensor:$present_value, LLM_FloatTensor:$qk);
  let hasVerifier = 1;
}

def LLM_MsGroupQueryAttentionOp : LLM_MsOp<"group_query_attention"> {
  let summary = "com.microsoft GroupQueryAttention";
  let description = [{
    Grouped-query attention with a BNSH KV cache. `query` is [B, S, Nq*h] (or
    packed QKV [B, S, (Nq + 2 Nkv) h] when key/value are none); key/value are
    [B, S, Nkv*h]. `past_key`/`past_value` [B, Nkv, P, h] hold the cache;
    `seqlens_k[b]` is the total length of entry b minus one and
    `total_sequence_length` the batch maximum. New keys are written at
    positions [seqlens_k[b] + 1 - S, seqlens_k[b] + 1). `do_rotary` applies
    rotary embedding to Q and K from `cos_cache`/`sin_cache`. `causal`,
    `local_window_size`, `softcap`, `attention_bias`, `head_sink` and
    `smooth_softmax` follow the contrib spec. With `sliding_window_cache`
    the past and present are buffers of C >= local_window_size rows holding
    the most recent positions from row 0 (the oldest C - W + 1 rows are
    dropped at a time when new ones do not fit). Quantized caches and
    per-head Q/K norms are represented but rejected by the importer's
    support check.
  }];
  let arguments = (ins LLM_FloatTensor:$query, LLM_OptFloatTensor:$key,
                   LLM_OptFloatTensor:$value, LLM_OptTensor:$past_key,
                   LLM_OptTensor:$past_value, LLM_IndexTensor:$seqlens_k,
                   LLM_IndexTensor:$total_sequence_length,
                   LLM_OptFloatTensor:$cos_cache, LLM_OptFloatTensor:$sin_cache,
                   LLM_OptI64Tensor:$position_ids, LLM_OptFloatTensor:$attention_bias,
                   LLM_OptFloatTensor:$head_sink, LLM_OptTensor:$k_scale,
                   LLM_OptTensor:$v_scale, LLM_OptFloatTensor:$q_norm_weight,
                   LLM_OptFloatTensor:$k_norm_weight, LLM_OptIndexTensor:$query_seqlens,
                   LLM_I64Attr:$num_heads, LLM_I64Attr:$kv_num_heads,
                   OptionalAttr<F32Attr>:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$local_window_size,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$do_rotary,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$rotary_interleaved,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$smooth_softmax,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$qk_output,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$causal,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$sliding_window_cache,
                   DefaultValuedAttr<StrAttr, "\"NONE\"">:$k_quant_type,
                   DefaultValuedAttr<StrAttr, "\"NONE\"">:$v_quant_type,
                   OptionalAttr<LLM_I64Attr>:$kv_cache_bit_width,
                   DefaultValuedAttr<F32Attr, "1.0e-06">:$qk_norm_epsilon,
                   OptionalAttr<F32Attr>:$q_norm_epsilon,
                   OptionalAttr<F32Attr>:$k_norm_epsilon);
  let results = (outs LLM_FloatTensor:$output, LLM_Tensor:$present_key,
                 LLM_Tensor:$present_value, LLM_FloatTensor:$output_qk);
  let hasVerifier = 1;
}

def LLM_MsRotaryEmbeddingOp : LLM_MsOp<"rotary_embedding"> {
  let summary = "com.microsoft RotaryEmbedding";
  let description = [{
    `input` is [B, S, N*h] or [B, N, S, h]; `position_ids` is [B, S] or [1]
    (a start offset: position of token s is offset + s); caches are
    [max_pos, R/2]. R is `rotary_embedding_dim` (0: the head size, or
    cache width * 2). Non-interleaved rotation pairs x[i] with x[i + R/2];
    interleaved pairs x[2i] with x[2i + 1].
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_IndexTensor:$position_ids,
                   LLM_FloatTensor:$cos_cache, LLM_FloatTensor:$sin_cache,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$num_heads,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$rotary_embedding_dim,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$interleaved,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$is_packed_batching,
                   DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs LLM_FloatTensor:$output);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_MsSkipLayerNormalizationOp : LLM_MsOp<"skip_layer_normalization"> {
  let summary = "com.microsoft SkipLayerNormalization";
  let description = [{
    s = input + skip (+ bias); output = LayerNorm(s) * gamma (+ beta) over the
    last dimension. `input_skip_bias_sum` is s; `mean` and `inv_std_var` are
    [.., 1] statistics in f32.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$skip,
                   LLM_FloatTensor:$gamma, LLM_OptFloatTensor:$beta,
                   LLM_OptFloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-12">:$epsilon);
  let results = (outs LLM_FloatTensor:$output, LLM_FloatTensor:$mean,
                 LLM_FloatTensor:$inv_std_var, LLM_FloatTensor:$input_skip_bias_sum);
}

def LLM_MsSkipSimplifiedLayerNormalizationOp
    : LLM_MsOp<"skip_simplified_layer_normalization"> {
  let summary = "com.microsoft SkipSimplifiedLayerNormalization (skip + RMS norm)";
  let description = [{
    s = input + skip (+ bias); output = s / sqrt(mean(s^2) + epsilon) * gamma
    over the last dimension; `input_skip_bias_sum` is s.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$skip,
                   LLM_FloatTensor:$gamma, LLM_OptFloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-12">:$epsilon);
  let results = (outs LLM_FloatTensor:$output, LLM_FloatTensor:$mean,
                 LLM_FloatTensor:$inv_std_var, LLM_FloatTensor:$input_skip_bias_sum);
}

def LLM_MsSimplifiedLayerNormalizationOp
    : LLM_MsOp<"simplified_layer_normalization"> {
  let summary = "SimplifiedLayerNormalization (RMS norm; default and com.microsoft domains)";
  let description = [{
    Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale, statistics in
    the `stash_type` precision; onnxruntime registers it in the default
    domain, exporters use both.
  }];
  let arguments = (ins LLM_FloatTensor:$X, LLM_FloatTensor:$scale,
                   DefaultValuedAttr<LLM_I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-05">:$epsilon,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$stash_type);
  let results = (outs LLM_FloatTensor:$Y, LLM_FloatTensor:$inv_std_var);
}

def LLM_MsFastGeluOp : LLM_MsOp<"fast_gelu"> {
  let summary = "com.microsoft FastGelu: tanh-approximated GELU of X (+ bias)";
  let arguments = (ins LLM_FloatTensor:$X, LLM_OptFloatTensor:$bias);
  let results = (outs LLM_FloatTensor:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_MsBiasGeluOp : LLM_MsOp<"bias_gelu"> {
  let summary = "com.microsoft BiasGelu: erf GELU of A + B (B is 1-D)";
  let arguments = (ins LLM_FloatTensor:$A, LLM_FloatTensor:$B);
  let results = (outs LLM_FloatTensor:$C);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
  let hasVerifier = 1;
}

def LLM_MsQuickGeluOp : LLM_MsOp<"quick_gelu"> {
  let summary = "com.microsoft QuickGelu: x * sigmoid(alpha x)";
  let arguments = (ins LLM_FloatTensor:$X, DefaultValuedAttr<F32Attr, "1.702">:$alpha);
  let results = (outs LLM_FloatTensor:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

def LLM_MsEmbedLayerNormalizationOp : LLM_MsOp<"embed_layer_normalization"> {
  let summary = "com.microsoft EmbedLayerNormalization";
  let description = [{
    embedding_sum = word_embedding[input_ids] + position_embedding[position_ids
    or 0..S-1] (+ segment_embedding[segment_ids]); output = LayerNorm over the
    last dimension with gamma and beta. `mask_index` is the number of ones in
    each row of `mask` (zeros without a mask), i32 [B].
  }];
  let arguments = (ins LLM_IndexTensor:$input_ids, LLM_OptIndexTensor:$segment_ids,
                   LLM_FloatTensor:$word_embedding, LLM_FloatTensor:$position_embedding,
                   LLM_OptFloatTensor:$segment_embedding, LLM_FloatTensor:$gamma,
                   LLM_FloatTensor:$beta, LLM_OptIndexTensor:$mask,
                   LLM_OptIndexTensor:$position_ids,
                   DefaultValuedAttr<F32Attr, "1.0e-12">:$epsilon,
                   OptionalAttr<LLM_I64Attr>:$mask_index_type);
  let results = (outs LLM_FloatTensor:$output, LLM_IndexTensor:$mask_index,
                 LLM_FloatTensor:$embedding_sum);
}

def LLM_MsMatMulNBitsOp : LLM_MsOp<"matmul_nbits"> {
  let summary = "com.microsoft MatMulNBits: A x dequant(B)^T, B block-quantized";
  let description = [{
    B is uint8 [N, ceil(K / block_size), block_size * bits / 8], packed along
    K, low bits first; `scales` [N, k_blocks] (or flat); `zero_points` packed
    uint8 [N, ceil(k_blocks * bits / 8)] or unpacked of A's type [N, k_blocks],
    default 2^(bits-1). W[n, k] = (q[n, k] - zp[n, k / bs]) * scale[n, k / bs];
    Y = A W^T (+ bias), Y is A.shape[:-1] + [N]. The weights stay quantized.
  }];
  let arguments = (ins LLM_FloatTensor:$A, TensorOf<[UI8, I8]>:$B,
                   LLM_FloatTensor:$scales, LLM_OptTensor:$zero_points,
                   LLM_OptIndexTensor:$g_idx, LLM_OptFloatTensor:$bias,
                   LLM_I64Attr:$K, LLM_I64Attr:$N,
                   DefaultValuedAttr<LLM_I64Attr, "4">:$bits,
                   LLM_I64Attr:$block_size,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$accuracy_level,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$weight_prepacked);
  let results = (outs LLM_FloatTensor:$Y);
  let hasVerifier = 1;
}

def LLM_MsGatherBlockQuantizedOp : LLM_MsOp<"gather_block_quantized"> {
  let summary = "com.microsoft GatherBlockQuantized: gather rows of a block-quantized tensor";
  let description = [{
    `data` holds quantized values: uint8 packs 8 / bits values per byte along
    the flattened (row-major) order, low bits first, so its logical last
    dimension is 8 / bits times the stored one; int4/uint4 hold one value per
    element. `scales` (the output element type) has data's logical shape with
    `quantize_axis` divided into ceil(size / block_size) blocks;
    `zero_points` (optional) is laid out like the scales and packed like the
    data; without it the zero point is 2^(bits-1) for uint8 and 0 for
    int4/uint4. Output = Gather(dequant(data), indices, gather_axis), shape
    logical[:g] + indices.shape + logical[g+1:]; negative indices count from
    the end. Only the gathered rows are dequantized.
  }];
  let arguments = (ins TensorOf<[UI8, I<4>, UI<4>]>:$data, LLM_IndexTensor:$indices,
                   LLM_FloatTensor:$scales, LLM_OptTensor:$zero_points,
                   DefaultValuedAttr<LLM_I64Attr, "0">:$gather_axis,
                   DefaultValuedAttr<LLM_I64Attr, "1">:$quantize_axis,
                   DefaultValuedAttr<LLM_I64Attr, "128">:$block_size,
                   DefaultValuedAttr<LLM_I64Attr, "4">:$bits);
  let results = (outs LLM_FloatTensor:$output);
  let hasVerifier = 1;
}

#endif // LLMC_DIALECTS_LLM_IR_LLMMSOPS_TD
