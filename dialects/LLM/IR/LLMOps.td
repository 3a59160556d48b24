//===- LLMOps.td - operations of the llm dialect ----------*- tablegen -*-===//
//
// Base classes and common operations; the graph-level ONNX operations are in
// LLMOnnxOps.td, the com.microsoft ones in LLMMsOps.td and the transformer-level
// ones in LLMTransformerOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMOPS_TD
#define LLMC_DIALECTS_LLM_IR_LLMOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/LLM/IR/LLMDialect.td"
include "dialects/LLM/IR/LLMAttrs.td"
include "dialects/LLM/IR/LLMTypes.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def LLM_Tensor : AnyTypeOf<[AnyTensor]>;
def LLM_FloatTensor : TensorOf<[AnyFloat]>;
def LLM_NumericTensor : TensorOf<[AnyFloat, AnyInteger]>;
def LLM_BoolTensor : TensorOf<[I1]>;
def LLM_IndexTensor : TensorOf<[I32, I64]>;
def LLM_I64Tensor : TensorOf<[I64]>;
// A static KV cache: float, or int8 with per-row scales beside it.
def LLM_CacheTensor : TensorOf<[AnyFloat, I8]>;

// A missing optional ONNX input is the value of `llm.none`.
def LLM_OptTensor : AnyTypeOf<[AnyTensor, NoneType], "tensor or none">;
def LLM_OptFloatTensor : AnyTypeOf<[LLM_FloatTensor, NoneType],
                                   "floating-point tensor or none">;
def LLM_OptI64Tensor : AnyTypeOf<[LLM_I64Tensor, NoneType],
                                 "64-bit integer tensor or none">;
def LLM_OptIndexTensor : AnyTypeOf<[LLM_IndexTensor, NoneType],
                                   "32/64-bit integer tensor or none">;

// ONNX INT attributes: signless i64 read back as a signed value.
def LLM_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                               "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

// An operation whose result types are inferred from its operands and
// attributes. A result may be more refined than what inference gives (for
// instance from ONNX value_info), never in conflict with it.
class LLM_InferredOp<string mnemonic, list<Trait> traits = []>
    : LLM_Op<mnemonic, !listconcat([Pure, InferTypeOpAdaptorWithIsCompatible],
                                   traits)> {
  // C++ body of the shared inference, when the op uses one; ops that leave it
  // empty define `inferReturnTypes(ctx, loc, adaptor, types)` in their
  // family's file (OnnxOps.cpp, OnnxShapeOps.cpp, MsOps.cpp, TransformerOps.cpp).
  code inferImpl = "";
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return ::mlir::llmc::areCompatibleReturnTypes(l, r);
    }
  }] # !if(!empty(inferImpl), "", [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      (void)ctx;
  }] # inferImpl # [{
    }
  }]);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// One ONNX operator of the default domain, `llm.onnx.<snake_case name>`.
class LLM_OnnxOp<string mnemonic, list<Trait> traits = []>
    : LLM_InferredOp<"onnx." # mnemonic, traits>;

// One onnxruntime contrib operator of the com.microsoft domain.
class LLM_MsOp<string mnemonic, list<Trait> traits = []>
    : LLM_InferredOp<"ms." # mnemonic, traits>;

// Elementwise op whose single result has the type of operand 0.
class LLM_OnnxUnaryOp<string mnemonic, Type operandType = LLM_NumericTensor,
                      list<Trait> traits = []>
    : LLM_OnnxOp<mnemonic, traits> {
  let arguments = (ins operandType:$X);
  let results = (outs operandType:$Y);
  let inferImpl = [{
      return ::mlir::llmc::inferSameAsOperand(loc, adaptor.getOperands(), 0, types);
  }];
}

// Elementwise op with multidirectional (numpy) broadcasting; the result has
// the broadcast shape and the element type of operand 0, or i1 for
// comparisons.
class LLM_OnnxBinaryOp<string mnemonic, Type operandType = LLM_NumericTensor,
                       bit isComparison = 0, list<Trait> traits = []>
    : LLM_OnnxOp<mnemonic, traits> {
  let arguments = (ins operandType:$A, operandType:$B);
  let results = (outs !if(isComparison, LLM_BoolTensor, operandType):$C);
  let inferImpl = [{
      return ::mlir::llmc::inferBroadcast(loc, adaptor.getOperands(),
          }] # !if(isComparison, "/*resultBool=*/true", "/*resultBool=*/false") # [{,
          /*sameElementType=*/true, types);
  }];
}

// Elementwise op over any number of broadcast inputs (Min, Max, Sum, Mean).
class LLM_OnnxVariadicOp<string mnemonic> : LLM_OnnxOp<mnemonic> {
  let arguments = (ins Variadic<LLM_NumericTensor>:$data_0);
  let results = (outs LLM_NumericTensor:$result);
  let inferImpl = [{
      return ::mlir::llmc::inferBroadcast(loc, adaptor.getOperands(),
          /*resultBool=*/false, /*sameElementType=*/true, types);
  }];
}

//===----------------------------------------------------------------------===//
// Common operations
//===----------------------------------------------------------------------===//

def LLM_ConstantOp : LLM_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "output"]>]> {
  let summary = "a constant tensor (ONNX initializer or Constant node)";
  let description = [{
    Holds an ONNX initializer or the value of an ONNX `Constant` node. Small
    tensors are stored inline as `dense<...>`; weights are stored as
    `dense_resource<...>` blobs that reference the model's (memory-mapped)
    data without copying it. Sub-byte element types (i4, ui4) are stored one
    element per byte.

    ```mlir
    %w = llm.constant dense_resource<model.embed_tokens.weight> : tensor<32000x16xf16>
    %eps = llm.constant dense<1.0e-06> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def LLM_NoneOp : LLM_Op<"none", [ConstantLike, Pure]> {
  let summary = "the value of a missing optional input";
  let description = [{
    ONNX marks a missing optional input with an empty name. Graph-level
    operations take all of their inputs positionally; a missing one is the
    `none` value of this operation.

    ```mlir
    %none = llm.none
    %y = llm.onnx.clip %x, %none, %max : (tensor<4xf32>, none, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let results = (outs NoneType:$output);
  let assemblyFormat = "attr-dict";
  let hasFolder = 1;
}

include "dialects/LLM/IR/LLMOnnxOps.td"
include "dialects/LLM/IR/LLMMsOps.td"
include "dialects/LLM/IR/LLMTransformerOps.td"

#endif // LLMC_DIALECTS_LLM_IR_LLMOPS_TD
