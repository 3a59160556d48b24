// RUN: llmc-opt --split-input-file --llmc-infer-shapes --verify-diagnostics %s | FileCheck %s

// Specialised argument types flow to every result and to the signature.
// CHECK-LABEL: func.func @static_args
// CHECK-SAME: -> tensor<1x8x4x16xf32>
func.func @static_args(%x: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x?x?xf32> {
  %s = llm.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  // CHECK: llm.onnx.mul {{.*}} -> tensor<1x8x64xf32>
  %0 = llm.onnx.mul %x, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CHECK: llm.onnx.reshape {{.*}} -> tensor<1x8x4x16xf32>
  %1 = llm.onnx.reshape %0, %s : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: return {{.*}} : tensor<1x8x4x16xf32>
  return %1 : tensor<?x?x?x?xf32>
}

// -----

// Names reach results that had none; a static size already present stays.
// CHECK-LABEL: func.func @names
func.func @names(%x: tensor<?x4xf32, #llm.dims<"batch", ?>>) -> tensor<?x4xf32> {
  // CHECK: llm.onnx.relu {{.*}} -> tensor<?x4xf32, #llm.dims<"batch", ?>>
  %0 = llm.onnx.relu %x : (tensor<?x4xf32, #llm.dims<"batch", ?>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// A declared size that the refined operands contradict is an error, not
// rewritten (the input verifies: %0 was `?` when it was checked).
func.func @conflict(%x: tensor<2xf32>) -> tensor<3xf32> {
  %0 = llm.onnx.identity %x : (tensor<2xf32>) -> tensor<?xf32>
  // expected-error @+1 {{'llm.onnx.relu' op result types conflict with the inferred ones}}
  %1 = llm.onnx.relu %0 : (tensor<?xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
