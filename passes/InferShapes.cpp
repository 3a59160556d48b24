//===- InferShapes.cpp - refine result types by re-running inference -----===//
#include "passes/Passes.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"

#define DEBUG_TYPE "llmc-infer-shapes"

namespace mlir::llmc {
#define GEN_PASS_DEF_INFERSHAPESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// The more refined of two compatible types: static sizes win, a dynamic
/// dimension keeps a name from either side (the inferred one first).
Type refineType(Type current, Type inferred) {
  MaybeShape cur = getShape(current), inf = getShape(inferred);
  if (!cur)
    return inferred;
  if (!inf)
    return current;
  Shape out;
  for (auto [c, i] : llvm::zip(*cur, *inf)) {
    if (c.isStatic())
      out.push_back(c);
    else if (i.isStatic())
      out.push_back(i);
    else
      out.push_back(i.name ? i : c);
  }
  return makeTensorType(out, getElementTypeOrSelf(current));
}

} // namespace

LogicalResult mlir::llmc::refineResultTypes(func::FuncOp func) {
  {
    WalkResult result = func.walk([&](Operation *op) -> WalkResult {
      auto iface = dyn_cast<InferTypeOpInterface>(op);
      if (!iface)
        return WalkResult::advance();
      SmallVector<Type> inferred;
      if (failed(iface.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                        op->getAttrDictionary(), op->getPropertiesStorage(),
                                        op->getRegions(), inferred)))
        return WalkResult::interrupt();
      if (inferred.size() != op->getNumResults() ||
          !areCompatibleReturnTypes(inferred, op->getResultTypes())) {
        op->emitOpError("result types conflict with the inferred ones");
        return WalkResult::interrupt();
      }
      for (auto [result, type] : llvm::zip(op->getResults(), inferred))
        result.setType(refineType(result.getType(), type));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  // The signature follows the (single) return.
  func::ReturnOp ret;
  func.walk([&](func::ReturnOp r) { ret = r; });
  if (ret && !func.isExternal())
    func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  return success();
}

namespace {

struct InferShapesPass : llmc::impl::InferShapesPassBase<InferShapesPass> {
  void runOnOperation() override {
    if (failed(refineResultTypes(getOperation())))
      signalPassFailure();
  }
};

} // namespace
