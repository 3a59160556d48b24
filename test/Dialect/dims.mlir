// RUN: llmc-opt %s | FileCheck %s
// #llm.dims names dynamic dimensions; `?` marks a dimension without a name.

// CHECK-LABEL: func.func @names
// CHECK-SAME: tensor<?x?x64xf32, #llm.dims<"batch", "seq", ?>>
// CHECK-SAME: tensor<?xi64, #llm.dims<"total sequence length">>
func.func @names(%a: tensor<?x?x64xf32, #llm.dims<"batch", "seq", ?>>,
                 %b: tensor<?xi64, #llm.dims<"total sequence length">>) {
  return
}

// Inference carries names through broadcasting, and drops a name where two
// different names meet.
// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%a: tensor<?x1xf32, #llm.dims<"b", ?>>, %b: tensor<1x?xf32, #llm.dims<?, "s">>,
                     %c: tensor<?xf32, #llm.dims<"t">>) {
  // CHECK: -> tensor<?x?xf32, #llm.dims<"b", "s">>
  %0 = llm.onnx.add %a, %b : (tensor<?x1xf32, #llm.dims<"b", ?>>, tensor<1x?xf32, #llm.dims<?, "s">>) -> tensor<?x?xf32, #llm.dims<"b", "s">>
  // CHECK: -> tensor<?x?xf32, #llm.dims<"b", ?>>
  %1 = llm.onnx.add %0, %c : (tensor<?x?xf32, #llm.dims<"b", "s">>, tensor<?xf32, #llm.dims<"t">>) -> tensor<?x?xf32, #llm.dims<"b", ?>>
  return
}
