//===- Rotary.cpp - rotary embedding kernels ------------------------------===//
//
// ONNX RotaryEmbedding (opset 23), com.microsoft RotaryEmbedding and
// llm.rope, on the rotation of AttentionCore.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/AttentionCore.h"
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

using namespace core;

Status onnxRotaryEmbeddingKernel(KernelCall &call) {
  const Tensor &X = *call.input(0), &cosC = *call.input(1), &sinC = *call.input(2);
  const Tensor *posIds = call.input(3);
  const Attributes &at = *call.attrs;
  int64_t b = X.dim(0), s, h, d;
  bool threeD = X.rank() == 3;
  if (threeD) {
    std::optional<int64_t> nh = at.optInt("num_heads");
    if (!nh || *nh <= 0 || X.dim(2) % *nh)
      return call.fail("3-D input needs num_heads dividing the hidden size");
    s = X.dim(1), h = *nh, d = X.dim(2) / h;
  } else if (X.rank() == 4) {
    h = X.dim(1), s = X.dim(2), d = X.dim(3);
  } else {
    return call.fail("X must have rank 3 or 4");
  }
  int64_t rot = at.getInt("rotary_embedding_dim", 0);
  if (rot == 0)
    rot = d;
  if (rot > d || rot % 2)
    return call.fail("rotary_embedding_dim must be even and at most the head size");
  int64_t half = rot / 2;
  std::vector<float> x, c, sn;
  LLMC_RETURN_IF_ERROR(toF32(call, X, x));
  LLMC_RETURN_IF_ERROR(toF32(call, cosC, c));
  LLMC_RETURN_IF_ERROR(toF32(call, sinC, sn));
  if (cosC.shape() != sinC.shape() || cosC.dim(cosC.rank() - 1) != half)
    return call.fail("cos/sin caches must have " + std::to_string(half) + " columns");
  if (!threeD)
    x = swapHeadSeq(x, b, h, s, d); // -> [B, S, H, D]
  bool interleaved = at.getInt("interleaved", 0) != 0;
  if (posIds) {
    std::vector<int64_t> pos;
    LLMC_RETURN_IF_ERROR(readPositions(call, *posIds, pos));
    if (posIds->numel() != b * s)
      return call.fail("position_ids must be [B, S]");
    for (int64_t p : pos)
      if (p < 0 || p >= cosC.dim(0))
        return call.fail("position " + std::to_string(p) + " is outside the caches");
    rotate(x, b, s, h, d, rot, interleaved, c, sn,
           [&](int64_t bi, int64_t si) { return pos[size_t(bi * s + si)]; });
  } else {
    if (cosC.rank() != 3 || cosC.dim(0) != b || cosC.dim(1) != s)
      return call.fail("without position_ids the caches must be [B, S, R/2]");
    rotate(x, b, s, h, d, rot, interleaved, c, sn,
           [&](int64_t bi, int64_t si) { return bi * s + si; });
  }
  if (!threeD)
    x = swapHeadSeq(x, b, s, h, d);
  return fromF32(X.dtype(), X.shape(), x, call.outputs[0]);
}

