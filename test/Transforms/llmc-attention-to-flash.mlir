// RUN: llmc-opt --split-input-file '--llmc-attention-to-flash=num-splits=4 block-q=16 block-k=32' %s | FileCheck %s
// RUN: llmc-opt --split-input-file '--llmc-attention-to-flash=num-splits=0' %s | FileCheck %s --check-prefix=AUTO
// RUN: not llmc-opt '--llmc-attention-to-flash=num-splits=-1' %s 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: llmc-attention-to-flash: num-splits must be >= 0 (0: enough for a GPU), block-q and block-k positive

// A prefill bucket of 8 tokens: tiled online softmax (block_q clamped to
// the 8 queries); a decode bucket: split-KV partials and their combination,
// cast back to f16; a query length that is still dynamic is left alone.
// CHECK-LABEL: func.func @prefill
// CHECK: llm.flash_attention %arg0, %arg1, %arg2, %arg3 {block_k = 32 : i64, block_q = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, window = 4 : i64}
// CHECK-NOT: llm.cached_attention
func.func @prefill(%q: tensor<1x8x4x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>, %pos: tensor<i64>) -> tensor<1x8x4x16xf32> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, window = 4 : i64} : (tensor<1x8x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x8x4x16xf32>
  return %o : tensor<1x8x4x16xf32>
}

// CHECK-LABEL: func.func @decode
// CHECK: %[[P:.+]], %[[L:.+]] = llm.decode_attention_partial %arg0, %arg1, %arg2, %arg3 {num_heads = 4 : i64, num_kv_heads = 2 : i64, num_splits = 4 : i64, scale = 2.500000e-01 : f32} : (tensor<2x1x4x16xf16>, tensor<2x2x64x16xf16>, tensor<2x2x64x16xf16>, tensor<i64>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4xf32>)
// CHECK: %[[C:.+]] = llm.attention_combine %[[P]], %[[L]] : (tensor<2x4x4x16xf32>, tensor<2x4x4xf32>) -> tensor<2x1x4x16xf32>
// CHECK: %[[H:.+]] = llm.onnx.cast %[[C]] {to = 10 : i64} : (tensor<2x1x4x16xf32>) -> tensor<2x1x4x16xf16>
// CHECK: return %[[H]]
// num-splits=0 (the CUDA target): 264 blocks wanted over 2 kv heads x 2
// sequences, at most one split per 32 of the 64 cache rows: 2.
// AUTO-LABEL: func.func @decode
// AUTO: llm.decode_attention_partial {{.*}}num_splits = 2 : i64
func.func @decode(%q: tensor<2x1x4x16xf16>, %k: tensor<2x2x64x16xf16>, %v: tensor<2x2x64x16xf16>, %pos: tensor<i64>) -> tensor<2x1x4x16xf16> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<2x1x4x16xf16>, tensor<2x2x64x16xf16>, tensor<2x2x64x16xf16>, tensor<i64>) -> tensor<2x1x4x16xf16>
  return %o : tensor<2x1x4x16xf16>
}

// Attention sinks: on the flash form, and on the combine (not the partial
// results, which never include them).
// CHECK-LABEL: func.func @sinks
// CHECK: llm.flash_attention %arg0, %arg2, %arg3, %arg4 {block_k = 32 : i64, block_q = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, sinks = array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00>}
// CHECK: llm.decode_attention_partial %arg1, %arg2, %arg3, %arg4 {num_heads = 4 : i64, num_kv_heads = 2 : i64, num_splits = 4 : i64, scale = 2.500000e-01 : f32} :
// CHECK: llm.attention_combine %{{.+}}, %{{.+}} {sinks = array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00>}
func.func @sinks(%q: tensor<1x8x4x16xf32>, %q1: tensor<1x1x4x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>, %pos: tensor<i64>) -> (tensor<1x8x4x16xf32>, tensor<1x1x4x16xf32>) {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, sinks = array<f32: 1.0, 2.0, 3.0, 4.0>} : (tensor<1x8x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x8x4x16xf32>
  %o1 = llm.cached_attention %q1, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, sinks = array<f32: 1.0, 2.0, 3.0, 4.0>} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return %o, %o1 : tensor<1x8x4x16xf32>, tensor<1x1x4x16xf32>
}

// Negative: not bucketed (the query length is dynamic).
// CHECK-LABEL: func.func @dynamic
// CHECK: llm.cached_attention
func.func @dynamic(%q: tensor<1x?x4x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>, %pos: tensor<i64>) -> tensor<1x?x4x16xf32> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x?x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x?x4x16xf32>
  return %o : tensor<1x?x4x16xf32>
}

// num-splits=0 for a 1B Llama's decode (8 kv heads, batch 1, 4224 cache
// rows): 33 splits, 264 blocks.
// AUTO-LABEL: func.func @decode_gpu
// AUTO: llm.decode_attention_partial {{.*}}num_splits = 33 : i64
func.func @decode_gpu(%q: tensor<1x1x32x64xf16>, %k: tensor<1x8x4224x64xf16>, %v: tensor<1x8x4224x64xf16>, %pos: tensor<i64>) -> tensor<1x1x32x64xf16> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 32 : i64, num_kv_heads = 8 : i64, scale = 0.125 : f32} : (tensor<1x1x32x64xf16>, tensor<1x8x4224x64xf16>, tensor<1x8x4224x64xf16>, tensor<i64>) -> tensor<1x1x32x64xf16>
  return %o : tensor<1x1x32x64xf16>
}

// -----

// At batch 8 the blocks alone would want 5 splits (264 over 8 kv heads x 8
// sequences), 26 tiles of 32 rows each over 4224 cache rows; a split has at
// most 8 tiles of the whole cache: 17.
// AUTO-LABEL: func.func @decode_gpu_batch8
// AUTO: llm.decode_attention_partial {{.*}}num_splits = 17 : i64
func.func @decode_gpu_batch8(%q: tensor<8x1x32x64xf16>, %k: tensor<8x8x4224x64xf16>, %v: tensor<8x8x4224x64xf16>, %pos: tensor<i64>) -> tensor<8x1x32x64xf16> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 32 : i64, num_kv_heads = 8 : i64, scale = 0.125 : f32} : (tensor<8x1x32x64xf16>, tensor<8x8x4224x64xf16>, tensor<8x8x4224x64xf16>, tensor<i64>) -> tensor<8x1x32x64xf16>
  return %o : tensor<8x1x32x64xf16>
}

// -----

// A 128k cache would want 512 splits of 8 tiles; at most 64.
// AUTO-LABEL: func.func @decode_gpu_long
// AUTO: llm.decode_attention_partial {{.*}}num_splits = 64 : i64
func.func @decode_gpu_long(%q: tensor<1x1x32x64xf16>, %k: tensor<1x8x131072x64xf16>, %v: tensor<1x8x131072x64xf16>, %pos: tensor<i64>) -> tensor<1x1x32x64xf16> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 32 : i64, num_kv_heads = 8 : i64, scale = 0.125 : f32} : (tensor<1x1x32x64xf16>, tensor<1x8x131072x64xf16>, tensor<1x8x131072x64xf16>, tensor<i64>) -> tensor<1x1x32x64xf16>
  return %o : tensor<1x1x32x64xf16>
}
