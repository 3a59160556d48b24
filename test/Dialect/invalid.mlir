// RUN: llmc-opt %s --split-input-file --verify-diagnostics
// One malformed use of every llm operation, with the error it must give.

func.func @constant_index() {
  // expected-error @+1 {{element type must be an integer or floating-point type, got 'index'}}
  %0 = llm.constant dense<1> : tensor<2xindex>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{failed to verify that all of {value, output} have same type}}
  %0 = "llm.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

func.func @none_type() {
  // expected-error @+1 {{result #0 must be none type}}
  %0 = "llm.none"() : () -> tensor<f32>
  return
}

// -----

func.func @abs(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.abs %x : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @neg(%x: tensor<4xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.neg %x : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @sign(%x: tensor<4xi32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.sign %x : (tensor<4xi32>) -> tensor<4x1xi32>
  return
}

// -----

func.func @relu(%x: tensor<4xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.relu %x : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @identity(%x: none) {
  // expected-error @+1 {{operand #0 must be tensor of any type values}}
  %0 = "llm.onnx.identity"(%x) : (none) -> tensor<4xf32>
  return
}

// -----

func.func @sqrt(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.sqrt %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @reciprocal(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.reciprocal %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @exp(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.exp %x : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @log(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.log %x : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @tanh(%x: tensor<4xi1>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.tanh %x : (tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @erf(%x: tensor<4xi8>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.erf %x : (tensor<4xi8>) -> tensor<4xi8>
  return
}

// -----

func.func @sigmoid(%x: tensor<4xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.sigmoid %x : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @ceil(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.ceil %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @floor(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.floor %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @round(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.round %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @sin(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.sin %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @cos(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.cos %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @softplus(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.softplus %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @hard_swish(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.hard_swish %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @mish(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.mish %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @not(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be tensor of 1-bit signless integer values}}
  %0 = llm.onnx.not %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @gelu(%x: tensor<4xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "erf"}}
  %0 = llm.onnx.gelu %x {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @leaky_relu(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.leaky_relu %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @elu(%x: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = llm.onnx.elu %x {alpha = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @hard_sigmoid(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.hard_sigmoid %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @swish(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.onnx.swish %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @is_nan(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be tensor of 1-bit signless integer values}}
  %0 = llm.onnx.is_nan %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @is_inf(%x: tensor<4xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.is_inf %x : (tensor<4xf32>) -> tensor<5xi1>
  return
}

// -----

func.func @clip(%x: tensor<4xf32>, %lo: tensor<2xf32>) {
  %none = llm.none
  // expected-error @+1 {{min must be a scalar}}
  %0 = llm.onnx.clip %x, %lo, %none : (tensor<4xf32>, tensor<2xf32>, none) -> tensor<4xf32>
  return
}

// -----

func.func @cast(%x: tensor<4xf32>) {
  // expected-error @+2 {{cast target 8 is not a supported ONNX data type (STRING)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.cast %x {to = 8 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_like(%x: tensor<4xf32>, %t: tensor<1xf16>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.cast_like %x, %t : (tensor<4xf32>, tensor<1xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @add(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{operands have different element types: f32 vs i64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.add %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @sub(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operands are not broadcast-compatible: dimension 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.sub %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @mul(%a: tensor<?x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.mul %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @div(%a: tensor<3xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.div %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3x1xf32>
  return
}

// -----

func.func @and(%a: tensor<3xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of 1-bit signless integer values}}
  %0 = llm.onnx.and %a, %a : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  return
}

// -----

func.func @or(%a: tensor<3xi1>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.or %a, %a : (tensor<3xi1>, tensor<3xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @xor(%a: tensor<3xf32>) {
  // expected-error @+1 {{operand #0 must be tensor of 1-bit signless integer values}}
  %0 = llm.onnx.xor %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  return
}

// -----

func.func @equal(%a: tensor<3xf32>) {
  // expected-error @+1 {{result #0 must be tensor of 1-bit signless integer values}}
  %0 = llm.onnx.equal %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @less(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+2 {{operands have different element types: f32 vs f16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.less %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xi1>
  return
}

// -----

func.func @less_or_equal(%a: tensor<3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.less_or_equal %a, %b : (tensor<3xf32>, tensor<2xf32>) -> tensor<3xi1>
  return
}

// -----

func.func @greater(%a: tensor<3xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.greater %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<1xi1>
  return
}

// -----

func.func @greater_or_equal(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{operands have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.greater_or_equal %a, %b : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xi1>
  return
}

// -----

func.func @mod(%a: tensor<3xf32>) {
  // expected-error @+1 {{fmod must be 1 for floating-point operands}}
  %0 = llm.onnx.mod %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @pow(%a: tensor<3xf32>, %b: tensor<2xi64>) {
  // expected-error @+2 {{not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.pow %a, %b : (tensor<3xf32>, tensor<2xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @min() {
  // expected-error @+2 {{expected at least one operand}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.min : () -> tensor<3xf32>
  return
}

// -----

func.func @max(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{operands have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.max %a, %b : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  return
}

// -----

func.func @sum(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.sum %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @mean(%a: tensor<3xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.mean %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf16>
  return
}

// -----

func.func @where(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xf16>) {
  // expected-error @+2 {{X and Y must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return
}

// -----

func.func @softmax(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @log_softmax(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.log_softmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_normalization(%x: tensor<2x3xf32>, %s: tensor<3xf16>) {
  %none = llm.none
  // expected-error @+2 {{Scale and B must have X's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llm.onnx.layer_normalization %x, %s, %none : (tensor<2x3xf32>, tensor<3xf16>, none) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @rms_normalization(%x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  // expected-error @+2 {{axis 5 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.rms_normalization %x, %s {axis = 5 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{MatMul contraction dimension mismatch: 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  %none = llm.none
  // expected-error @+2 {{A must have rank 2, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.gemm %a, %b, %none : (tensor<2x3x4xf32>, tensor<4x5xf32>, none) -> tensor<2x5xf32>
  return
}

// -----

func.func @einsum(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{einsum equation has 2 operand terms for 1 inputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.einsum %a {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gather(%d: tensor<4x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.gather %d, %i {axis = 2 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x5xf32>
  return
}

// -----

func.func @gather_elements(%d: tensor<4x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{GatherElements data and indices must have the same rank}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.gather_elements %d, %i : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_nd(%d: tensor<4x5xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{GatherND indices do not fit the data rank}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.gather_nd %d, %i : (tensor<4x5xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @scatter_nd(%d: tensor<4x5xf32>, %i: tensor<2x1xi64>, %u: tensor<2x5xf32>) {
  // expected-error @+1 {{unknown reduction "sub"}}
  %0 = llm.onnx.scatter_nd %d, %i, %u {reduction = "sub"} : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @scatter_elements(%d: tensor<4x5xf32>, %i: tensor<4x2xi64>, %u: tensor<4x2xf16>) {
  // expected-error @+1 {{updates must have the data's element type}}
  %0 = llm.onnx.scatter_elements %d, %i, %u : (tensor<4x5xf32>, tensor<4x2xi64>, tensor<4x2xf16>) -> tensor<4x5xf32>
  return
}

// -----

func.func @reshape(%d: tensor<4x5xf32>) {
  %s = llm.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+2 {{Reshape shape has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reshape %d, %s : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @flatten(%d: tensor<4x5xf32>) {
  // expected-error @+2 {{Flatten axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.flatten %d {axis = 3 : i64} : (tensor<4x5xf32>) -> tensor<20x1xf32>
  return
}

// -----

func.func @transpose(%d: tensor<4x5xf32>) {
  // expected-error @+2 {{perm is not a permutation of [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.transpose %d {perm = array<i64: 0, 0>} : (tensor<4x5xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @concat(%a: tensor<4x5xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{Concat inputs must have the same rank}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.concat %a, %b {axis = 0 : i64} : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<8x5xf32>
  return
}

// -----

func.func @split(%a: tensor<4x5xf32>) {
  %s = llm.constant dense<[2, 2]> : tensor<2xi64>
  // expected-error @+2 {{Split sizes sum to 4, the dimension is 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llm.onnx.split %a, %s {axis = 1 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> (tensor<4x2xf32>, tensor<4x2xf32>)
  return
}

// -----

func.func @slice(%a: tensor<4x5xf32>) {
  %z = llm.constant dense<0> : tensor<1xi64>
  %e = llm.constant dense<3> : tensor<1xi64>
  %none = llm.none
  // expected-error @+2 {{Slice step must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.slice %a, %z, %e, %none, %z : (tensor<4x5xf32>, tensor<1xi64>, tensor<1xi64>, none, tensor<1xi64>) -> tensor<3x5xf32>
  return
}

// -----

func.func @squeeze(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<1> : tensor<1xi64>
  // expected-error @+2 {{Squeeze axis 1 has size 5, not 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.squeeze %a, %ax : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @unsqueeze(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<[0, 0]> : tensor<2xi64>
  // expected-error @+2 {{Unsqueeze axis 0 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.unsqueeze %a, %ax : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<1x1x4x5xf32>
  return
}

// -----

func.func @expand(%a: tensor<4x5xf32>) {
  %s = llm.constant dense<[4, 6]> : tensor<2xi64>
  // expected-error @+2 {{not broadcast-compatible: dimension 5 vs 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.expand %a, %s : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return
}

// -----

func.func @tile(%a: tensor<4x5xf32>) {
  %r = llm.constant dense<[2]> : tensor<1xi64>
  // expected-error @+2 {{Tile repeats has 1 entries for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.tile %a, %r : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<8x5xf32>
  return
}

// -----

func.func @trilu(%a: tensor<4x5xf32>, %k: tensor<1xf32>) {
  // expected-error @+1 {{operand #1 must be 64-bit integer tensor or none}}
  %0 = llm.onnx.trilu %a, %k : (tensor<4x5xf32>, tensor<1xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @cum_sum(%a: tensor<4x5xf32>, %ax: tensor<f32>) {
  // expected-error @+1 {{operand #1 must be tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = llm.onnx.cum_sum %a, %ax : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @top_k(%a: tensor<4x5xf32>) {
  %k = llm.constant dense<6> : tensor<1xi64>
  // expected-error @+2 {{TopK K = 6 is out of range for the axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llm.onnx.top_k %a, %k : (tensor<4x5xf32>, tensor<1xi64>) -> (tensor<4x6xf32>, tensor<4x6xi64>)
  return
}

// -----

func.func @arg_max(%a: tensor<4x5xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.arg_max %a {axis = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x1xi64>
  return
}

// -----

func.func @arg_min(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{result #0 must be tensor of 64-bit signless integer values}}
  %0 = llm.onnx.arg_min %a : (tensor<4x5xf32>) -> tensor<1x5xi32>
  return
}

// -----

func.func @reduce_mean(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+2 {{reduction axis -1 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_mean %a, %ax : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_sum(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<[2]> : tensor<1xi64>
  // expected-error @+2 {{reduction axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_sum %a, %ax : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_max(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<[1]> : tensor<1xi64>
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_max %a, %ax {keepdims = 0 : i64} : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_min(%a: tensor<4x5xf32>, %ax: tensor<2x1xi64>) {
  // expected-error @+2 {{axes must be a 1-D tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_min %a, %ax : (tensor<4x5xf32>, tensor<2x1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_prod(%a: tensor<4x5xf32>, %ax: tensor<1xi32>) {
  // expected-error @+1 {{operand #1 must be 64-bit integer tensor or none}}
  %0 = llm.onnx.reduce_prod %a, %ax : (tensor<4x5xf32>, tensor<1xi32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @reduce_l2(%a: tensor<4x5xf32>) {
  %none = llm.none
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_l2 %a, %none : (tensor<4x5xf32>, none) -> tensor<4x5xf32>
  return
}

// -----

func.func @reduce_sum_square(%a: tensor<4x5xf32>) {
  %ax = llm.constant dense<[-3]> : tensor<1xi64>
  // expected-error @+2 {{reduction axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.reduce_sum_square %a, %ax : (tensor<4x5xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  return
}

// -----

func.func @shape(%a: tensor<4x5xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.shape %a : (tensor<4x5xf32>) -> tensor<3xi64>
  return
}

// -----

func.func @size(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{result #0 must be tensor of 64-bit signless integer values}}
  %0 = llm.onnx.size %a : (tensor<4x5xf32>) -> tensor<f32>
  return
}

// -----

func.func @constant_of_shape(%s: tensor<2xi64>) {
  // expected-error @+1 {{value must have exactly one element}}
  %0 = llm.onnx.constant_of_shape %s {value = dense<[1, 2]> : tensor<2xi64>} : (tensor<2xi64>) -> tensor<?x?xi64>
  return
}

// -----

func.func @range() {
  %a = llm.constant dense<0> : tensor<i64>
  %b = llm.constant dense<4> : tensor<i64>
  %c = llm.constant dense<0> : tensor<i64>
  // expected-error @+2 {{Range delta must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @dropout(%x: tensor<4xf32>) {
  %none = llm.none
  // expected-error @+1 {{result #1 must be tensor of 1-bit signless integer values}}
  %0:2 = llm.onnx.dropout %x, %none, %none : (tensor<4xf32>, none, none) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @onnx_attention(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  %none = llm.none
  // expected-error @+1 {{q_num_heads (3) must be a multiple of kv_num_heads (2)}}
  %0:4 = llm.onnx.attention %q, %k, %k, %none, %none, %none, %none : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, none, none, none, none) -> (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x3x4x4xf32>)
  return
}

// -----

func.func @rotary_embedding(%x: tensor<1x4x64xf32>, %c: tensor<16x8xf32>, %p: tensor<1x4xi64>) {
  // expected-error @+1 {{num_heads is required for 3-D input}}
  %0 = llm.onnx.rotary_embedding %x, %c, %c, %p : (tensor<1x4x64xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @tensor_scatter(%c: tensor<1x2x8x4xf32>, %u: tensor<1x2x1x4xf32>) {
  %none = llm.none
  // expected-error @+1 {{mode must be "linear" or "circular"}}
  %0 = llm.onnx.tensor_scatter %c, %u, %none {mode = "ring"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, none) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @ms_attention(%x: tensor<1x4x30xf32>, %w: tensor<30x90xf32>) {
  %none = llm.none
  // expected-error @+1 {{hidden sizes must be positive multiples of num_heads (4)}}
  %0:2 = llm.ms.attention %x, %w, %none, %none, %none, %none, %none {num_heads = 4 : i64} : (tensor<1x4x30xf32>, tensor<30x90xf32>, none, none, none, none, none) -> (tensor<1x4x30xf32>, tensor<2x1x4x4x7xf32>)
  return
}

// -----

func.func @ms_multi_head_attention(%q: tensor<1x4x32xf32>, %pk: tensor<1x4x2x8xf32>) {
  %none = llm.none
  // expected-error @+1 {{past_key and past_value must be given together}}
  %0:4 = llm.ms.multi_head_attention %q, %q, %q, %none, %none, %none, %pk, %none, %none, %none {num_heads = 4 : i64} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>, none, none, none, tensor<1x4x2x8xf32>, none, none, none) -> (tensor<1x4x32xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x4x6xf32>)
  return
}

// -----

func.func @ms_group_query_attention(%q: tensor<1x4x32xf32>, %sl: tensor<1xi32>, %tl: tensor<i32>) {
  %none = llm.none
  // expected-error @+2 {{num_heads must be a positive multiple of kv_num_heads}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:4 = llm.ms.group_query_attention %q, %none, %none, %none, %none, %sl, %tl, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {num_heads = 4 : i64, kv_num_heads = 3 : i64} : (tensor<1x4x32xf32>, none, none, none, none, tensor<1xi32>, tensor<i32>, none, none, none, none, none, none, none, none, none, none) -> (tensor<1x4x32xf32>, tensor<1x3x?x8xf32>, tensor<1x3x?x8xf32>, tensor<1x4x4x?xf32>)
  return
}

// -----

func.func @ms_rotary_embedding(%x: tensor<1x4x32xf32>, %p: tensor<1x4xi64>, %c: tensor<16x4xf32>) {
  // expected-error @+1 {{rotary_embedding_dim must be even and >= 0}}
  %0 = llm.ms.rotary_embedding %x, %p, %c, %c {rotary_embedding_dim = 7 : i64, num_heads = 4 : i64} : (tensor<1x4x32xf32>, tensor<1x4xi64>, tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<1x4x32xf32>
  return
}

// -----

func.func @ms_skip_layer_normalization(%x: tensor<1x4x32xf32>, %s: tensor<1x4x16xf32>, %g: tensor<32xf32>) {
  %none = llm.none
  // expected-error @+2 {{hidden size mismatch: 32 vs 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:4 = llm.ms.skip_layer_normalization %x, %s, %g, %none, %none : (tensor<1x4x32xf32>, tensor<1x4x16xf32>, tensor<32xf32>, none, none) -> (tensor<1x4x32xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>, tensor<1x4x32xf32>)
  return
}

// -----

func.func @ms_skip_simplified_layer_normalization(%x: tensor<1x1x4x32xf32>, %g: tensor<32xf32>) {
  %none = llm.none
  // expected-error @+2 {{input must have rank 2 or 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:4 = llm.ms.skip_simplified_layer_normalization %x, %x, %g, %none : (tensor<1x1x4x32xf32>, tensor<1x1x4x32xf32>, tensor<32xf32>, none) -> (tensor<1x1x4x32xf32>, tensor<1x1x4x1xf32>, tensor<1x1x4x1xf32>, tensor<1x1x4x32xf32>)
  return
}

// -----

func.func @ms_simplified_layer_normalization(%x: tensor<4x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+2 {{stash_type 99 is not a supported ONNX data type (unknown)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = llm.ms.simplified_layer_normalization %x, %g {stash_type = 99 : i64} : (tensor<4x32xf32>, tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x1xf32>)
  return
}

// -----

func.func @ms_fast_gelu(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{bias must be 1-D}}
  %0 = llm.ms.fast_gelu %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @ms_bias_gelu(%x: tensor<4x32xf32>) {
  // expected-error @+1 {{B must be 1-D}}
  %0 = llm.ms.bias_gelu %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @ms_quick_gelu(%x: tensor<4x32xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.ms.quick_gelu %x : (tensor<4x32xi32>) -> tensor<4x32xi32>
  return
}

// -----

func.func @ms_embed_layer_normalization(%ids: tensor<1x2x3xi32>, %e: tensor<10x8xf32>, %g: tensor<8xf32>) {
  %none = llm.none
  // expected-error @+2 {{input_ids must have rank 2, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = llm.ms.embed_layer_normalization %ids, %none, %e, %e, %none, %g, %g, %none, %none : (tensor<1x2x3xi32>, none, tensor<10x8xf32>, tensor<10x8xf32>, none, tensor<8xf32>, tensor<8xf32>, none, none) -> (tensor<1x2x8xf32>, tensor<1xi32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @ms_matmul_nbits(%a: tensor<2x64xf32>, %b: tensor<48x2x16xui8>, %s: tensor<48x2xf32>) {
  %none = llm.none
  // expected-error @+1 {{block_size must be a power of two >= 16, got 24}}
  %0 = llm.ms.matmul_nbits %a, %b, %s, %none, %none, %none {K = 64 : i64, N = 48 : i64, block_size = 24 : i64} : (tensor<2x64xf32>, tensor<48x2x16xui8>, tensor<48x2xf32>, none, none, none) -> tensor<2x48xf32>
  return
}

// -----

func.func @ms_gather_block_quantized(%d: tensor<100x16xui8>, %i: tensor<3xi64>, %s: tensor<100x1xf32>) {
  %none = llm.none
  // expected-error @+1 {{bits must be 2, 4 or 8 for uint8 data and 4 for int4/uint4, got 3}}
  %0 = llm.ms.gather_block_quantized %d, %i, %s, %none {bits = 3 : i64, block_size = 32 : i64} : (tensor<100x16xui8>, tensor<3xi64>, tensor<100x1xf32>, none) -> tensor<3x16xf32>
  return
}

// -----

func.func @ms_gather_block_quantized_axis(%d: tensor<100x16xui8>, %i: tensor<3xi64>, %s: tensor<100x1xf32>) {
  %none = llm.none
  // expected-error @+2 {{quantize_axis 2 is out of range}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.ms.gather_block_quantized %d, %i, %s, %none {quantize_axis = 2 : i64, block_size = 32 : i64} : (tensor<100x16xui8>, tensor<3xi64>, tensor<100x1xf32>, none) -> tensor<3x32xf32>
  return
}

// -----

func.func @embedding(%t: tensor<16xf32>, %ids: tensor<4xi64>) {
  // expected-error @+2 {{table must have rank 2, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.embedding %t, %ids : (tensor<16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  return
}

// -----

func.func @rms_norm(%x: tensor<4x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight has 8 elements for a last dimension of 16}}
  %0 = llm.rms_norm %x, %w : (tensor<4x16xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @layer_norm(%x: tensor<4x16xf32>, %w: tensor<16xf32>, %b: tensor<4x16xf32>) {
  // expected-error @+1 {{bias must be 1-D}}
  %0 = llm.layer_norm %x, %w, %b : (tensor<4x16xf32>, tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @rope(%x: tensor<1x4x64xf32>, %c: tensor<16x8xf32>, %p: tensor<1x4xi64>) {
  // expected-error @+1 {{x must be [batch, seq, heads, head_dim]}}
  %0 = llm.rope %x, %c, %c, %p : (tensor<1x4x64xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x64xf32>
  return
}

// -----

func.func @attention(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x2x16xf32>) {
  %none = llm.none
  // expected-error @+1 {{q has 8 heads, num_heads is 4}}
  %0 = llm.attention %q, %k, %k, %none {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, none) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @linear(%x: tensor<4x16xf32>, %w: tensor<32x8xf32>) {
  %none = llm.none
  // expected-error @+2 {{in_features mismatch: 16 vs 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.linear %x, %w, %none : (tensor<4x16xf32>, tensor<32x8xf32>, none) -> tensor<4x32xf32>
  return
}

// -----

func.func @quantized_linear_bits(%x: tensor<4x64xf32>, %q: tensor<8x2x24xui8>, %s: tensor<8x2xf32>) {
  %none = llm.none
  // expected-error @+1 {{bits must be 4 or 8, got 6}}
  %0 = llm.quantized_linear %x, %q, %s, %none, %none {bits = 6 : i64, group_size = 32 : i64} : (tensor<4x64xf32>, tensor<8x2x24xui8>, tensor<8x2xf32>, none, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @quantized_linear_groups(%x: tensor<4x64xf32>, %q: tensor<8x3x16xui8>, %s: tensor<8x3xf32>) {
  %none = llm.none
  // expected-error @+1 {{weight has 3 groups of 32 but K = 64 needs 2}}
  %0 = llm.quantized_linear %x, %q, %s, %none, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<4x64xf32>, tensor<8x3x16xui8>, tensor<8x3xf32>, none, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @quantized_linear_blob(%x: tensor<4x64xf32>, %q: tensor<8x2x32xui8>, %s: tensor<8x2xf32>) {
  %none = llm.none
  // expected-error @+1 {{weight must be [N, G, 16] for 4-bit groups of 32}}
  %0 = llm.quantized_linear %x, %q, %s, %none, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<4x64xf32>, tensor<8x2x32xui8>, tensor<8x2xf32>, none, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @quantized_linear_zero_points(%x: tensor<4x64xf32>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf32>, %zp: tensor<8x2xf32>) {
  %none = llm.none
  // expected-error @+1 {{zero_points must be ui8}}
  %0 = llm.quantized_linear %x, %q, %s, %zp, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<4x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8x2xf32>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @quantized_linear_scales(%x: tensor<4x64xf32>, %q: tensor<8x2x16xui8>, %s: tensor<8x1xf32>) {
  %none = llm.none
  // expected-error @+1 {{scales 'tensor<8x1xf32>' does not match weight}}
  %0 = llm.quantized_linear %x, %q, %s, %none, %none {bits = 4 : i64, group_size = 32 : i64} : (tensor<4x64xf32>, tensor<8x2x16xui8>, tensor<8x1xf32>, none, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @quantized_embedding_table(%q: tensor<256x2x32xui8>, %s: tensor<256x2xf32>, %ids: tensor<4xi64>) {
  %none = llm.none
  // expected-error @+1 {{table must be [vocab, G, 16]}}
  %0 = llm.quantized_embedding %q, %s, %none, %ids {bits = 4 : i64, group_size = 32 : i64} : (tensor<256x2x32xui8>, tensor<256x2xf32>, none, tensor<4xi64>) -> tensor<4x64xf32>
  return
}

// -----

func.func @quantized_embedding_scales(%q: tensor<256x2x16xui8>, %s: tensor<128x2xf32>, %ids: tensor<4xi64>) {
  %none = llm.none
  // expected-error @+1 {{scales 'tensor<128x2xf32>' does not match table}}
  %0 = llm.quantized_embedding %q, %s, %none, %ids {bits = 4 : i64, group_size = 32 : i64} : (tensor<256x2x16xui8>, tensor<128x2xf32>, none, tensor<4xi64>) -> tensor<4x64xf32>
  return
}

// -----

func.func @gelu(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.gelu %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @silu(%x: tensor<4xf32>) {
  // expected-error @+2 {{incompatible with return type(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.silu %x : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @relu(%x: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be tensor of floating-point values}}
  %0 = llm.relu %x {squared = true} : (tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @swiglu(%g: tensor<4xf32>, %u: tensor<8xf32>) {
  // expected-error @+1 {{gate and up must have the same shape and element type}}
  %0 = llm.swiglu %g, %u : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @assert_equal(%v: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = llm.assert_equal %v, %a, %a {message = "m"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_to_wrong_narrow_type(%x: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x!llm.f8e8m0>' are incompatible with return type(s) of operation 'tensor<4x!llm.f4e2m1>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.onnx.cast %x {to = 24 : i64} : (tensor<4xf32>) -> tensor<4x!llm.f4e2m1>
  return
}

// -----

// expected-error @+1 {{unknown  type `f6e3m2` in dialect `llm`}}
func.func @unknown_narrow_type(%x: tensor<4x!llm.f6e3m2>)

// -----

func.func @cache_update(%cache: tensor<1x2x64x16xf32>, %new: tensor<1x2x1x16xf32>, %pos: tensor<i32>) {
  // expected-error @+1 {{operand #2 must be tensor of 64-bit signless integer values}}
  %0 = llm.cache_update %cache, %new, %pos : (tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i32>) -> tensor<1x2x64x16xf32>
  return
}

// -----

func.func @quantized_cache_update(%cache: tensor<1x2x64x16xi8>, %scales: tensor<1x2x64x16xf32>, %new: tensor<1x2x1x16xf32>, %pos: tensor<i64>) {
  // expected-error @+1 {{scales must be [B, H, M, 1] for a [B, H, M, D] cache}}
  %0, %1 = llm.quantized_cache_update %cache, %scales, %new, %pos : (tensor<1x2x64x16xi8>, tensor<1x2x64x16xf32>, tensor<1x2x1x16xf32>, tensor<i64>) -> (tensor<1x2x64x16xi8>, tensor<1x2x64x16xf32>)
  return
}

// -----

func.func @quantized_cache_update_width(%cache: tensor<1x2x64x16xi8>, %scales: tensor<1x2x64x1xf32>, %new: tensor<1x2x1x8xf32>, %pos: tensor<i64>) {
  // expected-error @+1 {{update does not fit the cache in dimension 3}}
  %0, %1 = llm.quantized_cache_update %cache, %scales, %new, %pos : (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>, tensor<1x2x1x8xf32>, tensor<i64>) -> (tensor<1x2x64x16xi8>, tensor<1x2x64x1xf32>)
  return
}

// -----

func.func @cached_attention_int8_without_scales(%q: tensor<1x1x4x16xf32>, %k: tensor<1x2x64x16xi8>, %pos: tensor<i64>) {
  // expected-error @+1 {{int8 caches need their two kv_scales (k, v)}}
  %0 = llm.cached_attention %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xi8>, tensor<1x2x64x16xi8>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return
}

// -----

func.func @flash_attention_float_with_scales(%q: tensor<1x8x4x16xf32>, %k: tensor<1x2x64x16xf32>, %s: tensor<1x2x64x1xf32>, %pos: tensor<i64>) {
  // expected-error @+1 {{float caches take no kv_scales}}
  %0 = llm.flash_attention %q, %k, %k, %pos, %s, %s {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x8x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>, tensor<1x2x64x1xf32>, tensor<1x2x64x1xf32>) -> tensor<1x8x4x16xf32>
  return
}

// -----

func.func @decode_attention_partial_scale_shape(%q: tensor<1x1x4x16xf32>, %k: tensor<1x2x64x16xi8>, %s: tensor<1x2x32x1xf32>, %pos: tensor<i64>) {
  // expected-error @+1 {{kv_scales must be [B, Hkv, M, 1] for their cache}}
  %p, %l = llm.decode_attention_partial %q, %k, %k, %pos, %s, %s {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, num_splits = 2 : i64} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xi8>, tensor<1x2x64x16xi8>, tensor<i64>, tensor<1x2x32x1xf32>, tensor<1x2x32x1xf32>) -> (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @cache_read(%cache: tensor<2x64x16xf32>, %n: tensor<i64>) {
  // expected-error @+2 {{cache must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.cache_read %cache, %n : (tensor<2x64x16xf32>, tensor<i64>) -> tensor<2x?x16xf32>
  return
}

// -----

func.func @cached_attention(%q: tensor<1x1x4x16xf32>, %k: tensor<1x2x64xf32>, %pos: tensor<i64>) {
  // expected-error @+2 {{k_cache must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.cached_attention %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x1x4x16xf32>, tensor<1x2x64xf32>, tensor<1x2x64xf32>, tensor<i64>) -> tensor<1x1x4x16xf32>
  return
}

// -----

func.func @flash_attention(%q: tensor<1x8x16xf32>, %k: tensor<1x2x64x16xf32>, %pos: tensor<i64>) {
  // expected-error @+2 {{q must have rank 4, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.flash_attention %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32} : (tensor<1x8x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x8x16xf32>
  return
}

// -----

func.func @decode_attention_partial(%q: tensor<1x1x4x16xf32>, %k: tensor<1x2x64x16xf32>, %pos: tensor<i64>) {
  // expected-error @+2 {{num_splits must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %p, %l = llm.decode_attention_partial %q, %k, %k, %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, num_splits = 0 : i64} : (tensor<1x1x4x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> (tensor<1x0x4x16xf32>, tensor<1x0x4xf32>)
  return
}

// -----

func.func @attention_sinks_per_head(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x2x16xf32>, %none: none) {
  // expected-error @+1 {{sinks has 3 logits for 8 query heads}}
  %0 = llm.attention %q, %k, %k, %none {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, sinks = array<f32: 1.0, 2.0, 3.0>} : (tensor<1x4x8x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, none) -> tensor<1x4x8x16xf32>
  return
}

// -----

func.func @flash_attention_sinks_finite(%q: tensor<1x8x2x16xf32>, %k: tensor<1x2x64x16xf32>, %pos: tensor<i64>) {
  // expected-error @+1 {{sinks must be finite}}
  %0 = llm.flash_attention %q, %k, %k, %pos {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32, sinks = array<f32: 1.0, 0x7F800000>} : (tensor<1x8x2x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<i64>) -> tensor<1x8x2x16xf32>
  return
}

// -----

func.func @attention_combine_sinks(%p: tensor<1x2x4x16xf32>, %l: tensor<1x2x4xf32>) {
  // expected-error @+1 {{sinks has 2 logits for 4 query heads}}
  %0 = llm.attention_combine %p, %l {sinks = array<f32: 1.0, 2.0>} : (tensor<1x2x4x16xf32>, tensor<1x2x4xf32>) -> tensor<1x1x4x16xf32>
  return
}

// -----

func.func @attention_combine(%p: tensor<1x2x4x16xf32>, %l: tensor<1x2xf32>) {
  // expected-error @+2 {{lse must have rank 3, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = llm.attention_combine %p, %l : (tensor<1x2x4x16xf32>, tensor<1x2xf32>) -> tensor<1x1x4x16xf32>
  return
}

// -----

func.func @fused(%x: tensor<1x64xf32>) {
  // expected-error @+1 {{yield types differ from the results}}
  %0 = llm.fused "elementwise" (%x) : (tensor<1x64xf32>) -> tensor<1x32xf32> {
  ^bb0(%a: tensor<1x64xf32>):
    llm.yield %a : tensor<1x64xf32>
  }
  return
}

// -----

func.func @yield(%x: tensor<1x64xf32>) {
  // expected-error @+1 {{'llm.yield' op expects parent op 'llm.fused'}}
  llm.yield %x : tensor<1x64xf32>
}
