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

// -----

// Quantized projections of one input with the same scheme merge like float
// ones: weights, scales and zero points stacked along N (rows 1, 2 then 3;
// weight bytes 0x11.. 0x22.. 0x33..), inside the norm's kernel; the
// residual add after the output projection joins its kernel.
// CHECK-LABEL: func.func @quantized_layer
// CHECK-SAME: llm.kernels = 2
// CHECK: llm.fused "norm_linear"
// CHECK: llm.quantized_linear %{{.+}} {bits = 4 : i64, group_size = 32 : i64} : (tensor<1x4x32xf32>, tensor<3x1x16xui8>, tensor<3x1xf32>, tensor<3x1xui8>, none) -> tensor<1x4x3xf32>
// CHECK-COUNT-2: llm.onnx.slice
// CHECK: llm.fused "linear_residual"
// CHECK: llm.quantized_linear
// CHECK: llm.onnx.add
// CHECK: merged_weight: "0x4000000011111111111111111111111111111111222222222222222222222222222222223333333333333333333333333333333
func.func @quantized_layer(%x: tensor<1x4x32xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x1xf32>) {
  %w = llm.constant dense<1.0> : tensor<32xf32>
  %qa = llm.constant dense<[[[17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17]], [[34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34, 34]]]> : tensor<2x1x16xui8>
  %qb = llm.constant dense<51> : tensor<1x1x16xui8>
  %sa = llm.constant dense<0.5> : tensor<2x1xf32>
  %sb = llm.constant dense<0.25> : tensor<1x1xf32>
  %za = llm.constant dense<8> : tensor<2x1xui8>
  %zb = llm.constant dense<7> : tensor<1x1xui8>
  %qo = llm.constant dense<1> : tensor<32x1x2xui8>
  %so = llm.constant dense<1.0> : tensor<32x1xf32>
  %none = llm.none
  %n = llm.rms_norm %x, %w : (tensor<1x4x32xf32>, tensor<32xf32>) -> tensor<1x4x32xf32>
  %a = llm.quantized_linear %n, %qa, %sa, %za, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<1x4x32xf32>, tensor<2x1x16xui8>, tensor<2x1xf32>, tensor<2x1xui8>, none) -> tensor<1x4x2xf32>
  %b = llm.quantized_linear %n, %qb, %sb, %zb, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<1x4x32xf32>, tensor<1x1x16xui8>, tensor<1x1xf32>, tensor<1x1xui8>, none) -> tensor<1x4x1xf32>
  %o = llm.quantized_linear %a, %qo, %so, %none, %none {bits = 8 : i64, group_size = 2 : i64} : (tensor<1x4x2xf32>, tensor<32x1x2xui8>, tensor<32x1xf32>, none, none) -> tensor<1x4x32xf32>
  %r = llm.onnx.add %o, %x : (tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  return %r, %b : tensor<1x4x32xf32>, tensor<1x4x1xf32>
}

// -----

// Negative: different group sizes do not merge.
// CHECK-LABEL: func.func @quantized_unlike
// CHECK-COUNT-2: llm.quantized_linear
// CHECK-NOT: merged_weight
func.func @quantized_unlike(%x: tensor<1x64xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>) {
  %none = llm.none
  %qa = llm.constant dense<1> : tensor<1x2x16xui8>
  %qb = llm.constant dense<1> : tensor<1x1x32xui8>
  %sa = llm.constant dense<0.5> : tensor<1x2xf32>
  %sb = llm.constant dense<0.5> : tensor<1x1xf32>
  %a = llm.quantized_linear %x, %qa, %sa, %none, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<1x64xf32>, tensor<1x2x16xui8>, tensor<1x2xf32>, none, none) -> tensor<1x1xf32>
  %b = llm.quantized_linear %x, %qb, %sb, %none, %none {bits = 4 : i64, group_size = 64 : i64} : (tensor<1x64xf32>, tensor<1x1x32xui8>, tensor<1x1xf32>, none, none) -> tensor<1x1xf32>
  return %a, %b : tensor<1x1xf32>, tensor<1x1xf32>
}

// -----

// Qwen 3's head norms: the key heads' norm between the two ropes moves
// before the queries' rope, so the ropes are neighbours (one CUDA launch,
// and at decode part of the attention's); a norm that feeds no linear
// layer is not outlined into a region of its own.
// CHECK-LABEL: func.func @head_norms
// CHECK: %[[QN:.+]] = llm.rms_norm %arg0
// CHECK-NEXT: %[[KN:.+]] = llm.rms_norm %arg1
// CHECK-NEXT: llm.rope %[[QN]]
// CHECK-NEXT: llm.rope %[[KN]]
// CHECK-NOT: llm.fused
func.func @head_norms(%q: tensor<1x1x2x16xf32>, %k: tensor<1x1x1x16xf32>, %pos: tensor<1x1xi64>) -> (tensor<1x1x2x16xf32>, tensor<1x1x1x16xf32>) {
  %wq = llm.constant dense<1.0> : tensor<16xf32>
  %wk = llm.constant dense<2.0> : tensor<16xf32>
  %cos = llm.constant dense<1.0> : tensor<8x8xf32>
  %sin = llm.constant dense<0.0> : tensor<8x8xf32>
  %qn = llm.rms_norm %q, %wq : (tensor<1x1x2x16xf32>, tensor<16xf32>) -> tensor<1x1x2x16xf32>
  %qr = llm.rope %qn, %cos, %sin, %pos : (tensor<1x1x2x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x1xi64>) -> tensor<1x1x2x16xf32>
  %kn = llm.rms_norm %k, %wk : (tensor<1x1x1x16xf32>, tensor<16xf32>) -> tensor<1x1x1x16xf32>
  %kr = llm.rope %kn, %cos, %sin, %pos : (tensor<1x1x1x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x1xi64>) -> tensor<1x1x1x16xf32>
  return %qr, %kr : tensor<1x1x2x16xf32>, tensor<1x1x1x16xf32>
}

// -----

// Negative: what the keys' rope needs depends on the queries' rope; nothing
// moves.
// CHECK-LABEL: func.func @rope_after_rope
// CHECK: llm.rope %arg0
// CHECK-NEXT: llm.onnx.add
// CHECK-NEXT: llm.rope
func.func @rope_after_rope(%q: tensor<1x1x1x16xf32>, %pos: tensor<1x1xi64>) -> tensor<1x1x1x16xf32> {
  %cos = llm.constant dense<1.0> : tensor<8x8xf32>
  %sin = llm.constant dense<0.0> : tensor<8x8xf32>
  %qr = llm.rope %q, %cos, %sin, %pos : (tensor<1x1x1x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x1xi64>) -> tensor<1x1x1x16xf32>
  %s = llm.onnx.add %qr, %q : (tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x1x1x16xf32>
  %kr = llm.rope %s, %cos, %sin, %pos : (tensor<1x1x1x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x1xi64>) -> tensor<1x1x1x16xf32>
  return %kr : tensor<1x1x1x16xf32>
}
