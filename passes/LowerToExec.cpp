//===- LowerToExec.cpp - llm operations -> exec.kernel launches -----------===//
#include "passes/Passes.h"

#include "dialects/Exec/IR/ExecDialect.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "runtime/src/cpu/Kernel.h"

#include <map>

#define DEBUG_TYPE "llmc-lower-to-exec"

namespace mlir::llmc {
#define GEN_PASS_DEF_LOWERTOEXECPASS
#include "passes/Passes.h.inc"
} // namespace mlir::llmc

using namespace mlir;
using namespace mlir::llmc;

namespace {

struct LowerToExecPass : mlir::llmc::impl::LowerToExecPassBase<LowerToExecPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // A fused region means its operations: the reference runs them in
    // order (the fusion matters to generated code, not to the meaning).
    SmallVector<FusedOp> fused;
    func.walk([&](FusedOp f) { fused.push_back(f); });
    for (FusedOp f : fused) {
      Block &body = f.getBody().front();
      auto yield = cast<YieldOp>(body.getTerminator());
      for (auto [arg, in] : llvm::zip(body.getArguments(), f.getInputs()))
        arg.replaceAllUsesWith(in);
      f.replaceAllUsesWith(yield.getValues());
      yield.erase();
      f->getBlock()->getOperations().splice(Block::iterator(f), body.getOperations());
      f.erase();
    }
    std::map<std::string, int> missing;
    SmallVector<Operation *> toLower;
    func.walk([&](Operation *op) {
      if (!isa<LLMDialect>(op->getDialect()) || isa<ConstantOp, NoneOp>(op))
        return;
      StringRef kernel = op->getName().getStringRef();
      kernel.consume_front("llm.");
      if (::llmc::cpu::findKernel(kernel.str()))
        toLower.push_back(op);
      else
        ++missing[op->getName().getStringRef().str()];
    });
    if (!missing.empty()) {
      InFlightDiagnostic diag = func.emitError("no CPU kernel for ");
      bool first = true;
      for (auto &[name, count] : missing) {
        diag << (first ? "" : ", ") << name << " (" << count << " op" << (count > 1 ? "s" : "")
             << ")";
        first = false;
      }
      return signalPassFailure();
    }
    for (Operation *op : toLower) {
      OpBuilder b(op);
      StringRef kernel = op->getName().getStringRef();
      kernel.consume_front("llm.");
      auto launch = b.create<exec::KernelOp>(op->getLoc(), op->getResultTypes(),
                                             b.getStringAttr(kernel), op->getAttrDictionary(),
                                             op->getOperands());
      op->replaceAllUsesWith(launch.getResults());
      op->erase();
    }
  }
};

} // namespace
