// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-insert-kv-cache=max-seq=32' %s | FileCheck %s

// A past/present export after the raise: keys and values are the past input
// concatenated with the new ones. Both entry points take the tokens,
// start_pos and one [B, kv_heads, 32, D] cache per layer for keys and for
// values; the concat and the present outputs are gone; positions are
// start_pos + i and the attention mask ones over start_pos + S keys.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %[[T:.+]]: tensor<?x?xi64, #llm.dims<"b", "s">> {llm.name = "tokens"}, %[[P:.+]]: tensor<i64> {llm.name = "start_pos"}, %[[KC:.+]]: tensor<?x2x32x4xf32, #llm.dims<"b", ?, ?, ?>> {llm.name = "cache.k.0"}, %[[VC:.+]]: tensor<?x2x32x4xf32, #llm.dims<"b", ?, ?, ?>> {llm.name = "cache.v.0"})
// CHECK-NOT: llm.onnx.concat %arg
// CHECK: %[[K1:.+]] = llm.cache_update %[[KC]], %{{.+}}, %[[P]]
// CHECK: %[[V1:.+]] = llm.cache_update %[[VC]], %{{.+}}, %[[P]]
// CHECK: %[[O:.+]] = llm.cached_attention %{{.+}}, %[[K1]], %[[V1]], %[[P]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32, window = 3 : i64}
// CHECK: return %{{.+}}, %[[K1]], %[[V1]] : tensor<?x?x16xf32{{.*}}>, tensor<?x2x32x4xf32{{.*}}>, tensor<?x2x32x4xf32{{.*}}>
// CHECK-LABEL: func.func @decode
// CHECK-SAME: tensor<?x1xi64, #llm.dims<"b", ?>> {llm.name = "tokens"}
// CHECK: llm.cached_attention
// CHECK-NOT: func.func @main
// (causal = true is the default of llm.cached_attention, so not printed)
func.func @main(%ids: tensor<?x?xi64, #llm.dims<"b", "s">> {llm.name = "input_ids"},
                %mask: tensor<?x?xi64, #llm.dims<"b", "p + s">> {llm.name = "attention_mask"},
                %pos: tensor<?x?xi64, #llm.dims<"b", "s">> {llm.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32, #llm.dims<"b", ?, "p", ?>> {llm.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x4xf32, #llm.dims<"b", ?, "p", ?>> {llm.name = "past_key_values.0.value"})
    -> (tensor<?x?x16xf32> {llm.name = "logits"}, tensor<?x2x?x4xf32> {llm.name = "present.0.key"}, tensor<?x2x?x4xf32> {llm.name = "present.0.value"}) {
  %table = llm.constant dense<0.5> : tensor<10x16xf32>
  %cos = llm.constant dense<1.0> : tensor<32x2xf32>
  %sin = llm.constant dense<0.0> : tensor<32x2xf32>
  %x = llm.embedding %table, %ids : (tensor<10x16xf32>, tensor<?x?xi64, #llm.dims<"b", "s">>) -> tensor<?x?x16xf32>
  %shape = llm.constant dense<[0, 0, 4, 4]> : tensor<4xi64>
  %kvshape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %kvpart = llm.constant dense<0> : tensor<1xi64>
  %kvend = llm.constant dense<8> : tensor<1xi64>
  %axis = llm.constant dense<-1> : tensor<1xi64>
  %none = llm.none
  %q0 = llm.onnx.reshape %x, %shape : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x4x4xf32>
  %q = llm.rope %q0, %cos, %sin, %pos : (tensor<?x?x4x4xf32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<?x?xi64, #llm.dims<"b", "s">>) -> tensor<?x?x4x4xf32>
  %kv = llm.onnx.slice %x, %kvpart, %kvend, %axis, %none : (tensor<?x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x?x8xf32>
  %k0 = llm.onnx.reshape %kv, %kvshape : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x2x4xf32>
  %kt = llm.onnx.transpose %k0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x2x4xf32>) -> tensor<?x2x?x4xf32>
  %pk2 = llm.onnx.concat %pk, %kt {axis = -2 : i64} : (tensor<?x2x?x4xf32, #llm.dims<"b", ?, "p", ?>>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %pv2 = llm.onnx.concat %pv, %kt {axis = -2 : i64} : (tensor<?x2x?x4xf32, #llm.dims<"b", ?, "p", ?>>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kb = llm.onnx.transpose %pk2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x2x?x4xf32>) -> tensor<?x?x2x4xf32>
  %vb = llm.onnx.transpose %pv2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x2x?x4xf32>) -> tensor<?x?x2x4xf32>
  %flags = llm.onnx.cast %mask {to = 9 : i64} : (tensor<?x?xi64, #llm.dims<"b", "p + s">>) -> tensor<?x?xi1>
  %ax12 = llm.constant dense<[1, 2]> : tensor<2xi64>
  %pad = llm.onnx.unsqueeze %flags, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %o = llm.attention %q, %kb, %vb, %pad {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal = true, window = 3 : i64, scale = 0.5 : f32} : (tensor<?x?x4x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x1x1x?xi1>) -> tensor<?x?x4x4xf32>
  %flat = llm.constant dense<[0, 0, 16]> : tensor<3xi64>
  %y = llm.onnx.reshape %o, %flat : (tensor<?x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  return %y, %pk2, %pv2 : tensor<?x?x16xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// The stateless fallback: an attention that cannot run over llmc's cache
// (not causal) in a model with no cache IO of its own: the entry points keep
// the token ids ([B, 1, max-seq, 1], f32, llm.keep_f32 so no dtype
// conversion touches them), run the model over all of them (positions from
// 0) and return the new tokens' rows.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %arg2: tensor<1x1x32x1xf32> {llm.keep_f32, llm.name = "cache.tokens"}
// CHECK: %[[ROWS:.+]] = llm.onnx.cast %{{.+}} {llm.keep_f32, to = 1 : i64}
// CHECK: %[[HIST:.+]] = llm.cache_update %arg2, %[[ROWS]], %arg1 {llm.keep_f32}
// CHECK: %[[ALL:.+]] = llm.cache_read %[[HIST]], %{{.+}} {llm.keep_f32}
// CHECK: llm.attention
// CHECK-SAME: -> tensor<1x?x2x4xf32>
// CHECK: %[[NEW:.+]] = llm.onnx.slice
// CHECK: return %[[NEW]], %[[HIST]]
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}) -> tensor<1x?x2x4xf32> {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %q = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %none = llm.none
  %o = llm.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

// Negative: beside an attention llmc's cache serves, a non-causal one with
// no past input of its own has nothing to keep between steps.
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}) -> tensor<1x?x2x4xf32> {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %q = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %none = llm.none
  %c = llm.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32, causal = true} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  // expected-error @+1 {{llmc-insert-kv-cache: this attention cannot use llmc's cache (not causal) and reads no past input of the model's own cache IO}}
  %o = llm.attention %c, %c, %c, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

// Negative: an input no rule binds is named.
// expected-error @+1 {{llmc-insert-kv-cache: cannot bind input 'inputs_embeds'}}
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}, %extra: tensor<1x?x8xf32> {llm.name = "inputs_embeds"}) -> tensor<1x?x2x4xf32> {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x0 = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %x = llm.onnx.add %x0, %extra : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %q = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %none = llm.none
  %o = llm.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, causal = true, scale = 0.5 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

// Inputs with a role from llmc-raise-transformer (an opset-24 static-cache
// export): write indices become start_pos and valid key lengths
// start_pos + S, one per sequence, in the input's element type.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %[[T:.+]]: tensor<1x?xi64> {llm.name = "tokens"}, %[[P:.+]]: tensor<i64> {llm.name = "start_pos"}
// CHECK: %[[TOTAL:.+]] = llm.onnx.add %[[P]], %{{.+}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: %[[W:.+]] = llm.onnx.expand %[[P]], %{{.+}} : (tensor<i64>, tensor<1xi64>) -> tensor<?xi64>
// CHECK: %[[W32:.+]] = llm.onnx.cast %[[W]] {to = 6 : i64}
// CHECK: %[[N:.+]] = llm.onnx.expand %[[TOTAL]]
// CHECK: llm.assert_equal %{{.+}}, %[[W32]], %[[N]]
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}, %wi: tensor<1xi32> {llm.name = "write_indices", llm.role = "write_indices"}, %n: tensor<1xi64> {llm.name = "nonpad_kv_seqlen", llm.role = "kv_valid_length"}) -> tensor<1x?x2x4xf32> {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %q = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %none = llm.none
  %o = llm.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, causal = true, scale = 0.5 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  %checked = llm.assert_equal %o, %wi, %n {message = "protocol"} : (tensor<1x?x2x4xf32>, tensor<1xi32>, tensor<1xi64>) -> tensor<1x?x2x4xf32>
  return %checked : tensor<1x?x2x4xf32>
}

