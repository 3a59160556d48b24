//===- LLMDialect.h - the llm dialect and its attributes -----------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMDIALECT_H
#define LLMC_DIALECTS_LLM_IR_LLMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TensorEncoding.h"

#include "dialects/LLM/IR/LLMDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/LLM/IR/LLMAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/LLM/IR/LLMTypes.h.inc"

namespace mlir::llmc {

/// The MLIR element type of ONNX data type `code` (OnnxDataType), or a null
/// type when llmc does not support it.
Type getElementTypeForOnnx(MLIRContext *ctx, int32_t code);

/// The ONNX data type code of an MLIR element type, or 0 (UNDEFINED).
int32_t getOnnxCodeForElementType(Type type);

} // namespace mlir::llmc

#endif // LLMC_DIALECTS_LLM_IR_LLMDIALECT_H
