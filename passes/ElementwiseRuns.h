//===- ElementwiseRuns.h - element-wise operations and runs of them -*- C++ -*-===//
//
// Which operations both code generators write element-wise code for (each
// one's expression in its inputs), and the runs of them that become one
// loop (CPU) or kernel (CUDA): each result read only by the next. A run's
// earlier operations are computed inside its last, so the operands they
// read are read there: the memory plan (llmc-plan-memory) keeps them alive
// until runEnd, whatever part of the run a target then fuses.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_ELEMENTWISERUNS_H
#define LLMC_PASSES_ELEMENTWISERUNS_H

#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::llmc {

bool isFloatType(Type t);

/// How an element-wise operation combines its inputs $0, $1 (a C++
/// expression over f32 values, or int64 ones for integer comparisons; ""
/// when it is not one the generators know).
std::string pointwiseExpr(Operation *op);
/// The operands an element-wise operation reads (an expand reads only its
/// input; its second operand is the shape).
unsigned pointwiseArity(Operation *op);
/// Whether an element-wise operation may be part of a run: its result is a
/// float, and so is every operand it reads, but for a Where's condition (a
/// mask's booleans, read as 0 or 1).
bool runsInFloat(Operation *op);
/// The next operation of a run through `op`: the only reader of its result,
/// in its block, both runsInFloat, of the same shape (an expand only of
/// that result), `op`'s operands ones that do not change later (mayChange:
/// the last operation reads them later than `op` stands). Null when the run
/// ends at `op`.
Operation *runsInto(Operation *op);
/// The last operation of the longest run from `op` (`op` itself when none).
Operation *runEnd(Operation *op);

} // namespace mlir::llmc

#endif // LLMC_PASSES_ELEMENTWISERUNS_H
