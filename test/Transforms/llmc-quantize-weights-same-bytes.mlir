// RUN: llmc-opt '--llmc-quantize-weights=bits=8 group-size=0' %s | FileCheck %s

// Two weights with the same bytes (16 zeros) but different shapes are
// quantized each in its own shape: per output channel, [2, 8] has 2 scales
// and [4, 4] has 4 (a cache keyed by the bytes alone gave the second the
// first's 2; the scales are -0: 0 / -128).
// CHECK-LABEL: func.func @same_bytes
// CHECK: llm.quantized_linear {{.*}} : (tensor<1x8xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, none, none) -> tensor<1x2xf32>
// CHECK: llm.quantized_linear {{.*}} : (tensor<1x4xf32>, tensor<4x1x4xui8>, tensor<4x1xf32>, none, none) -> tensor<1x4xf32>
// CHECK-DAG: quantized_scales: "0x400000000000008000000080"
// CHECK-DAG: quantized_scales_1: "0x4000000000000080000000800000008000000080"
func.func @same_bytes(%x: tensor<1x8xf32>, %y: tensor<1x4xf32>) -> (tensor<1x2xf32> {llm.name = "cache.k.0"}, tensor<1x4xf32> {llm.name = "cache.v.0"}) {
  %none = llm.none
  %a = llm.constant dense<0.0> : tensor<2x8xf32>
  %b = llm.constant dense<0.0> : tensor<4x4xf32>
  %p = llm.linear %x, %a, %none : (tensor<1x8xf32>, tensor<2x8xf32>, none) -> tensor<1x2xf32>
  %q = llm.linear %y, %b, %none : (tensor<1x4xf32>, tensor<4x4xf32>, none) -> tensor<1x4xf32>
  return %p, %q : tensor<1x2xf32>, tensor<1x4xf32>
}
