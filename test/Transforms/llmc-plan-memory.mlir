// RUN: llmc-opt --split-input-file --verify-diagnostics --llmc-plan-memory %s | FileCheck %s

// Three activations: %a (4 KiB, live at ops 0-1), %b (4 KiB, 1-2), %c
// (8 KiB, 2 to the end, a result). Largest first: %c at 0; %a does not
// overlap %c in time, so 0 too; %b overlaps both: 8192. The arena is
// 12288 bytes for 16384 bytes of activations; the reshape is a view (no
// buffer of its own); the cache is 2 x 1 x 16 x 4 f32 = 512 bytes and the
// weights every constant: 64 f32 and the reshape target's 2 i64 (272 bytes).
// CHECK-LABEL: func.func @plan
// CHECK-SAME: llm.memory_plan = {activations = 16384 : i64, arena = 12288 : i64, bounded = false, kv_cache = 512 : i64, weights = 272 : i64}
// CHECK: llm.onnx.neg %arg0 {llm.arena_offsets = array<i64: 0>}
// CHECK: llm.onnx.neg %{{.+}} {llm.arena_offsets = array<i64: 8192>}
// CHECK: llm.onnx.concat %{{.+}}, %{{.+}} {axis = 1 : i64, llm.arena_offsets = array<i64: 0>}
// CHECK: llm.onnx.reshape
// CHECK-NOT: arena_offsets
// CHECK: return
func.func @plan(%x: tensor<1x1024xf32> {llm.name = "tokens"}, %k: tensor<2x1x16x4xf32> {llm.name = "cache.k.0"}) -> (tensor<2x1024xf32>, tensor<2x1x16x4xf32>) {
  %w = llm.constant dense<1.0> : tensor<64xf32>
  %a = llm.onnx.neg %x : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %b = llm.onnx.neg %a : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %c = llm.onnx.concat %b, %b {axis = 1 : i64} : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x2048xf32>
  %shape = llm.constant dense<[2, 1024]> : tensor<2xi64>
  %d = llm.onnx.reshape %c, %shape : (tensor<1x2048xf32>, tensor<2xi64>) -> tensor<2x1024xf32>
  return %d, %k : tensor<2x1024xf32>, tensor<2x1x16x4xf32>
}

// -----

