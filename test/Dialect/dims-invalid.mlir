// RUN: llmc-opt %s --split-input-file --verify-diagnostics
// Malformed #llm.dims encodings.

// expected-error @+1 {{a dimension name must not be empty; use ? for none}}
func.func @empty(%x: tensor<?xf32, #llm.dims<"">>) {
  return
}

// -----

// expected-error @+1 {{expected string}}
func.func @not_a_string(%x: tensor<?xf32, #llm.dims<batch>>) {
  return
}

// -----

// expected-error @+1 {{#llm.dims has 1 entries for a tensor of rank 2}}
func.func @wrong_rank(%x: tensor<?x?xf32, #llm.dims<"a">>) {
  return
}

// -----

// expected-error @+1 {{#llm.dims names static dimension of size 4 ('a'); only dynamic ones have names}}
func.func @static_named(%x: tensor<4xf32, #llm.dims<"a">>) {
  return
}
