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
#include "llvm/ADT/SmallVector.h"

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
/// Result i of an onnx.split (static shapes; the parts along one axis, in
/// order) as such segments of its input.
std::optional<SliceSegments> splitSegments(Operation *op, unsigned i);

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

/// Row-major element strides of a shape.
llvm::SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape);

/// An onnx.matmul the code runs as one strided batched product (both
/// targets: the CPU's cpu::matmulStrided, the CUDA template matmul): static
/// shapes, operands and result of one type, f32, f16 or bf16, M and N at
/// least 1, at most kStridedBatchDims batch dimensions of size above 1 and
/// kStridedMaxBatches matrices. Its operands are read through element
/// strides: A[r, c] of batch entry i at sum_d(i_d * aBatch[d]) + r * aRow +
/// c * aCol, likewise B; a vector A is one row [1, K], a vector B one column
/// [K, 1]; the result is contiguous [batch..., M, N]. An operand that a
/// transpose read in place makes (isTransposeReadInPlace) is read from the
/// transpose's input with its permuted strides.
struct StridedMatmul {
  static constexpr size_t kStridedBatchDims = 4;
  static constexpr int64_t kStridedMaxBatches = 65535;
  Operation *op = nullptr; // the onnx.matmul
  Value a, b;              // what it reads (a folded transpose's input)
  int64_t m = 1, n = 1, k = 0;
  int64_t aRow = 0, aCol = 0, bRow = 0, bCol = 0;
  /// The batch dimensions of size above 1, outermost first, and each
  /// operand's element stride along them (0 where it is broadcast).
  llvm::SmallVector<int64_t, 4> dims, aBatch, bBatch;
  /// Whether an operand is a transpose read in place.
  bool readsTranspose() const;
};
std::optional<StridedMatmul> stridedMatmul(Operation *op);

/// Whether the code reads the result of the onnx.transpose `op` in place,
/// through strides, in the one strided product that reads it (no data
/// moves): the transpose's only reader, in its block, is an onnx.matmul that
/// stridedMatmul takes, and its input does not change later (mayChange). The
/// plan then keeps the transpose's input alive until the product.
bool isTransposeReadInPlace(Operation *op);

/// Bytes the memory plan gives a value of `type`, dynamic sizes bounded by
/// `bound` (arenaBound); -1 when the element size is unknown. Sets
/// *bounded when a size was bounded.
int64_t arenaBytesOf(Type type, int64_t bound, bool *bounded = nullptr);
/// The bound of dynamic sizes in the plan of the entry point `f`: its
/// caches' capacity (1 without caches).
int64_t arenaBound(Operation *f);

} // namespace mlir::llmc

#endif // LLMC_PASSES_STORAGEFACTS_H
