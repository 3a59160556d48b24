//===- Passes.td - llmc passes --------------------------------*- tablegen -*-===//
#ifndef LLMC_PASSES_PASSES_TD
#define LLMC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Utility passes
//===----------------------------------------------------------------------===//

def InferShapesPass : Pass<"llmc-infer-shapes", "::mlir::func::FuncOp"> {
  let summary = "Refine the result types of llm operations by re-running inference";
  let description = [{
    Re-infers, in order, the result types of every operation that implements
    InferTypeOpInterface and keeps the more refined of the current and the
    inferred type (static sizes, dimension names); the function's result types
    follow its return. Use it after specialising a function's argument types
    (shape bucketing does) so static shapes reach every operation. A current
    type that conflicts with inference is an error.

    Before (argument specialised to batch 1, sequence 8):

    ```mlir
    func.func @main(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x64xf32> {
      %0 = llm.onnx.mul %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
      return %0 : tensor<?x?x64xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<1x8x64xf32> {
      %0 = llm.onnx.mul %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
      return %0 : tensor<1x8x64xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

//===----------------------------------------------------------------------===//
// Graph simplification
//===----------------------------------------------------------------------===//

def CanonicalizePass : Pass<"llmc-canonicalize", "::mlir::func::FuncOp"> {
  let summary = "Fold the shape computations of an export into constants and symbolic types";
  let description = [{
    Exports compute reshape targets, expand sizes, slice bounds and masks at
    run time from `Shape(x)` through Gather, Concat, Unsqueeze and integer
    arithmetic. This pass evaluates those small integer computations over
    symbols, one per dynamic dimension (the `#llm.dims` name where there is
    one), and repeats until nothing changes:

    * a value known exactly becomes an `llm.constant`;
    * a computed Reshape target becomes a constant spelled with 0 (the input's
      own dimension) and at most one -1, and the result keeps the dimension
      names the computation carried; a computed Expand shape becomes a
      constant with 1 where the size is the input's own; Slice ends equal to
      the sliced dimension become INT64_MAX;
    * an operation whose operands are all constants is evaluated with its own
      reference CPU kernel (so the folded value is what execution computes),
      when its results have at most 65536 elements;
    * Shape of a scalar expanded to a computed shape is that shape; a
      ReduceSum (static result) of an integer constant so expanded is the
      constant times the summed sizes (a mask of ones is then not read);
    * a Gather at a constant index from a Concat of static parts is the
      Gather from the part holding it (the scalar itself for an Unsqueezed
      scalar), and a Range of static length 1 is its start reshaped to [1];
    * Identity, casts to the same type, Expand by ones, Reshape to the same
      shape and inference-mode Dropout are removed;
    * an `llm.assert_equal` of two values an earlier one (dominating it)
      already checked (seen through the checks they passed) is removed: its
      result is the earlier check's where both pass one value on, else its
      own value (onnxruntime-genai's exports check the same sequence lengths
      in every layer);
    * with `unit-transposes` (the pipeline's run after bucketing, where
      shapes are static): a Transpose that keeps every axis of size above 1
      in its order (a decode step's `[B, 1, H, D]` to `[B, H, 1, D]`) moves
      no data and becomes a Reshape, which the code generators make a view
      (not one a cache update reads: the code generators fold that one into
      the cache write);
    * with `symbolic-values` (the same run): a small integer value the
      symbolic analysis knows that equals one before it, or an argument
      (start_pos), is that value (a Reshape of it where only the shape
      differs, an Expand of it where every element is that value), and an
      `llm.assert_equal` whose sides it shows equal is
      removed; integer adds and subtractions of zeros are removed in every
      run. onnxruntime-genai's past length, computed from the mask's sum
      through casts to i32 and back and checked in every layer, is then
      start_pos itself. (Not in the first run: the rewritten integer
      computations are what llmc-raise-transformer reads positions from.)
    * common subexpressions are merged, dead operations erased, and result
      types re-inferred (as `llmc-infer-shapes`).

    What stays symbolic (masks over the sequence length, positions) stays as
    operations. Before:

    ```mlir
    %s = llm.onnx.shape %x : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<3xi64>
    %i0 = llm.constant dense<0> : tensor<i64>
    %b = llm.onnx.gather %s, %i0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    ...
    %t = llm.onnx.concat %b1, %s1, %c4, %c16 {axis = 0 : i64} : (...) -> tensor<4xi64>
    %r = llm.onnx.reshape %x, %t : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
    ```

    After:

    ```mlir
    %t = llm.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
    %r = llm.onnx.reshape %x, %t : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<4xi64>) -> tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>
    ```
  }];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
  let options = [
    Option<"unitTransposes", "unit-transposes", "bool", /*default=*/"false",
           "Rewrite Transposes that only move axes of size 1 as Reshapes">,
    Option<"symbolicValues", "symbolic-values", "bool", /*default=*/"false",
           "Replace integer values the symbolic analysis shows equal to an earlier "
           "one (or to start_pos) by it, and remove checks it shows true">,
  ];
}

