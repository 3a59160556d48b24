// RUN: llmc-opt --split-input-file '--llmc-attention-to-flash=num-splits=4 block-q=16 block-k=32' %s | FileCheck %s

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
func.func @decode(%q: tensor<2x1x4x16xf16>, %k: tensor<2x2x64x16xf16>, %v: tensor<2x2x64x16xf16>, %pos: tensor<i64>) -> tensor<2x1x4x16xf16> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<2x1x4x16xf16>, tensor<2x2x64x16xf16>, tensor<2x2x64x16xf16>, tensor<i64>) -> tensor<2x1x4x16xf16>
  return %o : tensor<2x1x4x16xf16>
}

// Negative: not bucketed (the query length is dynamic).
// CHECK-LABEL: func.func @dynamic
// CHECK: llm.cached_attention
func.func @dynamic(%q: tensor<1x?x4x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>, %pos: tensor<i64>) -> tensor<1x?x4x16xf32> {
  %o = llm.cached_attention %q, %k, %v, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x?x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x?x4x16xf32>
  return %o : tensor<1x?x4x16xf32>
}
