//===- LLMTypes.td - element types of the llm dialect -----*- tablegen -*-===//
//
// ONNX element types that MLIR 19 has no builtin type for. Constants of these
// types are dense_resource blobs of one byte per element (the low bits hold
// the value).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMTYPES_TD
#define LLMC_DIALECTS_LLM_IR_LLMTYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "dialects/LLM/IR/LLMDialect.td"

def LLM_Float4E2M1Type : TypeDef<LLM_Dialect, "Float4E2M1"> {
  let mnemonic = "f4e2m1";
  let summary = "4-bit float E2M1 (ONNX FLOAT4E2M1; OCP MX FP4)";
  let description = [{
    Sign, 2 exponent bits (bias 1) and 1 mantissa bit: the values 0, 0.5, 1,
    1.5, 2, 3, 4, 6 and their negatives; no infinity or NaN. Conversion rounds
    to nearest even and saturates at 6.
  }];
}

def LLM_Float8E8M0Type : TypeDef<LLM_Dialect, "Float8E8M0"> {
  let mnemonic = "f8e8m0";
  let summary = "8-bit exponent-only float (ONNX FLOAT8E8M0; OCP MX scale)";
  let description = [{
    An unsigned power of two 2^(e - 127) for e in [0, 254]; e = 255 is NaN;
    no zero, no sign.
  }];
}

#endif // LLMC_DIALECTS_LLM_IR_LLMTYPES_TD