// Negative: a softmax over an [8, 8] score matrix in a prefill bucket of 8
// tokens: the plan refuses it.
func.func @scores(%t: tensor<1x8xi64> {llm.name = "tokens"}, %q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32> {
  %s = llm.onnx.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error @+1 {{llmc-plan-memory: a 'tensor<1x2x8x8xf32>' buffer (prompt length 8 by keys) remains: an attention score matrix must not be materialised}}
  %p = llm.onnx.softmax %s : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %p : tensor<1x2x8x8xf32>
}

// -----

// Values inside fused regions are planned where the region runs, and a
// region's results are the values it yields. The slice of one contiguous
// range is a view of the first linear's result (no buffer of its own),
// which so lives until the second linear reads it; the residual add that
// the code folds into the second linear is that linear's buffer (no offset
// of its own), returned. Largest first: the [1, 4, 4] result at 0, the
// [1, 2, 2] one at 64.
// CHECK-LABEL: func.func @fused
// CHECK-SAME: llm.memory_plan = {activations = 80 : i64, arena = 128 : i64,
// CHECK: llm.linear %{{.+}} {llm.arena_offsets = array<i64: 0>}
// CHECK-NEXT: llm.onnx.slice
// CHECK-NOT: arena_offsets
// CHECK-SAME: -> tensor<1x2x4xf32>
// CHECK: llm.linear %{{.+}} {llm.arena_offsets = array<i64: 64>}
// CHECK-NEXT: llm.onnx.add
// CHECK-NOT: arena_offsets
// CHECK-SAME: -> tensor<1x2x2xf32>
func.func @fused(%x: tensor<1x4x2xf32> {llm.name = "tokens"}, %y: tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
  %w = llm.constant dense<1.0> : tensor<4x2xf32>
  %wo = llm.constant dense<1.0> : tensor<2x4xf32>
  %none = llm.none
  %s0 = llm.constant dense<0> : tensor<1xi64>
  %s1 = llm.constant dense<2> : tensor<1xi64>
  %ax = llm.constant dense<1> : tensor<1xi64>
  %a = llm.fused "linear_slice"(%x, %w, %none, %s0, %s1, %ax) : (tensor<1x4x2xf32>, tensor<4x2xf32>, none, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4xf32> {
  ^bb0(%i: tensor<1x4x2xf32>, %iw: tensor<4x2xf32>, %in: none, %b: tensor<1xi64>, %e: tensor<1xi64>, %axis: tensor<1xi64>):
    %l = llm.linear %i, %iw, %in : (tensor<1x4x2xf32>, tensor<4x2xf32>, none) -> tensor<1x4x4xf32>
    %s = llm.onnx.slice %l, %b, %e, %axis, %in : (tensor<1x4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x4xf32>
    llm.yield %s : tensor<1x2x4xf32>
  }
  %r = llm.fused "linear_residual"(%a, %wo, %none, %y) : (tensor<1x2x4xf32>, tensor<2x4xf32>, none, tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
  ^bb0(%i: tensor<1x2x4xf32>, %iw: tensor<2x4xf32>, %in: none, %res: tensor<1x2x2xf32>):
    %l = llm.linear %i, %iw, %in : (tensor<1x2x4xf32>, tensor<2x4xf32>, none) -> tensor<1x2x2xf32>
    %sum = llm.onnx.add %l, %res : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    llm.yield %sum : tensor<1x2x2xf32>
  }
  return %r : tensor<1x2x2xf32>
}

// -----

// A transpose that only a strided product reads (isTransposeReadInPlace) is
// read in place: it has no buffer, and its input lives until the product
// reads it, so the queries' negation (computed in between) does not take
// the keys' place. Largest first: %kn (256 bytes) at 0, %s (64, returned)
// and %qn (32) after it. A transpose with a second reader is copied into a
// buffer of its own.
// CHECK-LABEL: func.func @transposed
// CHECK-SAME: llm.memory_plan = {activations = 352 : i64, arena = 384 : i64,
// CHECK: llm.onnx.neg %arg2 {llm.arena_offsets = array<i64: 0>}
// CHECK-NEXT: llm.onnx.transpose
// CHECK-NOT: arena_offsets
// CHECK-SAME: -> tensor<1x2x4x8xf32>
// CHECK-NEXT: llm.onnx.neg %arg1 {llm.arena_offsets = array<i64: 320>}
// CHECK-NEXT: llm.onnx.matmul %{{.+}} {llm.arena_offsets = array<i64: 256>}
// CHECK-LABEL: func.func @transposedTwice
// CHECK: llm.onnx.transpose %{{.+}} {llm.arena_offsets = array<i64:
func.func @transposed(%t: tensor<1x8xi64> {llm.name = "tokens"}, %q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>) -> tensor<1x2x1x8xf32> {
  %kn = llm.onnx.neg %k : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %kt = llm.onnx.transpose %kn {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %qn = llm.onnx.neg %q : (tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %s = llm.onnx.matmul %qn, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  return %s : tensor<1x2x1x8xf32>
}
func.func @transposedTwice(%t: tensor<1x8xi64> {llm.name = "tokens"}, %q: tensor<1x2x1x4xf32>, %k: tensor<1x2x8x4xf32>) -> (tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>) {
  %kn = llm.onnx.neg %k : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %kt = llm.onnx.transpose %kn {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x4xf32>) -> tensor<1x2x4x8xf32>
  %s = llm.onnx.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x1x8xf32>
  return %s, %kt : tensor<1x2x1x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// An element-wise run (ElementwiseRuns.h: %m's only reader is %d, both
// element-wise over floats of one shape) is computed in its last
// operation, which reads the run's operands: %a lives until %d, so %e
// (computed in between, by an operation outside the run) does not take its
// place (0) but one of its own. All 64 bytes: %a at 0, %b 64, %m 128, %e
// 192, and %d in %b's place (free after %e).
// CHECK-LABEL: func.func @elementwiseRun
// CHECK: llm.onnx.neg %arg1 {llm.arena_offsets = array<i64: 0>}
// CHECK-NEXT: llm.onnx.neg %arg2 {llm.arena_offsets = array<i64: 64>}
// CHECK-NEXT: llm.onnx.mul %{{.+}} {llm.arena_offsets = array<i64: 128>}
// CHECK-NEXT: llm.onnx.exp %{{.+}} {llm.arena_offsets = array<i64: 192>}
// CHECK-NEXT: llm.onnx.add %{{.+}} {llm.arena_offsets = array<i64: 64>}
func.func @elementwiseRun(%t: tensor<1x8xi64> {llm.name = "tokens"}, %x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %a = llm.onnx.neg %x : (tensor<16xf32>) -> tensor<16xf32>
  %b = llm.onnx.neg %y : (tensor<16xf32>) -> tensor<16xf32>
  %m = llm.onnx.mul %a, %a : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %e = llm.onnx.exp %b : (tensor<16xf32>) -> tensor<16xf32>
  %d = llm.onnx.add %m, %e : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %d : tensor<16xf32>
}
