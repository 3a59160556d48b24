// RUN: llmc-opt --split-input-file --llmc-canonicalize %s | FileCheck %s
// RUN: llmc-opt --split-input-file "--llmc-canonicalize=unit-transposes=true" %s | FileCheck %s --check-prefix=UNIT
// RUN: llmc-opt --split-input-file "--llmc-canonicalize=unit-transposes=true symbolic-values=true" %s | FileCheck %s --check-prefix=SYMV

// The head split of an attention layer: the target [batch, seq, 4, 16]
// computed from Shape(x) becomes a constant with 0 for x's own dimensions,
// and the result keeps the names; the shape computation disappears.
// CHECK-LABEL: func.func @reshape_from_shape
func.func @reshape_from_shape(%x: tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x?x?xf32> {
  // CHECK-NOT: llm.onnx.shape
  // CHECK-NOT: llm.onnx.concat
  // CHECK: %[[T:.*]] = llm.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  // CHECK: llm.onnx.reshape %{{.*}}, %[[T]] : {{.*}} -> tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>
  %s = llm.onnx.shape %x : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>) -> tensor<3xi64>
  %i0 = llm.constant dense<0> : tensor<i64>
  %i1 = llm.constant dense<1> : tensor<i64>
  %ax = llm.constant dense<0> : tensor<1xi64>
  %b = llm.onnx.gather %s, %i0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %sq = llm.onnx.gather %s, %i1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = llm.onnx.unsqueeze %b, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = llm.onnx.unsqueeze %sq, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %c = llm.constant dense<[4, 16]> : tensor<2xi64>
  %t = llm.onnx.concat %b1, %s1, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  %r = llm.onnx.reshape %x, %t : (tensor<?x?x64xf32, #llm.dims<"b", "s", ?>>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// Merging heads back: [b, s, 4, 16] -> [b*s, -1]. One computed size that
// is not x's own is spelled -1 and named by its expression.
// CHECK-LABEL: func.func @reshape_product
func.func @reshape_product(%x: tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>) -> tensor<?x?xf32> {
  // CHECK: llm.constant dense<[-1, 64]> : tensor<2xi64>
  // CHECK: llm.onnx.reshape {{.*}} -> tensor<?x64xf32, #llm.dims<"b*s", ?>>
  %s = llm.onnx.shape %x {end = 2 : i64} : (tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>) -> tensor<2xi64>
  %i0 = llm.constant dense<0> : tensor<1xi64>
  %i1 = llm.constant dense<1> : tensor<1xi64>
  %b = llm.onnx.gather %s, %i0 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = llm.onnx.gather %s, %i1 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %bs = llm.onnx.mul %b, %sq : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %h = llm.constant dense<64> : tensor<1xi64>
  %t = llm.onnx.concat %bs, %h {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = llm.onnx.reshape %x, %t : (tensor<?x?x4x16xf32, #llm.dims<"b", "s", ?, ?>>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Negative: two computed sizes that are not the input's cannot both be
// -1, so the computation stays (unnamed dimensions are private symbols).
// CHECK-LABEL: func.func @reshape_two_unknowns
func.func @reshape_two_unknowns(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // CHECK: llm.onnx.shape %arg1
  // CHECK: llm.onnx.reshape %arg0, %{{.*}} : (tensor<?x?xf32>, tensor<2xi64>)
  %s = llm.onnx.shape %y : (tensor<?x?xf32>) -> tensor<2xi64>
  %r = llm.onnx.reshape %x, %s : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Expand to x's own shape is a no-op; Slice up to x's length needs no
// computed end; Identity and a cast to the same type go.
// CHECK-LABEL: func.func @noops
func.func @noops(%x: tensor<?x?xf32, #llm.dims<"b", "s">>) -> tensor<?x?xf32> {
  // CHECK-NOT: llm.onnx.expand
  // CHECK-NOT: llm.onnx.identity
  // CHECK-NOT: llm.onnx.cast
  // CHECK: %[[END:.*]] = llm.constant dense<9223372036854775807> : tensor<1xi64>
  // CHECK: llm.onnx.slice %arg0, %{{.*}}, %[[END]], %{{.*}}
  %s = llm.onnx.shape %x : (tensor<?x?xf32, #llm.dims<"b", "s">>) -> tensor<2xi64>
  %e = llm.onnx.expand %x, %s : (tensor<?x?xf32, #llm.dims<"b", "s">>, tensor<2xi64>) -> tensor<?x?xf32>
  %id = llm.onnx.identity %e : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %c = llm.onnx.cast %id {to = 1 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %none = llm.none
  %one = llm.constant dense<1> : tensor<1xi64>
  %two = llm.constant dense<2> : tensor<1xi64>
  %len = llm.onnx.slice %s, %one, %two, %none, %none : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<1xi64>
  %ax = llm.constant dense<1> : tensor<1xi64>
  %r = llm.onnx.slice %c, %one, %len, %ax, %none : (tensor<?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// optimum's Expand: Equal(shape, -1) is decided (sizes are never -1); the
// batch broadcast stays, but its result gets the name.
// CHECK-LABEL: func.func @expand_where
func.func @expand_where(%ids: tensor<?x?xi64, #llm.dims<"b", "s">>, %f: tensor<1x8x1xf32>) -> tensor<?x?x?xf32> {
  // CHECK-NOT: llm.onnx.equal
  // CHECK: llm.constant dense<[false, true, false]> : tensor<3xi1>
  // CHECK: llm.onnx.expand {{.*}} -> tensor<?x8x1xf32, #llm.dims<"b", ?, ?>>
  %s = llm.onnx.shape %ids : (tensor<?x?xi64, #llm.dims<"b", "s">>) -> tensor<2xi64>
  %i0 = llm.constant dense<0> : tensor<1xi64>
  %b = llm.onnx.gather %s, %i0 : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %m1 = llm.constant dense<-1> : tensor<1xi64>
  %one = llm.constant dense<1> : tensor<1xi64>
  %t = llm.onnx.concat %b, %m1, %one {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %neg = llm.constant dense<-1> : tensor<3xi64>
  %eq = llm.onnx.equal %t, %neg : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %ones = llm.constant dense<1> : tensor<3xi64>
  %w = llm.onnx.where %eq, %ones, %t : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %r = llm.onnx.expand %f, %w : (tensor<1x8x1xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// Sizes named by an expression ("p + s", as exporters name them) are sums:
// Range(p, p + s) has s elements.
// CHECK-LABEL: func.func @expression_names
func.func @expression_names(%past: tensor<1x?xf32, #llm.dims<?, "p">>, %mask: tensor<1x?xi64, #llm.dims<?, "p + s">>) -> tensor<?xi64> {
  // CHECK: llm.onnx.range {{.*}} -> tensor<?xi64, #llm.dims<"s">>
  %a = llm.onnx.shape %past : (tensor<1x?xf32, #llm.dims<?, "p">>) -> tensor<2xi64>
  %b = llm.onnx.shape %mask : (tensor<1x?xi64, #llm.dims<?, "p + s">>) -> tensor<2xi64>
  %i1 = llm.constant dense<1> : tensor<i64>
  %p = llm.onnx.gather %a, %i1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %t = llm.onnx.gather %b, %i1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %r = llm.onnx.range %p, %t, %i1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}

// -----

// Operations on constants run their CPU kernel; results over 65536
// elements stay operations. Equal subexpressions merge.
// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<3xf32>, tensor<?xi64>, tensor<?x?xf32>, tensor<3xf32>) {
  // CHECK-DAG: llm.constant dense<[2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<3xf32>
  // CHECK-DAG: llm.constant dense<[0, 2, 4, 6]> : tensor<4xi64>
  // CHECK: llm.onnx.constant_of_shape
  // CHECK-NOT: llm.onnx.add
  // CHECK-NOT: llm.onnx.range
  %a = llm.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = llm.onnx.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s2 = llm.onnx.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %z = llm.constant dense<0> : tensor<i64>
  %l = llm.constant dense<8> : tensor<i64>
  %d = llm.constant dense<2> : tensor<i64>
  %r = llm.onnx.range %z, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %shape = llm.constant dense<[300, 300]> : tensor<2xi64>
  %big = llm.onnx.constant_of_shape %shape : (tensor<2xi64>) -> tensor<?x?xf32>
  return %s, %r, %big, %s2 : tensor<3xf32>, tensor<?xi64>, tensor<?x?xf32>, tensor<3xf32>
}

// -----

// Phi-3 splits q into a rotated part and an (empty) pass-through part and
// concatenates them back: the whole-axis Slice and the Concat with a
// zero-size operand go.
// CHECK-LABEL: func.func @empty_parts
// CHECK-NOT: llm.onnx.slice
// CHECK-NOT: llm.onnx.concat
// CHECK: %[[N:.+]] = llm.onnx.neg %arg0
// CHECK: return %[[N]]
func.func @empty_parts(%x: tensor<?x2x?x16xf32>, %e: tensor<?x2x?x0xf32>) -> tensor<?x2x?x16xf32> {
  %s0 = llm.constant dense<0> : tensor<1xi64>
  %s16 = llm.constant dense<16> : tensor<1xi64>
  %ax = llm.constant dense<-1> : tensor<1xi64>
  %none = llm.none
  %whole = llm.onnx.slice %x, %s0, %s16, %ax, %none : (tensor<?x2x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x2x?x16xf32>
  %n = llm.onnx.neg %whole : (tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %c = llm.onnx.concat %n, %e {axis = -1 : i64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x0xf32>) -> tensor<?x2x?x16xf32>
  return %c : tensor<?x2x?x16xf32>
}

// -----

// The attention mask of ones a cached export gets (start_pos + 1 keys) is
// read only through its Shape and a ReduceSum (onnxruntime-genai's
// total_sequence_length and seqlens_k): both become arithmetic on the shape
// operand and the mask goes (the key count, Gather of the shape's second
// entry, is the Unsqueezed start_pos + 1 it was made from). A ReduceSum of
// a float splat stays.
// CHECK-LABEL: func.func @mask_of_ones
// CHECK: %[[KEYS:.+]] = llm.onnx.add %arg0
// CHECK: %[[SHAPE:.+]] = llm.onnx.concat
// CHECK-NOT: llm.onnx.shape
// CHECK-NOT: llm.onnx.gather
// CHECK: %[[SUM:.+]] = llm.onnx.expand %[[KEYS]], %{{.+}} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
// CHECK-NOT: llm.onnx.shape
// CHECK-NOT: llm.onnx.reduce_sum {{.*}}(tensor<1x?xi64
// CHECK: llm.onnx.reduce_sum {{.*}}(tensor<1x?xf32
// CHECK: return %[[SHAPE]], %[[SUM]]
func.func @mask_of_ones(%pos: tensor<i64>) -> (tensor<2xi64>, tensor<1xi64>, tensor<1xf32>) {
  %one = llm.constant dense<1> : tensor<i64>
  %onef = llm.constant dense<1.0> : tensor<f32>
  %ax0 = llm.constant dense<0> : tensor<1xi64>
  %b = llm.constant dense<1> : tensor<1xi64>
  %total = llm.onnx.add %pos, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %t1 = llm.onnx.unsqueeze %total, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %shape = llm.onnx.concat %b, %t1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %mask = llm.onnx.expand %one, %shape : (tensor<i64>, tensor<2xi64>) -> tensor<1x?xi64>
  %s = llm.onnx.shape %mask : (tensor<1x?xi64>) -> tensor<2xi64>
  %sum = llm.onnx.reduce_sum %mask, %b {keepdims = 0 : i64} : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1xi64>
  %maskf = llm.onnx.expand %onef, %shape : (tensor<f32>, tensor<2xi64>) -> tensor<1x?xf32>
  %sumf = llm.onnx.reduce_sum %maskf, %b {keepdims = 0 : i64} : (tensor<1x?xf32>, tensor<1xi64>) -> tensor<1xf32>
  return %s, %sum, %sumf : tensor<2xi64>, tensor<1xi64>, tensor<1xf32>
}

// -----

// Range(s, s + c, 1) over integers has c elements whatever s is (the
// positions of the new tokens).
// CHECK-LABEL: func.func @range_of_constant_length
// CHECK: llm.onnx.range {{.*}} -> tensor<3xi64>
func.func @range_of_constant_length(%s: tensor<i64>) -> tensor<?xi64> {
  %c = llm.constant dense<3> : tensor<i64>
  %d = llm.constant dense<1> : tensor<i64>
  %l = llm.onnx.add %s, %c : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = llm.onnx.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %r : tensor<?xi64>
}

// -----

// The same range where the export named its size (a bucket of 16 tokens:
// the query positions start_pos + 16 - 16 .. start_pos + 16 of a mask the
// fallback builds): the constant wins over the name, and what reads it
// becomes static too.
// CHECK-LABEL: func.func @named_range_of_constant_length
// CHECK: llm.onnx.range {{.*}} -> tensor<16xi64>
// CHECK: llm.onnx.unsqueeze {{.*}} -> tensor<16x1xi64>
func.func @named_range_of_constant_length(%s: tensor<i64> {llm.name = "start_pos"}) -> tensor<?x1xi64, #llm.dims<"sequence_length", ?>> {
  %c = llm.constant dense<16> : tensor<i64>
  %d = llm.constant dense<1> : tensor<i64>
  %a = llm.constant dense<1> : tensor<1xi64>
  %l = llm.onnx.add %s, %c : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %f = llm.onnx.sub %l, %c : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = llm.onnx.range %f, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #llm.dims<"sequence_length">>
  %u = llm.onnx.unsqueeze %r, %a : (tensor<?xi64, #llm.dims<"sequence_length">>, tensor<1xi64>) -> tensor<?x1xi64, #llm.dims<"sequence_length", ?>>
  return %u : tensor<?x1xi64, #llm.dims<"sequence_length", ?>>
}

// -----

// A reshape's -1 is the input's elements over the other sizes, those that 0
// copies cancelling: genai's Qwen 3 norms each head over [B, S * H, D] and
// reshapes back with [0, -1, H * D], which is [B, S, H * D] again. ("2*s"
// is read back as twice s.)
// CHECK-LABEL: func.func @reshape_minus_one
// CHECK: -> tensor<?x?x16xf32, #llm.dims<"b", "2*s", ?>>
// CHECK: -> tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>
func.func @reshape_minus_one(%x: tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>) -> tensor<?x?x32xf32> {
  %heads = llm.constant dense<[0, -1, 16]> : tensor<3xi64>
  %merged = llm.constant dense<[0, -1, 32]> : tensor<3xi64>
  %h = llm.onnx.reshape %x, %heads : (tensor<?x?x32xf32, #llm.dims<"b", "s", ?>>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %n = llm.onnx.neg %h : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %m = llm.onnx.reshape %n, %merged : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
  return %m : tensor<?x?x32xf32>
}

// -----

// With unit-transposes (after bucketing): a decode step's [B, 1, H, D] to
// [B, H, 1, D] moves no data and becomes a reshape (a view); a transpose of
// two axes above 1 stays. Without the option both stay.
// UNIT-LABEL: func.func @unit_transposes
// UNIT: %[[V:.+]] = llm.onnx.reshape %arg0, %{{.+}} : (tensor<1x1x4x16xf32>, tensor<4xi64>) -> tensor<1x4x1x16xf32>
// UNIT: llm.onnx.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x16xf32>) -> tensor<1x4x2x16xf32>
// CHECK-LABEL: func.func @unit_transposes
// CHECK-COUNT-2: llm.onnx.transpose
func.func @unit_transposes(%x: tensor<1x1x4x16xf32>, %y: tensor<1x2x4x16xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x2x16xf32>) {
  %a = llm.onnx.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x4x16xf32>) -> tensor<1x4x1x16xf32>
  %b = llm.onnx.transpose %y {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x16xf32>) -> tensor<1x4x2x16xf32>
  return %a, %b : tensor<1x4x1x16xf32>, tensor<1x4x2x16xf32>
}

// -----

// Picks of one value out of a vector: a Gather at a constant index from a
// Concat is the Gather from the part holding it, or the Unsqueezed scalar
// itself; a Range of one element is its start (Gemma 3's cache position,
// computed every decode step).
// CHECK-LABEL: func.func @index_picks
// CHECK-NOT: llm.onnx.range
// CHECK: %[[R:.+]] = llm.onnx.reshape %arg0, %{{.+}} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
// CHECK: %[[G:.+]] = llm.onnx.gather %arg1, %{{.+}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
// CHECK: return %arg0, %[[R]], %[[G]]
func.func @index_picks(%pos: tensor<i64>, %v: tensor<3xi64>) -> (tensor<i64>, tensor<1xi64>, tensor<i64>) {
  %ax0 = llm.constant dense<0> : tensor<1xi64>
  %one = llm.constant dense<1> : tensor<i64>
  %two = llm.constant dense<2> : tensor<i64>
  %m1 = llm.constant dense<-1> : tensor<i64>
  %c = llm.constant dense<[7, 8]> : tensor<2xi64>
  %p1 = llm.onnx.unsqueeze %pos, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %cat = llm.onnx.concat %c, %p1, %v {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<3xi64>) -> tensor<6xi64>
  %start = llm.onnx.gather %cat, %two : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  %end = llm.onnx.add %start, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = llm.onnx.range %start, %end, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1xi64>
  %last = llm.onnx.gather %cat, %m1 : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  return %start, %r, %last : tensor<i64>, tensor<1xi64>, tensor<i64>
}

// -----

// A check another before it already made (the same two values, in either
// order, seen through the checks they passed) goes: onnxruntime-genai's
// GroupQueryAttention checks the same sequence lengths in every layer.
// Where both pass one value on, the second's result is the first's, so
// what each layer computes from it is one expression (CSE); otherwise the
// second passes its own value on. A check of other values stays.
// CHECK-LABEL: func.func @repeated_checks
// CHECK: %[[A:.+]] = llm.assert_equal %arg0, %arg0, %arg1 {message = "first"}
// CHECK: %[[P:.+]] = llm.onnx.add %[[A]], %{{.+}}
// CHECK-NOT: message = "again"
// CHECK: llm.assert_equal %arg2, %arg0, %arg2 {message = "other values"}
// CHECK-NOT: llm.assert_equal
// CHECK: return %[[P]], %[[P]], %arg2
func.func @repeated_checks(%start: tensor<1xi64>, %past: tensor<i64>, %other: tensor<1xi64>) -> (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) {
  %one = llm.constant dense<1> : tensor<1xi64>
  %a = llm.assert_equal %start, %start, %past {message = "first"} : (tensor<1xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  %p1 = llm.onnx.add %a, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %b = llm.assert_equal %start, %past, %a {message = "again"} : (tensor<1xi64>, tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %p2 = llm.onnx.add %b, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c = llm.assert_equal %other, %start, %other {message = "other values"} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %d = llm.assert_equal %other, %start, %past {message = "again, its own value"} : (tensor<1xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  return %p1, %p2, %d : tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
}

// -----

// With symbolic-values (the pipeline's run after bucketing): onnxruntime-
// genai's past length, start_pos + 1 expanded, less one, through i32 and
// back, is start_pos (a Reshape of the argument, a view); the checks of it
// against start_pos and of the total length against start_pos + 1 hold by
// what the analysis knows and go; start_pos + 1 computed twice is one
// value; and an integer add of zeros is its other operand (in every run).
// A value the analysis cannot tie to start_pos (the token id) stays, and so
// does its check.
// SYMV-LABEL: func.func @genai_lengths
// SYMV-NOT: llm.onnx.cast
// SYMV-NOT: llm.assert_equal {{.*}}"past"
// SYMV-NOT: llm.assert_equal {{.*}}"total"
// SYMV: %[[P:.+]] = llm.onnx.reshape %arg1, %{{.+}} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
// SYMV: %[[POS:.+]] = llm.onnx.unsqueeze %[[P]], %{{.+}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1x1xi64>
// SYMV: llm.assert_equal %arg0, %arg0, %arg1 {message = "unknown"}
// SYMV-NOT: llm.onnx.add
// SYMV: return %[[POS]], %[[T:.+]], %[[T]]
// UNIT-LABEL: func.func @genai_lengths
// UNIT: llm.assert_equal {{.*}}"past"
// UNIT-NOT: llm.onnx.add {{.*}}tensor<1x1xi64>
// CHECK-LABEL: func.func @genai_lengths
// CHECK: llm.assert_equal {{.*}}"past"
// CHECK: llm.assert_equal {{.*}}"total"
// CHECK-NOT: llm.onnx.add {{.*}}tensor<1x1xi64>
func.func @genai_lengths(%ids: tensor<1xi64>, %pos: tensor<i64> {llm.name = "start_pos"}) -> (tensor<1x1xi64>, tensor<i64>, tensor<i64>) {
  %one = llm.constant dense<1> : tensor<i64>
  %one1 = llm.constant dense<1> : tensor<1xi64>
  %ax0 = llm.constant dense<0> : tensor<1xi64>
  %zero = llm.constant dense<0> : tensor<1x1xi64>
  %total = llm.onnx.add %pos, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %e = llm.onnx.expand %total, %one1 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s = llm.onnx.sub %e, %one1 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = llm.onnx.cast %s {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %total32 = llm.onnx.cast %total {to = 6 : i64} : (tensor<i64>) -> tensor<i32>
  %back = llm.onnx.cast %seqlens {to = 7 : i64} : (tensor<1xi32>) -> tensor<1xi64>
  %start = llm.assert_equal %back, %back, %pos {message = "past"} : (tensor<1xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  %t64 = llm.onnx.cast %total32 {to = 7 : i64} : (tensor<i32>) -> tensor<i64>
  %checked = llm.assert_equal %start, %t64, %total {message = "total"} : (tensor<1xi64>, tensor<i64>, tensor<i64>) -> tensor<1xi64>
  %u = llm.onnx.unsqueeze %checked, %ax0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<1x1xi64>
  %positions = llm.onnx.add %u, %zero : (tensor<1x1xi64>, tensor<1x1xi64>) -> tensor<1x1xi64>
  %other = llm.assert_equal %ids, %ids, %pos {message = "unknown"} : (tensor<1xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  %again = llm.onnx.add %one, %pos : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %positions, %total, %again : tensor<1x1xi64>, tensor<i64>, tensor<i64>
}

// -----

// A batch's lengths (start_pos + 1 for each of two sequences, less one) are
// start_pos for each: an Expand of it, with symbolic-values.
// SYMV-LABEL: func.func @batch_lengths
// SYMV-NEXT: %[[S:.+]] = llm.constant dense<2> : tensor<1xi64>
// SYMV-NEXT: %[[E:.+]] = llm.onnx.expand %arg0, %[[S]] : (tensor<i64>, tensor<1xi64>) -> tensor<2xi64>
// SYMV-NEXT: return %[[E]]
// CHECK-LABEL: func.func @batch_lengths
// CHECK: llm.onnx.sub
func.func @batch_lengths(%pos: tensor<i64> {llm.name = "start_pos"}) -> tensor<2xi64> {
  %one = llm.constant dense<1> : tensor<i64>
  %two = llm.constant dense<2> : tensor<1xi64>
  %one1 = llm.constant dense<1> : tensor<1xi64>
  %total = llm.onnx.add %pos, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %e = llm.onnx.expand %total, %two : (tensor<i64>, tensor<1xi64>) -> tensor<2xi64>
  %s = llm.onnx.sub %e, %one1 : (tensor<2xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %s : tensor<2xi64>
}