Status msRotaryEmbeddingKernel(KernelCall &call) {
  const Tensor &X = *call.input(0), &posIds = *call.input(1), &cosC = *call.input(2),
               &sinC = *call.input(3);
  const Attributes &at = *call.attrs;
  if (at.getInt("is_packed_batching", 0))
    return call.fail("packed batching is not supported");
  if (cosC.rank() != 2 || cosC.shape() != sinC.shape())
    return call.fail("cos/sin caches must be 2-D and alike");
  int64_t numHeads = at.getInt("num_heads", 0), rot = at.getInt("rotary_embedding_dim", 0);
  int64_t b = X.dim(0), s, h, d;
  bool threeD = X.rank() == 3;
  if (threeD) {
    s = X.dim(1);
    int64_t hidden = X.dim(2);
    d = numHeads > 0 ? hidden / numHeads : (rot > 0 ? rot : cosC.dim(1) * 2);
    if (d <= 0 || hidden % d)
      return call.fail("cannot split the hidden size into heads");
    h = hidden / d;
  } else if (X.rank() == 4) {
    h = X.dim(1), s = X.dim(2), d = X.dim(3);
  } else {
    return call.fail("input must have rank 3 or 4");
  }
  if (rot == 0)
    rot = std::min(d, cosC.dim(1) * 2);
  if (rot > d || rot % 2 || cosC.dim(1) != rot / 2)
    return call.fail("rotary dimension " + std::to_string(rot) + " does not fit the caches");
  std::vector<int64_t> pos;
  LLMC_RETURN_IF_ERROR(readPositions(call, posIds, pos));
  bool offsetForm = posIds.numel() == 1 && !(b == 1 && s == 1 && posIds.rank() == 2);
  if (!offsetForm && int64_t(pos.size()) != b * s)
    return call.fail("position_ids must be [B, S] or a single offset");
  auto rowOf = [&](int64_t bi, int64_t si) {
    return offsetForm ? pos[0] + si : pos[size_t(bi * s + si)];
  };
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si)
      if (rowOf(bi, si) < 0 || rowOf(bi, si) >= cosC.dim(0))
        return call.fail("position " + std::to_string(rowOf(bi, si)) + " is outside the caches");
  std::vector<float> x, c, sn;
  LLMC_RETURN_IF_ERROR(toF32(call, X, x));
  LLMC_RETURN_IF_ERROR(toF32(call, cosC, c));
  LLMC_RETURN_IF_ERROR(toF32(call, sinC, sn));
  if (!threeD)
    x = swapHeadSeq(x, b, h, s, d);
  rotate(x, b, s, h, d, rot, at.getInt("interleaved", 0) != 0, c, sn, rowOf);
  if (!threeD)
    x = swapHeadSeq(x, b, s, h, d);
  return fromF32(X.dtype(), X.shape(), x, call.outputs[0]);
}

/// llm.rope: x [B, S, N, D], cos/sin [max_pos, R/2], positions [B, S] (or
/// [1, S] shared by the batch).
Status llmRopeKernel(KernelCall &call) {
  const Tensor &X = *call.input(0), &cosT = *call.input(1), &sinT = *call.input(2),
               &posT = *call.input(3);
  if (X.rank() != 4)
    return call.fail("x must be [B, S, N, D], got " + X.describe());
  int64_t b = X.dim(0), s = X.dim(1), h = X.dim(2), d = X.dim(3);
  int64_t rot = call.attrs->getInt("rotary_dim", 0);
  if (rot == 0)
    rot = d;
  if (rot < 0 || rot > d || rot % 2)
    return call.fail("rotary_dim " + std::to_string(rot) + " must be even and at most " +
                     std::to_string(d));
  if (cosT.rank() != 2 || cosT.shape() != sinT.shape() || cosT.dim(1) != rot / 2)
    return call.fail("cos " + cosT.describe() + " and sin " + sinT.describe() +
                     " must both be [max_pos, " + std::to_string(rot / 2) + "]");
  if (posT.rank() != 2 || (posT.dim(0) != b && posT.dim(0) != 1) || posT.dim(1) != s)
    return call.fail("positions " + posT.describe() + " must be [" + std::to_string(b) + ", " +
                     std::to_string(s) + "]");
  std::vector<int64_t> pos;
  LLMC_RETURN_IF_ERROR(readPositions(call, posT, pos));
  for (int64_t p : pos)
    if (p < 0 || p >= cosT.dim(0))
      return call.fail("position " + std::to_string(p) + " is outside the tables [0, " +
                       std::to_string(cosT.dim(0)) + ")");
  std::vector<float> x, c, sn;
  LLMC_RETURN_IF_ERROR(toF32(call, X, x));
  LLMC_RETURN_IF_ERROR(toF32(call, cosT, c));
  LLMC_RETURN_IF_ERROR(toF32(call, sinT, sn));
  int64_t batchStride = posT.dim(0) == 1 ? 0 : s;
  rotate(x, b, s, h, d, rot, call.attrs->getInt("interleaved", 0) != 0, c, sn,
         [&](int64_t bi, int64_t si) { return pos[size_t(bi * batchStride + si)]; });
  return fromF32(X.dtype(), X.shape(), x, call.outputs[0]);
}

} // namespace

void addRotaryKernels(KernelTable &table) {
  table.add("onnx.rotary_embedding", onnxRotaryEmbeddingKernel);
  table.add("ms.rotary_embedding", msRotaryEmbeddingKernel);
  table.add("rope", llmRopeKernel);
}

} // namespace llmc::cpu
