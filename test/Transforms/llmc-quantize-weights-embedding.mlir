// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4 embeddings=1' %s | FileCheck %s
// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4' %s | FileCheck %s --check-prefix=OFF
// RUN: llmc-opt --split-input-file --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4 embeddings=1 skip=embedding' %s | FileCheck %s --check-prefix=OFF

// With `embeddings`, a constant table [vocab, hidden] becomes
// llm.quantized_embedding by the linear layers' rule, rows as output
// channels: row 0 [1, -2, 0.5, 4] -> scale -0.5, values 0xC6 0x07; row 1
// [-8, 2, 1, 0] -> scale 1, 0xA0 0x89. Without it (or skipped) the table
// stays float.
// CHECK-LABEL: func.func @table
// CHECK-NOT: llm.embedding
// CHECK: %[[Q:.+]] = llm.constant dense_resource<quantized_table> : tensor<2x1x2xui8>
// CHECK: %[[S:.+]] = llm.constant dense_resource<quantized_scales> : tensor<2x1xf32>
// CHECK: llm.quantized_embedding %[[Q]], %[[S]], %{{.+}}, %arg0 {bits = 4 : i64, group_size = 4 : i64} : (tensor<2x1x2xui8>, tensor<2x1xf32>, none, tensor<1x3xi64>) -> tensor<1x3x4xf32>
// OFF-LABEL: func.func @table
// OFF: llm.embedding
// OFF-NOT: llm.quantized_embedding
func.func @table(%ids: tensor<1x3xi64>) -> tensor<1x3x4xf32> {
  %t = llm.constant dense<[[1.0, -2.0, 0.5, 4.0], [-8.0, 2.0, 1.0, 0.0]]> : tensor<2x4xf32>
  %h = llm.embedding %t, %ids : (tensor<2x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>
  return %h : tensor<1x3x4xf32>
}

// -----

// An f16 table keeps an f16 result: its scales are f16 (-0.5 = 0xB800,
// 1.0 = 0x3C00).
// CHECK-LABEL: func.func @half
// CHECK: llm.quantized_embedding {{.*}} : (tensor<2x1x2xui8>, tensor<2x1xf16>, none, tensor<1x3xi64>) -> tensor<1x3x4xf16>
// CHECK: quantized_table: "0x40000000C607A089"
// CHECK: quantized_scales: "0x4000000000B8003C"
func.func @half(%ids: tensor<1x3xi64>) -> tensor<1x3x4xf16> {
  %t = llm.constant dense<[[1.0, -2.0, 0.5, 4.0], [-8.0, 2.0, 1.0, 0.0]]> : tensor<2x4xf16>
  %h = llm.embedding %t, %ids : (tensor<2x4xf16>, tensor<1x3xi64>) -> tensor<1x3x4xf16>
  return %h : tensor<1x3x4xf16>
}

