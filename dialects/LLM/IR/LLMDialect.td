//===- LLMDialect.td - the llm dialect definition ---------*- tablegen -*-===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMDIALECT_TD
#define LLMC_DIALECTS_LLM_IR_LLMDIALECT_TD

include "mlir/IR/OpBase.td"

def LLM_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::mlir::llmc";
  let summary = "Graph-level and transformer-level operations of llmc";
  let description = [{
    The `llm` dialect holds a model between the ONNX importer and the exec level.

    It has two layers of operations:

    * **Graph level** (`llm.onnx.*`, `llm.ms.*`): one operation per ONNX operator of
      the default domain and of the `com.microsoft` domain. Operands are the ONNX
      inputs in ONNX order (a missing optional input is the `none` value produced by
      `llm.none`), attributes carry the ONNX attribute names and defaults, and
      results are the ONNX outputs in ONNX order. Older opsets are normalised by the
      importer to the newest form listed here, so each operation has exactly one
      meaning: the one of the ONNX (or onnxruntime contrib) specification cited in
      its description.
    * **Transformer level** (`llm.rms_norm`, `llm.attention`, ...): the operations
      that the transformer passes raise graph-level patterns to. Their semantics are
      defined here, with the tensor layouts written beside each operation.

    Tensors are ranked wherever the rank is derivable. Dimensions that are dynamic
    in the source model can carry a symbolic name through the tensor encoding
    `#llm.dims<...>`, e.g. `tensor<?x?x64xf32, #llm.dims<"batch", "seq", ?>>`.
    Every operation infers its result types; a result may carry a more refined
    (more static) type than the inferred one, never a conflicting one.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let usePropertiesForAttributes = 0;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

class LLM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LLM_Dialect, mnemonic, traits>;

#endif // LLMC_DIALECTS_LLM_IR_LLMDIALECT_TD
