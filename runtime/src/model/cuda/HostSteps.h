//===- HostSteps.h - a CUDA model's operations that run on the host --------===//
//
// An operation of run-time shape (the fallback's: an attention llmc does
// not recognise, over rows 0 .. start_pos + S of the model's own cache IO),
// or one no device kernel implements, runs on the host through its
// reference kernel (runtime/src/cpu), as the CPU target runs it:
//
//   download        a device value (the arena, weights) into a host tensor,
//                   in stream order (the copy waits for the kernels before
//                   it; the call returns when it is done);
//   cacheRows       rows 0 .. n of each [B, H] row block of a cache on the
//                   device ([B, H, capacity, D]), as a host [B, H, n, D]
//                   (llm.cache_read; n = capacity: the whole cache);
//   writeCacheRows  a host [B, H, S, D] into rows pos .. pos + S of a cache
//                   (llm.cache_update), checked as the CPU target checks it;
//   upload          a host tensor into its place in the arena, checked
//                   against the static shape the device code reads;
//   hostCall        a reference kernel on host tensors.
//
// Host tensors are allocated per step (the CPU target's run-time sizes), and
// every copy synchronises the stream with the host (a copy from pageable
// memory need not be done when the call returns; the tensor then goes at
// the end of the step), so a model with host
// steps runs its decode entries directly (no CUDA graph: DeviceModel.h's
// kHostSteps). model.cu includes this header only when it has host steps,
// and libmodel.so then links the CPU kernels (compiler/Artifact).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_HOSTSTEPS_H
#define LLMC_RUNTIME_MODEL_CUDA_HOSTSTEPS_H

#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/model/Attributes.h"
#include "runtime/src/model/cuda/Cuda.h"

#include <initializer_list>
#include <string>

