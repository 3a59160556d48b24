// RUN: llmc-opt --split-input-file --llmc-lower-to-exec --verify-diagnostics %s | FileCheck %s

// Each llm op becomes a launch of its kernel with every attribute, defaults
// included; constants and none values stay.
// CHECK-LABEL: func.func @lowered
func.func @lowered(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: %[[NONE:.+]] = llm.none
  %none = llm.none
  // CHECK: %[[C:.+]] = llm.constant dense<6.000000e+00> : tensor<f32>
  %c = llm.constant dense<6.0> : tensor<f32>
  // CHECK: %[[SM:.+]] = exec.kernel "onnx.softmax"(%arg0) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %0 = llm.onnx.softmax %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: %[[CLIP:.+]] = exec.kernel "onnx.clip"(%[[SM]], %[[NONE]], %[[C]]) {} : (tensor<?x8xf32>, none, tensor<f32>) -> tensor<?x8xf32>
  %1 = llm.onnx.clip %0, %none, %c : (tensor<?x8xf32>, none, tensor<f32>) -> tensor<?x8xf32>
  // CHECK: exec.kernel "ms.simplified_layer_normalization"(%[[CLIP]], %arg1) {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, stash_type = 1 : i64}
  %2:2 = llm.ms.simplified_layer_normalization %1, %w : (tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  // CHECK-NOT: llm.onnx
  // CHECK-NOT: llm.ms
  return %2#0 : tensor<?x8xf32>
}

// -----

// The transformer-level ops have reference kernels too (every llm op does:
// TransformerKernelsTest checks the table), attributes included.
// CHECK-LABEL: func.func @transformer
func.func @transformer(%x: tensor<1x4x2x8xf32>, %w: tensor<8xf32>) -> tensor<1x4x2x8xf32> {
  %none = llm.none
  // CHECK: exec.kernel "rms_norm"(%arg0, %arg1) {epsilon = 9.99999974E-6 : f32, weight_offset = 0.000000e+00 : f32}
  %0 = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<1x4x2x8xf32>, tensor<8xf32>) -> tensor<1x4x2x8xf32>
  // CHECK: exec.kernel "attention"({{.*}}) {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 3.500000e-01 : f32, softcap = 0.000000e+00 : f32, window = 0 : i64}
  %1 = llm.attention %0, %0, %0, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, causal = true, scale = 0.35 : f32} : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, none) -> tensor<1x4x2x8xf32>
  // CHECK-NOT: llm.attention
  return %1 : tensor<1x4x2x8xf32>
}

// -----

// A launch must name a registered kernel.
func.func @unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exec.kernel' op no CPU kernel called 'onnx.frobnicate'}}
  %0 = exec.kernel "onnx.frobnicate"(%x) {} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
