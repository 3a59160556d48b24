// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-bucket-shapes=batch=1,4 prefill-buckets=16,32' %s | FileCheck %s

// prefill and decode become one function per (batch, length) bucket, with
// static tokens and caches; the dynamic ones go.
// CHECK-LABEL: func.func @prefill_b1_s16(%arg0: tensor<1x16xi64> {llm.name = "tokens"}, %arg1: tensor<i64> {llm.name = "start_pos"}, %arg2: tensor<1x2x64x4xf32> {llm.name = "cache.k.0"}) -> (tensor<1x16x8xf32>, tensor<1x2x64x4xf32>)
// CHECK-LABEL: func.func @prefill_b1_s32(%arg0: tensor<1x32xi64>
// CHECK-SAME: -> (tensor<1x32x8xf32>, tensor<1x2x64x4xf32>)
// CHECK-LABEL: func.func @prefill_b4_s16(%arg0: tensor<4x16xi64>
// CHECK-LABEL: func.func @prefill_b4_s32
// CHECK-LABEL: func.func @decode_b1(%arg0: tensor<1x1xi64>
// CHECK-LABEL: func.func @decode_b4(%arg0: tensor<4x1xi64>
// CHECK-SAME: %arg2: tensor<4x2x64x4xf32>
// CHECK-NOT: func.func @prefill(
// CHECK-NOT: func.func @decode(
func.func @prefill(%t: tensor<?x?xi64> {llm.name = "tokens"}, %p: tensor<i64> {llm.name = "start_pos"}, %k: tensor<?x2x64x4xf32> {llm.name = "cache.k.0"}) -> (tensor<?x?x8xf32>, tensor<?x2x64x4xf32>) {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %t : (tensor<10x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  return %x, %k : tensor<?x?x8xf32>, tensor<?x2x64x4xf32>
}
func.func @decode(%t: tensor<?x1xi64> {llm.name = "tokens"}, %p: tensor<i64> {llm.name = "start_pos"}, %k: tensor<?x2x64x4xf32> {llm.name = "cache.k.0"}) -> (tensor<?x1x8xf32>, tensor<?x2x64x4xf32>) {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %t : (tensor<10x8xf32>, tensor<?x1xi64>) -> tensor<?x1x8xf32>
  return %x, %k : tensor<?x1x8xf32>, tensor<?x2x64x4xf32>
}

// -----

// Negative: a bucket longer than the cache capacity (8 here).
// expected-error @below {{llmc-bucket-shapes: prefill bucket 16 is outside 1 .. the cache capacity 8}}
module {
  func.func @prefill(%t: tensor<?x?xi64> {llm.name = "tokens"}, %p: tensor<i64> {llm.name = "start_pos"}, %k: tensor<?x2x8x4xf32> {llm.name = "cache.k.0"}) -> tensor<?x2x8x4xf32> {
    return %k : tensor<?x2x8x4xf32>
  }
  func.func @decode(%t: tensor<?x1xi64> {llm.name = "tokens"}, %p: tensor<i64> {llm.name = "start_pos"}, %k: tensor<?x2x8x4xf32> {llm.name = "cache.k.0"}) -> tensor<?x2x8x4xf32> {
    return %k : tensor<?x2x8x4xf32>
  }
}
