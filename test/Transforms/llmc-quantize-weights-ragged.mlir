// RUN: llmc-opt --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4' %s
// RUN: llmc-opt '--llmc-quantize-weights=bits=8 group-size=0' %s | FileCheck %s --check-prefix=INT8

// Negative: a group size that does not divide K is an error (K = 6, groups
// of 4); per channel int8 (one group of K) takes the same layer.
// INT8-LABEL: func.func @ragged
// INT8: llm.quantized_linear {{.*}} {bits = 8 : i64, group_size = 6 : i64
func.func @ragged(%x: tensor<1x6xf32>) -> (tensor<1x2xf32> {llm.name = "cache.k.0"}) {
  %none = llm.none
  %w = llm.constant dense<1.0> : tensor<2x6xf32>
  // expected-error-re @+1 {{llmc-quantize-weights: group size 4 does not divide K = 6 of the weight 'tensor<2x6xf32>'{{.*}}}}
  %y = llm.linear %x, %w, %none : (tensor<1x6xf32>, tensor<2x6xf32>, none) -> tensor<1x2xf32>
  return %y : tensor<1x2xf32>
}

