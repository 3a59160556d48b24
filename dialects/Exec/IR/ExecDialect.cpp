//===- ExecDialect.cpp - the exec dialect -----------------------------------===//
#include "dialects/Exec/IR/ExecDialect.h"

#include "runtime/src/cpu/Kernel.h"

using namespace mlir;
using namespace mlir::llmc::exec;

#include "dialects/Exec/IR/ExecDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Exec/IR/ExecOps.cpp.inc"
      >();
}

LogicalResult KernelOp::verify() {
  if (!::llmc::cpu::findKernel(getKernel().str()))
    return emitOpError("no CPU kernel called '") << getKernel() << "'";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Exec/IR/ExecOps.cpp.inc"