// -----

// Negative: a role the pass does not know is an error naming the input.
// expected-error @+1 {{llmc-insert-kv-cache: input 'slot' has the unknown role 'ring_index'}}
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}, %slot: tensor<1xi64> {llm.name = "slot", llm.role = "ring_index"}) -> tensor<1x?x2x4xf32> {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %q = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %none = llm.none
  %o = llm.attention %q, %q, %q, %none {num_heads = 2 : i64, num_kv_heads = 2 : i64, causal = true, scale = 0.5 : f32} : (tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, tensor<1x?x2x4xf32>, none) -> tensor<1x?x2x4xf32>
  return %o : tensor<1x?x2x4xf32>
}

// -----

// The fallback: no recognised attention reads the past input (here the
// attention is plain MatMuls over past ++ new), so the model keeps its own
// past/present IO on a cache buffer like llmc's: the past is the cache rows
// before start_pos, and the present's new rows (checked to be start_pos + S
// long) are written back at start_pos.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %arg0: tensor<1x?xi64> {llm.name = "tokens"}, %arg1: tensor<i64> {llm.name = "start_pos"}, %arg2: tensor<1x2x32x4xf32> {llm.name = "cache.io.past.0"}
// CHECK: %[[PAST:.+]] = llm.cache_read %arg2, %arg1
// CHECK: %[[PRESENT:.+]] = llm.onnx.concat %[[PAST]], %{{.+}} {axis = 2 : i64}
// CHECK: %[[ROWS:.+]] = llm.onnx.slice %[[PRESENT]]
// CHECK: %[[NEW:.+]] = llm.assert_equal %[[ROWS]], %{{.+}}, %{{.+}} {message = "the model's present output 'present.0' must hold the past and the new rows (start_pos + S)"}
// CHECK: %[[C:.+]] = llm.cache_update %arg2, %[[NEW]], %arg1
// CHECK: return %{{.+}}, %[[C]]
// CHECK-LABEL: func.func @decode
// CHECK-SAME: -> (tensor<1x1x10xf32> {llm.name = "logits"}, tensor<1x2x32x4xf32> {llm.name = "cache.io.past.0"})
func.func @main(%ids: tensor<1x?xi64> {llm.name = "input_ids"}, %past: tensor<1x2x?x4xf32> {llm.name = "past.0"}) -> (tensor<1x?x10xf32> {llm.name = "logits"}, tensor<1x2x?x4xf32> {llm.name = "present.0"}) {
  %table = llm.constant dense<0.5> : tensor<10x8xf32>
  %x = llm.embedding %table, %ids : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %shape = llm.constant dense<[0, 0, 2, 4]> : tensor<4xi64>
  %k0 = llm.onnx.reshape %x, %shape : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %k = llm.onnx.transpose %k0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %present = llm.onnx.concat %past, %k {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %pt = llm.onnx.transpose %present {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x?x4xf32>) -> tensor<1x2x4x?xf32>
  %s = llm.onnx.matmul %k, %pt : (tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>) -> tensor<1x2x?x?xf32>
  %o = llm.onnx.matmul %s, %present : (tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %ot = llm.onnx.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  %flat = llm.constant dense<[0, 0, 8]> : tensor<3xi64>
  %h = llm.onnx.reshape %ot, %flat : (tensor<1x?x2x4xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %w = llm.constant dense<0.25> : tensor<8x10xf32>
  %logits = llm.onnx.matmul %h, %w : (tensor<1x?x8xf32>, tensor<8x10xf32>) -> tensor<1x?x10xf32>
  return %logits, %present : tensor<1x?x10xf32>, tensor<1x2x?x4xf32>
}
