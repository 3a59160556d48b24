//===- ElementwiseRuns.cpp - element-wise operations and runs of them -----===//
#include "passes/ElementwiseRuns.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "passes/BuildHelpers.h"
#include "passes/StorageFacts.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::llmc;

namespace mlir::llmc {

bool isFloatType(Type t) {
  t = getElementTypeOrSelf(t);
  return t.isF32() || t.isF16() || t.isBF16();
}

std::string pointwiseExpr(Operation *op) {
  StringRef n = shortName(op);
  if (n == "onnx.add")
    return "$0 + $1";
  if (n == "onnx.sub")
    return "$0 - $1";
  if (n == "onnx.mul")
    return "$0 * $1";
  if (n == "onnx.div")
    return "$0 / $1";
  if (n == "onnx.neg")
    return "-$0";
  if (n == "onnx.sqrt")
    return "sqrtf($0)";
  if (n == "onnx.tanh")
    return "tanhf($0)";
  if (n == "onnx.sigmoid")
    return "1.0f / (1.0f + expf(-$0))";
  if (n == "onnx.cast" || n == "onnx.expand" || n == "onnx.identity")
    return "$0";
  // Comparisons and boolean logic (bool results, one byte each) and Where:
  // what a mask the fallback's attention builds is made of. Integer operands
  // are compared as int64_t, float ones in f32 (exact for f16 and bf16).
  if (n == "onnx.equal")
    return "$0 == $1";
  if (n == "onnx.less")
    return "$0 < $1";
  if (n == "onnx.less_or_equal")
    return "$0 <= $1";
  if (n == "onnx.greater")
    return "$0 > $1";
  if (n == "onnx.greater_or_equal")
    return "$0 >= $1";
  if (n == "onnx.and")
    return "($0 != 0) && ($1 != 0)";
  if (n == "onnx.or")
    return "($0 != 0) || ($1 != 0)";
  if (n == "onnx.xor")
    return "($0 != 0) != ($1 != 0)";
  if (n == "onnx.not")
    return "$0 == 0";
  if (n == "onnx.where")
    return "($0 != 0 ? $1 : $2)";
  if (auto g = dyn_cast<GeluOp>(op))
    return g.getApproximateTanh()
               ? "0.5f * $0 * (1.0f + tanhf(0.7978845608028654f * ($0 + 0.044715f * $0 * $0 * $0)))"
               : "0.5f * $0 * (1.0f + erff($0 * 0.7071067811865476f))";
  if (isa<SiluOp>(op))
    return "$0 / (1.0f + expf(-$0))";
  if (auto r = dyn_cast<ReluOp>(op))
    return r.getSquared() ? "($0 > 0.0f ? $0 * $0 : 0.0f)" : "($0 > 0.0f ? $0 : 0.0f)";
  if (isa<SwigluOp>(op))
    return "$0 / (1.0f + expf(-$0)) * $1";
  return "";
}

unsigned pointwiseArity(Operation *op) {
  return shortName(op) == "onnx.expand" ? 1 : op->getNumOperands();
}

bool runsInFloat(Operation *op) {
  if (pointwiseExpr(op).empty() || op->getNumResults() != 1 ||
      !isFloatType(op->getResult(0).getType()))
    return false;
  bool where = shortName(op) == "onnx.where";
  for (unsigned i = 0; i < pointwiseArity(op); ++i) {
    Type t = op->getOperand(i).getType();
    if (!isFloatType(t) && !(where && i == 0 && getElementTypeOrSelf(t).isInteger(1)))
      return false;
  }
  return true;
}

Operation *runsInto(Operation *op) {
  if (!runsInFloat(op) || !op->getResult(0).hasOneUse() ||
      llvm::any_of(op->getOperands(), [](Value v) { return mayChange(v); }))
    return nullptr;
  Operation *user = *op->getResult(0).getUsers().begin();
  auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  if (user->getBlock() != op->getBlock() || !runsInFloat(user) ||
      shape(user->getResult(0)) != shape(op->getResult(0)) ||
      (shortName(user) == "onnx.expand" && user->getOperand(0) != op->getResult(0)))
    return nullptr;
  return user;
}

Operation *runEnd(Operation *op) {
  while (Operation *next = runsInto(op))
    op = next;
  return op;
}

} // namespace mlir::llmc
