//===- LLMOps.h - operations of the llm dialect --------------------------===//
#ifndef LLMC_DIALECTS_LLM_IR_LLMOPS_H
#define LLMC_DIALECTS_LLM_IR_LLMOPS_H

#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/LLM/IR/LLMDialect.h"
#include "dialects/LLM/IR/ShapeInference.h"

#define GET_OP_CLASSES
#include "dialects/LLM/IR/LLMOps.h.inc"

#endif // LLMC_DIALECTS_LLM_IR_LLMOPS_H
