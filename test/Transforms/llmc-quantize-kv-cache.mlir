// RUN: llmc-opt --split-input-file --verify-diagnostics --llmc-quantize-kv-cache %s | FileCheck %s
// RUN: not llmc-opt '--llmc-quantize-kv-cache=dtype=int4' %s 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: llmc-quantize-kv-cache: the cache type must be int8, not 'int4'

// One layer after llmc-insert-kv-cache: both caches become int8 with their
// f32 scales appended as arguments and results (llm.keep_f32, so dtype
// conversion leaves them), the updates quantize, the attention reads the
// scales; a shape read of a cache stays (its shape does not change).
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %arg2: tensor<1x2x64x16xi8> {llm.name = "cache.k.0"}, %arg3: tensor<1x2x64x16xi8> {llm.name = "cache.v.0"}
// CHECK-SAME: %arg6: tensor<1x2x64x1xf32> {llm.keep_f32, llm.name = "cache.k.0.scale"}, %arg7: tensor<1x2x64x1xf32> {llm.keep_f32, llm.name = "cache.v.0.scale"})
// CHECK-SAME: -> (tensor<1x1x4x16xf32> {llm.name = "logits"}, tensor<1x2x64x16xi8> {llm.name = "cache.k.0"}, tensor<1x2x64x16xi8> {llm.name = "cache.v.0"}, tensor<1x2x64x1xf32> {llm.name = "cache.k.0.scale"}, tensor<1x2x64x1xf32> {llm.name = "cache.v.0.scale"})
// CHECK: llm.onnx.shape %arg2
// CHECK: %[[K:[a-z_0-9]+]], %[[KS:[a-z_0-9]+]] = llm.quantized_cache_update %arg2, %arg6, %arg4, %arg1 {llm.keep_f32}
// CHECK: %[[V:[a-z_0-9]+]], %[[VS:[a-z_0-9]+]] = llm.quantized_cache_update %arg3, %arg7, %arg5, %arg1 {llm.keep_f32}
// CHECK: %[[O:.+]] = llm.cached_attention %arg0, %[[K]], %[[V]], %arg1, %[[KS]], %[[VS]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
// CHECK-NOT: llm.cache_update
// CHECK: return %[[O]], %[[K]], %[[V]], %[[KS]], %[[VS]]
func.func @decode(%q: tensor<1x1x4x16xf32> {llm.name = "q"}, %pos: tensor<i64> {llm.name = "start_pos"},
                  %ck: tensor<1x2x64x16xf32> {llm.name = "cache.k.0"}, %cv: tensor<1x2x64x16xf32> {llm.name = "cache.v.0"},
                  %nk: tensor<1x2x1x16xf32> {llm.name = "new_k"}, %nv: tensor<1x2x1x16xf32> {llm.name = "new_v"})
    -> (tensor<1x1x4x16xf32> {llm.name = "logits"}, tensor<1x2x64x16xf32> {llm.name = "cache.k.0"}, tensor<1x2x64x16xf32> {llm.name = "cache.v.0"}) {
  %shape = llm.onnx.shape %ck : (tensor<1x2x64x16xf32>) -> tensor<4xi64>
  %kc = llm.cache_update %ck, %nk, %pos : (tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i64>) -> tensor<1x2x64x16xf32>
  %vc = llm.cache_update %cv, %nv, %pos : (tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i64>) -> tensor<1x2x64x16xf32>
  %o = llm.cached_attention %q, %kc, %vc, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return %o, %kc, %vc : tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>
}

// -----

// Negative: a cache something else reads (here a copy of it) cannot change
// its type under that reader.
func.func @other_reader(%q: tensor<1x1x4x16xf32> {llm.name = "q"}, %pos: tensor<i64> {llm.name = "start_pos"},
                        %ck: tensor<1x2x64x16xf32> {llm.name = "cache.k.0"}, %cv: tensor<1x2x64x16xf32> {llm.name = "cache.v.0"},
                        %nk: tensor<1x2x1x16xf32> {llm.name = "new_k"})
    -> (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>) {
  %kc = llm.cache_update %ck, %nk, %pos : (tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i64>) -> tensor<1x2x64x16xf32>
  // expected-error @+1 {{llmc-quantize-kv-cache: cache 'cache.k.0' is read by llm.onnx.identity, not only by its llm.cache_update (and shape reads)}}
  %copy = llm.onnx.identity %ck : (tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32>
  %vc = llm.cache_update %cv, %nk, %pos : (tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i64>) -> tensor<1x2x64x16xf32>
  %o = llm.cached_attention %q, %kc, %vc, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return %o, %copy : tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>
}

// -----

// Negative: an attention over keys that are not an update of a cache
// argument.
func.func @not_a_cache(%q: tensor<1x1x4x16xf32>, %pos: tensor<i64>, %k: tensor<1x2x64x16xf32>) -> tensor<1x1x4x16xf32> {
  // expected-error @+1 {{llmc-quantize-kv-cache: an attention's cache is not an llm.cache_update of a cache argument}}
  %o = llm.cached_attention %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return %o : tensor<1x1x4x16xf32>
}

// -----

// Negative: nothing to quantize (an attention llmc did not recognise keeps
// the model's own cache IO): an error, not a float cache.
// expected-error @+1 {{llmc-quantize-kv-cache: no attention reads a cache llmc manages}}
module {
  func.func @own_cache_io(%x: tensor<1x2x64x16xf32> {llm.name = "cache.io.past_key"}) -> tensor<1x2x64x16xf32> {
    return %x : tensor<1x2x64x16xf32>
  }
}
