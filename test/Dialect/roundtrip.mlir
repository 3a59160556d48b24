// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// RUN: llmc-opt --mlir-print-op-generic %s | llmc-opt | FileCheck %s
// Every llm operation parses, verifies, prints and parses back, in the
// custom and the generic form.

// CHECK-LABEL: func.func @common
func.func @common() -> (tensor<2xf32>, tensor<4xi64>, none) {
  // CHECK: llm.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = llm.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: llm.constant dense_resource<blob> : tensor<4xi64>
  %1 = llm.constant dense_resource<blob> : tensor<4xi64>
  // CHECK: llm.none
  %2 = llm.none
  return %0, %1, %2 : tensor<2xf32>, tensor<4xi64>, none
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<?x8xf32, #llm.dims<"batch", ?>>, %b: tensor<3xi1>, %i: tensor<3xi64>) {
  // CHECK: llm.onnx.abs %{{.*}} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  %0 = llm.onnx.abs %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.neg
  %1 = llm.onnx.neg %i : (tensor<3xi64>) -> tensor<3xi64>
  // CHECK: llm.onnx.sign
  %2 = llm.onnx.sign %i : (tensor<3xi64>) -> tensor<3xi64>
  // CHECK: llm.onnx.relu
  %3 = llm.onnx.relu %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.identity
  %4 = llm.onnx.identity %b : (tensor<3xi1>) -> tensor<3xi1>
  // CHECK: llm.onnx.sqrt
  %5 = llm.onnx.sqrt %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.reciprocal
  %6 = llm.onnx.reciprocal %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.exp
  %7 = llm.onnx.exp %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.log
  %8 = llm.onnx.log %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.tanh
  %9 = llm.onnx.tanh %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.erf
  %10 = llm.onnx.erf %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.sigmoid
  %11 = llm.onnx.sigmoid %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.ceil
  %12 = llm.onnx.ceil %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.floor
  %13 = llm.onnx.floor %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.round
  %14 = llm.onnx.round %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.sin
  %15 = llm.onnx.sin %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.cos
  %16 = llm.onnx.cos %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.softplus
  %17 = llm.onnx.softplus %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.hard_swish
  %18 = llm.onnx.hard_swish %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.mish
  %19 = llm.onnx.mish %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.not
  %20 = llm.onnx.not %b : (tensor<3xi1>) -> tensor<3xi1>
  // CHECK: llm.onnx.gelu %{{.*}} {approximate = "tanh"}
  %21 = llm.onnx.gelu %x {approximate = "tanh"} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f32}
  %22 = llm.onnx.leaky_relu %x {alpha = 0.2 : f32} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.elu
  %23 = llm.onnx.elu %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.hard_sigmoid
  %24 = llm.onnx.hard_sigmoid %x {alpha = 0.3 : f32, beta = 0.4 : f32} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.swish
  %25 = llm.onnx.swish %x {alpha = 1.5 : f32} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.is_nan %{{.*}} -> tensor<?x8xi1, #llm.dims<"batch", ?>>
  %26 = llm.onnx.is_nan %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xi1, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.is_inf
  %27 = llm.onnx.is_inf %x {detect_negative = 0 : i64} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xi1, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.clip
  %none = llm.none
  %max = llm.constant dense<6.0> : tensor<f32>
  %28 = llm.onnx.clip %x, %none, %max : (tensor<?x8xf32, #llm.dims<"batch", ?>>, none, tensor<f32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.cast %{{.*}} {to = 10 : i64} : {{.*}} -> tensor<?x8xf16, #llm.dims<"batch", ?>>
  %29 = llm.onnx.cast %x {to = 10 : i64} : (tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf16, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.cast_like
  %30 = llm.onnx.cast_like %i, %x : (tensor<3xi64>, tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<3xf32>
  return
}

// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<?x8xf32, #llm.dims<"batch", ?>>, %y: tensor<8xf32>, %b: tensor<3xi1>, %i: tensor<3xi64>) {
  // CHECK: llm.onnx.add %{{.*}}, %{{.*}} : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  %0 = llm.onnx.add %x, %y : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.sub
  %1 = llm.onnx.sub %x, %y : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.mul
  %2 = llm.onnx.mul %x, %y : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.div
  %3 = llm.onnx.div %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  // CHECK: llm.onnx.and
  %4 = llm.onnx.and %b, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: llm.onnx.or
  %5 = llm.onnx.or %b, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: llm.onnx.xor
  %6 = llm.onnx.xor %b, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: llm.onnx.equal
  %7 = llm.onnx.equal %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  // CHECK: llm.onnx.less
  %8 = llm.onnx.less %x, %y : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xi1, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.less_or_equal
  %9 = llm.onnx.less_or_equal %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  // CHECK: llm.onnx.greater
  %10 = llm.onnx.greater %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  // CHECK: llm.onnx.greater_or_equal
  %11 = llm.onnx.greater_or_equal %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  // CHECK: llm.onnx.mod %{{.*}} {fmod = 1 : i64}
  %12 = llm.onnx.mod %x, %y {fmod = 1 : i64} : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.pow
  %e = llm.constant dense<2> : tensor<i64>
  %13 = llm.onnx.pow %x, %e : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<i64>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.min
  %14 = llm.onnx.min %x, %y, %x : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>, tensor<?x8xf32, #llm.dims<"batch", ?>>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  // CHECK: llm.onnx.max
  %15 = llm.onnx.max %y : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK: llm.onnx.sum
  %16 = llm.onnx.sum %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  // CHECK: llm.onnx.mean
  %17 = llm.onnx.mean %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  // CHECK: llm.onnx.where
  %c = llm.onnx.less %x, %y : (tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xi1, #llm.dims<"batch", ?>>
  %18 = llm.onnx.where %c, %x, %y : (tensor<?x8xi1, #llm.dims<"batch", ?>>, tensor<?x8xf32, #llm.dims<"batch", ?>>, tensor<8xf32>) -> tensor<?x8xf32, #llm.dims<"batch", ?>>
  return
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, %w: tensor<16xf32>) {
  %none = llm.none
  // CHECK: llm.onnx.softmax
  %0 = llm.onnx.softmax %x : (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.log_softmax %{{.*}} {axis = 1 : i64}
  %1 = llm.onnx.log_softmax %x {axis = 1 : i64} : (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.layer_normalization
  %2:3 = llm.onnx.layer_normalization %x, %w, %none : (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<16xf32>, none) -> (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.onnx.rms_normalization
  %3 = llm.onnx.rms_normalization %x, %w {epsilon = 1.0e-06 : f32} : (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<16xf32>) -> tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>
  return
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<?x16xf32>, %w: tensor<16x32xf32>, %c: tensor<32xf32>) {
  // CHECK: llm.onnx.matmul
  %0 = llm.onnx.matmul %a, %w : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
  // CHECK: llm.onnx.gemm
  %1 = llm.onnx.gemm %a, %w, %c {alpha = 2.0 : f32} : (tensor<?x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  // CHECK: llm.onnx.einsum %{{.*}}, %{{.*}} {equation = "mk,kn->nm"}
  %2 = llm.onnx.einsum %a, %w {equation = "mk,kn->nm"} : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<32x?xf32>
  return
}

// CHECK-LABEL: func.func @indexing
func.func @indexing(%t: tensor<100x16xf32>, %ids: tensor<?x?xi64>, %x: tensor<2x6x8xf32>, %idx: tensor<2x6x2xi64>, %u: tensor<2x6x2xf32>) {
  %k = llm.constant dense<3> : tensor<1xi64>
  %ax = llm.constant dense<1> : tensor<i64>
  %nd = llm.constant dense<[[0], [5]]> : tensor<2x1xi64>
  %upd = llm.constant dense<0.0> : tensor<2x16xf32>
  %none = llm.none
  // CHECK: llm.onnx.gather
  %0 = llm.onnx.gather %t, %ids : (tensor<100x16xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
  // CHECK: llm.onnx.gather_elements
  %1 = llm.onnx.gather_elements %x, %idx {axis = 2 : i64} : (tensor<2x6x8xf32>, tensor<2x6x2xi64>) -> tensor<2x6x2xf32>
  // CHECK: llm.onnx.gather_nd
  %2 = llm.onnx.gather_nd %t, %nd : (tensor<100x16xf32>, tensor<2x1xi64>) -> tensor<2x16xf32>
  // CHECK: llm.onnx.scatter_nd
  %3 = llm.onnx.scatter_nd %t, %nd, %upd {reduction = "add"} : (tensor<100x16xf32>, tensor<2x1xi64>, tensor<2x16xf32>) -> tensor<100x16xf32>
  // CHECK: llm.onnx.scatter_elements
  %4 = llm.onnx.scatter_elements %x, %idx, %u {axis = 2 : i64} : (tensor<2x6x8xf32>, tensor<2x6x2xi64>, tensor<2x6x2xf32>) -> tensor<2x6x8xf32>
  // CHECK: llm.onnx.top_k
  %5:2 = llm.onnx.top_k %x, %k : (tensor<2x6x8xf32>, tensor<1xi64>) -> (tensor<2x6x3xf32>, tensor<2x6x3xi64>)
  // CHECK: llm.onnx.arg_max
  %6 = llm.onnx.arg_max %x {axis = 2 : i64, keepdims = 0 : i64} : (tensor<2x6x8xf32>) -> tensor<2x6xi64>
  // CHECK: llm.onnx.arg_min
  %7 = llm.onnx.arg_min %x : (tensor<2x6x8xf32>) -> tensor<1x6x8xi64>
  // CHECK: llm.onnx.cum_sum
  %8 = llm.onnx.cum_sum %x, %ax {exclusive = 1 : i64} : (tensor<2x6x8xf32>, tensor<i64>) -> tensor<2x6x8xf32>
  // CHECK: llm.onnx.trilu
  %9 = llm.onnx.trilu %x, %none {upper = 0 : i64} : (tensor<2x6x8xf32>, none) -> tensor<2x6x8xf32>
  return
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) {
  %none = llm.none
  %s = llm.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %ax = llm.constant dense<0> : tensor<1xi64>
  %sp = llm.constant dense<[16, 48]> : tensor<2xi64>
  %st = llm.constant dense<0> : tensor<1xi64>
  %en = llm.constant dense<8> : tensor<1xi64>
  %a2 = llm.constant dense<2> : tensor<1xi64>
  %ex = llm.constant dense<[2, 1, 1, 1]> : tensor<4xi64>
  %rep = llm.constant dense<[1, 1, 2]> : tensor<3xi64>
  %cs = llm.constant dense<[2, 3]> : tensor<2xi64>
  %r0 = llm.constant dense<0> : tensor<i64>
  %r1 = llm.constant dense<10> : tensor<i64>
  %r2 = llm.constant dense<2> : tensor<i64>
  // CHECK: llm.onnx.reshape
  %0 = llm.onnx.reshape %x, %s : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<4xi64>) -> tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>
  // CHECK: llm.onnx.flatten
  %1 = llm.onnx.flatten %x {axis = 2 : i64} : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x64xf32>
  // CHECK: llm.onnx.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>}
  %2 = llm.onnx.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>) -> tensor<?x4x?x16xf32, #llm.dims<"b", ?, "s", ?>>
  // CHECK: llm.onnx.concat %{{.*}}, %{{.*}} {axis = -1 : i64}
  %3 = llm.onnx.concat %x, %x {axis = -1 : i64} : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x128xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.split
  %4:2 = llm.onnx.split %x, %sp {axis = 2 : i64} : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<2xi64>) -> (tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x48xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.onnx.slice
  %5 = llm.onnx.slice %x, %st, %en, %a2, %none : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x?x8xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.unsqueeze
  %6 = llm.onnx.unsqueeze %x, %ax : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<1xi64>) -> tensor<1x?x?x64xf32, #llm.dims<?, "b", "s", ?>>
  // CHECK: llm.onnx.squeeze
  %7 = llm.onnx.squeeze %6, %ax : (tensor<1x?x?x64xf32, #llm.dims<?, "b", "s", ?>>, tensor<1xi64>) -> tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.expand
  %8 = llm.onnx.expand %6, %ex : (tensor<1x?x?x64xf32, #llm.dims<?, "b", "s", ?>>, tensor<4xi64>) -> tensor<2x?x?x64xf32, #llm.dims<?, "b", "s", ?>>
  // CHECK: llm.onnx.tile
  %9 = llm.onnx.tile %x, %rep : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<3xi64>) -> tensor<?x?x128xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.onnx.shape %{{.*}} {start = 1 : i64}
  %10 = llm.onnx.shape %x {start = 1 : i64} : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<2xi64>
  // CHECK: llm.onnx.size
  %11 = llm.onnx.size %x : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<i64>
  // CHECK: llm.onnx.constant_of_shape %{{.*}} {value = dense<7> : tensor<1xi64>}
  %12 = llm.onnx.constant_of_shape %cs {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
  // CHECK: llm.onnx.range
  %13 = llm.onnx.range %r0, %r1, %r2 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5xi64>
  // CHECK: llm.onnx.dropout
  %14:2 = llm.onnx.dropout %x, %none, %none : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, none, none) -> (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x64xi1, #llm.dims<"b", "s", ?>>)
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<?x8xf32, #llm.dims<"b", ?>>) {
  %ax = llm.constant dense<-1> : tensor<1xi64>
  %none = llm.none
  // CHECK: llm.onnx.reduce_mean
  %0 = llm.onnx.reduce_mean %x, %ax : (tensor<?x8xf32, #llm.dims<"b", ?>>, tensor<1xi64>) -> tensor<?x1xf32, #llm.dims<"b", ?>>
  // CHECK: llm.onnx.reduce_sum
  %1 = llm.onnx.reduce_sum %x, %ax {keepdims = 0 : i64} : (tensor<?x8xf32, #llm.dims<"b", ?>>, tensor<1xi64>) -> tensor<?xf32, #llm.dims<"b">>
  // CHECK: llm.onnx.reduce_max
  %2 = llm.onnx.reduce_max %x, %none : (tensor<?x8xf32, #llm.dims<"b", ?>>, none) -> tensor<1x1xf32>
  // CHECK: llm.onnx.reduce_min
  %3 = llm.onnx.reduce_min %x, %none {noop_with_empty_axes = 1 : i64} : (tensor<?x8xf32, #llm.dims<"b", ?>>, none) -> tensor<?x8xf32, #llm.dims<"b", ?>>
  // CHECK: llm.onnx.reduce_prod
  %4 = llm.onnx.reduce_prod %x, %ax : (tensor<?x8xf32, #llm.dims<"b", ?>>, tensor<1xi64>) -> tensor<?x1xf32, #llm.dims<"b", ?>>
  // CHECK: llm.onnx.reduce_l2
  %5 = llm.onnx.reduce_l2 %x, %ax : (tensor<?x8xf32, #llm.dims<"b", ?>>, tensor<1xi64>) -> tensor<?x1xf32, #llm.dims<"b", ?>>
  // CHECK: llm.onnx.reduce_sum_square
  %6 = llm.onnx.reduce_sum_square %x, %ax : (tensor<?x8xf32, #llm.dims<"b", ?>>, tensor<1xi64>) -> tensor<?x1xf32, #llm.dims<"b", ?>>
  return
}

// CHECK-LABEL: func.func @onnx_attention
func.func @onnx_attention(%q: tensor<1x8x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>,
                          %pk: tensor<1x2x6x16xf32>, %cosc: tensor<32x8xf32>, %pos: tensor<1x4xi64>,
                          %cache: tensor<1x2x32x16xf32>, %wi: tensor<1xi64>) {
  %none = llm.none
  // CHECK: llm.onnx.attention
  %0:4 = llm.onnx.attention %q, %k, %v, %none, %pk, %pk, %none {is_causal = 1 : i64, softcap = 3.0e+01 : f32} : (tensor<1x8x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, none, tensor<1x2x6x16xf32>, tensor<1x2x6x16xf32>, none) -> (tensor<1x8x4x16xf32>, tensor<1x2x10x16xf32>, tensor<1x2x10x16xf32>, tensor<1x8x4x10xf32>)
  // CHECK: llm.onnx.rotary_embedding
  %1 = llm.onnx.rotary_embedding %q, %cosc, %cosc, %pos : (tensor<1x8x4x16xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<1x4xi64>) -> tensor<1x8x4x16xf32>
  // CHECK: llm.onnx.tensor_scatter
  %2 = llm.onnx.tensor_scatter %cache, %k, %wi {mode = "circular"} : (tensor<1x2x32x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi64>) -> tensor<1x2x32x16xf32>
  return
}

// CHECK-LABEL: func.func @microsoft
func.func @microsoft(%x: tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, %g: tensor<32xf32>, %w: tensor<32x96xf32>,
                     %bias: tensor<96xf32>, %mask: tensor<?x?xi32, #llm.dims<"b", "t">>,
                     %past: tensor<2x?x4x?x8xf32, #llm.dims<?, "b", ?, "p", ?>>, %ids: tensor<?x?xi32, #llm.dims<"b", "s">>,
                     %emb: tensor<100x32xf32>, %pos: tensor<?x?xi64, #llm.dims<"b", "s">>, %cosc: tensor<64x4xf32>,
                     %pk: tensor<?x4x?x8xf32, #llm.dims<"b", ?, "p", ?>>, %gk: tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>,
                     %gpk: tensor<?x2x?x8xf32, #llm.dims<"b", ?, "c", ?>>, %sl: tensor<?xi32, #llm.dims<"b">>,
                     %tl: tensor<i32>, %qa: tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, %qb: tensor<48x2x16xui8>,
                     %qs: tensor<48x2xf32>, %gq: tensor<100x16xui8>, %gs: tensor<100x1xf16>) {
  %none = llm.none
  // CHECK: llm.ms.skip_layer_normalization
  %0:4 = llm.ms.skip_layer_normalization %x, %x, %g, %g, %none {epsilon = 1.0e-05 : f32} : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32xf32>, tensor<32xf32>, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.ms.skip_simplified_layer_normalization
  %1:4 = llm.ms.skip_simplified_layer_normalization %x, %x, %g, %none : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32xf32>, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.ms.simplified_layer_normalization
  %2:2 = llm.ms.simplified_layer_normalization %x, %g : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32xf32>) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x1xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.ms.fast_gelu
  %3 = llm.ms.fast_gelu %x, %g : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32xf32>) -> tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.ms.bias_gelu
  %4 = llm.ms.bias_gelu %x, %g : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32xf32>) -> tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.ms.quick_gelu
  %5 = llm.ms.quick_gelu %x : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.ms.attention
  %6:2 = llm.ms.attention %x, %w, %bias, %mask, %past, %none, %none {num_heads = 4 : i64, unidirectional = 1 : i64} : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<32x96xf32>, tensor<96xf32>, tensor<?x?xi32, #llm.dims<"b", "t">>, tensor<2x?x4x?x8xf32, #llm.dims<?, "b", ?, "p", ?>>, none, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<2x?x4x?x8xf32, #llm.dims<?, "b", ?, "t", ?>>)
  // CHECK: llm.ms.embed_layer_normalization
  %7:3 = llm.ms.embed_layer_normalization %ids, %none, %emb, %emb, %none, %g, %g, %none, %none : (tensor<?x?xi32, #llm.dims<"b", "s">>, none, tensor<100x32xf32>, tensor<100x32xf32>, none, tensor<32xf32>, tensor<32xf32>, none, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?xi32, #llm.dims<"b">>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>)
  // CHECK: llm.ms.rotary_embedding
  %8 = llm.ms.rotary_embedding %x, %pos, %cosc, %cosc {num_heads = 4 : i64} : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?xi64, #llm.dims<"b", "s">>, tensor<64x4xf32>, tensor<64x4xf32>) -> tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.ms.multi_head_attention
  %9:4 = llm.ms.multi_head_attention %x, %x, %x, %none, %none, %none, %pk, %pk, %none, %none {num_heads = 4 : i64} : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, none, none, none, tensor<?x4x?x8xf32, #llm.dims<"b", ?, "p", ?>>, tensor<?x4x?x8xf32, #llm.dims<"b", ?, "p", ?>>, none, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x4x?x8xf32, #llm.dims<"b", ?, ?, ?>>, tensor<?x4x?x8xf32, #llm.dims<"b", ?, ?, ?>>, tensor<?x4x?x?xf32, #llm.dims<"b", ?, "s", ?>>)
  // CHECK: llm.ms.group_query_attention
  %10:4 = llm.ms.group_query_attention %x, %gk, %gk, %gpk, %gpk, %sl, %tl, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 2 : i64} : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<?x?x16xf32, #llm.dims<"b", "s", ?>>, tensor<?x2x?x8xf32, #llm.dims<"b", ?, "c", ?>>, tensor<?x2x?x8xf32, #llm.dims<"b", ?, "c", ?>>, tensor<?xi32, #llm.dims<"b">>, tensor<i32>, none, none, none, none, none, none, none, none, none, none) -> (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<?x2x?x8xf32, #llm.dims<"b", ?, ?, ?>>, tensor<?x2x?x8xf32, #llm.dims<"b", ?, ?, ?>>, tensor<?x4x?x?xf32, #llm.dims<"b", ?, "s", ?>>)
  // CHECK: llm.ms.matmul_nbits
  %11 = llm.ms.matmul_nbits %qa, %qb, %qs, %none, %none, %none {K = 64 : i64, N = 48 : i64, block_size = 32 : i64} : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<48x2x16xui8>, tensor<48x2xf32>, none, none, none) -> tensor<?x?x48xf32, #llm.dims<"b", "s", ?>>
  // CHECK: llm.ms.gather_block_quantized
  %12 = llm.ms.gather_block_quantized %gq, %ids, %gs, %none {block_size = 32 : i64} : (tensor<100x16xui8>, tensor<?x?xi32, #llm.dims<"b", "s">>, tensor<100x1xf16>, none) -> tensor<?x?x32xf16, #llm.dims<"b", "s", ?>>
  return
}

// CHECK-LABEL: func.func @transformer
func.func @transformer(%table: tensor<256x64xf16>, %ids: tensor<1x?xi64>, %x: tensor<1x?x64xf16>,
                       %w: tensor<64xf16>, %q: tensor<1x?x8x16xf16>, %k: tensor<1x?x2x16xf16>,
                       %cosc: tensor<128x8xf16>, %pos: tensor<1x?xi64>, %lw: tensor<96x64xf16>,
                       %lb: tensor<96xf16>) {
  %none = llm.none
  // CHECK: llm.embedding
  %0 = llm.embedding %table, %ids : (tensor<256x64xf16>, tensor<1x?xi64>) -> tensor<1x?x64xf16>
  // CHECK: llm.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32, weight_offset = 1.000000e+00 : f32}
  %1 = llm.rms_norm %x, %w {epsilon = 1.0e-05 : f32, weight_offset = 1.0 : f32} : (tensor<1x?x64xf16>, tensor<64xf16>) -> tensor<1x?x64xf16>
  // CHECK: llm.layer_norm
  %2 = llm.layer_norm %x, %w, %w : (tensor<1x?x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<1x?x64xf16>
  // CHECK: llm.rope %{{.*}} {interleaved = true, rotary_dim = 16 : i64}
  %3 = llm.rope %q, %cosc, %cosc, %pos {interleaved = true, rotary_dim = 16 : i64} : (tensor<1x?x8x16xf16>, tensor<128x8xf16>, tensor<128x8xf16>, tensor<1x?xi64>) -> tensor<1x?x8x16xf16>
  // CHECK: llm.attention %{{.*}} {causal = true, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, window = 4096 : i64}
  %4 = llm.attention %3, %k, %k, %none {num_heads = 8 : i64, num_kv_heads = 2 : i64, causal = true, window = 4096 : i64, scale = 0.25 : f32} : (tensor<1x?x8x16xf16>, tensor<1x?x2x16xf16>, tensor<1x?x2x16xf16>, none) -> tensor<1x?x8x16xf16>
  // CHECK: llm.linear
  %5 = llm.linear %x, %lw, %lb : (tensor<1x?x64xf16>, tensor<96x64xf16>, tensor<96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.gelu %{{.*}} {approximate_tanh = true}
  %6 = llm.gelu %5 {approximate_tanh = true} : (tensor<1x?x96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.silu
  %7 = llm.silu %5 : (tensor<1x?x96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.swiglu
  %8 = llm.swiglu %6, %7 : (tensor<1x?x96xf16>, tensor<1x?x96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.relu %{{.*}} {squared = true}
  %9 = llm.relu %5 {squared = true} : (tensor<1x?x96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.relu %{{.*}} :
  %10 = llm.relu %5 : (tensor<1x?x96xf16>) -> tensor<1x?x96xf16>
  return
}

// CHECK-LABEL: func.func @quantized_linear
func.func @quantized_linear(%x: tensor<1x?x64xf16>, %q4: tensor<96x2x16xui8>, %s: tensor<96x2xf32>,
                            %zp: tensor<96x2xui8>, %b: tensor<96xf16>, %q8: tensor<96x1x64xui8>,
                            %s8: tensor<96x1xf16>) {
  %none = llm.none
  // CHECK: llm.quantized_linear %{{.*}} {bits = 4 : i64, group_size = 32 : i64, int8_activations = true}
  %0 = llm.quantized_linear %x, %q4, %s, %zp, %b {bits = 4 : i64, group_size = 32 : i64, int8_activations = true} : (tensor<1x?x64xf16>, tensor<96x2x16xui8>, tensor<96x2xf32>, tensor<96x2xui8>, tensor<96xf16>) -> tensor<1x?x96xf16>
  // CHECK: llm.quantized_linear %{{.*}} {bits = 8 : i64, group_size = 64 : i64}
  %1 = llm.quantized_linear %x, %q8, %s8, %none, %none {bits = 8 : i64, group_size = 64 : i64} : (tensor<1x?x64xf16>, tensor<96x1x64xui8>, tensor<96x1xf16>, none, none) -> tensor<1x?x96xf16>
  return
}

// CHECK-LABEL: func.func @quantized_embedding
func.func @quantized_embedding(%q: tensor<256x2x16xui8>, %s: tensor<256x2xf16>, %zp: tensor<256x2xui8>, %ids: tensor<1x?xi64>) {
  %none = llm.none
  // CHECK: llm.quantized_embedding %{{.*}} {bits = 4 : i64, group_size = 32 : i64} : (tensor<256x2x16xui8>, tensor<256x2xf16>, tensor<256x2xui8>, tensor<1x?xi64>) -> tensor<1x?x64xf16>
  %0 = llm.quantized_embedding %q, %s, %zp, %ids {bits = 4 : i64, group_size = 32 : i64} : (tensor<256x2x16xui8>, tensor<256x2xf16>, tensor<256x2xui8>, tensor<1x?xi64>) -> tensor<1x?x64xf16>
  return
}

// CHECK-LABEL: func.func @kv_cache
func.func @kv_cache(%cache: tensor<1x2x64x16xf16>, %new: tensor<1x2x?x16xf16>, %q: tensor<1x?x4x16xf16>, %pos: tensor<i64>) -> (tensor<1x2x?x16xf16>, tensor<1x?x4x16xf16>) {
  // CHECK: llm.cache_update %arg0, %arg1, %arg3 : (tensor<1x2x64x16xf16>, tensor<1x2x?x16xf16>, tensor<i64>) -> tensor<1x2x64x16xf16>
  %0 = llm.cache_update %cache, %new, %pos : (tensor<1x2x64x16xf16>, tensor<1x2x?x16xf16>, tensor<i64>) -> tensor<1x2x64x16xf16>
  // CHECK: llm.cache_read %0, %arg3 : (tensor<1x2x64x16xf16>, tensor<i64>) -> tensor<1x2x?x16xf16>
  %1 = llm.cache_read %0, %pos : (tensor<1x2x64x16xf16>, tensor<i64>) -> tensor<1x2x?x16xf16>
  // CHECK: llm.cached_attention %arg2, %0, %0, %arg3 {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32, window = 8 : i64}
  %2 = llm.cached_attention %q, %0, %0, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, window = 8 : i64} : (tensor<1x?x4x16xf16>, tensor<1x2x64x16xf16>, tensor<1x2x64x16xf16>, tensor<i64>) -> tensor<1x?x4x16xf16>
  return %1, %2 : tensor<1x2x?x16xf16>, tensor<1x?x4x16xf16>
}

// CHECK-LABEL: func.func @kv_cache_int8
func.func @kv_cache_int8(%cache: tensor<1x2x64x16xi8>, %scales: tensor<1x2x64x1xf32>, %new: tensor<1x2x?x16xf16>, %q: tensor<1x?x4x16xf16>, %q1: tensor<1x1x4x16xf16>, %pos: tensor<i64>) -> (tensor<1x?x4x16xf16>, tensor<1x?x4x16xf16>, tensor<1x2x4x16xf32>) {
  // CHECK: %[[C:[a-z_0-9]+]], %[[S:[a-z_0-9]+]] = llm.quantized_cache_update %arg0, %arg1, %arg2, %arg5 : (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>, tensor<1x2x?x16xf16>, tensor<i64>) -> (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>)
  %c, %s = llm.quantized_cache_update %cache, %scales, %new, %pos : (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>, tensor<1x2x?x16xf16>, tensor<i64>) -> (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>)
  // CHECK: llm.cached_attention %arg3, %[[C]], %[[C]], %arg5, %[[S]], %[[S]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
  %0 = llm.cached_attention %q, %c, %c, %pos, %s, %s {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x?x4x16xf16>, tensor<1x2x64x16xi8>, tensor<1x2x64x16xi8>, tensor<i64>, tensor<1x2x64x1xf32>, tensor<1x2x64x1xf32>) -> tensor<1x?x4x16xf16>
  // CHECK: llm.flash_attention %arg3, %[[C]], %[[C]], %arg5, %[[S]], %[[S]]
  %1 = llm.flash_attention %q, %c, %c, %pos, %s, %s {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x?x4x16xf16>, tensor<1x2x64x16xi8>, tensor<1x2x64x16xi8>, tensor<i64>, tensor<1x2x64x1xf32>, tensor<1x2x64x1xf32>) -> tensor<1x?x4x16xf16>
  // CHECK: llm.decode_attention_partial %arg4, %[[C]], %[[C]], %arg5, %[[S]], %[[S]]
  %p, %l = llm.decode_attention_partial %q1, %c, %c, %pos, %s, %s {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, num_splits = 2 : i64} : (tensor<1x1x4x16xf16>, tensor<1x2x64x16xi8>, tensor<1x2x64x16xi8>, tensor<i64>, tensor<1x2x64x1xf32>, tensor<1x2x64x1xf32>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>)
  return %0, %1, %p : tensor<1x?x4x16xf16>, tensor<1x?x4x16xf16>, tensor<1x2x4x16xf32>
}

// CHECK-LABEL: func.func @flash
func.func @flash(%q: tensor<1x8x4x16xf32>, %q1: tensor<1x1x4x16xf32>, %k: tensor<1x2x64x16xf32>, %pos: tensor<i64>) -> (tensor<1x8x4x16xf32>, tensor<1x1x4x16xf32>) {
  // CHECK: llm.flash_attention %arg0, %arg2, %arg2, %arg3 {block_k = 32 : i64, block_q = 8 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32}
  %0 = llm.flash_attention %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, block_q = 8 : i64, block_k = 32 : i64} : (tensor<1x8x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x8x4x16xf32>
  // CHECK: llm.decode_attention_partial %arg1, %arg2, %arg2, %arg3 {num_heads = 4 : i64, num_kv_heads = 2 : i64, num_splits = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>)
  %p, %l = llm.decode_attention_partial %q1, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, num_splits = 2 : i64} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>)
  // CHECK: llm.attention_combine
  %1 = llm.attention_combine %p, %l : (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>) -> tensor<1x1x4x16xf32>
  return %0, %1 : tensor<1x8x4x16xf32>, tensor<1x1x4x16xf32>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<1x64xf32>, %w: tensor<64x64xf32>) -> tensor<1x64xf32> {
  // CHECK: llm.fused "linear_residual"(%arg0, %arg1) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32> {
  // CHECK: llm.yield %{{.+}} : tensor<1x64xf32>
  %0 = llm.fused "linear_residual" (%x, %w) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32> {
  ^bb0(%a: tensor<1x64xf32>, %b: tensor<64x64xf32>):
    %none = llm.none
    %y = llm.linear %a, %b, %none : (tensor<1x64xf32>, tensor<64x64xf32>, none) -> tensor<1x64xf32>
    %s = llm.onnx.add %y, %a : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
    llm.yield %s : tensor<1x64xf32>
  }
  return %0 : tensor<1x64xf32>
}

// CHECK-LABEL: func.func @assert_equal
func.func @assert_equal(%start: tensor<?xi64>, %past: tensor<i64>) -> tensor<?xi64> {
  // CHECK: llm.assert_equal %arg0, %arg0, %arg1 {message = "past lengths differ"} : (tensor<?xi64>, tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %0 = llm.assert_equal %start, %start, %past {message = "past lengths differ"} : (tensor<?xi64>, tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// The element types MLIR has no builtin for, and the sub-byte integers.
// CHECK-LABEL: func.func @narrow_types
func.func @narrow_types(%x: tensor<4xf32>) -> (tensor<4x!llm.f4e2m1>, tensor<4xf32>, tensor<4x!llm.f8e8m0>, tensor<4xi2>, tensor<4xui2>) {
  // CHECK: llm.onnx.cast %{{.*}} {to = 23 : i64} : (tensor<4xf32>) -> tensor<4x!llm.f4e2m1>
  %0 = llm.onnx.cast %x {to = 23 : i64} : (tensor<4xf32>) -> tensor<4x!llm.f4e2m1>
  // CHECK: llm.onnx.cast %{{.*}} {to = 1 : i64} : (tensor<4x!llm.f4e2m1>) -> tensor<4xf32>
  %1 = llm.onnx.cast %0 {to = 1 : i64} : (tensor<4x!llm.f4e2m1>) -> tensor<4xf32>
  // CHECK: llm.onnx.cast %{{.*}} {round_mode = "nearest", to = 24 : i64} : (tensor<4xf32>) -> tensor<4x!llm.f8e8m0>
  %2 = llm.onnx.cast %x {to = 24 : i64, round_mode = "nearest"} : (tensor<4xf32>) -> tensor<4x!llm.f8e8m0>
  // CHECK: -> tensor<4xi2>
  %3 = llm.onnx.cast %x {to = 26 : i64} : (tensor<4xf32>) -> tensor<4xi2>
  // CHECK: -> tensor<4xui2>
  %4 = llm.onnx.cast %x {to = 25 : i64} : (tensor<4xf32>) -> tensor<4xui2>
  return %0, %1, %2, %3, %4 : tensor<4x!llm.f4e2m1>, tensor<4xf32>, tensor<4x!llm.f8e8m0>, tensor<4xi2>, tensor<4xui2>
}

{-#
  dialect_resources: {
    builtin: {
      blob: "0x080000000100000000000000020000000000000003000000000000000400000000000000"
    }
  }
#-}
