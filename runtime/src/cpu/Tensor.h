//===- Tensor.h - dense tensors of the CPU runtime ------------------------===//
//
// A Tensor is an element type (an ONNX data type code), a shape and shared
// row-major storage. Views (reshape, squeeze, identity) share the storage of
// the tensor they come from; storage is 64-byte aligned. Sub-byte types (i4,
// u4) and bool take one byte per element. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_TENSOR_H
#define LLMC_RUNTIME_CPU_TENSOR_H

#include "runtime/src/cpu/InlineVector.h"
#include "runtime/src/cpu/Status.h"

#include "dialects/LLM/IR/OnnxDataType.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::cpu {

using DType = mlir::llmc::OnnxDataType;
/// Dimensions: up to 8 are kept inline (no allocation).
using Shape = InlineVector<int64_t, 8>;

/// Bytes of one stored element (sub-byte types are stored in a byte).
size_t storageSize(DType type);
/// "f32", "i64", ... (the llmc spelling of the ONNX type).
const char *dtypeName(DType type);
bool isFloat(DType type);   // f16, bf16, f32, f64 (not the float8 types)
bool isInteger(DType type); // signed and unsigned integers, not bool
bool isSigned(DType type);

class Tensor;
/// Element `i` of a floating-point tensor (any width, the float8/float4
/// types included) as a double, exactly; 0 for other element types.
double floatElement(const Tensor &t, int64_t i);

/// Product of dims, or -1 when it overflows int64.
int64_t numElements(const Shape &shape);
std::string shapeString(const Shape &shape);

class Tensor {
public:
  Tensor() = default;

  /// A new zero-filled tensor; fails on a shape whose byte size exceeds the
  /// allocation limit (setAllocationLimit) rather than trying. When `out` is
  /// a place (below) with room for it, the tensor takes that memory instead
  /// of allocating.
  static Status allocate(DType type, const Shape &shape, Tensor &out);
  /// allocate, but a tensor that takes its place's memory is not zeroed
  /// (for kernels that write every element).
  static Status allocateUninitialized(DType type, const Shape &shape, Tensor &out);
  /// No tensor yet, but `bytes` of memory at `data` (owned elsewhere: the
  /// arena of the compiled model) where the next allocate into it puts its
  /// result.
  static Tensor place(void *data, size_t bytes);
  /// A tensor over memory owned elsewhere (weights, caller buffers); `keep`
  /// keeps that memory alive for as long as the tensor or a view lives.
  static Tensor wrap(DType type, Shape shape, const void *data,
                     std::shared_ptr<const void> keep = nullptr);
  /// The same storage with another shape of equal element count.
  Tensor view(Shape newShape) const;
  /// `newShape`'s elements of the same storage from element `offset` on (a
  /// contiguous slice); an error when they do not lie inside this tensor.
  Status slice(int64_t offset, Shape newShape, Tensor &out) const;

  DType dtype() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return int64_t(dims.size()); }
  int64_t dim(int64_t i) const { return dims[size_t(i)]; }
  int64_t numel() const { return count; }
  size_t bytes() const { return size_t(count) * storageSize(type); }
  bool defined() const { return type != DType::Undefined; }
  /// Bytes of the place this tensor was made in (Tensor::place), else 0.
  size_t room() const { return roomBytes; }

  const void *raw() const { return base; }
  void *mutableRaw() const { return const_cast<void *>(base); }
  template <typename T> const T *data() const { return static_cast<const T *>(base); }
  template <typename T> T *mutableData() const { return static_cast<T *>(mutableRaw()); }

  /// "f32[2, 3]"
  std::string describe() const;

private:
  static Status allocateInto(DType type, const Shape &shape, Tensor &out, bool zero);

  DType type = DType::Undefined;
  Shape dims;
  int64_t count = 0;
  std::shared_ptr<const void> storage;
  const void *base = nullptr;
  size_t roomBytes = 0; // bytes at base for allocate (a place)
};

/// Largest allocation (bytes) Tensor::allocate accepts; defaults to the
/// machine's physical memory so an absurd run-time shape is an error, not an
/// out-of-memory kill.
void setAllocationLimit(uint64_t bytes);
uint64_t allocationLimit();

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_TENSOR_H
