//===- EmitCuda.h - CUDA C++ from the compiled entry points ----------------===//
//
// `llmc compile --target cuda`: model.cu, one host function per entry point
// that enqueues kernels on a stream (runtime/src/model/cuda/DeviceModel.h
// wraps it into libmodel.so's ABI with device buffers and CUDA graphs).
// Every intermediate lives at a fixed offset of one device arena, planned
// here from the values' lifetimes (buffers whose last use is past are
// reused); views are offsets into their source; cache updates write the
// session's device caches in place.
//
// Heavy operations call the kernel templates of runtime/src/model/cuda
// (gemv / gemm with bias and residual epilogues, RMS and layer norm, rope,
// embedding, cache writes with the [B, S, H, D] -> [B, H, S, D] transpose
// folded into the write, split-KV decode attention, flash prefill
// attention); element-wise operations, broadcasts, casts, transposes,
// slices, splits and concatenations become kernels generated here, their
// bodies written from the operations with the static shapes and strides
// built in (runs of element-wise operations of one fused region, each
// result read only by the next, become one kernel).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_CODEGEN_CUDA_EMITCUDA_H
#define LLMC_COMPILER_CODEGEN_CUDA_EMITCUDA_H

#include "compiler/Codegen/CPU/EmitCpp.h"

namespace mlir::llmc {

/// The device the host code assumes for split-K choices (an H100's 132
/// multiprocessors; the results do not depend on it).
constexpr int kCudaAssumedMultiprocessors = 132;

/// Emits the model for the CUDA target (model.target = "cuda"); an error
/// lists every operation that has no CUDA kernel yet.
llvm::Expected<CpuModel> emitCudaModel(ModuleOp module, llvm::StringRef llmcVersion);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_CODEGEN_CUDA_EMITCUDA_H
