// RUN: llmc-opt --split-input-file --llmc-raise-transformer="max-positions=8" %s | FileCheck %s

// optimum's RMS norm: Pow, ReduceMean over axes [-1], Add eps, Sqrt, 1/x,
// Mul x, Mul weight (epsilon 1e-6 is the op's default, so not printed).
// CHECK-LABEL: func.func @rms_norm_optimum
// CHECK-NEXT: %[[W:.+]] = llm.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-NEXT: %[[Y:.+]] = llm.rms_norm %arg0, %[[W]] : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_optimum(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %w = llm.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = llm.constant dense<2.0> : tensor<f32>
  %one = llm.constant dense<1.0> : tensor<f32>
  %axes = llm.constant dense<-1> : tensor<1xi64>
  %eps = llm.constant dense<1.0e-6> : tensor<f32>
  %0 = llm.onnx.pow %x, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %1 = llm.onnx.reduce_mean %0, %axes : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %2 = llm.onnx.add %1, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %3 = llm.onnx.sqrt %2 : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %4 = llm.onnx.div %one, %3 : (tensor<f32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %5 = llm.onnx.mul %x, %4 : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %6 = llm.onnx.mul %w, %5 : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %6 : tensor<2x3x4xf32>
}

// -----

// Mul squares, Reciprocal, the weight on the right.
// CHECK-LABEL: func.func @rms_norm_reciprocal
// CHECK: llm.rms_norm %arg0, %{{.+}} {epsilon = 9.99999974E-6 : f32}
// CHECK-NOT: llm.onnx
func.func @rms_norm_reciprocal(%x: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %w = llm.constant dense<0.5> : tensor<8xf32>
  %axes = llm.constant dense<1> : tensor<1xi64>
  %eps = llm.constant dense<1.0e-5> : tensor<f32>
  %0 = llm.onnx.mul %x, %x : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %1 = llm.onnx.reduce_mean %0, %axes : (tensor<5x8xf32>, tensor<1xi64>) -> tensor<5x1xf32>
  %2 = llm.onnx.add %eps, %1 : (tensor<f32>, tensor<5x1xf32>) -> tensor<5x1xf32>
  %3 = llm.onnx.sqrt %2 : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %4 = llm.onnx.reciprocal %3 : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %5 = llm.onnx.mul %4, %x : (tensor<5x1xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %6 = llm.onnx.mul %5, %w : (tensor<5x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  return %6 : tensor<5x8xf32>
}

// -----

// Negative: the mean is over axis 0, not the hidden dimension; and a weight
// that is not a constant. Neither is an RMS norm.
// CHECK-LABEL: func.func @not_rms_norm
// CHECK-NOT: llm.rms_norm
// CHECK: llm.onnx.reduce_mean
// CHECK: llm.onnx.reduce_mean
func.func @not_rms_norm(%x: tensor<5x8xf32>, %wv: tensor<8xf32>) -> (tensor<5x8xf32>, tensor<5x8xf32>) {
  %w = llm.constant dense<0.5> : tensor<8xf32>
  %axis0 = llm.constant dense<0> : tensor<1xi64>
  %axes = llm.constant dense<-1> : tensor<1xi64>
  %eps = llm.constant dense<1.0e-5> : tensor<f32>
  %0 = llm.onnx.mul %x, %x : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
  %1 = llm.onnx.reduce_mean %0, %axis0 : (tensor<5x8xf32>, tensor<1xi64>) -> tensor<1x8xf32>
  %2 = llm.onnx.add %1, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %3 = llm.onnx.sqrt %2 : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %4 = llm.onnx.div %x, %3 : (tensor<5x8xf32>, tensor<1x8xf32>) -> tensor<5x8xf32>
  %5 = llm.onnx.mul %4, %w : (tensor<5x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  %6 = llm.onnx.reduce_mean %0, %axes : (tensor<5x8xf32>, tensor<1xi64>) -> tensor<5x1xf32>
  %7 = llm.onnx.add %6, %eps : (tensor<5x1xf32>, tensor<f32>) -> tensor<5x1xf32>
  %8 = llm.onnx.sqrt %7 : (tensor<5x1xf32>) -> tensor<5x1xf32>
  %9 = llm.onnx.div %x, %8 : (tensor<5x8xf32>, tensor<5x1xf32>) -> tensor<5x8xf32>
  %10 = llm.onnx.mul %9, %wv : (tensor<5x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  return %5, %10 : tensor<5x8xf32>, tensor<5x8xf32>
}

// -----

// A Llama MLP: the projections become linear layers with [N, K] weights,
// x * sigmoid(x) is SiLU and silu(gate) * up is SwiGLU.
// CHECK-LABEL: func.func @swiglu_mlp
// CHECK-DAG: %[[WG:.+]] = llm.constant dense_resource<{{.+}}> : tensor<3x2xf32>
// CHECK-DAG: %[[WU:.+]] = llm.constant dense_resource<{{.+}}> : tensor<3x2xf32>
// CHECK-DAG: %[[G:.+]] = llm.linear %arg0, %[[WG]], %{{.+}} : (tensor<4x2xf32>, tensor<3x2xf32>, none) -> tensor<4x3xf32>
// CHECK-DAG: %[[U:.+]] = llm.linear %arg0, %[[WU]], %{{.+}} : (tensor<4x2xf32>, tensor<3x2xf32>, none) -> tensor<4x3xf32>
// CHECK: %[[H:.+]] = llm.swiglu %[[G]], %[[U]]
// CHECK: return %[[H]]
func.func @swiglu_mlp(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %wg = llm.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %wu = llm.constant dense<[[0.5, 0.25, 0.125], [1.0, 1.5, 2.0]]> : tensor<2x3xf32>
  %g = llm.onnx.matmul %x, %wg : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %s = llm.onnx.sigmoid %g : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = llm.onnx.mul %g, %s : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %u = llm.onnx.matmul %x, %wu : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %h = llm.onnx.mul %a, %u : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}

// -----

// The weight is stored transposed: [[1, 2, 3], [4, 5, 6]] as [3, 2]
// (little-endian f32 1, 4, 2, 5, 3, 6 after the 4-byte alignment header).
// CHECK-LABEL: func.func @linear_bias
// CHECK-DAG: %[[B:.+]] = llm.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]>
// CHECK-DAG: %[[W:.+]] = llm.constant dense_resource<weight_t> : tensor<3x2xf32>
// CHECK: llm.linear %arg0, %[[W]], %[[B]] : (tensor<?x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<?x3xf32>
// CHECK-NOT: llm.onnx
// CHECK: weight_t: "0x080000000000803F0000804000000040
func.func @linear_bias(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %w = llm.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = llm.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %0 = llm.onnx.matmul %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  %1 = llm.onnx.add %b, %0 : (tensor<3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %1 : tensor<?x3xf32>
}

// -----

// Gemm with transB keeps its [N, K] weight and takes its bias.
// CHECK-LABEL: func.func @gemm
// CHECK: llm.linear %arg0, %{{.+}}, %{{.+}} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// Negative: scaled by alpha, and a product of two activations.
// CHECK: llm.onnx.gemm
// CHECK: llm.onnx.matmul %arg0, %arg1
func.func @gemm(%x: tensor<4x2xf32>, %y: tensor<2x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = llm.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = llm.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %0 = llm.onnx.gemm %x, %w, %b {transB = 1 : i64} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = llm.onnx.gemm %x, %w, %b {transB = 1 : i64, alpha = 2.0 : f32} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = llm.onnx.matmul %x, %y : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0, %1, %2 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// GELU as torch writes it (erf) and as GPT-2 writes it (tanh), recognised by
// evaluation whatever the operand order.
// CHECK-LABEL: func.func @gelus
// CHECK-DAG: %[[E:.+]] = llm.gelu %arg0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-DAG: %[[T:.+]] = llm.gelu %arg1 {approximate_tanh = true} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK: return %[[E]], %[[T]]
func.func @gelus(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %half = llm.constant dense<0.5> : tensor<f32>
  %one = llm.constant dense<1.0> : tensor<f32>
  %rsqrt2 = llm.constant dense<1.41421354> : tensor<f32>
  %0 = llm.onnx.div %x, %rsqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = llm.onnx.erf %0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = llm.onnx.add %1, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %3 = llm.onnx.mul %x, %2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = llm.onnx.mul %3, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %three = llm.constant dense<3.0> : tensor<f32>
  %c = llm.constant dense<0.044715> : tensor<f32>
  %k = llm.constant dense<0.797884583> : tensor<f32>
  %5 = llm.onnx.pow %z, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %6 = llm.onnx.mul %c, %5 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %7 = llm.onnx.add %z, %6 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %8 = llm.onnx.mul %k, %7 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %9 = llm.onnx.tanh %8 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %10 = llm.onnx.add %one, %9 : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %11 = llm.onnx.mul %half, %z : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %12 = llm.onnx.mul %11, %10 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %4, %12 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Negative: x * sigmoid(1.702 x) (quick GELU) and x * tanh(x) are not
// activations llm has; they stay as they are.
// CHECK-LABEL: func.func @not_activations
// CHECK-NOT: llm.gelu
// CHECK-NOT: llm.silu
// CHECK: llm.onnx.sigmoid
// CHECK: llm.onnx.tanh
func.func @not_activations(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %k = llm.constant dense<1.702> : tensor<f32>
  %0 = llm.onnx.mul %x, %k : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = llm.onnx.sigmoid %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = llm.onnx.mul %x, %1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = llm.onnx.tanh %x : (tensor<8xf32>) -> tensor<8xf32>
  %4 = llm.onnx.mul %x, %3 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2, %4 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Token embedding; a Gather on axis 1 is not one.
// CHECK-LABEL: func.func @embedding
// CHECK: llm.embedding %{{.+}}, %arg0 : (tensor<4x2xf32>, tensor<?x?xi64>) -> tensor<?x?x2xf32>
// CHECK: llm.onnx.gather
func.func @embedding(%ids: tensor<?x?xi64>, %j: tensor<3xi64>) -> (tensor<?x?x2xf32>, tensor<4x3xf32>) {
  %t = llm.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %0 = llm.onnx.gather %t, %ids : (tensor<4x2xf32>, tensor<?x?xi64>) -> tensor<?x?x2xf32>
  %u = llm.constant dense<1.0> : tensor<4x2xf32>
  %1 = llm.onnx.gather %u, %j {axis = 1 : i64} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  return %0, %1 : tensor<?x?x2xf32>, tensor<4x3xf32>
}

// -----

// The fused operators: LayerNormalization, SkipSimplifiedLayerNormalization
// (whose sum stays an Add for the residual stream), FastGelu with a bias.
// CHECK-LABEL: func.func @fused
// CHECK: %[[LN:.+]] = llm.layer_norm %arg0, %{{.+}}, %{{.+}} :
// CHECK: %[[SUM:.+]] = llm.onnx.add %[[LN]], %arg1
// CHECK: %[[RMS:.+]] = llm.rms_norm %[[SUM]], %{{.+}} :
// CHECK: %[[PRE:.+]] = llm.onnx.add %[[RMS]], %{{.+}}
// CHECK: %[[G:.+]] = llm.gelu %[[PRE]] {approximate_tanh = true}
// CHECK: return %[[G]], %[[SUM]]
func.func @fused(%x: tensor<2x4xf32>, %r: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %g = llm.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = llm.constant dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>
  %none = llm.none
  %0:3 = llm.onnx.layer_normalization %x, %g, %b : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %1:4 = llm.ms.skip_simplified_layer_normalization %0#0, %r, %g, %none {epsilon = 1.0e-6 : f32} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, none) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32>)
  %2 = llm.ms.fast_gelu %1#0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %2, %1#3 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Rope as optimum writes it: cos/sin from position ids through inv_freq,
// q in [B, H, S, D]. The tables are tabulated for 8 positions
// (max-positions, RUN line below), the first half of each row kept.
// CHECK-LABEL: func.func @rope
// CHECK-DAG: %[[COS:.+]] = llm.constant dense_resource<rope_cos> : tensor<8x2xf32>
// CHECK-DAG: %[[SIN:.+]] = llm.constant dense_resource<rope_sin> : tensor<8x2xf32>
// CHECK: %[[T:.+]] = llm.onnx.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x3x?x4xf32>) -> tensor<?x?x3x4xf32>
// CHECK: %[[R:.+]] = llm.rope %[[T]], %[[COS]], %[[SIN]], %arg1 : (tensor<?x?x3x4xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<?x?xi64>) -> tensor<?x?x3x4xf32>
// CHECK: %[[Y:.+]] = llm.onnx.transpose %[[R]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK: return %[[Y]]
// Rows 0 and 1 of cos (after the alignment word): 1, 1, then cos(1),
// cos(0.01) (inv_freq 1 and 0.01).
// CHECK: rope_cos: "0x080000000000803F0000803F40510A3FB9FC7F3F
func.func @rope(%q: tensor<?x3x?x4xf32>, %pos: tensor<?x?xi64>) -> tensor<?x3x?x4xf32> {
  %inv = llm.constant dense<[[[1.0], [0.01]]]> : tensor<1x2x1xf32>
  %a1 = llm.constant dense<1> : tensor<1xi64>
  %p0 = llm.onnx.unsqueeze %pos, %a1 : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %p1 = llm.onnx.cast %p0 {to = 1 : i64} : (tensor<?x1x?xi64>) -> tensor<?x1x?xf32>
  %f = llm.onnx.matmul %inv, %p1 : (tensor<1x2x1xf32>, tensor<?x1x?xf32>) -> tensor<?x2x?xf32>
  %ft = llm.onnx.transpose %f {perm = array<i64: 0, 2, 1>} : (tensor<?x2x?xf32>) -> tensor<?x?x2xf32>
  %emb = llm.onnx.concat %ft, %ft {axis = -1 : i64} : (tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> tensor<?x?x4xf32>
  %c = llm.onnx.cos %emb : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %s = llm.onnx.sin %emb : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %cu = llm.onnx.unsqueeze %c, %a1 : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x1x?x4xf32>
  %su = llm.onnx.unsqueeze %s, %a1 : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x1x?x4xf32>
  %lo_s = llm.constant dense<0> : tensor<1xi64>
  %mid = llm.constant dense<2> : tensor<1xi64>
  %end = llm.constant dense<9223372036854775807> : tensor<1xi64>
  %ax = llm.constant dense<3> : tensor<1xi64>
  %x1 = llm.onnx.slice %q, %lo_s, %mid, %ax, %a1 : (tensor<?x3x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3x?x2xf32>
  %x2 = llm.onnx.slice %q, %mid, %end, %ax, %a1 : (tensor<?x3x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x3x?x2xf32>
  %n2 = llm.onnx.neg %x2 : (tensor<?x3x?x2xf32>) -> tensor<?x3x?x2xf32>
  %rot = llm.onnx.concat %n2, %x1 {axis = -1 : i64} : (tensor<?x3x?x2xf32>, tensor<?x3x?x2xf32>) -> tensor<?x3x?x4xf32>
  %m1 = llm.onnx.mul %q, %cu : (tensor<?x3x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x3x?x4xf32>
  %m2 = llm.onnx.mul %rot, %su : (tensor<?x3x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x3x?x4xf32>
  %y = llm.onnx.add %m1, %m2 : (tensor<?x3x?x4xf32>, tensor<?x3x?x4xf32>) -> tensor<?x3x?x4xf32>
  return %y : tensor<?x3x?x4xf32>
}

// -----

// Negative: the same rotation with cos and sin given as arguments (nothing
// ties them to positions), and with the halves swapped (not a rotation).
// CHECK-LABEL: func.func @not_rope
// CHECK-NOT: llm.rope
// CHECK: llm.onnx.neg
func.func @not_rope(%q: tensor<1x3x5x4xf32>, %cu: tensor<1x1x5x4xf32>, %su: tensor<1x1x5x4xf32>) -> (tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>) {
  %a1 = llm.constant dense<1> : tensor<1xi64>
  %lo_s = llm.constant dense<0> : tensor<1xi64>
  %mid = llm.constant dense<2> : tensor<1xi64>
  %end = llm.constant dense<4> : tensor<1xi64>
  %ax = llm.constant dense<-1> : tensor<1xi64>
  %x1 = llm.onnx.slice %q, %lo_s, %mid, %ax, %a1 : (tensor<1x3x5x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x5x2xf32>
  %x2 = llm.onnx.slice %q, %mid, %end, %ax, %a1 : (tensor<1x3x5x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x5x2xf32>
  %n2 = llm.onnx.neg %x2 : (tensor<1x3x5x2xf32>) -> tensor<1x3x5x2xf32>
  %rot = llm.onnx.concat %n2, %x1 {axis = -1 : i64} : (tensor<1x3x5x2xf32>, tensor<1x3x5x2xf32>) -> tensor<1x3x5x4xf32>
  %m1 = llm.onnx.mul %q, %cu : (tensor<1x3x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x3x5x4xf32>
  %m2 = llm.onnx.mul %rot, %su : (tensor<1x3x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x3x5x4xf32>
  %y = llm.onnx.add %m1, %m2 : (tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>) -> tensor<1x3x5x4xf32>
  %n1 = llm.onnx.neg %x1 : (tensor<1x3x5x2xf32>) -> tensor<1x3x5x2xf32>
  %swapped = llm.onnx.concat %n1, %x2 {axis = -1 : i64} : (tensor<1x3x5x2xf32>, tensor<1x3x5x2xf32>) -> tensor<1x3x5x4xf32>
  %m3 = llm.onnx.mul %swapped, %su : (tensor<1x3x5x4xf32>, tensor<1x1x5x4xf32>) -> tensor<1x3x5x4xf32>
  %z = llm.onnx.add %m1, %m3 : (tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>) -> tensor<1x3x5x4xf32>
  return %y, %z : tensor<1x3x5x4xf32>, tensor<1x3x5x4xf32>
}

// -----

// HF eager attention with GQA (2 query heads on 1 key/value head through
// repeat_kv), sqrt(scale) on both q and k^T, an additive mask and the NaN
// cleanup of fully masked rows: one llm.attention in [B, S, H, D] (q's
// transposes cancel), the mask kept as it is. The scale is the product of
// the factors as f32 computes them.
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[K:.+]] = llm.onnx.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x?x4xf32>) -> tensor<1x?x1x4xf32>
// CHECK-DAG: %[[V:.+]] = llm.onnx.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x?x4xf32>) -> tensor<1x?x1x4xf32>
// CHECK: %[[O:.+]] = llm.attention %arg0, %[[K]], %[[V]], %arg3 {num_heads = 2 : i64, num_kv_heads = 1 : i64, scale = 0.49999997 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x1x4xf32>, tensor<1x?x1x4xf32>, tensor<1x1x?x?xf32>) -> tensor<1x?x2x4xf32>
// CHECK-NOT: llm.onnx.softmax
// CHECK: return %[[O]]
func.func @attention(%q0: tensor<1x?x2x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>, %mask: tensor<1x1x?x?xf32>) -> tensor<1x?x2x4xf32> {
  %q = llm.onnx.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %a2 = llm.constant dense<2> : tensor<1xi64>
  %rep = llm.constant dense<[1, 1, 2, 1, 4]> : tensor<5xi64>
  %to4 = llm.constant dense<[0, 2, -1, 4]> : tensor<4xi64>
  %k5 = llm.onnx.unsqueeze %k, %a2 : (tensor<1x1x?x4xf32>, tensor<1xi64>) -> tensor<1x1x1x?x4xf32>
  %ke = llm.onnx.expand %k5, %rep : (tensor<1x1x1x?x4xf32>, tensor<5xi64>) -> tensor<1x1x2x?x4xf32>
  %kr = llm.onnx.reshape %ke, %to4 : (tensor<1x1x2x?x4xf32>, tensor<4xi64>) -> tensor<1x2x?x4xf32>
  %v5 = llm.onnx.unsqueeze %v, %a2 : (tensor<1x1x?x4xf32>, tensor<1xi64>) -> tensor<1x1x1x?x4xf32>
  %ve = llm.onnx.expand %v5, %rep : (tensor<1x1x1x?x4xf32>, tensor<5xi64>) -> tensor<1x1x2x?x4xf32>
  %vr = llm.onnx.reshape %ve, %to4 : (tensor<1x1x2x?x4xf32>, tensor<4xi64>) -> tensor<1x2x?x4xf32>
  %kt = llm.onnx.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x4x?xf32>
  %s = llm.constant dense<0.707106769> : tensor<f32>
  %qs = llm.onnx.mul %q, %s : (tensor<1x2x?x4xf32>, tensor<f32>) -> tensor<1x2x?x4xf32>
  %ks = llm.onnx.mul %kt, %s : (tensor<1x2x4x?xf32>, tensor<f32>) -> tensor<1x2x4x?xf32>
  %sc = llm.onnx.matmul %qs, %ks : (tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x?x?xf32>
  %sm = llm.onnx.add %sc, %mask : (tensor<1x2x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p = llm.onnx.softmax %sm : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %nan = llm.onnx.is_nan %p : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xi1>
  %zero = llm.constant dense<0.0> : tensor<f32>
  %pc = llm.onnx.where %nan, %zero, %p : (tensor<1x2x?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o = llm.onnx.matmul %pc, %vr : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %ot = llm.onnx.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  return %ot : tensor<1x?x2x4xf32>
}

// -----

// Negative: the softmax runs over the queries (axis 2), and the second
// product's key is transposed over the wrong dimensions.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: llm.attention
// CHECK: llm.onnx.softmax
// CHECK: llm.onnx.softmax
func.func @not_attention(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> (tensor<1x2x5x4xf32>, tensor<2x1x5x5xf32>) {
  %kt = llm.onnx.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
  %sc = llm.onnx.matmul %q, %kt : (tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x5x5xf32>
  %p = llm.onnx.softmax %sc {axis = 2 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %o = llm.onnx.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %q2 = llm.onnx.transpose %q {perm = array<i64: 1, 0, 2, 3>} : (tensor<1x2x5x4xf32>) -> tensor<2x1x5x4xf32>
  %kw = llm.onnx.transpose %k {perm = array<i64: 1, 0, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<2x1x4x5xf32>
  %sc2 = llm.onnx.matmul %q2, %kw : (tensor<2x1x5x4xf32>, tensor<2x1x4x5xf32>) -> tensor<2x1x5x5xf32>
  %p2 = llm.onnx.softmax %sc2 : (tensor<2x1x5x5xf32>) -> tensor<2x1x5x5xf32>
  return %o, %p2 : tensor<1x2x5x4xf32>, tensor<2x1x5x5xf32>
}

// -----

// A softmax written out over the last axis: Exp(x - ReduceMax(x)) /
// ReduceSum(..), both kept; Exp(x) / ReduceSum(Exp(x)) (the same
// function); Reciprocal(ReduceSum(Exp(x))) * Exp(x): each is one
// onnx.softmax. Over another axis, or a sum of another value, it stays as
// written.
// CHECK-LABEL: func.func @softmax_written_out
// CHECK: %[[A:.+]] = llm.onnx.softmax %arg0 : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[B:.+]] = llm.onnx.softmax %arg1 : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NOT: llm.onnx.softmax
// CHECK: %[[C:.+]] = llm.onnx.div
// CHECK: %[[D:.+]] = llm.onnx.div
// CHECK: %[[E:.+]] = llm.onnx.softmax %arg1 : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
func.func @softmax_written_out(%x: tensor<2x3x5xf32>, %y: tensor<2x5xf32>, %z: tensor<2x5xf32>) -> (tensor<2x3x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %last = llm.constant dense<-1> : tensor<1xi64>
  %first = llm.constant dense<0> : tensor<1xi64>
  %m = llm.onnx.reduce_max %x, %last : (tensor<2x3x5xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %d = llm.onnx.sub %x, %m : (tensor<2x3x5xf32>, tensor<2x3x1xf32>) -> tensor<2x3x5xf32>
  %e = llm.onnx.exp %d : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s = llm.onnx.reduce_sum %e, %last : (tensor<2x3x5xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %p = llm.onnx.div %e, %s : (tensor<2x3x5xf32>, tensor<2x3x1xf32>) -> tensor<2x3x5xf32>
  %e2 = llm.onnx.exp %y : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %s2 = llm.onnx.reduce_sum %e2, %last : (tensor<2x5xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %p2 = llm.onnx.div %e2, %s2 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %e3 = llm.onnx.exp %z : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %s3 = llm.onnx.reduce_sum %e3, %first : (tensor<2x5xf32>, tensor<1xi64>) -> tensor<1x5xf32>
  %p3 = llm.onnx.div %e3, %s3 : (tensor<2x5xf32>, tensor<1x5xf32>) -> tensor<2x5xf32>
  %s4 = llm.onnx.reduce_sum %e2, %last : (tensor<2x5xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %p4 = llm.onnx.div %e3, %s4 : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %r5 = llm.onnx.reciprocal %s2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %p5 = llm.onnx.mul %r5, %e2 : (tensor<2x1xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  return %p, %p2, %p3, %p4, %p5 : tensor<2x3x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

// Scores masked by a Where (a boolean mask keeps a key, -1e9 replaces the
// score of any other) and a softmax written out: an llm.attention whose
// additive mask is Where(keep, 0, -1e9). A fill that cannot remove a key
// (-1) is no mask: that attention stays as written.
// CHECK-LABEL: func.func @attention_where_mask
// CHECK-DAG: %[[ZERO:.+]] = llm.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[LOW:.+]] = llm.constant dense<-1.000000e+09> : tensor<f32>
// CHECK: %[[MASK:.+]] = llm.onnx.where %arg3, %[[ZERO]], %[[LOW]] : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[MASK]] {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32}
// CHECK-NOT: llm.attention
// CHECK: return
func.func @attention_where_mask(%q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %v: tensor<1x2x?x4xf32>, %keep: tensor<1x1x?x?xi1>) -> (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) {
  %last = llm.constant dense<-1> : tensor<1xi64>
  %half = llm.constant dense<0.5> : tensor<f32>
  %low = llm.constant dense<-1.0e9> : tensor<f32>
  %one = llm.constant dense<-1.0> : tensor<f32>
  %kt = llm.onnx.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x4x?xf32>
  %qk = llm.onnx.matmul %q, %kt : (tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x?x?xf32>
  %sc = llm.onnx.mul %qk, %half : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %w = llm.onnx.where %keep, %sc, %low : (tensor<1x1x?x?xi1>, tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %m = llm.onnx.reduce_max %w, %last : (tensor<1x2x?x?xf32>, tensor<1xi64>) -> tensor<1x2x?x1xf32>
  %d = llm.onnx.sub %w, %m : (tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) -> tensor<1x2x?x?xf32>
  %e = llm.onnx.exp %d : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %s = llm.onnx.reduce_sum %e, %last : (tensor<1x2x?x?xf32>, tensor<1xi64>) -> tensor<1x2x?x1xf32>
  %p = llm.onnx.div %e, %s : (tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) -> tensor<1x2x?x?xf32>
  %o = llm.onnx.matmul %p, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %w2 = llm.onnx.where %keep, %sc, %one : (tensor<1x1x?x?xi1>, tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %p2 = llm.onnx.softmax %w2 : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %o2 = llm.onnx.matmul %p2, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  return %o, %o2 : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>
}

// -----

// gpt-oss's attention sinks as HF's eager attention writes them: a logit per
// head (reshaped to [1, H, 1, 1], expanded over the rows) concatenated to
// the masked scores, the maximum subtracted, a softmax, the sink's column
// sliced off before the values: an llm.attention with `sinks`. The same
// with the sink's column first (sliced from 1). A sink computed from an
// argument is no constant: that attention stays as written.
// CHECK-LABEL: func.func @attention_sinks
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32, sinks = array<f32: 1.500000e+00, -2.000000e+00>}
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32, sinks = array<f32: 1.500000e+00, -2.000000e+00>}
// CHECK-NOT: llm.attention
// CHECK: return
func.func @attention_sinks(%q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %v: tensor<1x2x?x4xf32>, %keep: tensor<1x1x?x?xi1>, %learned: tensor<2xf32>) -> (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) {
  %last = llm.constant dense<-1> : tensor<1xi64>
  %zero = llm.constant dense<0> : tensor<1xi64>
  %first = llm.constant dense<1> : tensor<1xi64>
  %end = llm.constant dense<9223372036854775807> : tensor<1xi64>
  %half = llm.constant dense<0.5> : tensor<f32>
  %low = llm.constant dense<-1.0e9> : tensor<f32>
  %sinks = llm.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %to4 = llm.constant dense<[1, -1, 1, 1]> : tensor<4xi64>
  %none = llm.none
  %kt = llm.onnx.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x4x?xf32>
  %qk = llm.onnx.matmul %q, %kt : (tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x?x?xf32>
  %sc = llm.onnx.mul %qk, %half : (tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %w = llm.onnx.where %keep, %sc, %low : (tensor<1x1x?x?xi1>, tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %shape = llm.onnx.shape %w {end = 3 : i64} : (tensor<1x2x?x?xf32>) -> tensor<3xi64>
  %rows = llm.onnx.concat %shape, %first {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<4xi64>
  %s4 = llm.onnx.reshape %sinks, %to4 : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
  %col = llm.onnx.expand %s4, %rows : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x?x1xf32>
  %cat = llm.onnx.concat %w, %col {axis = -1 : i64} : (tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) -> tensor<1x2x?x?xf32>
  %m = llm.onnx.reduce_max %cat, %last : (tensor<1x2x?x?xf32>, tensor<1xi64>) -> tensor<1x2x?x1xf32>
  %d = llm.onnx.sub %cat, %m : (tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) -> tensor<1x2x?x?xf32>
  %p = llm.onnx.softmax %d : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %ps = llm.onnx.slice %p, %zero, %last, %last, %none : (tensor<1x2x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x?x?xf32>
  %o = llm.onnx.matmul %ps, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %cat2 = llm.onnx.concat %col, %w {axis = 3 : i64} : (tensor<1x2x?x1xf32>, tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %p2 = llm.onnx.softmax %cat2 : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %ps2 = llm.onnx.slice %p2, %first, %end, %last, %none : (tensor<1x2x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x?x?xf32>
  %o2 = llm.onnx.matmul %ps2, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %l4 = llm.onnx.reshape %learned, %to4 : (tensor<2xf32>, tensor<4xi64>) -> tensor<1x2x1x1xf32>
  %col3 = llm.onnx.expand %l4, %rows : (tensor<1x2x1x1xf32>, tensor<4xi64>) -> tensor<1x2x?x1xf32>
  %cat3 = llm.onnx.concat %w, %col3 {axis = -1 : i64} : (tensor<1x2x?x?xf32>, tensor<1x2x?x1xf32>) -> tensor<1x2x?x?xf32>
  %p3 = llm.onnx.softmax %cat3 : (tensor<1x2x?x?xf32>) -> tensor<1x2x?x?xf32>
  %ps3 = llm.onnx.slice %p3, %zero, %last, %last, %none : (tensor<1x2x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x?x?xf32>
  %o3 = llm.onnx.matmul %ps3, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  return %o, %o2, %o3 : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>
}

// -----

// A mask built from attention_mask and the sizes: key j is visible to query
// i when j <= (T - S) + i and attention_mask[b, j] != 0. Evaluating its
// construction on bindings of b, s, p shows it is causal with padding: it
// becomes `causal` and a boolean [B, 1, 1, T] mask from attention_mask.
// CHECK-LABEL: func.func @causal_mask
// CHECK: %[[FLAGS:.+]] = llm.onnx.cast %arg3 {to = 9 : i64}
// CHECK: %[[PAD:.+]] = llm.onnx.unsqueeze %[[FLAGS]], %{{.+}} : (tensor<?x?xi1, #llm.dims<"b", "p + s">>, tensor<2xi64>) -> tensor<?x1x1x?xi1, #llm.dims<"b", ?, ?, "p + s">>
// CHECK: llm.attention %arg0, %arg1, %arg2, %[[PAD]] {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32}
// CHECK-NOT: llm.onnx.less_or_equal
func.func @causal_mask(%q: tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, %k: tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, %v: tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, %am: tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>> {
  %c0 = llm.constant dense<0> : tensor<i64>
  %c1 = llm.constant dense<1> : tensor<i64>
  %ax0 = llm.constant dense<0> : tensor<1xi64>
  %ax1 = llm.constant dense<1> : tensor<1xi64>
  %ax12 = llm.constant dense<[1, 2]> : tensor<2xi64>
  %qs = llm.onnx.shape %q : (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>) -> tensor<4xi64>
  %S = llm.onnx.gather %qs, %c1 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ams = llm.onnx.shape %am : (tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<2xi64>
  %T = llm.onnx.gather %ams, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %P = llm.onnx.sub %T, %S : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %rows = llm.onnx.range %P, %T, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %cols = llm.onnx.range %c0, %T, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %r2 = llm.onnx.unsqueeze %rows, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %c2 = llm.onnx.unsqueeze %cols, %ax0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = llm.onnx.less_or_equal %c2, %r2 : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %flags = llm.onnx.cast %am {to = 9 : i64} : (tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<?x?xi1>
  %pad = llm.onnx.unsqueeze %flags, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %both = llm.onnx.and %causal, %pad : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %zero = llm.constant dense<0.0> : tensor<f32>
  %ninf = llm.constant dense<0xFF800000> : tensor<f32>
  %m = llm.onnx.where %both, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %o = llm.attention %q, %k, %v, %m {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x1x?x?xf32>) -> tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>
  return %o : tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>
}

// -----

// Negative: a padding mask without the causal part (bidirectional), and a
// causal mask that also hides the query's own key (j < position): neither
// is `causal`, both keep their masks.
// CHECK-LABEL: func.func @not_causal_masks
// CHECK-NOT: causal = true
// CHECK: llm.attention %arg0, %arg1, %arg2, %{{.+}} {num_heads
// CHECK: llm.attention %arg0, %arg1, %arg2, %{{.+}} {num_heads
func.func @not_causal_masks(%q: tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, %k: tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, %v: tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, %am: tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>) {
  %c0 = llm.constant dense<0> : tensor<i64>
  %c1 = llm.constant dense<1> : tensor<i64>
  %ax0 = llm.constant dense<0> : tensor<1xi64>
  %ax1 = llm.constant dense<1> : tensor<1xi64>
  %ax12 = llm.constant dense<[1, 2]> : tensor<2xi64>
  %zero = llm.constant dense<0.0> : tensor<f32>
  %ninf = llm.constant dense<0xFF800000> : tensor<f32>
  %flags = llm.onnx.cast %am {to = 9 : i64} : (tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<?x?xi1>
  %pad = llm.onnx.unsqueeze %flags, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %m1 = llm.onnx.where %pad, %zero, %ninf : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
  %o1 = llm.attention %q, %k, %v, %m1 {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x1x1x?xf32>) -> tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>
  %qs = llm.onnx.shape %q : (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>) -> tensor<4xi64>
  %S = llm.onnx.gather %qs, %c1 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ams = llm.onnx.shape %am : (tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<2xi64>
  %T = llm.onnx.gather %ams, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %P = llm.onnx.sub %T, %S : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %rows = llm.onnx.range %P, %T, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %cols = llm.onnx.range %c0, %T, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %r2 = llm.onnx.unsqueeze %rows, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %c2 = llm.onnx.unsqueeze %cols, %ax0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %strict = llm.onnx.less %c2, %r2 : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %both = llm.onnx.and %strict, %pad : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %m2 = llm.onnx.where %both, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %o2 = llm.attention %q, %k, %v, %m2 {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "p + s", ?, ?>>, tensor<?x1x?x?xf32>) -> tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>
  return %o1, %o2 : tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>, tensor<?x?x2x4xf32, #llm.dims<"b", "s", ?, ?>>
}

// -----

// onnxruntime's GroupQueryAttention with past/present and its own rotary:
// rope on q and k at positions seqlens_k + 1 - S + i, present = past ++ new,
// causal attention with the local window. Two llm.assert_equal state the
// protocol it is exact for (unpadded sequences).
// CHECK-LABEL: func.func @group_query_attention
// CHECK: %[[START:.+]] = llm.assert_equal %{{.+}}, %{{.+}}, %{{.+}} {message = "GroupQueryAttention: seqlens_k + 1 - sequence length must be the past length{{.*}}"}
// CHECK: llm.assert_equal %[[START]], %{{.+}}, %{{.+}} {message = "GroupQueryAttention: total_sequence_length must be the past length plus the sequence length"}
// CHECK: %[[QR:.+]] = llm.rope %{{.+}}, %{{.+}}, %{{.+}}, %[[POS:.+]] : (tensor<1x?x4x8xf32>
// CHECK: %[[KR:.+]] = llm.rope %{{.+}}, %{{.+}}, %{{.+}}, %[[POS]] : (tensor<1x?x2x8xf32>
// CHECK: %[[KT:.+]] = llm.onnx.transpose %[[KR]]
// CHECK: %[[PK:.+]] = llm.onnx.concat %arg3, %[[KT]] {axis = 2 : i64}
// CHECK: %[[PV:.+]] = llm.onnx.concat %arg4, %{{.+}} {axis = 2 : i64}
// CHECK: llm.attention %[[QR]], %{{.+}}, %{{.+}}, %{{.+}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32, window = 3 : i64}
// CHECK: return %{{.+}}, %[[PK]], %[[PV]]
func.func @group_query_attention(%q: tensor<1x?x32xf32>, %k: tensor<1x?x16xf32>, %v: tensor<1x?x16xf32>, %pk: tensor<1x2x?x8xf32>, %pv: tensor<1x2x?x8xf32>, %seqlens: tensor<1xi32>, %total: tensor<i32>) -> (tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) {
  %cos = llm.constant dense<1.0> : tensor<16x4xf32>
  %sin = llm.constant dense<0.5> : tensor<16x4xf32>
  %none = llm.none
  %o:4 = llm.ms.group_query_attention %q, %k, %v, %pk, %pv, %seqlens, %total, %cos, %sin, %none, %none, %none, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 2 : i64, do_rotary = 1 : i64, local_window_size = 3 : i64} : (tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1xi32>, tensor<i32>, tensor<16x4xf32>, tensor<16x4xf32>, none, none, none, none, none, none, none, none) -> (tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x?xf32>)
  return %o#0, %o#1, %o#2 : tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// Negative: an attention bias (operand 10) is not part of the raised form;
// the contrib op stays.
// CHECK-LABEL: func.func @gqa_with_bias
// CHECK: llm.ms.group_query_attention
// CHECK-NOT: llm.attention
func.func @gqa_with_bias(%q: tensor<1x?x32xf32>, %k: tensor<1x?x16xf32>, %v: tensor<1x?x16xf32>, %pk: tensor<1x2x?x8xf32>, %pv: tensor<1x2x?x8xf32>, %seqlens: tensor<1xi32>, %total: tensor<i32>, %bias: tensor<1x1x?x?xf32>) -> tensor<1x?x32xf32> {
  %none = llm.none
  %o:4 = llm.ms.group_query_attention %q, %k, %v, %pk, %pv, %seqlens, %total, %none, %none, %none, %bias, %none, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 2 : i64} : (tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1xi32>, tensor<i32>, none, none, none, tensor<1x1x?x?xf32>, none, none, none, none, none, none) -> (tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x?xf32>)
  return %o#0 : tensor<1x?x32xf32>
}

// -----

// GroupQueryAttention's smooth_softmax (1 added to each row's denominator)
// is sinks of zero; a head_sink that is no constant keeps the contrib op.
// CHECK-LABEL: func.func @gqa_smooth_softmax
// CHECK: llm.attention {{.+}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32, sinks = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>}
// CHECK: llm.ms.group_query_attention
// CHECK-NOT: llm.attention
func.func @gqa_smooth_softmax(%q: tensor<1x?x32xf32>, %k: tensor<1x?x16xf32>, %v: tensor<1x?x16xf32>, %pk: tensor<1x2x?x8xf32>, %pv: tensor<1x2x?x8xf32>, %seqlens: tensor<1xi32>, %total: tensor<i32>, %sinks: tensor<4xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>) {
  %none = llm.none
  %o:4 = llm.ms.group_query_attention %q, %k, %v, %pk, %pv, %seqlens, %total, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 2 : i64, smooth_softmax = 1 : i64} : (tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1xi32>, tensor<i32>, none, none, none, none, none, none, none, none, none, none) -> (tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x?xf32>)
  %p:4 = llm.ms.group_query_attention %q, %k, %v, %pk, %pv, %seqlens, %total, %none, %none, %none, %none, %sinks, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 2 : i64} : (tensor<1x?x32xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1xi32>, tensor<i32>, none, none, none, none, tensor<4xf32>, none, none, none, none, none) -> (tensor<1x?x32xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x4x?x?xf32>)
  return %o#0, %p#0 : tensor<1x?x32xf32>, tensor<1x?x32xf32>
}

// -----

// onnxruntime's older contrib forms. RotaryEmbedding on [B, S, hidden] with
// constant caches: llm.rope on [B, S, N, D].
// CHECK-LABEL: func.func @contrib_rotary
// CHECK: %[[X4:.+]] = llm.onnx.reshape %arg0, %{{.+}} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
// CHECK: %[[R:.+]] = llm.rope %[[X4]], %{{.+}}, %{{.+}}, %arg1
// CHECK: llm.onnx.reshape %[[R]]
// CHECK-NOT: llm.ms.rotary_embedding
// Negative: caches given as arguments.
// CHECK-LABEL: func.func @contrib_rotary_not
// CHECK: llm.ms.rotary_embedding
func.func @contrib_rotary(%x: tensor<1x?x8xf32>, %pos: tensor<1x?xi64>) -> tensor<1x?x8xf32> {
  %cos = llm.constant dense<1.0> : tensor<16x2xf32>
  %sin = llm.constant dense<0.0> : tensor<16x2xf32>
  %y = llm.ms.rotary_embedding %x, %pos, %cos, %sin {num_heads = 2 : i64} : (tensor<1x?x8xf32>, tensor<1x?xi64>, tensor<16x2xf32>, tensor<16x2xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}
func.func @contrib_rotary_not(%x: tensor<1x?x8xf32>, %pos: tensor<1x?xi64>, %cos: tensor<16x2xf32>, %sin: tensor<16x2xf32>) -> tensor<1x?x8xf32> {
  %y = llm.ms.rotary_embedding %x, %pos, %cos, %sin {num_heads = 2 : i64} : (tensor<1x?x8xf32>, tensor<1x?xi64>, tensor<16x2xf32>, tensor<16x2xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// MultiHeadAttention with a BNSH past and an additive bias: present = past
// ++ new, llm.attention with the bias as its mask (not causal: nothing
// here makes it so). Negative: a key padding mask keeps the contrib op.
// CHECK-LABEL: func.func @contrib_mha
// CHECK: %[[PK:.+]] = llm.onnx.concat %arg4, %{{.+}} {axis = 2 : i64}
// CHECK: %[[PV:.+]] = llm.onnx.concat %arg5, %{{.+}} {axis = 2 : i64}
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %arg3 {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32}
// CHECK: return %{{.+}}, %[[PK]], %[[PV]]
// CHECK-LABEL: func.func @contrib_mha_padding
// CHECK: llm.ms.multi_head_attention
func.func @contrib_mha(%q: tensor<1x?x8xf32>, %k: tensor<1x?x8xf32>, %v: tensor<1x?x8xf32>, %bias: tensor<1x1x?x?xf32>, %pk: tensor<1x2x?x4xf32>, %pv: tensor<1x2x?x4xf32>) -> (tensor<1x?x8xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) {
  %none = llm.none
  %o:4 = llm.ms.multi_head_attention %q, %k, %v, %none, %none, %bias, %pk, %pv, %none, %none {num_heads = 2 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>, none, none, tensor<1x1x?x?xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, none, none) -> (tensor<1x?x8xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x?xf32>)
  return %o#0, %o#1, %o#2 : tensor<1x?x8xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>
}
func.func @contrib_mha_padding(%q: tensor<1x?x8xf32>, %k: tensor<1x?x8xf32>, %v: tensor<1x?x8xf32>, %pad: tensor<1x?xi32>) -> tensor<1x?x8xf32> {
  %none = llm.none
  %o:4 = llm.ms.multi_head_attention %q, %k, %v, %none, %pad, %none, %none, %none, %none, %none {num_heads = 2 : i64} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>, none, tensor<1x?xi32>, none, none, none, none, none) -> (tensor<1x?x8xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x?xf32>)
  return %o#0 : tensor<1x?x8xf32>
}

// -----

// GPT-2's fused Attention: the packed QKV projection becomes one linear
// (weight transposed), the raw [B, T] key mask a boolean [B, 1, 1, T], the
// past [2, B, N, P, D] is split and the present stacked again.
// Negative: qkv_hidden_sizes keeps the contrib op.
// CHECK-LABEL: func.func @contrib_attention
// CHECK: llm.linear %arg0, %{{.+}}, %{{.+}} : (tensor<1x?x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<1x?x24xf32>
// CHECK: %[[FLAGS:.+]] = llm.onnx.cast %arg1 {to = 9 : i64}
// CHECK: %[[KEEP:.+]] = llm.onnx.unsqueeze %[[FLAGS]]
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[KEEP]] {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32}
// CHECK: llm.onnx.concat %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<1x1x2x?x4xf32>, tensor<1x1x2x?x4xf32>) -> tensor<2x1x2x?x4xf32>
// CHECK-LABEL: func.func @contrib_attention_sizes
// CHECK: llm.ms.attention
func.func @contrib_attention(%x: tensor<1x?x8xf32>, %mask: tensor<1x?xi32>, %past: tensor<2x1x2x?x4xf32>) -> (tensor<1x?x8xf32>, tensor<2x1x2x?x4xf32>) {
  %w = llm.constant dense<0.5> : tensor<8x24xf32>
  %b = llm.constant dense<0.1> : tensor<24xf32>
  %none = llm.none
  %o, %p = llm.ms.attention %x, %w, %b, %mask, %past, %none, %none {num_heads = 2 : i64, unidirectional = 1 : i64} : (tensor<1x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>, tensor<1x?xi32>, tensor<2x1x2x?x4xf32>, none, none) -> (tensor<1x?x8xf32>, tensor<2x1x2x?x4xf32>)
  return %o, %p : tensor<1x?x8xf32>, tensor<2x1x2x?x4xf32>
}
func.func @contrib_attention_sizes(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w = llm.constant dense<0.5> : tensor<8x24xf32>
  %b = llm.constant dense<0.1> : tensor<24xf32>
  %none = llm.none
  %o, %p = llm.ms.attention %x, %w, %b, %none, %none, %none, %none {num_heads = 2 : i64, qkv_hidden_sizes = array<i64: 8, 8, 8>} : (tensor<1x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>, none, none, none, none) -> (tensor<1x?x8xf32>, tensor<2x1x2x?x4xf32>)
  return %o : tensor<1x?x8xf32>
}

// -----

// EmbedLayerNormalization without segments or mask: two embeddings, their
// sum (the op's third result) and a layer norm (epsilon 1e-5 is the layer
// norm's default, so not printed).
// CHECK-LABEL: func.func @contrib_embed_layer_norm
// CHECK: %[[W:.+]] = llm.embedding %{{.+}}, %arg0
// CHECK: %[[P:.+]] = llm.embedding %{{.+}}, %arg1
// CHECK: %[[S:.+]] = llm.onnx.add %[[W]], %[[P]]
// CHECK: %[[Y:.+]] = llm.layer_norm %[[S]], %{{.+}}, %{{.+}} :
// CHECK: return %[[Y]], %[[S]]
func.func @contrib_embed_layer_norm(%ids: tensor<1x?xi32>, %pos: tensor<1x?xi32>) -> (tensor<1x?x4xf32>, tensor<1x?x4xf32>) {
  %word = llm.constant dense<0.25> : tensor<10x4xf32>
  %ptab = llm.constant dense<0.5> : tensor<16x4xf32>
  %g = llm.constant dense<1.0> : tensor<4xf32>
  %b = llm.constant dense<0.0> : tensor<4xf32>
  %none = llm.none
  %y, %mi, %sum = llm.ms.embed_layer_normalization %ids, %none, %word, %ptab, %none, %g, %b, %none, %pos {epsilon = 1.0e-5 : f32} : (tensor<1x?xi32>, none, tensor<10x4xf32>, tensor<16x4xf32>, none, tensor<4xf32>, tensor<4xf32>, none, tensor<1x?xi32>) -> (tensor<1x?x4xf32>, tensor<1xi32>, tensor<1x?x4xf32>)
  return %y, %sum : tensor<1x?x4xf32>, tensor<1x?x4xf32>
}

// -----

// ONNX (opset 23) RotaryEmbedding with position ids and constant caches,
// and Attention with a past (its present outputs become the concat) and
// is_causal with as many new keys as queries.
// CHECK-LABEL: func.func @onnx_ops
// CHECK: llm.rope %{{.+}}, %{{.+}}, %{{.+}}, %arg1 : (tensor<1x?x2x8xf32>
// CHECK: %[[PK:.+]] = llm.onnx.concat %arg3, %{{.+}} {axis = 2 : i64}
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32, softcap = 5.000000e+00 : f32}
// CHECK-NOT: llm.onnx.attention
// CHECK-NOT: llm.onnx.rotary_embedding
// CHECK: return %{{.+}}, %[[PK]]
func.func @onnx_ops(%x: tensor<1x2x?x8xf32>, %pos: tensor<1x?xi64>, %k: tensor<1x2x?x8xf32>, %pk: tensor<1x2x?x8xf32>, %pv: tensor<1x2x?x8xf32>) -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) {
  %cos = llm.constant dense<1.0> : tensor<16x4xf32>
  %sin = llm.constant dense<0.0> : tensor<16x4xf32>
  %none = llm.none
  %q = llm.onnx.rotary_embedding %x, %cos, %sin, %pos : (tensor<1x2x?x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x?xi64>) -> tensor<1x2x?x8xf32>
  %y:4 = llm.onnx.attention %q, %q, %q, %none, %pk, %pv, %none {is_causal = 1 : i64, softcap = 5.0 : f32} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, none, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, none) -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x?xf32>)
  return %y#0, %y#1 : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}

// -----

// Negative: causal ONNX Attention with fewer queries than new keys aligns
// its mask top-left (query i sees keys up to i), not like llm.attention:
// it stays.
// CHECK-LABEL: func.func @onnx_attention_top_left
// CHECK: llm.onnx.attention
func.func @onnx_attention_top_left(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32> {
  %none = llm.none
  %y:4 = llm.onnx.attention %q, %k, %k, %none, %none, %none, %none {is_causal = 1 : i64} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, none, none, none, none) -> (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x5xf32>)
  return %y#0 : tensor<1x2x3x8xf32>
}

// -----

// ONNX opset-24 static cache: keys and values scattered into caches of a
// fixed length at write_indices, Attention over the whole cache with
// nonpad_kv_seqlen and bottom-right causal alignment. Under the
// uniform-batch protocol (two llm.assert_equal) that is a causal
// llm.attention over the cache rows before the write index ++ the new
// rows; the scatters stay for the present outputs, and the two inputs get
// their roles for llmc-insert-kv-cache.
// CHECK-LABEL: func.func @onnx_static_cache
// CHECK-SAME: %arg2: tensor<1xi64> {llm.role = "write_indices"}
// CHECK-SAME: %arg3: tensor<1xi64> {llm.role = "kv_valid_length"}
// CHECK: %[[PK:.+]] = llm.onnx.tensor_scatter %arg4, %arg1, %arg2
// CHECK: llm.assert_equal {{.+}}message = "TensorScatter: every sequence of the batch must write at the same index
// CHECK: %[[START:.+]] = llm.assert_equal {{.+}}message = "Attention: nonpad_kv_seqlen must be the write index plus the sequence length"
// CHECK: %[[END:.+]] = llm.onnx.unsqueeze %[[START]]
// CHECK: %[[HEAD:.+]] = llm.onnx.slice %arg4, %{{.+}}, %[[END]]
// CHECK: llm.onnx.concat %[[HEAD]], %arg1 {axis = 2 : i64}
// CHECK: llm.attention %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32}
// CHECK-NOT: llm.onnx.attention
// CHECK: return %{{.+}}, %[[PK]]
func.func @onnx_static_cache(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %wi: tensor<1xi64>, %nonpad: tensor<1xi64>, %pk: tensor<1x2x16x8xf32>, %pv: tensor<1x2x16x8xf32>) -> (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %none = llm.none
  %ck = llm.onnx.tensor_scatter %pk, %k, %wi {axis = 2 : i64} : (tensor<1x2x16x8xf32>, tensor<1x2x3x8xf32>, tensor<1xi64>) -> tensor<1x2x16x8xf32>
  %cv = llm.onnx.tensor_scatter %pv, %k, %wi {axis = -2 : i64} : (tensor<1x2x16x8xf32>, tensor<1x2x3x8xf32>, tensor<1xi64>) -> tensor<1x2x16x8xf32>
  %y:4 = llm.onnx.attention %q, %ck, %cv, %none, %none, %none, %nonpad {is_causal = 1 : i64} : (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, none, none, none, tensor<1xi64>) -> (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x3x16xf32>)
  return %y#0, %ck, %cv : tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

// Negatives: a circular (ring-buffer) scatter, keys and values written at
// different indices, and a non-causal attention over the cache stay as
// they are.
// CHECK-LABEL: func.func @onnx_static_cache_kept
// CHECK-NOT: llm.attention
// CHECK-COUNT-3: llm.onnx.attention
// CHECK-NOT: llm.role
func.func @onnx_static_cache_kept(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %wi: tensor<1xi64>, %wi2: tensor<1xi64>, %nonpad: tensor<1xi64>, %pk: tensor<1x2x16x8xf32>) -> (tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) {
  %none = llm.none
  %ring = llm.onnx.tensor_scatter %pk, %k, %wi {axis = 2 : i64, mode = "circular"} : (tensor<1x2x16x8xf32>, tensor<1x2x3x8xf32>, tensor<1xi64>) -> tensor<1x2x16x8xf32>
  %y1:4 = llm.onnx.attention %q, %ring, %ring, %none, %none, %none, %nonpad {is_causal = 1 : i64} : (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, none, none, none, tensor<1xi64>) -> (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x3x16xf32>)
  %ck = llm.onnx.tensor_scatter %pk, %k, %wi {axis = 2 : i64} : (tensor<1x2x16x8xf32>, tensor<1x2x3x8xf32>, tensor<1xi64>) -> tensor<1x2x16x8xf32>
  %cv = llm.onnx.tensor_scatter %pk, %k, %wi2 {axis = 2 : i64} : (tensor<1x2x16x8xf32>, tensor<1x2x3x8xf32>, tensor<1xi64>) -> tensor<1x2x16x8xf32>
  %y2:4 = llm.onnx.attention %q, %ck, %cv, %none, %none, %none, %nonpad {is_causal = 1 : i64} : (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, none, none, none, tensor<1xi64>) -> (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x3x16xf32>)
  %y3:4 = llm.onnx.attention %q, %ck, %ck, %none, %none, %none, %nonpad : (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, none, none, none, tensor<1xi64>) -> (tensor<1x4x3x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x3x16xf32>)
  return %y1#0, %y2#0, %y3#0 : tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>
}

// -----

// ONNX RotaryEmbedding without position ids, on 3-D [B, S, H * D] with
// num_heads: its cos/sin are computed in the graph from the positions
// (Cos/Sin of pos * inv_freq, [B, S, R/2]) and tabulated per position into
// [max-positions, R/2] tables (8, RUN line); partial rotary keeps
// rotary_dim. Both layers' ropes read one pair of tables.
// CHECK-LABEL: func.func @onnx_rope_computed
// CHECK-DAG: %[[COS:.+]] = llm.constant dense_resource<rope_cos> : tensor<8x2xf32>
// CHECK-DAG: %[[SIN:.+]] = llm.constant dense_resource<rope_sin> : tensor<8x2xf32>
// CHECK: %[[X:.+]] = llm.onnx.reshape %arg0
// CHECK: llm.rope %[[X]], %[[COS]], %[[SIN]], %arg1 {interleaved = true, rotary_dim = 4 : i64} : (tensor<1x?x2x8xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x?xi64>) -> tensor<1x?x2x8xf32>
// CHECK: llm.rope %{{.+}}, %[[COS]], %[[SIN]], %arg1
// CHECK-NOT: llm.onnx.rotary_embedding
// Row 1 of cos (after the alignment word and row 0's 1, 1): cos(1), cos(0.01).
// CHECK: rope_cos: "0x080000000000803F0000803F40510A3FB9FC7F3F
func.func @onnx_rope_computed(%x: tensor<1x?x16xf32>, %pos: tensor<1x?xi64>) -> (tensor<1x?x16xf32>, tensor<1x?x16xf32>) {
  %inv = llm.constant dense<[[[1.0, 0.01]]]> : tensor<1x1x2xf32>
  %am1 = llm.constant dense<-1> : tensor<1xi64>
  %pf = llm.onnx.cast %pos {to = 1 : i64} : (tensor<1x?xi64>) -> tensor<1x?xf32>
  %pu = llm.onnx.unsqueeze %pf, %am1 : (tensor<1x?xf32>, tensor<1xi64>) -> tensor<1x?x1xf32>
  %f = llm.onnx.mul %pu, %inv : (tensor<1x?x1xf32>, tensor<1x1x2xf32>) -> tensor<1x?x2xf32>
  %c = llm.onnx.cos %f : (tensor<1x?x2xf32>) -> tensor<1x?x2xf32>
  %s = llm.onnx.sin %f : (tensor<1x?x2xf32>) -> tensor<1x?x2xf32>
  %none = llm.none
  %y1 = llm.onnx.rotary_embedding %x, %c, %s, %none {num_heads = 2 : i64, interleaved = 1 : i64, rotary_embedding_dim = 4 : i64} : (tensor<1x?x16xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, none) -> tensor<1x?x16xf32>
  %y2 = llm.onnx.rotary_embedding %y1, %c, %s, %none {num_heads = 2 : i64, interleaved = 1 : i64, rotary_embedding_dim = 4 : i64} : (tensor<1x?x16xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, none) -> tensor<1x?x16xf32>
  return %y1, %y2 : tensor<1x?x16xf32>, tensor<1x?x16xf32>
}

// -----

// The same with the caches gathered from constant tables by the position
// ids (4-D input): the tables are recovered as they were.
// CHECK-LABEL: func.func @onnx_rope_gathered
// CHECK: %[[COS:.+]] = llm.constant dense_resource<rope_cos> : tensor<8x4xf32>
// CHECK: llm.rope %{{.+}}, %[[COS]], %{{.+}}, %arg1 : (tensor<1x?x2x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<1x?xi64>)
// CHECK-NOT: llm.onnx.rotary_embedding
// CHECK-NOT: llm.embedding
func.func @onnx_rope_gathered(%x: tensor<1x2x?x8xf32>, %pos: tensor<1x?xi64>) -> tensor<1x2x?x8xf32> {
  %cos = llm.constant dense<0.5> : tensor<16x4xf32>
  %sin = llm.constant dense<0.25> : tensor<16x4xf32>
  %c = llm.onnx.gather %cos, %pos : (tensor<16x4xf32>, tensor<1x?xi64>) -> tensor<1x?x4xf32>
  %s = llm.onnx.gather %sin, %pos : (tensor<16x4xf32>, tensor<1x?xi64>) -> tensor<1x?x4xf32>
  %none = llm.none
  %y = llm.onnx.rotary_embedding %x, %c, %s, %none : (tensor<1x2x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, none) -> tensor<1x2x?x8xf32>
  return %y : tensor<1x2x?x8xf32>
}

// -----

// Negative: cos/sin per position that are not a function of positions
// (a graph input) stay as they are.
// CHECK-LABEL: func.func @onnx_rope_input_caches
// CHECK: llm.onnx.rotary_embedding
// CHECK-NOT: llm.rope
func.func @onnx_rope_input_caches(%x: tensor<1x2x?x8xf32>, %c: tensor<1x?x4xf32>, %s: tensor<1x?x4xf32>) -> tensor<1x2x?x8xf32> {
  %none = llm.none
  %y = llm.onnx.rotary_embedding %x, %c, %s, %none : (tensor<1x2x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, none) -> tensor<1x2x?x8xf32>
  return %y : tensor<1x2x?x8xf32>
}

// -----

// ONNX Attention with past/present IO and a boolean attn_mask whose width
// is known only at run time ([B, 1, S, past + S], built from
// attention_mask as exporters write it): raised with its mask, which the
// mask analysis then finds causal, leaving the padding of attention_mask.
// CHECK-LABEL: func.func @onnx_attention_mask
// CHECK: llm.attention {{.+}} {causal = true, num_heads = 4 : i64, num_kv_heads = 1 : i64
// CHECK-NOT: llm.onnx.attention
// CHECK-NOT: llm.onnx.less_or_equal
func.func @onnx_attention_mask(%ids: tensor<1x?xi64, #llm.dims<?, "s">> {llm.name = "input_ids"}, %am: tensor<1x?xi64, #llm.dims<?, "p + s">> {llm.name = "attention_mask"}, %q: tensor<1x4x?x8xf32, #llm.dims<?, ?, "s", ?>>, %k: tensor<1x1x?x8xf32, #llm.dims<?, ?, "s", ?>>, %pk: tensor<1x1x?x8xf32, #llm.dims<?, ?, "p", ?>>, %pv: tensor<1x1x?x8xf32, #llm.dims<?, ?, "p", ?>>) -> (tensor<1x4x?x8xf32>, tensor<1x1x?x8xf32>) {
  %none = llm.none
  %one = llm.constant dense<1> : tensor<i64>
  %zero = llm.constant dense<0> : tensor<i64>
  %ax1 = llm.constant dense<1> : tensor<1xi64>
  %ax12 = llm.constant dense<[1, 2]> : tensor<2xi64>
  %sm = llm.onnx.shape %am : (tensor<1x?xi64, #llm.dims<?, "p + s">>) -> tensor<2xi64>
  %total = llm.onnx.gather %sm, %one {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %si = llm.onnx.shape %ids : (tensor<1x?xi64, #llm.dims<?, "s">>) -> tensor<2xi64>
  %seq = llm.onnx.gather %si, %one {axis = 0 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %first = llm.onnx.sub %total, %seq : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %qr = llm.onnx.range %first, %total, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %qp = llm.onnx.unsqueeze %qr, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %kp = llm.onnx.range %zero, %total, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %causal = llm.onnx.less_or_equal %kp, %qp : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %amb = llm.onnx.cast %am {to = 9 : i64} : (tensor<1x?xi64, #llm.dims<?, "p + s">>) -> tensor<1x?xi1>
  %pad = llm.onnx.unsqueeze %amb, %ax12 : (tensor<1x?xi1>, tensor<2xi64>) -> tensor<1x1x1x?xi1>
  %mask = llm.onnx.and %causal, %pad : (tensor<?x?xi1>, tensor<1x1x1x?xi1>) -> tensor<1x1x?x?xi1>
  %y:4 = llm.onnx.attention %q, %k, %k, %mask, %pk, %pv, %none : (tensor<1x4x?x8xf32, #llm.dims<?, ?, "s", ?>>, tensor<1x1x?x8xf32, #llm.dims<?, ?, "s", ?>>, tensor<1x1x?x8xf32, #llm.dims<?, ?, "s", ?>>, tensor<1x1x?x?xi1>, tensor<1x1x?x8xf32, #llm.dims<?, ?, "p", ?>>, tensor<1x1x?x8xf32, #llm.dims<?, ?, "p", ?>>, none) -> (tensor<1x4x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>, tensor<1x4x?x?xf32>)
  return %y#0, %y#1 : tensor<1x4x?x8xf32>, tensor<1x1x?x8xf32>
}

// -----

// The opset-24 static cache in the 3-D layout: [B, capacity, H * D] caches
// scattered on axis 1, 3-D Q with q_num_heads / kv_num_heads. The rows
// before the write index and the new ones are split into heads and joined
// in [B, H, T, D], as in the 4-D form.
// CHECK-LABEL: func.func @onnx_static_cache_3d
// CHECK-SAME: {llm.role = "write_indices"}
// CHECK-SAME: {llm.role = "kv_valid_length"}
// CHECK: %[[PK:.+]] = llm.onnx.tensor_scatter %arg4, %arg1, %arg2 {axis = 1 : i64}
// CHECK: %[[HEAD:.+]] = llm.onnx.slice %arg4
// CHECK: %[[HR:.+]] = llm.onnx.reshape %[[HEAD]]
// CHECK: %[[HT:.+]] = llm.onnx.transpose %[[HR]]
// CHECK: %[[NR:.+]] = llm.onnx.reshape %arg1
// CHECK: %[[NT:.+]] = llm.onnx.transpose %[[NR]]
// CHECK: llm.onnx.concat %[[HT]], %[[NT]] {axis = 2 : i64} : (tensor<1x2x?x8xf32>, tensor<1x2x3x8xf32>)
// CHECK: llm.attention {{.+}} {causal = true, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.353553385 : f32}
// CHECK-NOT: llm.onnx.attention
// CHECK: return %{{.+}}, %[[PK]]
func.func @onnx_static_cache_3d(%q: tensor<1x3x32xf32>, %k: tensor<1x3x16xf32>, %wi: tensor<1xi64>, %nonpad: tensor<1xi64>, %pk: tensor<1x16x16xf32>, %pv: tensor<1x16x16xf32>) -> (tensor<1x3x32xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>) {
  %none = llm.none
  %ck = llm.onnx.tensor_scatter %pk, %k, %wi {axis = 1 : i64} : (tensor<1x16x16xf32>, tensor<1x3x16xf32>, tensor<1xi64>) -> tensor<1x16x16xf32>
  %cv = llm.onnx.tensor_scatter %pv, %k, %wi : (tensor<1x16x16xf32>, tensor<1x3x16xf32>, tensor<1xi64>) -> tensor<1x16x16xf32>
  %y:4 = llm.onnx.attention %q, %ck, %cv, %none, %none, %none, %nonpad {is_causal = 1 : i64, q_num_heads = 4 : i64, kv_num_heads = 2 : i64} : (tensor<1x3x32xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>, none, none, none, tensor<1xi64>) -> (tensor<1x3x32xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x4x3x16xf32>)
  return %y#0, %ck, %cv : tensor<1x3x32xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>
}

// -----

// ReLU and squared ReLU (relu(x) * relu(x), and Max(x, 0) squared by Pow)
// are recognised by what they compute, like GELU and SiLU.
// CHECK-LABEL: func.func @relu_activations
// CHECK: %[[R:.+]] = llm.relu %arg0 :
// CHECK: %[[S:.+]] = llm.relu %arg0 {squared = true}
// CHECK: %[[P:.+]] = llm.relu %arg0 {squared = true}
// CHECK-NOT: llm.onnx.relu
// CHECK-NOT: llm.onnx.max
// CHECK: return %[[R]], %[[S]], %[[P]]
func.func @relu_activations(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %r = llm.onnx.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %r2 = llm.onnx.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = llm.onnx.mul %r2, %r2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %zero = llm.constant dense<0.0> : tensor<f32>
  %two = llm.constant dense<2.0> : tensor<f32>
  %m = llm.onnx.max %x, %zero : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %p = llm.onnx.pow %m, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %r, %s, %p : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Negative: Clip to [0, 6] is not a ReLU; it stays.
// CHECK-LABEL: func.func @relu6_kept
// CHECK: llm.onnx.clip
// CHECK-NOT: llm.relu
func.func @relu6_kept(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %lo = llm.constant dense<0.0> : tensor<f32>
  %hi = llm.constant dense<6.0> : tensor<f32>
  %y = llm.onnx.clip %x, %lo, %hi : (tensor<2x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// com.microsoft MatMulNBits over constant 4-bit weights becomes
// llm.quantized_linear: the weight bytes kept as they are, the packed zero
// points (two 4-bit values per byte, 3 blocks -> 2 bytes per row: 0x21 0x04
// is 1, 2, 4; 0x65 0x06 is 5, 6, 6) unpacked
// to one per byte, flat scales reshaped to [N, blocks]; a bias Add after it
// becomes its bias. accuracy_level 4 allows int8 activations.
// CHECK-LABEL: func.func @matmul_nbits
// CHECK-NOT: llm.ms.matmul_nbits
// CHECK: %[[Z:.+]] = llm.constant dense_resource<quantized_zero_points> : tensor<2x3xui8>
// CHECK: llm.quantized_linear %arg0, %{{.+}}, %{{.+}}, %[[Z]], %{{.+}} {bits = 4 : i64, group_size = 16 : i64, int8_activations = true} : (tensor<1x?x48xf32>, tensor<2x3x8xui8>, tensor<2x3xf32>, tensor<2x3xui8>, tensor<2xf32>) -> tensor<1x?x2xf32>
// CHECK-NOT: llm.onnx.add
// CHECK: quantized_zero_points: "0x40000000010204050606"
func.func @matmul_nbits(%x: tensor<1x?x48xf32>) -> tensor<1x?x2xf32> {
  %none = llm.none
  %b = llm.constant dense<7> : tensor<2x3x8xui8>
  %s = llm.constant dense<0.5> : tensor<6xf32>
  %zp = llm.constant dense<[[33, 4], [101, 6]]> : tensor<2x2xui8>
  %bias = llm.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = llm.ms.matmul_nbits %x, %b, %s, %zp, %none, %none {K = 48 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64, accuracy_level = 4 : i64} : (tensor<1x?x48xf32>, tensor<2x3x8xui8>, tensor<6xf32>, tensor<2x2xui8>, none, none) -> tensor<1x?x2xf32>
  %z = llm.onnx.add %y, %bias : (tensor<1x?x2xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  return %z : tensor<1x?x2xf32>
}

// -----

// 8-bit weights without zero points (128 implied) and a g_idx that says
// what the blocks say: raised; accuracy_level below 4 keeps f32 activations.
// CHECK-LABEL: func.func @matmul_nbits_8bit
// CHECK: llm.quantized_linear %arg0, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {bits = 8 : i64, group_size = 16 : i64} : (tensor<2x32xf16>, tensor<3x2x16xui8>, tensor<3x2xf16>, none, none) -> tensor<2x3xf16>
func.func @matmul_nbits_8bit(%x: tensor<2x32xf16>) -> tensor<2x3xf16> {
  %none = llm.none
  %b = llm.constant dense<200> : tensor<3x2x16xui8>
  %s = llm.constant dense<0.25> : tensor<3x2xf16>
  %g = llm.constant dense<[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]> : tensor<32xi32>
  %y = llm.ms.matmul_nbits %x, %b, %s, %none, %g, %none {K = 32 : i64, N = 3 : i64, bits = 8 : i64, block_size = 16 : i64, accuracy_level = 1 : i64} : (tensor<2x32xf16>, tensor<3x2x16xui8>, tensor<3x2xf16>, none, tensor<32xi32>, none) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// Negative: 2-bit weights, a g_idx that reorders K, and weights that are
// not constants stay MatMulNBits (its reference kernel runs them).
// CHECK-LABEL: func.func @matmul_nbits_kept
// CHECK-NOT: llm.quantized_linear
// CHECK-COUNT-3: llm.ms.matmul_nbits
// CHECK-NOT: llm.quantized_linear
func.func @matmul_nbits_kept(%x: tensor<1x32xf32>, %bq: tensor<2x2x8xui8>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %none = llm.none
  %b2 = llm.constant dense<1> : tensor<2x2x4xui8>
  %s = llm.constant dense<0.5> : tensor<2x2xf32>
  %b = llm.constant dense<1> : tensor<2x2x8xui8>
  %g = llm.constant dense<[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]> : tensor<32xi64>
  %y0 = llm.ms.matmul_nbits %x, %b2, %s, %none, %none, %none {K = 32 : i64, N = 2 : i64, bits = 2 : i64, block_size = 16 : i64} : (tensor<1x32xf32>, tensor<2x2x4xui8>, tensor<2x2xf32>, none, none, none) -> tensor<1x2xf32>
  %y1 = llm.ms.matmul_nbits %x, %b, %s, %none, %g, %none {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64} : (tensor<1x32xf32>, tensor<2x2x8xui8>, tensor<2x2xf32>, none, tensor<32xi64>, none) -> tensor<1x2xf32>
  %y2 = llm.ms.matmul_nbits %x, %bq, %s, %none, %none, %none {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64} : (tensor<1x32xf32>, tensor<2x2x8xui8>, tensor<2x2xf32>, none, none, none) -> tensor<1x2xf32>
  return %y0, %y1, %y2 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// com.microsoft GatherBlockQuantized of a uint8-packed [vocab, hidden]
// table (here a Reshape of the [vocab, 1, 16] weight of a tied lm_head, as
// onnxruntime-genai writes it), gathered by row: llm.quantized_embedding
// over the same bytes as [vocab, groups, 16], scales [vocab, groups].
// CHECK-LABEL: func.func @gather_block_quantized
// CHECK-NOT: llm.ms.gather_block_quantized
// CHECK: %[[T:.+]] = llm.constant dense_resource<quantized_table> : tensor<8x1x16xui8>
// CHECK: llm.quantized_embedding %[[T]], %{{.+}}, %{{.+}}, %arg0 {bits = 4 : i64, group_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf32>, none, tensor<1x?xi64>) -> tensor<1x?x32xf32>
func.func @gather_block_quantized(%ids: tensor<1x?xi64>) -> tensor<1x?x32xf32> {
  %none = llm.none
  %q = llm.constant dense<7> : tensor<8x1x16xui8>
  %shape = llm.constant dense<[8, 16]> : tensor<2xi64>
  %data = llm.onnx.reshape %q, %shape : (tensor<8x1x16xui8>, tensor<2xi64>) -> tensor<8x16xui8>
  %s = llm.constant dense<0.5> : tensor<8x1xf32>
  %y = llm.ms.gather_block_quantized %data, %ids, %s, %none {bits = 4 : i64, block_size = 32 : i64, gather_axis = 0 : i64, quantize_axis = 1 : i64} : (tensor<8x16xui8>, tensor<1x?xi64>, tensor<8x1xf32>, none) -> tensor<1x?x32xf32>
  return %y : tensor<1x?x32xf32>
}

// -----

// Negative: a table quantized along the other axis stays as it is.
// CHECK-LABEL: func.func @gather_block_quantized_axis0
// CHECK: llm.ms.gather_block_quantized
// CHECK-NOT: llm.quantized_embedding
func.func @gather_block_quantized_axis0(%ids: tensor<2xi64>) -> tensor<2x32xf32> {
  %none = llm.none
  %data = llm.constant dense<7> : tensor<64x16xui8>
  %s = llm.constant dense<0.5> : tensor<2x32xf32>
  %y = llm.ms.gather_block_quantized %data, %ids, %s, %none {bits = 4 : i64, block_size = 32 : i64, gather_axis = 0 : i64, quantize_axis = 0 : i64} : (tensor<64x16xui8>, tensor<2xi64>, tensor<2x32xf32>, none) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// A head norm between two transposes that keep the last axis (Gemma 3's
// query norm over [B, H, S, D] of a [B, S, H, D] projection): the norm runs
// over the projection as it lies and the transposes meet and go; a layer
// norm the same, one transpose left where the two do not cancel.
// CHECK-LABEL: func.func @norms_between_transposes
// CHECK-NOT: llm.onnx.transpose
// CHECK: %[[N:.+]] = llm.rms_norm %arg0, %{{.+}} {weight_offset = 1.000000e+00 : f32} : (tensor<2x3x4x8xf32>, tensor<8xf32>) -> tensor<2x3x4x8xf32>
// CHECK-NOT: llm.onnx.transpose
// CHECK: %[[L:.+]] = llm.layer_norm %arg0, %{{.+}}, %{{.+}} : (tensor<2x3x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x4x8xf32>
// CHECK-NEXT: %[[T:.+]] = llm.onnx.transpose %[[L]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x3x4x8xf32>) -> tensor<3x2x4x8xf32>
// CHECK-NEXT: return %[[N]], %[[T]]
func.func @norms_between_transposes(%x: tensor<2x3x4x8xf32>) -> (tensor<2x3x4x8xf32>, tensor<3x2x4x8xf32>) {
  %w = llm.constant dense<0.5> : tensor<8xf32>
  %b = llm.constant dense<0.25> : tensor<8xf32>
  %t = llm.onnx.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x8xf32>) -> tensor<2x4x3x8xf32>
  %n = llm.rms_norm %t, %w {weight_offset = 1.0 : f32} : (tensor<2x4x3x8xf32>, tensor<8xf32>) -> tensor<2x4x3x8xf32>
  %y = llm.onnx.transpose %n {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x8xf32>) -> tensor<2x3x4x8xf32>
  %l = llm.layer_norm %t, %w, %b : (tensor<2x4x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x3x8xf32>
  %z = llm.onnx.transpose %l {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x4x3x8xf32>) -> tensor<3x2x4x8xf32>
  return %y, %z : tensor<2x3x4x8xf32>, tensor<3x2x4x8xf32>
}

// -----

// Not moved: a transpose of the normalised axis, or a norm something other
// than a transpose reads.
// CHECK-LABEL: func.func @norms_kept_after_transposes
// CHECK: %[[T:.+]] = llm.onnx.transpose %arg0 {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[N:.+]] = llm.rms_norm %[[T]]
// CHECK-NEXT: llm.onnx.transpose %[[N]]
// CHECK: %[[T2:.+]] = llm.onnx.transpose %arg0 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[N2:.+]] = llm.rms_norm %[[T2]]
// CHECK-NEXT: llm.onnx.transpose %[[N2]]
// CHECK: return {{.*}}, %[[N2]]
func.func @norms_kept_after_transposes(%x: tensor<2x3x8x8xf32>) -> (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x8x3x8xf32>) {
  %w = llm.constant dense<0.5> : tensor<8xf32>
  %t = llm.onnx.transpose %x {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %n = llm.rms_norm %t, %w : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
  %y = llm.onnx.transpose %n {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %t2 = llm.onnx.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x8x8xf32>) -> tensor<2x8x3x8xf32>
  %n2 = llm.rms_norm %t2, %w : (tensor<2x8x3x8xf32>, tensor<8xf32>) -> tensor<2x8x3x8xf32>
  %y2 = llm.onnx.transpose %n2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x8xf32>) -> tensor<2x3x8x8xf32>
  return %y, %y2, %n2 : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x8x3x8xf32>
}
