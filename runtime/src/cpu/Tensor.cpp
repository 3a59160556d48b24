//===- Tensor.cpp - dense tensors of the CPU runtime ----------------------===//
#include "runtime/src/cpu/Tensor.h"
#include "runtime/src/cpu/Numeric.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace llmc::cpu {

namespace {
uint64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return uint64_t(1) << 36;
  return uint64_t(pages) * uint64_t(pageSize);
}

std::atomic<uint64_t> &limitRef() {
  static std::atomic<uint64_t> limit{physicalMemory()};
  return limit;
}
} // namespace

void setAllocationLimit(uint64_t bytes) { limitRef() = bytes; }
uint64_t allocationLimit() { return limitRef(); }

size_t storageSize(DType type) {
  switch (type) {
  case DType::Float: case DType::Int32: case DType::UInt32:
    return 4;
  case DType::Double: case DType::Int64: case DType::UInt64:
    return 8;
  case DType::Float16: case DType::BFloat16: case DType::Int16: case DType::UInt16:
    return 2;
  case DType::Int8: case DType::UInt8: case DType::Bool: case DType::Int4: case DType::UInt4:
  case DType::Int2: case DType::UInt2: case DType::Float4E2M1: case DType::Float8E8M0:
  case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
    return 1; // sub-byte types take a byte per element
  default:
    return 0;
  }
}

const char *dtypeName(DType type) {
  const mlir::llmc::OnnxDataTypeInfo *info = mlir::llmc::lookupOnnxDataType(int32_t(type));
  return info ? info->shortName : "unknown";
}

bool isFloat(DType t) {
  return t == DType::Float || t == DType::Float16 || t == DType::BFloat16 || t == DType::Double;
}

bool isInteger(DType t) {
  switch (t) {
  case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
  case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
  case DType::Int4: case DType::UInt4: case DType::Int2: case DType::UInt2:
    return true;
  default:
    return false;
  }
}

bool isSigned(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64 ||
         t == DType::Int4 || t == DType::Int2 || isFloat(t);
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Status Tensor::allocate(DType type, const Shape &shape, Tensor &out) {
  return allocateInto(type, shape, out, /*zero=*/true);
}

Status Tensor::allocateUninitialized(DType type, const Shape &shape, Tensor &out) {
  return allocateInto(type, shape, out, /*zero=*/false);
}

Tensor Tensor::place(void *data, size_t bytes) {
  Tensor t;
  t.base = data;
  t.roomBytes = bytes;
  return t;
}

Status Tensor::allocateInto(DType type, const Shape &shape, Tensor &out, bool zero) {
  size_t elementSize = storageSize(type);
  if (elementSize == 0)
    return Status::error(std::string("cannot allocate a tensor of type ") + dtypeName(type));
  int64_t n = numElements(shape);
  uint64_t bytes;
  if (n < 0 || __builtin_mul_overflow(uint64_t(n), uint64_t(elementSize), &bytes) ||
      bytes > allocationLimit())
    return Status::error("a tensor of " + std::string(dtypeName(type)) + shapeString(shape) +
                         " exceeds the allocation limit of " +
                         std::to_string(allocationLimit()) + " bytes");
  // A place with room: the tensor takes its memory.
  if (out.roomBytes && !out.defined() && out.base && bytes <= out.roomBytes) {
    if (zero)
      std::memset(const_cast<void *>(out.base), 0, size_t(bytes));
    out.type = type;
    out.dims = shape;
    out.count = n;
    out.storage.reset();
    return Status::ok();
  }
  size_t rounded = (size_t(bytes) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p)
    return Status::error("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded ? rounded : 64);
  out.type = type;
  out.dims = shape;
  out.count = n;
  out.storage = std::shared_ptr<const void>(p, [](const void *q) { std::free(const_cast<void *>(q)); });
  out.base = p;
  out.roomBytes = 0;
  return Status::ok();
}

Tensor Tensor::wrap(DType type, Shape shape, const void *data, std::shared_ptr<const void> keep) {
  Tensor t;
  t.type = type;
  t.count = numElements(shape);
  t.dims = std::move(shape);
  t.storage = std::move(keep);
  t.base = data;
  return t;
}

Tensor Tensor::view(Shape newShape) const {
  Tensor t = *this;
  t.count = numElements(newShape);
  t.dims = std::move(newShape);
  t.roomBytes = 0;
  return t;
}

Status Tensor::slice(int64_t offset, Shape newShape, Tensor &out) const {
  int64_t n = numElements(newShape);
  if (offset < 0 || n < 0 || offset > count || n > count - offset)
    return Status::error("a slice of " + shapeString(newShape) + " at element " +
                         std::to_string(offset) + " does not lie inside " + describe());
  out = *this;
  out.count = n;
  out.dims = std::move(newShape);
  out.base = static_cast<const uint8_t *>(base) + size_t(offset) * storageSize(type);
  out.roomBytes = 0;
  return Status::ok();
}

std::string Tensor::describe() const { return std::string(dtypeName(type)) + shapeString(dims); }

double floatElement(const Tensor &t, int64_t i) {
  const void *p = t.raw();
  switch (t.dtype()) {
  case DType::Float: return static_cast<const float *>(p)[i];
  case DType::Double: return static_cast<const double *>(p)[i];
  case DType::Float16: return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::BFloat16: return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::Float8E4M3FN:
    return float8ToFloat(static_cast<const uint8_t *>(p)[i], Float8Kind::E4M3FN);
  case DType::Float8E4M3FNUZ:
    return float8ToFloat(static_cast<const uint8_t *>(p)[i], Float8Kind::E4M3FNUZ);
  case DType::Float8E5M2:
    return float8ToFloat(static_cast<const uint8_t *>(p)[i], Float8Kind::E5M2);
  case DType::Float8E5M2FNUZ:
    return float8ToFloat(static_cast<const uint8_t *>(p)[i], Float8Kind::E5M2FNUZ);
  case DType::Float4E2M1: return float4ToFloat(static_cast<const uint8_t *>(p)[i]);
  case DType::Float8E8M0: return float8E8M0ToFloat(static_cast<const uint8_t *>(p)[i]);
  default: return 0;
  }
}

} // namespace llmc::cpu
