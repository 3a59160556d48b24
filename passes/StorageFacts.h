//===- StorageFacts.h - which values share storage in the compiled code ---===//
//
// What the code generators make of a value's storage, which the memory plan
// (llmc-plan-memory) must agree with: a slice of one contiguous range is a
// view of its input, a cache update writes its cache in place, a linear
// layer's residual add happens in the layer's epilogue (into the layer's
// result). Both the plan and the emitters ask these functions, so a buffer
// the plan frees is never one the code still reads.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_STORAGEFACTS_H
#define LLMC_PASSES_STORAGEFACTS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::llmc {

/// What an in-place chain of cache updates (through fused regions) started
/// from: `v` itself when it is not such a chain.
Value cacheSource(Value v);
/// What a fused region's block argument stands for outside the region(s).
Value outside(Value v);
/// Whether `v`'s storage may change after it is computed (caches and the
/// other arguments).
bool mayChange(Value v);

/// An onnx.slice (static shapes, steps of 1) whose result is `count`
/// segments of `len` elements of its input, segment c starting at element
/// base + c * stride: one sliced axis, every axis after it whole. count 1 is
/// one contiguous range (a view).
struct SliceSegments {
  int64_t base = 0, count = 1, stride = 0, len = 0;
};
std::optional<SliceSegments> sliceSegments(Operation *op);

/// Whether the compiled code makes `op`'s result a view of its first
/// operand (no data moves): reshapes, squeezes, identities, and slices of
/// one contiguous range of an input that does not change later.
bool isStorageView(Operation *op);

/// The onnx.add whose addition the code folds into the epilogue of the
/// linear layer `linear` (llm.linear or llm.quantized_linear): the layer's
/// only reader, in its block, of the same float type, adding a value
/// computed before the layer (set in `residual`). Null when there is none.
/// The add's result is then the layer's result, in the layer's buffer.
Operation *foldedResidualAdd(Operation *linear, Value *residual = nullptr);

/// Bytes the memory plan gives a value of `type`, dynamic sizes bounded by
/// `bound` (arenaBound); -1 when the element size is unknown. Sets
/// *bounded when a size was bounded.
int64_t arenaBytesOf(Type type, int64_t bound, bool *bounded = nullptr);
/// The bound of dynamic sizes in the plan of the entry point `f`: its
/// caches' capacity (1 without caches).
int64_t arenaBound(Operation *f);

} // namespace mlir::llmc

#endif // LLMC_PASSES_STORAGEFACTS_H