namespace llmc::cuda::model {

using HostTensor = ::llmc::cpu::Tensor;
using ::llmc::model::floatAttr;
using ::llmc::model::floatsAttr;
using ::llmc::model::intAttr;
using ::llmc::model::intsAttr;
using ::llmc::model::stringAttr;
using ::llmc::model::stringsAttr;
using ::llmc::model::tensorAttr;
using ::llmc::cpu::DType;
using ::llmc::cpu::Shape;

namespace host {

inline std::string statusText(const ::llmc::cpu::Status &s) {
  return s.isOk() ? std::string() : s.message();
}

/// A device value of `bytes` at `device` into `out` (dtype, shape).
inline std::string download(HostTensor &out, DType type, const Shape &shape, const void *device,
                            Stream s) {
  LLMC_CUDA_TRY(statusText(HostTensor::allocateUninitialized(type, shape, out)));
  LLMC_CUDA_TRY(copyAsync(out.mutableRaw(), device, out.bytes(), s));
  return streamSynchronize(s);
}

/// A host i64 scalar's value (a position or a length).
inline std::string scalar(const HostTensor &t, const char *what, int64_t &out) {
  if (t.dtype() != DType::Int64 || t.numel() != 1)
    return std::string(what) + " must be one i64, got " + t.describe();
  out = t.data<int64_t>()[0];
  return {};
}

/// Rows 0 .. rows of a device cache [b, h, capacity, d] of `type` as a host
/// [b, h, rows, d].
inline std::string cacheRows(HostTensor &out, DType type, int64_t b, int64_t h, int64_t d,
                             int64_t capacity, int64_t rows, const void *cache, const char *node,
                             Stream s) {
  if (rows < 0 || rows > capacity)
    return std::string(node) + ": reading " + std::to_string(rows) +
           " rows of a cache of capacity " + std::to_string(capacity);
  LLMC_CUDA_TRY(statusText(HostTensor::allocateUninitialized(type, {b, h, rows, d}, out)));
  size_t row = size_t(d) * ::llmc::cpu::storageSize(type);
  if (rows == 0 || b * h == 0)
    return {};
  LLMC_CUDA_TRY(copy2DAsync(out.mutableRaw(), size_t(rows) * row, cache, size_t(capacity) * row,
                            size_t(rows) * row, size_t(b * h), s));
  return streamSynchronize(s);
}

/// The same, `length` a host i64 scalar (llm.cache_read's operand).
inline std::string cacheRows(HostTensor &out, DType type, int64_t b, int64_t h, int64_t d,
                             int64_t capacity, const HostTensor &length, const void *cache,
                             const char *node, Stream s) {
  int64_t rows = 0;
  LLMC_CUDA_TRY(scalar(length, node, rows));
  return cacheRows(out, type, b, h, d, capacity, rows, cache, node, s);
}

/// A host [b, h, S, d] into rows pos .. pos + S of a device cache
/// [b, h, capacity, d] of `type`.
inline std::string writeCacheRows(void *cache, DType type, int64_t b, int64_t h, int64_t d,
                                  int64_t capacity, const HostTensor &rows,
                                  const HostTensor &position, const char *node, Stream s) {
  int64_t pos = 0;
  LLMC_CUDA_TRY(scalar(position, node, pos));
  if (rows.dtype() != type || rows.rank() != 4 || rows.dim(0) != b || rows.dim(1) != h ||
      rows.dim(3) != d)
    return std::string(node) + ": update " + rows.describe() + " does not fit a cache of [" +
           std::to_string(b) + ", " + std::to_string(h) + ", " + std::to_string(capacity) + ", " +
           std::to_string(d) + "] " + ::llmc::cpu::dtypeName(type);
  int64_t n = rows.dim(2);
  if (pos < 0 || pos + n > capacity)
    return std::string(node) + ": rows " + std::to_string(pos) + " .. " +
           std::to_string(pos + n - 1) + " do not fit a cache of capacity " +
           std::to_string(capacity);
  size_t row = size_t(d) * ::llmc::cpu::storageSize(type);
  if (n == 0 || b * h == 0)
    return {};
  LLMC_CUDA_TRY(copy2DAsync(static_cast<char *>(cache) + size_t(pos) * row,
                            size_t(capacity) * row, rows.raw(), size_t(n) * row, size_t(n) * row,
                            size_t(b * h), s));
  return streamSynchronize(s); // (the host tensor goes with the step)
}

/// A host tensor into the arena at `device`, which the device code reads as
/// `type` of `shape`.
inline std::string upload(const HostTensor &t, DType type, const Shape &shape, void *device,
                          const char *node, Stream s) {
  if (t.dtype() != type || t.shape() != shape)
    return std::string(node) + ": computed on the host as " + t.describe() +
           ", where the device code reads " + ::llmc::cpu::dtypeName(type) +
           ::llmc::cpu::shapeString(shape);
  LLMC_CUDA_TRY(copyAsync(device, t.raw(), t.bytes(), s));
  return streamSynchronize(s); // (the host tensor goes with the step)
}

/// The reference kernel `kernel` of the operation `node` on host tensors.
inline std::string call(const char *kernel, const char *node,
                        std::initializer_list<const HostTensor *> inputs,
                        const ::llmc::cpu::Attributes *attrs,
                        std::initializer_list<HostTensor *> outputs, uint64_t unwanted = 0) {
  const ::llmc::cpu::KernelEntry *k = ::llmc::cpu::findKernel(kernel);
  if (!k)
    return std::string("the kernel library has no kernel '") + kernel +
           "' (libmodel.so was built against another llmc)";
  static const ::llmc::cpu::Attributes none;
  ::llmc::cpu::KernelCall c;
  c.inputs.assign(inputs.begin(), inputs.end());
  c.attrs = attrs ? attrs : &none;
  c.outputs.resize(outputs.size());
  c.unwanted.resize(outputs.size());
  for (size_t r = 0; r < outputs.size() && r < 64; ++r)
    c.unwanted[r] = (unwanted >> r) & 1;
  c.pool = &::llmc::cpu::ThreadPool::global();
  c.label = node;
  LLMC_CUDA_TRY(statusText(k->fn(c)));
  size_t r = 0;
  for (HostTensor *out : outputs)
    *out = std::move(c.outputs[r++]);
  return {};
}

} // namespace host
} // namespace llmc::cuda::model

#endif // LLMC_RUNTIME_MODEL_CUDA_HOSTSTEPS_H
