//===- TensorScatter.h - ONNX TensorScatter's write, shared ----------------===//
//
// The one definition of TensorScatter's write (opset 24), which the
// reference kernel (KvCache.cpp) applies to a copy of past_cache and a
// compiled static-cache export (runtime/src/model/ModelSupport.h's
// tensorScatterInPlace) to the session's cache itself.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_KERNELS_TENSORSCATTER_H
#define LLMC_RUNTIME_CPU_KERNELS_TENSORSCATTER_H

#include "runtime/src/cpu/Tensor.h"

#include <string>

namespace llmc::cpu {

/// Writes `update` into `dst`'s storage (which holds past_cache) along
/// `axis` (negative counts from the end; not the batch axis): batch entry
/// b's rows at writeIndices[b] onwards (one i64 per batch entry; 0 without
/// them), modulo the axis length when `circular`. Every write index is
/// checked before any row moves. Returns "" or what is wrong.
std::string tensorScatterRows(const Tensor &dst, const Tensor &update,
                              const Tensor *writeIndices, int64_t axis, bool circular);

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_KERNELS_TENSORSCATTER_H
