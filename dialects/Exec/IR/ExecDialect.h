//===- ExecDialect.h - the exec dialect -------------------------------------===//
#ifndef LLMC_DIALECTS_EXEC_IR_EXECDIALECT_H
#define LLMC_DIALECTS_EXEC_IR_EXECDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Exec/IR/ExecDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Exec/IR/ExecOps.h.inc"

#endif // LLMC_DIALECTS_EXEC_IR_EXECDIALECT_H
