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
