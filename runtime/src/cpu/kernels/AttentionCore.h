//===- AttentionCore.h - the CPU attention kernels' shared core -----------===//
//
// One attention core serves ONNX Attention, the com.microsoft attention
// operators, llm.attention and llm.cached_attention (Attention.cpp,
// KvCache.cpp). It works on f32 copies of Q, K and V in [B, H, S, D] layout:
// scores are dot products scaled in f32 plus an additive bias built the way
// each operator defines it (ONNX: -inf for disallowed keys and a zero row
// when a query has no key; onnxruntime: mask_filter_value and float lowest()
// added to the scores, as its CPU kernels do, so fully masked rows average
// the values), then a softmax accumulated in double. Beside it, the rotation
// the rotary kernels (Rotary.cpp) and GroupQueryAttention's do_rotary share.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_KERNELS_ATTENTIONCORE_H
#define LLMC_RUNTIME_CPU_KERNELS_ATTENTIONCORE_H

#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace llmc::cpu::core {

/// An additive bias source broadcast to [B, H, Sq, T]: strides per dim (0
/// where broadcast), and the number of key columns it covers.
struct BiasView {
  const float *data = nullptr;
  int64_t sb = 0, sh = 0, sq = 0, st = 0, columns = 0;
};

struct Attention {
  int64_t b, hq, hkv, sq, skv, d, dv;
  float scale = 1;
  float softcap = 0;
  // Causal: query i of batch b attends keys j <= i + offset[b].
  bool causal = false;
  std::vector<int64_t> offset;
  // Window around the absolute position p = offset[b] + i (-1: unbounded).
  int64_t leftWindow = -1, rightWindow = -1;
  // Keys j >= keyLimit[b] are excluded (padding, nonpad_kv_seqlen).
  std::vector<int64_t> keyLimit;
  std::vector<int64_t> keyStart; // keys j < keyStart[b] are excluded
  // ONNX: disallowed keys get -inf; a query with none left gives zeros.
  // onnxruntime: disallowed keys get `disallowedBias` added.
  bool onnxSemantics = true;
  float disallowedBias = -INFINITY;
  std::vector<BiasView> biases; // added to the scores
  const uint8_t *boolMask = nullptr;
  BiasView boolView;           // strides for the boolean mask (data unused)
  // Softmax with an extra logit per head (head_sink) or 0 (smooth softmax).
  const float *sink = nullptr;
  bool smooth = false;
  // Optional copy of the scores: 0 raw, 1 after softcap, 2 after bias, 3 probs.
  int qkMode = -1;
  std::vector<float> *qkOut = nullptr;
};

/// out [B, Hq, Sq, Dv] from q [B,Hq,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv].
void runAttention(ThreadPool &pool, const Attention &a, const std::vector<float> &q,
                  const std::vector<float> &k, const std::vector<float> &v,
                  std::vector<float> &out);

/// Rotates the first `rot` channels of every head of x ([B, S, H, D] in
/// f32, in place) with cos/sin rows chosen per (b, s).
template <typename RowOf>
inline void rotate(std::vector<float> &x, int64_t b, int64_t s, int64_t h, int64_t d, int64_t rot,
            bool interleaved, const std::vector<float> &cosT, const std::vector<float> &sinT,
            RowOf rowOf) {
  int64_t half = rot / 2;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si) {
      int64_t row = rowOf(bi, si);
      const float *c = cosT.data() + row * half, *sn = sinT.data() + row * half;
      for (int64_t hi = 0; hi < h; ++hi) {
        float *p = x.data() + ((bi * s + si) * h + hi) * d;
        for (int64_t i = 0; i < half; ++i) {
          int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          float x1 = p[i1], x2 = p[i2];
          p[i1] = x1 * c[i] - x2 * sn[i];
          p[i2] = x2 * c[i] + x1 * sn[i];
        }
      }
    }
}

/// [B, H, S, D] <-> [B, S, H, D]
inline std::vector<float> swapHeadSeq(const std::vector<float> &x, int64_t b, int64_t a1,
                                      int64_t a2, int64_t d) {
  std::vector<float> out(x.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t i = 0; i < a1; ++i)
      for (int64_t j = 0; j < a2; ++j)
        std::copy_n(x.data() + ((bi * a1 + i) * a2 + j) * d, d,
                    out.data() + ((bi * a2 + j) * a1 + i) * d);
  return out;
}

/// The call's attention sinks (attentionSinks) as floats, or none (`out`
/// empty).
inline Status readSinks(const KernelCall &call, int64_t heads, std::vector<float> &out) {
  const double *sinks;
  LLMC_RETURN_IF_ERROR(
      attentionSinks(call.attrs, heads, call.label ? call.label : call.opName.c_str(), sinks));
  out.assign(sinks, sinks ? sinks + heads : sinks);
  return Status::ok();
}

/// Position ids (i32 or i64) as i64.
inline Status readPositions(const KernelCall &call, const Tensor &t,
                            std::vector<int64_t> &out) {
  out.clear();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::Int64)
      out.push_back(t.data<int64_t>()[i]);
    else if (t.dtype() == DType::Int32)
      out.push_back(t.data<int32_t>()[i]);
    else
      return call.fail("position_ids must be int32 or int64");
  }
  return Status::ok();
}

} // namespace llmc::cpu::core

#endif // LLMC_RUNTIME_CPU_KERNELS_ATTENTIONCORE_H
