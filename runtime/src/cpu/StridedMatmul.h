//===- StridedMatmul.h - a batched product over strided operands ----------===//
//
// A compiled model's onnx.matmul (runtime/src/model/ModelSupport.h's
// stridedMatmul): its operands are read through element strides that llmc
// compile derived from the static shapes (passes/StorageFacts.h's
// StridedMatmul), so a transpose that only the product reads is read in
// place instead of copied (the keys' transpose before an attention's scores
// would copy the whole key cache every step). Linalg.cpp implements it on
// the reference MatMul's per-matrix core: the blocked f32 GEMM and its two
// GEMV paths (B row-major, and B given as B^T, as the transposed keys are).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_STRIDEDMATMUL_H
#define LLMC_RUNTIME_CPU_STRIDEDMATMUL_H

#include "runtime/src/cpu/Tensor.h"
#include "runtime/src/cpu/ThreadPool.h"

#include <cstdint>
#include <string>

namespace llmc::cpu {

/// Batch entry i (an index per batch dimension) is the product of the
/// M x K matrix A with A[r, c] at element sum_d(i_d * aBatch[d]) + r * aRow +
/// c * aCol of `a`, and the K x N matrix B likewise, into the M x N matrix
/// of y at (flat index of i) * M * N. Strides are in elements, 0 where an
/// operand is broadcast.
struct MatmulStrides {
  static constexpr int64_t kBatchDims = 4;
  int64_t m = 1, n = 1, k = 0;
  int64_t aRow = 0, aCol = 0, bRow = 0, bCol = 0;
  int64_t rank = 0; // batch dimensions in use
  int64_t dims[kBatchDims] = {1, 1, 1, 1};
  int64_t aBatch[kBatchDims] = {0, 0, 0, 0};
  int64_t bBatch[kBatchDims] = {0, 0, 0, 0};
};

/// y = A B over all batch entries, summed in f32 and rounded once (as the
/// reference MatMul). `a`, `b` and `y` share one type, f32, f16 or bf16;
/// `y` holds exactly the batches' results. Every element read must lie in
/// `a` and `b`. Returns "" or what is wrong (nothing is written then).
std::string matmulStrided(ThreadPool &pool, const MatmulStrides &s, const Tensor &a,
                          const Tensor &b, const Tensor &y);

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_STRIDEDMATMUL_H
