//===- LLMOps.cpp - the llm dialect's common operations ------------------===//
//
// The operations' inference and verification live in one file per family,
// as the .td files split them: OnnxOps.cpp and OnnxShapeOps.cpp (ai.onnx),
// MsOps.cpp (com.microsoft), TransformerOps.cpp (transformer level, KV
// cache, flash forms). Shape rules that only one operation uses live next to
// it; rules that several share are in ShapeInference.cpp, and small helpers
// in OpHelpers.h. Inference doubles as the shape verifier:
// InferTypeOpInterface re-runs it when an operation is verified.
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OpHelpers.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::llmc;
using namespace mlir::llmc::ophelpers;

//===----------------------------------------------------------------------===//
// Common operations
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult ConstantOp::verify() {
  Type elementType = getValue().getShapedType().getElementType();
  if (isa<Float4E2M1Type, Float8E8M0Type>(elementType)) {
    if (!isa<DenseResourceElementsAttr>(getValue()))
      return emitOpError("a constant of ") << elementType << " must be a dense_resource blob";
    return success();
  }
  if (!elementType.isIntOrFloat())
    return emitOpError("element type must be an integer or floating-point type, got ")
           << elementType;
  return success();
}

OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }

#define GET_OP_CLASSES
#include "dialects/LLM/IR/LLMOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region takes ") << body.getNumArguments() << " arguments for "
                                        << getInputs().size() << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("region argument types differ from the inputs");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getOutputs().getTypes())
    return emitOpError("yield types differ from the results");
  return success();
}
