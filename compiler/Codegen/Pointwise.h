//===- Pointwise.h - element-wise code both targets generate -------*- C++ -*-===//
//
// What the CPU and CUDA emitters share to write element-wise code from the
// operations: each operation's expression in its inputs (computed in f32 for
// float results), the runs of them that become one loop or kernel, and the
// loads and store of one element over static shapes and strides. The CUDA
// target puts that element under a thread index (GeneratedKernels.cpp), the
// CPU target inside a loop over a range of elements
// (CPU/EmitCppPointwise.cpp); both spell f16 and bf16 `half` and `bfloat16`
// with toFloat / fromFloat<T> (runtime/src/model/cuda/Common.h,
// runtime/src/model/GeneratedLoops.h).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_POINTWISE_H
#define LLMC_COMPILER_CODEGEN_POINTWISE_H

#include "passes/ElementwiseRuns.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::llmc::codegen {

/// The C++ storage type of an element type in generated code ("" when there
/// is none): float, half, bfloat16, int64_t, ..., booleans `boolType` (the
/// CUDA target's bool, the CPU's uint8_t).
std::string storageType(Type t, llvm::StringRef boolType);
inline ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
inline int64_t numel(Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); }

/// An input's strides over an iteration space of `out` (numpy broadcasting:
/// missing leading and size-1 axes read stride 0).
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out);

/// `expr` with $0, $1 replaced by `args`.
std::string substitute(llvm::StringRef expr, ArrayRef<std::string> args);
/// The runs of element-wise operations of `block` (runsInto) whose every
/// operation `eligible` admits: each becomes one loop or kernel, the earlier
/// operations computed inside the last. Runs of at least two operations, in
/// program order.
SmallVector<SmallVector<Operation *>> pointwiseRuns(Block &block,
                                                    llvm::function_ref<bool(Operation *)> eligible);

/// A run's (or a single operation's) value of one element: `temps`, one
/// statement per operation before the last (`float t<k> = ...;`, so that a
/// Where selects between values computed unconditionally and a compiler
/// can vectorise it), then `expr`, in x0, x1, ... (the loaded `externals`,
/// in order) and the temporaries; each result inside the run stored as
/// f16 or bf16 rounded as its storage would round it.
struct PointwiseExpr {
  SmallVector<std::string> temps;
  std::string expr;
  std::string what; // "onnx.mul, onnx.where"
  SmallVector<Value> externals;
};
/// The expression of `run` (its last operation the result), with
/// `typeName` the C++ element type of a value ("" when there is none);
/// nullopt with `failed` the operation whose operand has no type.
std::optional<PointwiseExpr> runExpr(ArrayRef<Operation *> run,
                                     llvm::function_ref<std::string(Type)> typeName,
                                     Operation *&failed);

/// One access of generated element-wise code: a tensor read or written at
/// base + sum_d index_d * strides_d over the iteration space.
struct Access {
  std::string type; // C++ element type
  SmallVector<int64_t> strides;
  int64_t base = 0;
};

/// One copy of generated code: `from` read through `in` and written to
/// `to` through `out`, over `iteration`.
struct CopyPart {
  Value from, to;
  SmallVector<int64_t> iteration;
  Access in, out;
};
/// The copies that make up a transpose (one: the input read through the
/// permuted strides, over the result's shape), a slice of whole segments
/// (one, over [segments, length]; codegen callers first take the views),
/// a split (one per result, over its shape) or a concat (one per input,
/// over its shape, written at its offset along the axis of the result),
/// with `typeName` the C++ element type of both sides; empty for any other
/// operation or a slice that is not whole segments.
SmallVector<CopyPart, 2> copyParts(Operation *op, llvm::function_ref<std::string(Type)> typeName);

/// The statements of one element at indices i0, i1, ... over `iteration`
/// (dimensions of size 1 and stride 0 left out): `in<k>` loaded into x<k>
/// (float where it or the output is a float, else int64_t), `e`'s
/// temporaries, `out` stored with its expression, each line starting with
/// `indent`. A plain copy (`e` is x0 of one input of the output's type) is
/// one assignment of the element as it is stored, with no conversion.
std::string pointwiseElement(ArrayRef<int64_t> iteration, ArrayRef<Access> inputs,
                             const Access &output, const PointwiseExpr &e,
                             llvm::StringRef indent);

} // namespace mlir::llmc::codegen

#endif // LLMC_COMPILER_CODEGEN_POINTWISE_H
