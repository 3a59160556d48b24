// RUN: llmc-opt --split-input-file --llmc-fuse %s | FileCheck %s

// Two projections of one input merge into one linear with the weights
// stacked (rows [[1, 2], [3, 4]] then [[5, 6]]: 1 2 3 4 5 6 after the
// alignment word); the norm, the merged projection and the slices become
// one kernel; the output projection and the residual add another. The
// function has 3 kernels (two fused groups and the final add).
// CHECK-LABEL: func.func @layer
// CHECK-SAME: llm.kernels = 3
// CHECK: %[[N:.+]]:2 = llm.fused "norm_linear"(%arg0, %{{.+}}, %{{.+}}) : (tensor<1x4x2xf32>, tensor<2xf32>, tensor<3x2xf32>
// CHECK: llm.rms_norm
// CHECK: llm.linear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x4x2xf32>, tensor<3x2xf32>, none) -> tensor<1x4x3xf32>
// CHECK-COUNT-2: llm.onnx.slice
// CHECK: llm.yield
// CHECK: %[[R:.+]] = llm.fused "linear_residual"
// CHECK: llm.linear
// CHECK: llm.onnx.add
// CHECK: merged_weight: "0x400000000000803F000000400000404000008040
func.func @layer(%x: tensor<1x4x2xf32>) -> (tensor<1x4x2xf32>, tensor<1x4x1xf32>) {
  %w = llm.constant dense<1.0> : tensor<2xf32>
  %wa = llm.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wb = llm.constant dense<[[5.0, 6.0]]> : tensor<1x2xf32>
  %wo = llm.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %none = llm.none
  %n = llm.rms_norm %x, %w : (tensor<1x4x2xf32>, tensor<2xf32>) -> tensor<1x4x2xf32>
  %a = llm.linear %n, %wa, %none : (tensor<1x4x2xf32>, tensor<2x2xf32>, none) -> tensor<1x4x2xf32>
  %b = llm.linear %n, %wb, %none : (tensor<1x4x2xf32>, tensor<1x2xf32>, none) -> tensor<1x4x1xf32>
  %o = llm.linear %a, %wo, %none : (tensor<1x4x2xf32>, tensor<2x2xf32>, none) -> tensor<1x4x2xf32>
  %r = llm.onnx.add %o, %x : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %y = llm.onnx.add %r, %r : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  return %y, %b : tensor<1x4x2xf32>, tensor<1x4x1xf32>
}

// -----

// Negative: the projection's result is also read between it and the add
// (by the neg), so moving the pair to the add would break that read: no
// linear_residual group.
// CHECK-LABEL: func.func @read_before
// CHECK-NOT: llm.fused "linear_residual"
// CHECK: llm.linear
// CHECK: llm.onnx.neg
// CHECK: llm.onnx.add
func.func @read_before(%x: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %wo = llm.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %none = llm.none
  %o = llm.linear %x, %wo, %none : (tensor<1x2xf32>, tensor<2x2xf32>, none) -> tensor<1x2xf32>
  %n = llm.onnx.neg %o : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %r = llm.onnx.add %o, %x : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  return %r, %n : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// A chain of elementwise operations, each read only by the next, is one
// kernel; %m is read twice, so the chain starts after it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: llm.kernels = 2
// CHECK: %[[M:.+]] = llm.onnx.mul %arg0, %arg1
// CHECK: llm.fused "elementwise"(%[[M]], %arg1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: llm.onnx.add
// CHECK: llm.onnx.tanh
// CHECK: llm.onnx.neg
func.func @chain(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m = llm.onnx.mul %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = llm.onnx.add %m, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %t = llm.onnx.tanh %a : (tensor<8xf32>) -> tensor<8xf32>
  %n = llm.onnx.neg %t : (tensor<8xf32>) -> tensor<8xf32>
  return %n, %m : tensor<8xf32>, tensor<8xf32>
}