def RaiseTransformerPass : Pass<"llmc-raise-transformer", "::mlir::func::FuncOp"> {
  let summary = "Recognise norms, activations, linear layers and embeddings";
  let description = [{
    Rewrites the exporters' spellings of the transformer building blocks into
    llm ops (run after `llmc-canonicalize`):

    * `llm.rms_norm`: weight * (x * 1/sqrt(ReduceMean(x^2, -1) + eps)) with
      Pow or Mul squares and Reciprocal, Div(1, .) or Div(x, .);
      RMSNormalization and SimplifiedLayerNormalization over the last axis;
      SkipSimplifiedLayerNormalization (its sum stays an Add).
    * `llm.layer_norm`: LayerNormalization over the last axis,
      SkipLayerNormalization.
    * `llm.gelu`, `llm.silu`: any cone of elementwise operations from one
      f32 tensor and scalar constants that computes GELU (erf or tanh form)
      or x * sigmoid(x), found by running the cone's own CPU kernels on
      sample values in [-8, 8] (agreement within 1e-5 of the largest value),
      so every spelling of the formula is caught.
    * `llm.linear`: MatMul or Gemm (alpha 1, no transA) by a constant 2-D
      weight, which is stored transposed to [N, K]; an Add of a constant
      [N] bias joins it.
    * `llm.embedding`: Gather on axis 0 from a constant [vocab, hidden] table
      (an id outside the table is an error, where Gather wrapped negative ids).
    * `llm.swiglu`: silu(gate) * up.
    * `llm.rope`: x * cos + rotate_half(x) * sin (rotate_half =
      concat(-x[.., D/2:], x[.., :D/2])) where cos and sin are computed from
      one integer function argument (the position ids) and constants: their
      slice is run with the CPU kernels for positions 0 .. max-positions - 1
      into [max_pos, D/2] tables, and accepted only if a second run on
      scattered positions in two sequences reproduces the table rows and
      both halves of each row are equal. x in [B, H, S, D] is transposed to
      the op's [B, S, H, D] and back (transpose pairs then cancel). GPT-J's
      rotate_every_two (Reshape(Concat(Unsqueeze(-x[.., 1::2]),
      Unsqueeze(x[.., ::2])))) with repeat-interleaved cos/sin gives an
      interleaved rope (each table row's pairs checked equal).
    * `llm.attention`: Softmax over the keys of (q * a) (k^T * b) * c
      (+ mask), optionally with its NaN rows zeroed, times v, with q in
      [B, H, S, D]; k^T as Transpose(0, 1, 3, 2) or torch.onnx's Reshape /
      Transpose / Reshape (checked symbolically); k and v either [B, H, T, D]
      or repeated from fewer heads (repeat_kv: Unsqueeze, Expand, Reshape),
      which gives num_kv_heads.
    * Masks: the construction of an attention's mask is evaluated with the
      CPU kernels on bindings of the size symbols (small random sizes, and
      each free size alone made long: up to max-positions keys), with the
      one function argument whose values it reads (attention_mask) kept or
      randomly padded. When every valid binding shows key j visible to
      query i exactly when j <= Skv - Sq + i (within a window, if one shows)
      and the argument keeps it, the mask becomes `causal` (and `window`)
      plus a boolean [B, 1, 1, Skv] mask from that argument (none without
      one). Any other mask stays as it is.
    * com.microsoft GroupQueryAttention (onnxruntime-genai) with past/present
      IO: rope on q and k (its cos/sin caches) at positions
      seqlens_k + 1 - S + i, present = past ++ new, causal `llm.attention`
      with its local window, scale and softcap. That is its meaning for
      unpadded sequences, the protocol genai drives it with; two
      `llm.assert_equal` state it (seqlens_k + 1 - S equals the past length
      for every sequence, total_sequence_length equals past + S), so other
      inputs are refused at run time. Attention bias, sinks, quantized
      caches, q/k norms and window-sized caches keep the contrib op.
    * ONNX (opset 23+) RotaryEmbedding with position ids and constant
      caches, and Attention without padded lengths or windows (its past ++
      new keys as present outputs; is_causal only with as many new keys as
      queries, since ONNX aligns that mask top-left); decomposed softcap
      (c * tanh(s / c)) in the eager form.
    * The ONNX opset-24 static cache: Attention with nonpad_kv_seqlen and
      is_causal over TensorScatter(past, new, write_indices) keys and
      values (linear mode, sequence axis) becomes a causal llm.attention
      over past[:, :, :P] ++ new, P the write index, under the uniform-batch
      protocol two llm.assert_equal state (every sequence writes at P,
      nonpad_kv_seqlen = P + S). The scatters stay as the present outputs;
      the write-index and valid-length inputs get `llm.role` attributes
      (`write_indices`, `kv_valid_length`) for llmc-insert-kv-cache.
    * The older com.microsoft forms: RotaryEmbedding with constant caches
      (llm.rope), MultiHeadAttention with q/k/v [B, S, N * D], BNSH past and
      an additive bias (present = past ++ new, the bias as the mask),
      Attention with a constant packed QKV weight, a raw [B, T] key mask and
      a [2, B, N, P, D] past (GPT-2), EmbedLayerNormalization without
      segments (two embeddings and a layer norm).

    Before:

    ```mlir
    %sq = llm.onnx.pow %x, %two : (tensor<?x?x32xf32>, tensor<f32>) -> tensor<?x?x32xf32>
    %ms = llm.onnx.reduce_mean %sq, %axes : (tensor<?x?x32xf32>, tensor<1xi64>) -> tensor<?x?x1xf32>
    %v = llm.onnx.add %ms, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
    %sd = llm.onnx.sqrt %v : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
    %inv = llm.onnx.reciprocal %sd : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
    %n = llm.onnx.mul %x, %inv : (tensor<?x?x32xf32>, tensor<?x?x1xf32>) -> tensor<?x?x32xf32>
    %y = llm.onnx.mul %w, %n : (tensor<32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
    %g = llm.onnx.matmul %y, %wg : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
    %s = llm.onnx.sigmoid %g : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    %a = llm.onnx.mul %g, %s : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    %u = llm.onnx.matmul %y, %wu : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
    %h = llm.onnx.mul %a, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    ```

    After:

    ```mlir
    %y = llm.rms_norm %x, %w {epsilon = 9.99999997E-7 : f32} : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %g = llm.linear %y, %wg_t, %none : (tensor<?x?x32xf32>, tensor<64x32xf32>, none) -> tensor<?x?x64xf32>
    %u = llm.linear %y, %wu_t, %none : (tensor<?x?x32xf32>, tensor<64x32xf32>, none) -> tensor<?x?x64xf32>
    %h = llm.swiglu %g, %u : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let options = [
    Option<"maxPositions", "max-positions", "int64_t", "4096",
           "Rows of the rope tables: positions must stay below this">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def InsertKvCachePass : Pass<"llmc-insert-kv-cache", "::mlir::ModuleOp"> {
  let summary = "Turn a raised decoder into prefill and decode over a static KV cache";
  let description = [{
    Runs after `llmc-raise-transformer`. The module's `main` becomes two
    functions with one signature:

      prefill(tokens [B, S], start_pos, cache.k.0, cache.v.0, ...)
        -> (logits, cache.k.0, cache.v.0, ...)
      decode(tokens [B, 1], start_pos, caches...) -> (logits, caches...)

    Each cache is a preallocated [B, kv_heads, max-seq, head_dim] buffer per
    layer for keys and for values, passed in and returned (memory planning
    makes the update in place). Every causal `llm.attention` whose keys and
    values are the new tokens' (a stateless export) or a past input
    concatenated with them (every past/present export, whatever its
    exporter: the raise leaves one form) becomes `llm.cache_update` of both
    caches at `start_pos` and `llm.cached_attention` over rows
    0 .. start_pos + S; the concat growth and the present outputs disappear.
    The other inputs are bound: position ids to start_pos + i, the attention
    mask to ones over start_pos + S keys (every token is valid: padding is
    the bucketing pass's business), past inputs still read elsewhere (for
    their sizes) to the cache rows before start_pos, inputs with an
    `llm.role` from the raise (an opset-24 static-cache export, whose
    TensorScatter caches disappear like the concat growth) to start_pos
    (`write_indices`) and start_pos + S (`kv_valid_length`) per sequence.
    The fallback: a past input that no such attention reads (its attention
    was not recognised, or is not causal, or keeps another mask) keeps the
    model's own cache IO: it gets a cache of the same form, `cache.io.<past
    input's name>`, read as the rows before start_pos, and the present
    output paired with it (the nearest result computed from it; names break
    ties) must be the past and the new rows, start_pos + S long (an
    llm.assert_equal), whose new rows are written back at start_pos. A
    static cache the model writes itself (the present has the past's
    length: TensorScatter) keeps that length and is read and written back
    whole; the inputs feeding its write indices and valid lengths (found by
    dataflow, or named like ONNX's write_indices / nonpad_kv_seqlen) take
    those roles. The unrecognised operations then run through the reference
    kernels. A model with neither (a stateless export whose attention was
    not recognised) keeps the token ids instead, `cache.tokens` [B, 1,
    max-seq, 1] f32 (llm.keep_f32: no dtype conversion touches it), and
    runs over all of them at every step, returning the new tokens' logits.
    Beside recognised attentions, an attention kept without such a past
    (nothing to keep between steps), an input no rule binds, or an unknown
    role is an error naming it.

    Before (one layer of an optimum export, after the raise):

    ```mlir
    %pk = llm.onnx.concat %past_key_0, %k {axis = -2 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
    %kt = llm.onnx.transpose %pk {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
    %o = llm.attention %q, %kt, %vt, %pad {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : ...
    return %logits, %pk, %pv : ...
    ```

    After (in prefill and decode):

    ```mlir
    %kc = llm.cache_update %cache_k_0, %k, %start_pos : (tensor<?x2x4096x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>) -> tensor<?x2x4096x16xf32>
    %o = llm.cached_attention %q, %kc, %vc, %start_pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : ...
    return %logits, %kc, %vc : ...
    ```
  }];
  let options = [
    Option<"maxSeq", "max-seq", "int64_t", "4096",
           "Cache capacity: the most tokens a sequence may hold">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect", "::mlir::func::FuncDialect"];
}

def BucketShapesPass : Pass<"llmc-bucket-shapes", "::mlir::ModuleOp"> {
  let summary = "Specialise prefill and decode into static shape buckets";
  let description = [{
    Runs after `llmc-insert-kv-cache`. For every batch size B in `batch`,
    `decode` becomes `decode_b<B>` (tokens [B, 1]) and, for every sequence
    length S in `prefill-buckets` up to the cache capacity, `prefill` becomes
    `prefill_b<B>_s<S>` (tokens [B, S]); the caches are [B, kv_heads,
    capacity, head_dim]. The dynamic functions are removed. Run
    `llmc-canonicalize` after it: every size is then a constant and every
    type static (the pass checks what it can: a function whose types stay
    dynamic after specialisation is reported by `llmc-canonicalize`'s
    inference, not here).

    A prompt of n tokens runs in the smallest bucket S >= n with its tokens
    padded on the right. That is exact for causal attention: the padded
    tokens sit after every real one, so no real query sees them; the cache
    rows they write (start_pos + n .. start_pos + S - 1) are overwritten by
    the next tokens before any query reads them, so the caller advances
    start_pos by n, not S, and reads the first n rows of the logits.

    Before: `func.func @prefill(%tokens: tensor<?x?xi64>, %start_pos: tensor<i64>, ...)`.
    After (batch 1, buckets 16 and 64): `@prefill_b1_s16(%tokens: tensor<1x16xi64>, ...)`,
    `@prefill_b1_s64(%tokens: tensor<1x64xi64>, ...)` and `@decode_b1(%tokens: tensor<1x1xi64>, ...)`.
  }];
  let options = [
    ListOption<"batch", "batch", "int64_t", "Batch sizes to compile (default 1)">,
    ListOption<"prefillBuckets", "prefill-buckets", "int64_t",
               "Prompt lengths to compile (default 16, 64, 256, 1024, up to the capacity)">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect", "::mlir::func::FuncDialect"];
}

def QuantizeWeightsPass : Pass<"llmc-quantize-weights", "::mlir::ModuleOp"> {
  let summary = "Weight-only int8/int4 quantization of linear layers";
  let description = [{
    In every function, each `llm.linear` whose weight is a constant [N, K]
    of f32, f16 or bf16 becomes `llm.quantized_linear` with the weight
    rounded to nearest (or by GPTQ, below):

    - `bits=8`: symmetric, per output channel (`group-size=0`, one group of
      K) or per group;
    - `bits=4`: per group of `group-size` values along K (32, 64, 128, ...),
      symmetric, or with `asymmetric` a zero point per group.

    Symmetric groups use the whole signed range: the value of largest
    magnitude m maps to -2^(bits-1), scale = m / -2^(bits-1), values
    clamp(round(w / scale), -2^(bits-1), 2^(bits-1) - 1), stored with
    2^(bits-1) added (unsigned). Asymmetric groups span [min(w, 0),
    max(w, 0)]: scale = (max - min) / (2^bits - 1), zero point =
    round(-min / scale). Rounding is to nearest even. Scales are f32; 4-bit
    ones are first rounded to the nearest f16 where that is a normal number
    (|s| >= 2^-14), so that the CPU's packed panels hold them in two bytes
    (0.5625 bytes per weight at groups of 32 instead of 0.625, as Q4_0 and
    the f16 MatMulNBits exports; the scale moves by at most 2^-11 of itself).

    With `calibration` (a file of the Gram matrices sum x^T x of each
    layer's inputs over calibration tokens, passes/Calibration.h; `llmc
    compile --calibration` writes it), the weights are rounded by GPTQ: the
    columns in order along K, each column's rounding error spread over the
    columns not yet rounded through the upper Cholesky factor of
    (H + damp x mean(diag H) I)^-1; a group's scale (same rule) is taken
    from its values as they are when its first column comes up
    (passes/WeightQuantization.h). A layer the file has no statistics for
    is an error. A weight shared by several functions is quantized once.

    With `embeddings`, every `llm.embedding` whose table is a constant
    [vocab, hidden] becomes `llm.quantized_embedding` with the table rounded
    to nearest by the same scheme (rows as output channels, groups along
    hidden; never GPTQ: a gather has no Hessian), its scales in the table's
    element type.

    `skip` lists layers kept in float: `lm_head` (the projection that makes
    the logits), `embedding` (every embedding table) or any substring of a layer's location (its ONNX name).
    `int8-activations` lets the kernels round x to int8 per block of 32 for
    integer dot products. A group size that does not divide K is an error.
    Runs after `llmc-bucket-shapes`, before `llmc-convert-dtype` (so the
    weights are quantized from their f32 values) and `llmc-fuse` (which
    merges quantized projections as it merges float ones).

    Before: `%y = llm.linear %x, %w, %none : (tensor<1x1x64xf32>, tensor<32x64xf32>, none) -> tensor<1x1x32xf32>`;
    after (bits=4 group-size=32): `%y = llm.quantized_linear %x, %q, %s, %none, %none {bits = 4, group_size = 32, int8_activations = true} : (tensor<1x1x64xf32>, tensor<32x2x16xui8>, tensor<32x2xf32>, none, none) -> tensor<1x1x32xf32>`.
  }];
  let options = [
    Option<"bits", "bits", "int64_t", "4", "4 or 8">,
    Option<"groupSize", "group-size", "int64_t", "32",
           "Values per scale along K (0: one group per output channel)">,
    Option<"asymmetric", "asymmetric", "bool", "false", "A zero point per group">,
    Option<"int8Activations", "int8-activations", "bool", "true",
           "Let kernels round activations to int8 per block of 32">,
    ListOption<"skip", "skip", "std::string",
               "Layers kept in float: lm_head, embedding, or substrings of their locations">,
    Option<"embeddings", "embeddings", "bool", "false",
           "Also quantize token embedding tables (to nearest)">,
    Option<"calibration", "calibration", "std::string", "",
           "Calibration statistics (llmc compile --calibration): GPTQ instead of nearest">,
    Option<"damp", "damp", "double", "0.01",
           "GPTQ's damping: this share of the mean of H's diagonal added to it">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def ConvertDtypePass : Pass<"llmc-convert-dtype", "::mlir::func::FuncOp"> {
  let summary = "Run a function's f32 computation in f16 or bf16";
  let description = [{
    Every f32 value of the function becomes `dtype`: the weights and tables
    (constants, converted at compile time with round-to-nearest-even), the
    caches (inputs and results) and every intermediate; a Cast to f32 becomes
    a cast to `dtype`; the other results (the logits) are cast back to f32 at
    the return, so the interface keeps f32 logits. Integer values are untouched. The
    kernels compute in f32 internally and round their results to `dtype`,
    so the numbers are those of a half-precision model: compare with a
    tolerance for it (`llmc verify --tolerance`). `f32` (the default)
    changes nothing. Runs after `llmc-bucket-shapes` and before
    `llmc-attention-to-flash`.

    Before: `%y = llm.linear %x, %w, %none : (tensor<1x1x64xf32>, tensor<64x64xf32>, none) -> tensor<1x1x64xf32>`;
    after (dtype=f16): `... : (tensor<1x1x64xf16>, tensor<64x64xf16>, none) -> tensor<1x1x64xf16>`.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"f32\"", "f32, f16 or bf16">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def QuantizeKvCachePass : Pass<"llmc-quantize-kv-cache", "::mlir::ModuleOp"> {
  let summary = "Keep llmc's KV caches in int8 with per-head, per-token scales";
  let description = [{
    Runs after `llmc-insert-kv-cache`. Every cache of a recognised attention
    (`cache.k.N`, `cache.v.N`: an argument whose one reader is the
    `llm.cache_update` feeding `llm.cached_attention`) becomes an int8
    [B, Hkv, M, D] cache with an f32 [B, Hkv, M, 1] scale cache beside it
    (`cache.k.N.scale`, `cache.v.N.scale`: arguments and results appended
    after the others, `llm.keep_f32`), the update becomes
    `llm.quantized_cache_update` (each new row: its absolute maximum / 127 and
    values rounded to nearest even) and the attention reads both through
    its `kv_scales`. The cache bytes halve against f16 (plus 4 bytes per row
    and head); the attention kernels read the int8 rows without a float
    copy. The model's own cache IO and the token history stay as they are;
    a module with no other cache (no attention recognised) is an error, as
    is a cache read by anything else (naming it).

    ```mlir
    %kc, %ks = llm.quantized_cache_update %cache_k_0, %cache_k_0_scale, %k, %start_pos {llm.keep_f32} : (tensor<1x2x4096x16xi8>, tensor<1x2x4096x1xf32>, tensor<1x?x2x16xf32>, tensor<i64>) -> (tensor<1x2x4096x16xi8>, tensor<1x2x4096x1xf32>)
    %o = llm.cached_attention %q, %kc, %vc, %start_pos, %ks, %vs {...}
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"int8\"",
           "The caches' element type (int8: the only one)">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def AttentionToFlashPass : Pass<"llmc-attention-to-flash", "::mlir::func::FuncOp"> {
  let summary = "Rewrite cached attention into flash forms (tiled prefill, split-KV decode)";
  let description = [{
    Runs after `llmc-bucket-shapes` (sizes static). Each `llm.cached_attention`
    of one query token (a decode bucket) becomes `llm.decode_attention_partial`
    (the keys 0 .. pos cut into `num-splits` chunks, each with its partial
    result and log-sum-exp; `num-splits=0` chooses per operation enough
    chunks to fill a GPU, as the CUDA target does) and
    `llm.attention_combine`, cast back to the
    query's type; one of several tokens (a prefill bucket) becomes
    `llm.flash_attention` with `block_q = min(block-q, S)` and `block-k`:
    tiled online softmax, blocks outside the causal range or window skipped.
    Causality, window, GQA, scale and softcap carry over. No value holds
    scores: the memory plan's check then passes by construction.

    Before: `%o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4, num_kv_heads = 2, scale = 0.25}
    : (tensor<1x1x4x16xf32>, ...)`. After:

    ```mlir
    %p, %lse = llm.decode_attention_partial %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, num_splits = 4 : i64, scale = 2.500000e-01 : f32}
        : (...) -> (tensor<1x4x4x16xf32>, tensor<1x4x4xf32>)
    %o = llm.attention_combine %p, %lse : (tensor<1x4x4x16xf32>, tensor<1x4x4xf32>) -> tensor<1x1x4x16xf32>
    ```
  }];
  let options = [
    Option<"numSplits", "num-splits", "int64_t", "4",
           "Key chunks of a decode step; 0: enough for a GPU (kv heads x batch x "
           "splits >= 264 blocks, two per multiprocessor of an H100/H200; at most one "
           "split per 32 cache rows)">,
    Option<"blockQ", "block-q", "int64_t", "64", "Query rows per prefill tile">,
    Option<"blockK", "block-k", "int64_t", "64", "Keys per prefill tile">
  ];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def FusePass : Pass<"llmc-fuse", "::mlir::func::FuncOp"> {
  let summary = "Merge projections and group operations into fused kernels";
  let description = [{
    Runs after `llmc-attention-to-flash`. First, linear layers that read the
    same input with constant weights (q, k and v; gate and up) become one
    linear whose weight rows are the originals' concatenated at compile time,
    followed by slices. Then operations are grouped into `llm.fused`
    regions, each one kernel:

    * `attention`: split-KV partials, their combination and the cast back;
    * `linear_residual`: a projection and the residual add after it;
    * `norm_qkv_rope_cache`: a norm, the merged QKV projection, the head
      reshapes, rope, and the cache writes;
    * `norm_gated_mlp`: a norm, the merged gate/up projection and the
      SwiGLU (or activation times up);
    * `norm_linear`: a norm and the projections it feeds (the lm_head);
    * `elementwise`: a chain of float elementwise operations, each read only
      by the next (views between them included).

    A group is outlined only where every value it produces is read after its
    last operation (so moving the group there keeps the program valid). The
    function gets `llm.kernels`, its number of kernels: operations other than
    constants, views (Reshape, Squeeze, Unsqueeze, Flatten) and small integer
    bookkeeping. A Llama decode step becomes 6 kernels per layer (norm + QKV
    + rope + cache write, attention partials + combine, o_proj + residual,
    norm + gate/up + SwiGLU, down + residual; the first layer's norm reads the
    embedding).

    Before: `%q = llm.linear %x, %wq` ... `%k = llm.linear %x, %wk` ...
    After: `%qkv = llm.linear %x, %wqkv` (the three weights stacked), inside
    `llm.fused "norm_qkv_rope_cache"`.
  }];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

def PlanMemoryPass : Pass<"llmc-plan-memory", "::mlir::func::FuncOp"> {
  let summary = "A static arena per entry point: exact bytes of weights, cache and activations";
  let description = [{
    Runs last (after `llmc-bucket-shapes` and `llmc-canonicalize`). Every
    value is classified: constants are weights (all of them: they are stored
    with the weights); the function's cache inputs
    are the KV cache, and `llm.cache_update` writes in place (its result is
    its cache input's buffer); Reshape, Squeeze, Unsqueeze and Flatten are
    views of their input, and so are an identity and a slice of one
    contiguous range where the code makes them views; a residual add that
    the code folds into its linear layer is the layer's buffer; the values
    inside `llm.fused` regions are planned where the region runs, and a
    region's results are the values it yields (passes/StorageFacts.h: the
    code generators ask the same questions); every other result is an
    activation. Activations
    get offsets in one arena from their liveness (definition to last use,
    views extending their source; function results live to the end): the
    largest first, each at the lowest 64-byte-aligned offset free over its
    whole interval. A dimension that is still dynamic is bounded by the
    cache capacity (the plan is then an upper bound, and says so).

    The function gets `llm.memory_plan = {activations, arena, kv_cache,
    weights, bounded}` (bytes; `arena` is the arena size, `activations` the
    sum of all activation buffers) and each operation with arena results
    `llm.arena_offsets` (one offset per result, -1 where the result is not in
    the arena). A softmax in a prefill bucket over a buffer whose last two
    dimensions are the prompt length and the prompt length (or the cache
    capacity) would normalise a materialised attention score matrix: the
    pass reports it as an error, so a plan that exists shows there is none
    (attention runs inside llm.cached_attention, whose scores are never a
    value). The CPU code places every value with an offset there, and a
    session allocates the largest entry's arena once.
  }];
  let dependentDialects = ["::mlir::llmc::LLMDialect"];
}

//===----------------------------------------------------------------------===//
// Lowering to the exec level
//===----------------------------------------------------------------------===//

def LowerToExecPass : Pass<"llmc-lower-to-exec", "::mlir::func::FuncOp"> {
  let summary = "Turn every llm operation into a launch of its CPU kernel";
  let description = [{
    Replaces each llm operation (except `llm.constant` and `llm.none`) by an
    `exec.kernel` launch of the reference CPU kernel of the same name (the
    op name without `llm.`), carrying the op's attributes, defaults included,
    as the launch's parameters. Operations without a kernel are all listed in
    one error. The result is what the executor (`llmc exec`) runs.

    Before:

    ```mlir
    %0 = llm.onnx.softmax %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
    ```

    After:

    ```mlir
    %0 = exec.kernel "onnx.softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::llmc::exec::ExecDialect"];
}

#endif // LLMC_PASSES_PASSES_TD
