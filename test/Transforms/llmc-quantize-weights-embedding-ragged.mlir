// RUN: llmc-opt --verify-diagnostics '--llmc-quantize-weights=bits=4 group-size=4 embeddings=1' %s

// A group size that does not divide the hidden size is an error naming the
// table.
func.func @ragged(%ids: tensor<1x3xi64>) -> tensor<1x3x6xf32> {
  %t = llm.constant dense<1.0> : tensor<2x6xf32>
  // expected-error-re @+1 {{llmc-quantize-weights: group size 4 does not divide the hidden size 6 of the embedding table 'tensor<2x6xf32>'{{.*}}}}
  %h = llm.embedding %t, %ids : (tensor<2x6xf32>, tensor<1x3xi64>) -> tensor<1x3x6xf32>
  return %h : tensor<1x3x6xf32>
}
