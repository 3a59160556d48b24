// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-convert-dtype=dtype=f16' %s | FileCheck %s

// Weights (converted at compile time: 1.5 and -2 are 0x3E00 and 0xC000 in
// f16), caches and intermediates become f16; the logits are cast back to
// f32 at the return; integer values stay.
// CHECK-LABEL: func.func @step(%arg0: tensor<1x1xi64> {llm.name = "tokens"}, %arg1: tensor<1x2x8x4xf16> {llm.name = "cache.k.0"}) -> (tensor<1x1x2xf32> {llm.name = "logits"}, tensor<1x2x8x4xf16> {llm.name = "cache.k.0"})
// CHECK: llm.constant dense_resource<converted> : tensor<4x2xf16>
// CHECK: llm.embedding %{{.+}}, %arg0 : (tensor<4x2xf16>, tensor<1x1xi64>) -> tensor<1x1x2xf16>
// CHECK: %[[L:.+]] = llm.onnx.cast %{{.+}} {to = 1 : i64} : (tensor<1x1x2xf16>) -> tensor<1x1x2xf32>
// CHECK: return %[[L]], %arg1
// CHECK: converted: "0x40000000003E00C0
func.func @step(%t: tensor<1x1xi64> {llm.name = "tokens"}, %k: tensor<1x2x8x4xf32> {llm.name = "cache.k.0"}) -> (tensor<1x1x2xf32> {llm.name = "logits"}, tensor<1x2x8x4xf32> {llm.name = "cache.k.0"}) {
  %table = llm.constant dense<[[1.5, -2.0], [0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]> : tensor<4x2xf32>
  %x = llm.embedding %table, %t : (tensor<4x2xf32>, tensor<1x1xi64>) -> tensor<1x1x2xf32>
  return %x, %k : tensor<1x1x2xf32>, tensor<1x2x8x4xf32>
}

// -----

// Negative: integer values are not converted (an unknown dtype is an error:
// llmc-pipeline.test).
// CHECK-LABEL: func.func @ints
// CHECK-SAME: (%arg0: tensor<3xi64>) -> tensor<3xi64>
// CHECK-NOT: f16
func.func @ints(%x: tensor<3xi64>) -> tensor<3xi64> {
  return %x : tensor<3xi64>
}

// -----

// The scales of a quantized linear layer stay f32 (the kernels read f32);
// its input, bias and result convert; the weight bytes are untouched.
// CHECK-LABEL: func.func @quantized
// CHECK-DAG: llm.constant dense<5.000000e-01> : tensor<2x1xf32>
// CHECK-DAG: llm.constant dense_resource<converted> : tensor<2xf16>
// CHECK: llm.quantized_linear {{.*}} : (tensor<1x32xf16>, tensor<2x1x16xui8>, tensor<2x1xf32>, none, tensor<2xf16>) -> tensor<1x2xf16>
func.func @quantized(%x: tensor<1x32xf32> {llm.name = "cache.k.0"}) -> (tensor<1x2xf32> {llm.name = "logits"}) {
  %none = llm.none
  %q = llm.constant dense<7> : tensor<2x1x16xui8>
  %s = llm.constant dense<0.5> : tensor<2x1xf32>
  %b = llm.constant dense<1.0> : tensor<2xf32>
  %y = llm.quantized_linear %x, %q, %s, %none, %b {bits = 4 : i64, group_size = 32 : i64} : (tensor<1x32xf32>, tensor<2x1x16xui8>, tensor<2x1xf32>, none, tensor<2xf32>) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}
