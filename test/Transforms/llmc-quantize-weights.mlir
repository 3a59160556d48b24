// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4' %s | FileCheck %s
// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=8 group-size=0' %s | FileCheck %s --check-prefix=INT8
// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4 asymmetric=1 int8-activations=0' %s | FileCheck %s --check-prefix=ASYM
// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4 skip=lm_head,mlp.down' %s | FileCheck %s --check-prefix=SKIP

// Symmetric int4 in groups of 4: row 0 [1, -2, 0.5, 4] has peak 4, scale
// 4 / -8 = -0.5, values [-2, 4, -1, -8] + 8 = [6, 12, 7, 0], packed low
// nibble first as 0xC6 0x07; row 1 [-8, 2, 1, 0] has scale 1, values
// [0, 10, 9, 8]: 0xA0 0x89. Scales [-0.5, 1.0] stay f32. The linear is gone.
// Per channel int8: row 0 scale 4 / -128, values [-32, 64, -16, -128] + 128.
// CHECK-LABEL: func.func @proj
// CHECK-NOT: llm.linear
// CHECK: %[[Q:.+]] = llm.constant dense_resource<quantized_weight> : tensor<2x1x2xui8>
// CHECK: %[[S:.+]] = llm.constant dense_resource<quantized_scales> : tensor<2x1xf32>
// CHECK: llm.quantized_linear %arg0, %[[Q]], %[[S]], %{{.+}}, %{{.+}} {bits = 4 : i64, group_size = 4 : i64, int8_activations = true} : (tensor<1x3x4xf32>, tensor<2x1x2xui8>, tensor<2x1xf32>, none, none) -> tensor<1x3x2xf32>
// CHECK-NOT: llm.linear
// CHECK: quantized_weight: "0x40000000C607A089"
// CHECK: quantized_scales: "0x40000000000000BF0000803F"
// INT8-LABEL: func.func @proj
// INT8: llm.quantized_linear {{.*}} {bits = 8 : i64, group_size = 4 : i64, int8_activations = true} : (tensor<1x3x4xf32>, tensor<2x1x4xui8>, tensor<2x1xf32>, none, none)
// INT8: quantized_weight: "0x4000000060C07000
// ASYM-LABEL: func.func @proj
// ASYM: %[[Z:.+]] = llm.constant dense_resource<quantized_zero_points> : tensor<2x1xui8>
// ASYM: llm.quantized_linear %arg0, %{{.+}}, %{{.+}}, %[[Z]], %{{.+}} {bits = 4 : i64, group_size = 4 : i64} :
func.func @proj(%x: tensor<1x3x4xf32>) -> (tensor<1x3x2xf32> {llm.name = "cache.k.0"}) {
  %none = llm.none
  %w = llm.constant dense<[[1.0, -2.0, 0.5, 4.0], [-8.0, 2.0, 1.0, 0.0]]> : tensor<2x4xf32>
  %y = llm.linear %x, %w, %none : (tensor<1x3x4xf32>, tensor<2x4xf32>, none) -> tensor<1x3x2xf32>
  return %y : tensor<1x3x2xf32>
}

// -----

// The bias stays an operand (f32); f16 weights quantize from their values.
// CHECK-LABEL: func.func @bias_f16
// CHECK: llm.quantized_linear %arg0, %{{.+}}, %{{.+}}, %{{.+}}, %arg1 {{.*}} : (tensor<2x8xf16>, tensor<4x2x2xui8>, tensor<4x2xf32>, none, tensor<4xf16>) -> tensor<2x4xf16>
func.func @bias_f16(%x: tensor<2x8xf16>, %b: tensor<4xf16>) -> (tensor<2x4xf16> {llm.name = "cache.v.0"}) {
  %w = llm.constant dense<1.0> : tensor<4x8xf16>
  %y = llm.linear %x, %w, %b : (tensor<2x8xf16>, tensor<4x8xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  return %y : tensor<2x4xf16>
}

// -----

// skip: the projection that makes the logits (lm_head), and layers whose
// location holds a given name, stay float; the others are quantized.
// SKIP-LABEL: func.func @skips
// SKIP: %[[A:.+]] = llm.quantized_linear %arg0
// SKIP: %[[B:.+]] = llm.linear %[[A]]
// SKIP: llm.linear %[[B]]
// SKIP-NOT: llm.quantized_linear
func.func @skips(%x: tensor<1x1x4xf32>) -> (tensor<1x1x4xf32> {llm.name = "logits"}) {
  %none = llm.none
  %w = llm.constant dense<0.5> : tensor<4x4xf32>
  %a = llm.linear %x, %w, %none : (tensor<1x1x4xf32>, tensor<4x4xf32>, none) -> tensor<1x1x4xf32> loc("/model/layers.0/attn/q_proj/MatMul")
  %b = llm.linear %a, %w, %none : (tensor<1x1x4xf32>, tensor<4x4xf32>, none) -> tensor<1x1x4xf32> loc("/model/layers.0/mlp.down/MatMul")
  %c = llm.linear %b, %w, %none : (tensor<1x1x4xf32>, tensor<4x4xf32>, none) -> tensor<1x1x4xf32> loc("/lm_head/MatMul")
  return %c : tensor<1x1x4xf32>
}

// -----

// Negative: a weight that is not a constant stays a float linear.
// CHECK-LABEL: func.func @dynamic_weight
// CHECK: llm.linear
// CHECK-NOT: llm.quantized_linear
func.func @dynamic_weight(%x: tensor<1x4xf32>, %w: tensor<2x4xf32>) -> (tensor<1x2xf32> {llm.name = "cache.k.0"}) {
  %none = llm.none
  %y = llm.linear %x, %w, %none : (tensor<1x4xf32>, tensor<2x4xf32>, none) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

// -----

// Negative: f64 weights are not a type the pass quantizes.
func.func @f64(%x: tensor<1x4xf64>) -> (tensor<1x2xf64> {llm.name = "cache.k.0"}) {
  %none = llm.none
  %w = llm.constant dense<1.0> : tensor<2x4xf64>
  // expected-error @+1 {{llmc-quantize-weights: weights of 'f64' cannot be quantized (f32, f16 or bf16)}}
  %y = llm.linear %x, %w, %none : (tensor<1x4xf64>, tensor<2x4xf64>, none) -> tensor<1x2xf64>
  return %y : tensor<1x2xf64>
}
