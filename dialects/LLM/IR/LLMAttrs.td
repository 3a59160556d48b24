//===- LLMAttrs.td - attributes of the llm dialect --------*- tablegen -*-===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMATTRS_TD
#define LLMC_DIALECTS_LLM_IR_LLMATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/TensorEncoding.td"
include "dialects/LLM/IR/LLMDialect.td"

def LLM_DimsAttr : AttrDef<LLM_Dialect, "Dims",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "dims";
  let summary = "symbolic names of the dimensions of a tensor";
  let description = [{
    A tensor encoding that names dynamic dimensions, one entry per dimension of
    the tensor: a string for a named dimension, `?` for one without a name.
    Two dynamic dimensions with the same name have the same size at run time.

    ```mlir
    tensor<?x?x64xf32, #llm.dims<"batch", "seq", ?>>
    ```

    Names come from the ONNX `dim_param` of graph inputs and outputs and are
    propagated by type inference. A static dimension never carries a name.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$names);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // LLMC_DIALECTS_LLM_IR_LLMATTRS_TD
