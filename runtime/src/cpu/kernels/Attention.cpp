//===- Attention.cpp - attention, rotary embedding and caches --------------===//
//
// One attention core serves ONNX Attention and the com.microsoft attention
// operators. It works on f32 copies of Q, K and V in [B, H, S, D] layout:
// scores are dot products scaled in f32 plus an additive bias built the way
// each operator defines it (ONNX: -inf for disallowed keys and a zero row
// when a query has no key; onnxruntime: mask_filter_value and float lowest()
// added to the scores, as its CPU kernels do, so fully masked rows average
// the values), then a softmax accumulated in double.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

/// [B, S, H*D] -> [B, H, S, D]
std::vector<float> splitHeads(const std::vector<float> &x, int64_t b, int64_t s, int64_t h,
                              int64_t d, int64_t rowStride, int64_t offset) {
  std::vector<float> out(size_t(b * h * s * d));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t hi = 0; hi < h; ++hi)
        for (int64_t di = 0; di < d; ++di)
          out[size_t(((bi * h + hi) * s + si) * d + di)] =
              x[size_t((bi * s + si) * rowStride + offset + hi * d + di)];
  return out;
}

/// [B, H, S, D] -> [B, S, H*D]
std::vector<float> mergeHeads(const std::vector<float> &x, int64_t b, int64_t h, int64_t s,
                              int64_t d) {
  std::vector<float> out(x.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          out[size_t(((bi * s + si) * h + hi) * d + di)] =
              x[size_t(((bi * h + hi) * s + si) * d + di)];
  return out;
}

/// Concatenates [B, H, P, D] and [B, H, S, D] along the sequence.
std::vector<float> concatSeq(const std::vector<float> &past, int64_t p,
                             const std::vector<float> &cur, int64_t s, int64_t b, int64_t h,
                             int64_t d) {
  std::vector<float> out(size_t(b * h * (p + s) * d));
  for (int64_t bh = 0; bh < b * h; ++bh) {
    std::copy(past.begin() + bh * p * d, past.begin() + (bh + 1) * p * d,
              out.begin() + bh * (p + s) * d);
    std::copy(cur.begin() + bh * s * d, cur.begin() + (bh + 1) * s * d,
              out.begin() + bh * (p + s) * d + p * d);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The core
//===----------------------------------------------------------------------===//

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
                  std::vector<float> &out) {
  out.assign(size_t(a.b * a.hq * a.sq * a.dv), 0.0f);
  if (a.qkOut)
    a.qkOut->assign(size_t(a.b * a.hq * a.sq * a.skv), 0.0f);
  int64_t group = a.hq / a.hkv;
  pool.parallelFor(a.b * a.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> scores(size_t(a.skv));
    std::vector<uint8_t> allowed(size_t(a.skv));
    std::vector<double> acc(size_t(a.dv));
    for (int64_t bh = r0; bh < r1; ++bh) {
      int64_t bi = bh / a.hq, h = bh % a.hq, hk = h / group;
      const float *kb = k.data() + (bi * a.hkv + hk) * a.skv * a.d;
      const float *vb = v.data() + (bi * a.hkv + hk) * a.skv * a.dv;
      for (int64_t i = 0; i < a.sq; ++i) {
        const float *qi = q.data() + ((bi * a.hq + h) * a.sq + i) * a.d;
        int64_t pos = i + (a.offset.empty() ? 0 : a.offset[size_t(bi)]);
        float *qk = a.qkOut ? a.qkOut->data() + ((bi * a.hq + h) * a.sq + i) * a.skv : nullptr;
        for (int64_t j = 0; j < a.skv; ++j) {
          const float *kj = kb + j * a.d;
          float dot = 0;
          for (int64_t t = 0; t < a.d; ++t)
            dot += qi[t] * kj[t];
          float s = dot * a.scale;
          if (qk && a.qkMode == 0)
            qk[j] = s;
          if (a.softcap > 0)
            s = a.softcap * std::tanh(s / a.softcap);
          if (qk && a.qkMode == 1)
            qk[j] = s;
          bool ok = true;
          if (a.causal && j > pos)
            ok = false;
          if (a.leftWindow >= 0 && j < pos - a.leftWindow)
            ok = false;
          if (a.rightWindow >= 0 && j > pos + a.rightWindow)
            ok = false;
          if (!a.keyLimit.empty() && j >= a.keyLimit[size_t(bi)])
            ok = false;
          if (!a.keyStart.empty() && j < a.keyStart[size_t(bi)])
            ok = false;
          if (a.boolMask) {
            const BiasView &m = a.boolView;
            if (j >= m.columns ||
                !a.boolMask[bi * m.sb + h * m.sh + i * m.sq + j * m.st])
              ok = false;
          }
          for (const BiasView &bv : a.biases) {
            if (j < bv.columns)
              s += bv.data[bi * bv.sb + h * bv.sh + i * bv.sq + j * bv.st];
            else if (a.onnxSemantics)
              ok = false; // a mask shorter than the keys pads with -inf
          }
          if (!ok) {
            if (a.onnxSemantics)
              s = -INFINITY;
            else
              s += a.disallowedBias;
          }
          allowed[size_t(j)] = a.onnxSemantics ? ok && s != -INFINITY : 1;
          scores[size_t(j)] = s;
          if (qk && a.qkMode == 2)
            qk[j] = s;
        }
        double mx = -INFINITY;
        for (int64_t j = 0; j < a.skv; ++j)
          if (allowed[size_t(j)])
            mx = std::max(mx, double(scores[size_t(j)]));
        double extra = a.sink ? double(a.sink[h]) : (a.smooth ? 0.0 : -INFINITY);
        if (a.sink || a.smooth)
          mx = std::max(mx, extra);
        float *o = out.data() + ((bi * a.hq + h) * a.sq + i) * a.dv;
        if (mx == -INFINITY) // no key left: a zero row (ONNX)
          continue;
        double sum = (a.sink || a.smooth) ? std::exp(extra - mx) : 0.0;
        std::vector<double> p(size_t(a.skv), 0.0);
        for (int64_t j = 0; j < a.skv; ++j)
          if (allowed[size_t(j)])
            sum += (p[size_t(j)] = std::exp(double(scores[size_t(j)]) - mx));
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < a.skv; ++j) {
          if (p[size_t(j)] == 0)
            continue;
          double w = p[size_t(j)] / sum;
          if (qk && a.qkMode == 3)
            qk[j] = float(w);
          const float *vj = vb + j * a.dv;
          for (int64_t t = 0; t < a.dv; ++t)
            acc[size_t(t)] += w * vj[t];
        }
        for (int64_t t = 0; t < a.dv; ++t)
          o[t] = float(acc[size_t(t)]);
      }
    }
  });
}

/// The bias view of a mask/bias tensor broadcast to [B, H, Sq, T].
Status biasView(const KernelCall &call, const Tensor &m, int64_t b, int64_t h, int64_t sq,
                BiasView &view, const float *data) {
  Shape s = m.shape();
  if (s.size() < 2 || s.size() > 4)
    return call.fail("mask/bias " + m.describe() + " must have rank 2 to 4");
  while (s.size() < 4)
    s.insert(s.begin(), 1);
  Shape st = stridesOf(s);
  auto dimOk = [](int64_t have, int64_t want) { return have == want || have == 1; };
  if (!dimOk(s[0], b) || !dimOk(s[1], h) || !dimOk(s[2], sq))
    return call.fail("mask/bias " + m.describe() + " does not broadcast to [" +
                     std::to_string(b) + ", " + std::to_string(h) + ", " + std::to_string(sq) +
                     ", T]");
  view.data = data;
  view.sb = s[0] == 1 ? 0 : st[0];
  view.sh = s[1] == 1 ? 0 : st[1];
  view.sq = s[2] == 1 ? 0 : st[2];
  view.st = 1;
  view.columns = s[3];
  return Status::ok();
}

/// Adds a boolean (keep) or additive float mask broadcast to [B, H, Sq, T]
/// to `a`; `values` holds the float mask's f32 copy. `view` gets its extent.
Status attachMask(const KernelCall &call, const Tensor &mask, Attention &a,
                  std::vector<float> &values, BiasView &view) {
  if (mask.dtype() == DType::Bool) {
    LLMC_RETURN_IF_ERROR(biasView(call, mask, a.b, a.hq, a.sq, view, nullptr));
    a.boolMask = mask.data<uint8_t>();
    a.boolView = view;
    return Status::ok();
  }
  LLMC_RETURN_IF_ERROR(toF32(call, mask, values));
  LLMC_RETURN_IF_ERROR(biasView(call, mask, a.b, a.hq, a.sq, view, values.data()));
  a.biases.push_back(view);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ONNX Attention (opsets 23 to 25)
//===----------------------------------------------------------------------===//

Status onnxAttentionKernel(KernelCall &call) {
  const Tensor &Q = *call.input(0), &K = *call.input(1), &V = *call.input(2);
  const Tensor *mask = call.input(3), *pastK = call.input(4), *pastV = call.input(5),
               *nonpad = call.input(6);
  const Attributes &at = *call.attrs;
  int64_t rank = Q.rank();
  if (rank != 3 && rank != 4)
    return call.fail("Q must have rank 3 or 4");
  if (K.rank() != rank || V.rank() != rank)
    return call.fail("Q, K and V must have the same rank");
  Attention a;
  a.b = Q.dim(0);
  if (rank == 4) {
    a.hq = Q.dim(1), a.sq = Q.dim(2), a.d = Q.dim(3);
    a.hkv = K.dim(1), a.skv = K.dim(2), a.dv = V.dim(3);
    if (K.dim(3) != a.d || V.dim(1) != a.hkv || V.dim(2) != a.skv)
      return call.fail("Q, K and V shapes disagree");
  } else {
    std::optional<int64_t> qh = at.optInt("q_num_heads"), kh = at.optInt("kv_num_heads");
    if (!qh || !kh || *qh <= 0 || *kh <= 0)
      return call.fail("3-D inputs need q_num_heads and kv_num_heads");
    a.hq = *qh, a.hkv = *kh, a.sq = Q.dim(1), a.skv = K.dim(1);
    if (Q.dim(2) % a.hq || K.dim(2) % a.hkv || V.dim(2) % a.hkv)
      return call.fail("hidden sizes are not divisible by the head counts");
    a.d = Q.dim(2) / a.hq, a.dv = V.dim(2) / a.hkv;
    if (K.dim(2) / a.hkv != a.d)
      return call.fail("Q and K head sizes differ");
  }
  if (a.hq % a.hkv)
    return call.fail("q_num_heads must be a multiple of kv_num_heads");
  std::vector<float> q, k, v;
  LLMC_RETURN_IF_ERROR(toF32(call, Q, q));
  LLMC_RETURN_IF_ERROR(toF32(call, K, k));
  LLMC_RETURN_IF_ERROR(toF32(call, V, v));
  if (rank == 3) {
    q = splitHeads(q, a.b, a.sq, a.hq, a.d, a.hq * a.d, 0);
    k = splitHeads(k, a.b, a.skv, a.hkv, a.d, a.hkv * a.d, 0);
    v = splitHeads(v, a.b, a.skv, a.hkv, a.dv, a.hkv * a.dv, 0);
  }
  int64_t past = 0;
  if ((pastK == nullptr) != (pastV == nullptr))
    return call.fail("past_key and past_value go together");
  if (pastK) {
    if (pastK->rank() != 4 || pastK->dim(0) != a.b || pastK->dim(1) != a.hkv ||
        pastK->dim(3) != a.d || pastV->dim(2) != pastK->dim(2) || pastV->dim(3) != a.dv)
      return call.fail("past_key/past_value do not match K and V");
    past = pastK->dim(2);
    std::vector<float> pk, pv;
    LLMC_RETURN_IF_ERROR(toF32(call, *pastK, pk));
    LLMC_RETURN_IF_ERROR(toF32(call, *pastV, pv));
    k = concatSeq(pk, past, k, a.skv, a.b, a.hkv, a.d);
    v = concatSeq(pv, past, v, a.skv, a.b, a.hkv, a.dv);
    a.skv += past;
  }
  a.scale = float(at.getFloat("scale", 1.0 / std::sqrt(double(a.d))));
  // The spec scales Q and K by sqrt(scale) each; the product is the same.
  a.softcap = float(at.getFloat("softcap", 0.0));
  a.causal = at.getInt("is_causal", 0) != 0;
  a.offset.assign(size_t(a.b), past);
  if (nonpad) {
    if (nonpad->numel() != a.b)
      return call.fail("nonpad_kv_seqlen must have one entry per batch");
    for (int64_t bi = 0; bi < a.b; ++bi) {
      int64_t n = nonpad->data<int64_t>()[bi];
      if (n < 0 || n > a.skv)
        return call.fail("nonpad_kv_seqlen " + std::to_string(n) + " is out of range");
      a.keyLimit.push_back(n);
      if (!pastK)
        a.offset[size_t(bi)] = n - a.sq;
    }
  }
  a.leftWindow = at.getInt("left_window_size", -1);
  a.rightWindow = at.getInt("right_window_size", -1);
  std::vector<float> maskValues;
  if (mask) {
    BiasView view;
    LLMC_RETURN_IF_ERROR(attachMask(call, *mask, a, maskValues, view));
    if (view.columns > a.skv)
      return call.fail("attn_mask has more key columns than there are keys");
  }
  std::vector<float> qk;
  bool wantQk = call.wants(3);
  if (wantQk) {
    a.qkMode = int(at.getInt("qk_matmul_output_mode", 0));
    a.qkOut = &qk;
  }
  std::vector<float> out;
  runAttention(*call.pool, a, q, k, v, out);
  if (rank == 3)
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {a.b, a.sq, a.hq * a.dv},
                                 mergeHeads(out, a.b, a.hq, a.sq, a.dv), call.outputs[0]));
  else
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {a.b, a.hq, a.sq, a.dv}, out, call.outputs[0]));
  if (call.outputs.size() > 1)
    LLMC_RETURN_IF_ERROR(fromF32(K.dtype(), {a.b, a.hkv, a.skv, a.d}, k, call.outputs[1]));
  if (call.outputs.size() > 2)
    LLMC_RETURN_IF_ERROR(fromF32(V.dtype(), {a.b, a.hkv, a.skv, a.dv}, v, call.outputs[2]));
  if (wantQk)
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {a.b, a.hq, a.sq, a.skv}, qk, call.outputs[3]));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Rotary embedding
//===----------------------------------------------------------------------===//

/// Rotates the first `rot` channels of every head of x ([B, S, H, D] in
/// f32, in place) with cos/sin rows chosen per (b, s).
template <typename RowOf>
void rotate(std::vector<float> &x, int64_t b, int64_t s, int64_t h, int64_t d, int64_t rot,
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
std::vector<float> swapHeadSeq(const std::vector<float> &x, int64_t b, int64_t a1, int64_t a2,
                               int64_t d) {
  std::vector<float> out(x.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t i = 0; i < a1; ++i)
      for (int64_t j = 0; j < a2; ++j)
        std::copy_n(x.data() + ((bi * a1 + i) * a2 + j) * d, d,
                    out.data() + ((bi * a2 + j) * a1 + i) * d);
  return out;
}

Status readPositions(const KernelCall &call, const Tensor &t, std::vector<int64_t> &out) {
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

//===----------------------------------------------------------------------===//
// ONNX TensorScatter (opset 24)
//===----------------------------------------------------------------------===//

Status tensorScatterKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &update = *call.input(1);
  const Tensor *writeIdx = call.input(2);
  int64_t axis = call.attrs->getInt("axis", -2);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, cache.rank()));
  bool circular = call.attrs->getString("mode", "linear") == "circular";
  if (axis == 0 || update.rank() != cache.rank() || update.dtype() != cache.dtype())
    return call.fail("update must match past_cache except along the sequence axis");
  for (int64_t d = 0; d < cache.rank(); ++d)
    if (d != axis && update.dim(d) != cache.dim(d))
      return call.fail("update " + update.describe() + " does not match " + cache.describe());
  int64_t batch = cache.dim(0), len = cache.dim(axis), n = update.dim(axis);
  if (writeIdx && writeIdx->numel() != batch)
    return call.fail("write_indices must have one entry per batch");
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  int64_t mid = 1, inner = 1; // dims between batch and axis, after axis
  for (int64_t d = 1; d < axis; ++d)
    mid *= cache.dim(d);
  for (int64_t d = axis + 1; d < cache.rank(); ++d)
    inner *= cache.dim(d);
  size_t es = storageSize(cache.dtype()), row = size_t(inner) * es;
  char *dst = static_cast<char *>(out.mutableRaw());
  const char *src = static_cast<const char *>(update.raw());
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t start = writeIdx ? writeIdx->data<int64_t>()[bi] : 0;
    if (start < 0 || (!circular && start + n > len) || (circular && len == 0 && n > 0))
      return call.fail("write index " + std::to_string(start) + " + " + std::to_string(n) +
                       " exceeds the cache length " + std::to_string(len));
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t i = 0; i < n; ++i) {
        int64_t at = circular ? (start + i) % len : start + i;
        std::memcpy(dst + size_t(((bi * mid + m) * len + at)) * row,
                    src + size_t(((bi * mid + m) * n + i)) * row, row);
      }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// com.microsoft Attention (GPT-2 exports)
//===----------------------------------------------------------------------===//

/// Reads an int32/int64 tensor into int64s.
std::vector<int64_t> intsOf(const Tensor &t) {
  std::vector<int64_t> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[size_t(i)] = t.dtype() == DType::Int64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
  return v;
}

/// onnxruntime's mask_index forms, as an additive bias [B, 1|S, T].
Status maskIndexBias(const KernelCall &call, const Tensor &mask, int64_t b, int64_t s,
                     int64_t total, float filter, std::vector<float> &bias, Shape &shape) {
  std::vector<int64_t> m = intsOf(mask);
  if (mask.rank() == 2 && mask.dim(0) == b && mask.dim(1) == total) {
    shape = {b, 1, 1, total};
    bias.resize(size_t(b * total));
    for (size_t i = 0; i < bias.size(); ++i)
      bias[i] = m[i] > 0 ? 0.0f : filter;
    return Status::ok();
  }
  if (mask.rank() == 3 && mask.dim(0) == b && mask.dim(1) == s && mask.dim(2) == total) {
    shape = {b, 1, s, total};
    bias.resize(size_t(b * s * total));
    for (size_t i = 0; i < bias.size(); ++i)
      bias[i] = m[i] > 0 ? 0.0f : filter;
    return Status::ok();
  }
  if (mask.rank() == 1 && (mask.dim(0) == b || mask.dim(0) == 2 * b)) {
    shape = {b, 1, 1, total};
    bias.assign(size_t(b * total), 0.0f);
    for (int64_t bi = 0; bi < b; ++bi) {
      int64_t end = std::clamp<int64_t>(m[size_t(bi)], 0, total);
      for (int64_t j = end; j < total; ++j)
        bias[size_t(bi * total + j)] = filter;
      if (mask.dim(0) == 2 * b) {
        int64_t start = std::clamp<int64_t>(m[size_t(b + bi)], 0, total);
        for (int64_t j = 0; j < start; ++j)
          bias[size_t(bi * total + j)] = filter;
      }
    }
    return Status::ok();
  }
  return call.fail("unsupported mask_index shape " + mask.describe());
}

Status msAttentionKernel(KernelCall &call) {
  const Tensor &X = *call.input(0), &W = *call.input(1);
  const Tensor *bias = call.input(2), *mask = call.input(3), *past = call.input(4),
               *attnBias = call.input(5);
  const Attributes &at = *call.attrs;
  if (call.has(6) || at.getInt("past_present_share_buffer", 0))
    return call.fail("shared past/present buffers are not supported");
  if (at.getInt("do_rotary", 0))
    return call.fail("do_rotary is not supported");
  if (X.rank() != 3 || W.rank() != 2 || W.dim(0) != X.dim(2))
    return call.fail("input must be [B, S, H] and weights [H, W]");
  int64_t n = at.getInt("num_heads", 0), b = X.dim(0), s = X.dim(1), hin = X.dim(2);
  int64_t width = W.dim(1), hq, hk, hv;
  if (const std::vector<int64_t> *sizes = at.getInts("qkv_hidden_sizes")) {
    if (sizes->size() != 3)
      return call.fail("qkv_hidden_sizes needs 3 entries");
    hq = (*sizes)[0], hk = (*sizes)[1], hv = (*sizes)[2];
  } else {
    hq = hk = hv = width / 3;
  }
  if (n <= 0 || hq + hk + hv != width || hq % n || hk % n || hv % n || hq != hk)
    return call.fail("hidden sizes do not fit the weights and num_heads");
  if (bias && bias->numel() != width)
    return call.fail("bias must have " + std::to_string(width) + " entries");
  // Projection: [B*S, Hin] x [Hin, W] (+ bias).
  std::vector<float> x, w, proj(size_t(b * s * width));
  LLMC_RETURN_IF_ERROR(toF32(call, X, x));
  LLMC_RETURN_IF_ERROR(toF32(call, W, w));
  gemmF32(*call.pool, b * s, width, hin, x.data(), hin, 1, w.data(), width, 1, proj.data(), width);
  if (bias) {
    std::vector<float> bv;
    LLMC_RETURN_IF_ERROR(toF32(call, *bias, bv));
    for (int64_t r = 0; r < b * s; ++r)
      for (int64_t c = 0; c < width; ++c)
        proj[size_t(r * width + c)] += bv[size_t(c)];
  }
  Attention a;
  a.b = b, a.hq = a.hkv = n, a.sq = s, a.d = hq / n, a.dv = hv / n;
  std::vector<float> q = splitHeads(proj, b, s, n, a.d, width, 0);
  std::vector<float> k = splitHeads(proj, b, s, n, a.d, width, hq);
  std::vector<float> v = splitHeads(proj, b, s, n, a.dv, width, hq + hk);
  int64_t pastLen = 0;
  if (past) {
    if (past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != b || past->dim(2) != n ||
        past->dim(4) != a.d || hk != hv)
      return call.fail("past must be [2, B, N, P, head_size]");
    pastLen = past->dim(3);
    std::vector<float> pv;
    LLMC_RETURN_IF_ERROR(toF32(call, *past, pv));
    size_t half = pv.size() / 2;
    k = concatSeq(std::vector<float>(pv.begin(), pv.begin() + half), pastLen, k, s, b, n, a.d);
    v = concatSeq(std::vector<float>(pv.begin() + half, pv.end()), pastLen, v, s, b, n, a.dv);
  }
  a.skv = pastLen + s;
  a.scale = float(at.getFloat("scale", 1.0 / std::sqrt(double(a.d))));
  a.onnxSemantics = false;
  float filter = float(at.getFloat("mask_filter_value", -10000.0));
  a.causal = at.getInt("unidirectional", 0) != 0;
  a.offset.assign(size_t(b), pastLen);
  a.disallowedBias = std::numeric_limits<float>::lowest();
  std::vector<float> maskBias, attnBiasF;
  if (mask) {
    Shape shape;
    LLMC_RETURN_IF_ERROR(maskIndexBias(call, *mask, b, s, a.skv, filter, maskBias, shape));
    BiasView view;
    Tensor shaped = Tensor::wrap(DType::Float, shape, maskBias.data());
    LLMC_RETURN_IF_ERROR(biasView(call, shaped, b, n, s, view, maskBias.data()));
    a.biases.push_back(view);
  }
  if (attnBias) {
    LLMC_RETURN_IF_ERROR(toF32(call, *attnBias, attnBiasF));
    BiasView view;
    LLMC_RETURN_IF_ERROR(biasView(call, *attnBias, b, n, s, view, attnBiasF.data()));
    a.biases.push_back(view);
  }
  std::vector<float> out;
  runAttention(*call.pool, a, q, k, v, out);
  LLMC_RETURN_IF_ERROR(
      fromF32(X.dtype(), {b, s, n * a.dv}, mergeHeads(out, b, n, s, a.dv), call.outputs[0]));
  if (call.wants(1)) {
    if (hk != hv)
      return call.fail("present needs equal key and value hidden sizes");
    std::vector<float> present(k);
    present.insert(present.end(), v.begin(), v.end());
    LLMC_RETURN_IF_ERROR(fromF32(X.dtype(), {2, b, n, a.skv, a.d}, present, call.outputs[1]));
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// com.microsoft MultiHeadAttention
//===----------------------------------------------------------------------===//

Status msMultiHeadAttentionKernel(KernelCall &call) {
  const Tensor &Q = *call.input(0);
  const Tensor *K = call.input(1), *V = call.input(2), *bias = call.input(3),
               *padMask = call.input(4), *attnBias = call.input(5), *pastK = call.input(6),
               *pastV = call.input(7);
  const Attributes &at = *call.attrs;
  if (call.has(8) || call.has(9))
    return call.fail("shared buffers and cache indirection are not supported");
  int64_t n = at.getInt("num_heads", 0);
  if (n <= 0 || Q.rank() < 3)
    return call.fail("num_heads must be positive and query at least 3-D");
  int64_t b = Q.dim(0), s = Q.dim(1);
  std::vector<float> qf, kf, vf;
  LLMC_RETURN_IF_ERROR(toF32(call, Q, qf));
  Attention a;
  a.b = b, a.hq = a.hkv = n, a.sq = s;
  std::vector<float> q, k, v;
  std::vector<float> biasF;
  if (bias)
    LLMC_RETURN_IF_ERROR(toF32(call, *bias, biasF));
  auto addBias = [&](std::vector<float> &x, int64_t width, int64_t offset) -> Status {
    if (!bias)
      return Status::ok();
    if (int64_t(biasF.size()) < offset + width)
      return call.fail("bias is too short");
    for (size_t i = 0; i < x.size(); ++i)
      x[i] += biasF[size_t(offset + int64_t(i) % width)];
    return Status::ok();
  };
  bool kvGiven = true; // K/V given as BNSH (cross attention with cached K/V)
  if (Q.rank() == 5) { // packed QKV [B, S, N, 3, h]
    if (K || V || Q.dim(2) != n || Q.dim(3) != 3)
      return call.fail("packed QKV query must be [B, S, N, 3, h] with no key/value");
    a.d = a.dv = Q.dim(4);
    a.skv = s;
    std::vector<float> unpacked[3];
    for (int part = 0; part < 3; ++part) {
      unpacked[part].resize(size_t(b * s * n * a.d));
      for (int64_t i = 0; i < b * s * n; ++i)
        std::copy_n(qf.data() + (i * 3 + part) * a.d, a.d, unpacked[part].data() + i * a.d);
    }
    q = splitHeads(unpacked[0], b, s, n, a.d, n * a.d, 0);
    k = splitHeads(unpacked[1], b, s, n, a.d, n * a.d, 0);
    v = splitHeads(unpacked[2], b, s, n, a.d, n * a.d, 0);
  } else {
    if (Q.rank() != 3 || !K || Q.dim(2) % n)
      return call.fail("query must be [B, S, N*h] with a key");
    a.d = Q.dim(2) / n;
    LLMC_RETURN_IF_ERROR(addBias(qf, Q.dim(2), 0));
    q = splitHeads(qf, b, s, n, a.d, Q.dim(2), 0);
    LLMC_RETURN_IF_ERROR(toF32(call, *K, kf));
    if (K->rank() == 5) { // packed KV [B, L, N, 2, h]
      if (V || K->dim(2) != n || K->dim(3) != 2 || K->dim(4) != a.d)
        return call.fail("packed KV must be [B, L, N, 2, h] with no value");
      a.skv = K->dim(1), a.dv = a.d;
      std::vector<float> parts[2];
      for (int part = 0; part < 2; ++part) {
        parts[part].resize(size_t(b * a.skv * n * a.d));
        for (int64_t i = 0; i < b * a.skv * n; ++i)
          std::copy_n(kf.data() + (i * 2 + part) * a.d, a.d, parts[part].data() + i * a.d);
      }
      k = splitHeads(parts[0], b, a.skv, n, a.d, n * a.d, 0);
      v = splitHeads(parts[1], b, a.skv, n, a.d, n * a.d, 0);
    } else if (K->rank() == 4) { // BNSH key and value
      if (!V || V->rank() != 4 || K->dim(1) != n || K->dim(3) != a.d)
        return call.fail("BNSH key needs a BNSH value");
      a.skv = K->dim(2), a.dv = V->dim(3);
      k = kf;
      LLMC_RETURN_IF_ERROR(toF32(call, *V, v));
      kvGiven = false;
    } else {
      if (!V || K->rank() != 3 || V->rank() != 3 || K->dim(2) != Q.dim(2) || V->dim(2) % n)
        return call.fail("key must be [B, L, N*h] with a [B, L, N*hv] value");
      a.skv = K->dim(1), a.dv = V->dim(2) / n;
      LLMC_RETURN_IF_ERROR(toF32(call, *V, vf));
      LLMC_RETURN_IF_ERROR(addBias(kf, K->dim(2), Q.dim(2)));
      LLMC_RETURN_IF_ERROR(addBias(vf, V->dim(2), 2 * Q.dim(2)));
      k = splitHeads(kf, b, a.skv, n, a.d, K->dim(2), 0);
      v = splitHeads(vf, b, a.skv, n, a.dv, V->dim(2), 0);
    }
  }
  int64_t pastLen = 0;
  if ((pastK == nullptr) != (pastV == nullptr))
    return call.fail("past_key and past_value go together");
  if (pastK && kvGiven) {
    if (pastK->rank() != 4 || pastK->dim(0) != b || pastK->dim(1) != n || pastK->dim(3) != a.d ||
        pastV->dim(2) != pastK->dim(2) || pastV->dim(3) != a.dv)
      return call.fail("past_key/past_value must be [B, N, P, h]");
    pastLen = pastK->dim(2);
    std::vector<float> pk, pv;
    LLMC_RETURN_IF_ERROR(toF32(call, *pastK, pk));
    LLMC_RETURN_IF_ERROR(toF32(call, *pastV, pv));
    k = concatSeq(pk, pastLen, k, a.skv, b, n, a.d);
    v = concatSeq(pv, pastLen, v, a.skv, b, n, a.dv);
    a.skv += pastLen;
  }
  a.scale = float(at.getFloat("scale", 1.0 / std::sqrt(double(a.d))));
  a.onnxSemantics = false;
  a.disallowedBias = std::numeric_limits<float>::lowest();
  a.causal = at.getInt("unidirectional", 0) != 0;
  a.offset.assign(size_t(b), a.skv - s);
  float filter = float(at.getFloat("mask_filter_value", -10000.0));
  std::vector<float> maskBias, attnBiasF;
  if (padMask) {
    Shape shape;
    LLMC_RETURN_IF_ERROR(maskIndexBias(call, *padMask, b, s, a.skv, filter, maskBias, shape));
    Tensor shaped = Tensor::wrap(DType::Float, shape, maskBias.data());
    BiasView view;
    LLMC_RETURN_IF_ERROR(biasView(call, shaped, b, n, s, view, maskBias.data()));
    a.biases.push_back(view);
  }
  if (attnBias) {
    LLMC_RETURN_IF_ERROR(toF32(call, *attnBias, attnBiasF));
    BiasView view;
    LLMC_RETURN_IF_ERROR(biasView(call, *attnBias, b, n, s, view, attnBiasF.data()));
    if (view.columns != a.skv)
      return call.fail("attention_bias must cover all " + std::to_string(a.skv) + " keys");
    a.biases.push_back(view);
  }
  std::vector<float> out, probs;
  if (call.wants(3)) { // qk: the normalised attention probabilities
    a.qkMode = 3;
    a.qkOut = &probs;
  }
  runAttention(*call.pool, a, q, k, v, out);
  LLMC_RETURN_IF_ERROR(
      fromF32(Q.dtype(), {b, s, n * a.dv}, mergeHeads(out, b, n, s, a.dv), call.outputs[0]));
  if (call.outputs.size() > 1)
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {b, n, a.skv, a.d}, k, call.outputs[1]));
  if (call.outputs.size() > 2)
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {b, n, a.skv, a.dv}, v, call.outputs[2]));
  if (call.wants(3))
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {b, n, s, a.skv}, probs, call.outputs[3]));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// com.microsoft GroupQueryAttention
//===----------------------------------------------------------------------===//

Status msGroupQueryAttentionKernel(KernelCall &call) {
  const Tensor &Q = *call.input(0);
  const Tensor *K = call.input(1), *V = call.input(2), *pastK = call.input(3),
               *pastV = call.input(4), &seqlens = *call.input(5), &totalT = *call.input(6),
               *cosC = call.input(7), *sinC = call.input(8), *posIds = call.input(9),
               *attnBias = call.input(10), *sink = call.input(11);
  const Attributes &at = *call.attrs;
  for (size_t i = 12; i <= 16; ++i)
    if (call.has(i))
      return call.fail("quantized caches, Q/K norms and query_seqlens are not supported");
  // A window-sized cache (sliding_window_cache = 1): past and present are
  // buffers of C >= local_window_size rows holding the most recent
  // positions from row 0; when the next tokens do not fit, the oldest
  // G = C - W + 1 rows at a time are dropped (onnxruntime's CPU kernel).
  bool windowCache = at.getInt("sliding_window_cache", 0) != 0;
  int64_t window = at.getInt("local_window_size", -1);
  int64_t nq = at.getInt("num_heads", 0), nkv = at.getInt("kv_num_heads", 0);
  if (nq <= 0 || nkv <= 0 || nq % nkv || Q.rank() != 3)
    return call.fail("num_heads must be a multiple of kv_num_heads and query [B, S, D]");
  int64_t b = Q.dim(0), s = Q.dim(1);
  bool packed = K == nullptr;
  int64_t d = packed ? Q.dim(2) / (nq + 2 * nkv) : Q.dim(2) / nq;
  if (d <= 0 || (packed ? Q.dim(2) != (nq + 2 * nkv) * d : Q.dim(2) != nq * d))
    return call.fail("query hidden size does not split into heads");
  std::vector<float> qf, kf, vf;
  LLMC_RETURN_IF_ERROR(toF32(call, Q, qf));
  std::vector<float> q, k, v;
  if (packed) {
    int64_t w = Q.dim(2);
    q = splitHeads(qf, b, s, nq, d, w, 0);
    k = splitHeads(qf, b, s, nkv, d, w, nq * d);
    v = splitHeads(qf, b, s, nkv, d, w, (nq + nkv) * d);
  } else {
    if (!V || K->rank() != 3 || K->dim(1) != s || K->dim(2) != nkv * d || V->shape() != K->shape())
      return call.fail("key and value must be [B, S, kv_num_heads * head_size]");
    LLMC_RETURN_IF_ERROR(toF32(call, *K, kf));
    LLMC_RETURN_IF_ERROR(toF32(call, *V, vf));
    q = splitHeads(qf, b, s, nq, d, nq * d, 0);
    k = splitHeads(kf, b, s, nkv, d, nkv * d, 0);
    v = splitHeads(vf, b, s, nkv, d, nkv * d, 0);
  }
  std::vector<int64_t> lens = intsOf(seqlens);
  int64_t total;
  LLMC_RETURN_IF_ERROR(readScalarInt(call, totalT, total, "total_sequence_length"));
  if (int64_t(lens.size()) != b)
    return call.fail("seqlens_k must have one entry per batch");
  int64_t pastLen = pastK ? pastK->dim(2) : 0;
  int64_t presentLen = std::max(total, pastLen);
  if (windowCache && (!pastK || window <= 0 || pastLen < window))
    return call.fail("sliding_window_cache needs past buffers of at least local_window_size "
                     "rows");
  if (windowCache && (attnBias || at.getInt("qk_output", 0) != 0))
    return call.fail("attention_bias and qk_output are not supported with sliding_window_cache");
  // Rows of a window-sized cache holding `t` positions.
  auto resident = [&](int64_t t) {
    if (t <= pastLen)
      return t;
    int64_t g = pastLen - window + 1;
    return t - g * ((t - pastLen + g - 1) / g);
  };
  std::vector<float> pk, pv;
  if (pastK) {
    if (!pastV || pastK->rank() != 4 || pastK->dim(0) != b || pastK->dim(1) != nkv ||
        pastK->dim(3) != d || pastV->shape() != pastK->shape())
      return call.fail("past_key/past_value must be [B, kv_num_heads, P, head_size]");
    LLMC_RETURN_IF_ERROR(toF32(call, *pastK, pk));
    LLMC_RETURN_IF_ERROR(toF32(call, *pastV, pv));
  }
  // Rotary embedding of the new Q and K, at their absolute positions.
  std::vector<int64_t> start(static_cast<size_t>(b));
  for (int64_t bi = 0; bi < b; ++bi) {
    int64_t t = lens[size_t(bi)] + 1;
    start[size_t(bi)] = t - s;
    if ((t > presentLen && !windowCache) || t < s)
      return call.fail("seqlens_k[" + std::to_string(bi) + "] + 1 = " + std::to_string(t) +
                       " does not fit sequence length " + std::to_string(s) +
                       " and total length " + std::to_string(presentLen));
  }
  if (at.getInt("do_rotary", 0)) {
    if (!cosC || !sinC)
      return call.fail("do_rotary needs cos_cache and sin_cache");
    std::vector<float> c, sn;
    LLMC_RETURN_IF_ERROR(toF32(call, *cosC, c));
    LLMC_RETURN_IF_ERROR(toF32(call, *sinC, sn));
    int64_t rot = cosC->dim(1) * 2;
    std::vector<int64_t> pos;
    if (posIds)
      LLMC_RETURN_IF_ERROR(readPositions(call, *posIds, pos));
    auto rowOf = [&](int64_t bi, int64_t si) {
      return posIds ? pos[size_t(bi * s + si)] : start[size_t(bi)] + si;
    };
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t si = 0; si < s; ++si)
        if (rowOf(bi, si) < 0 || rowOf(bi, si) >= cosC->dim(0))
          return call.fail("position outside the rotary caches");
    bool inter = at.getInt("rotary_interleaved", 0) != 0;
    std::vector<float> qs = swapHeadSeq(q, b, nq, s, d), ks = swapHeadSeq(k, b, nkv, s, d);
    rotate(qs, b, s, nq, d, rot, inter, c, sn, rowOf);
    rotate(ks, b, s, nkv, d, rot, inter, c, sn, rowOf);
    q = swapHeadSeq(qs, b, s, nq, d);
    k = swapHeadSeq(ks, b, s, nkv, d);
  }
  // The keys: past rows, then the new ones at [first, first + S): first is
  // the absolute start, or for a window-sized cache the rows it holds.
  std::vector<int64_t> first = start;
  int64_t keysLen = presentLen;
  if (windowCache) {
    keysLen = 0;
    for (int64_t bi = 0; bi < b; ++bi) {
      first[size_t(bi)] = resident(start[size_t(bi)]);
      keysLen = std::max(keysLen, first[size_t(bi)] + s);
    }
  }
  std::vector<float> presK(size_t(b * nkv * keysLen * d), 0.0f), presV(presK.size(), 0.0f);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < nkv; ++h) {
      float *dk = presK.data() + (bi * nkv + h) * keysLen * d;
      float *dv = presV.data() + (bi * nkv + h) * keysLen * d;
      int64_t keep = std::min(first[size_t(bi)], pastLen);
      if (pastK) {
        std::copy_n(pk.data() + (bi * nkv + h) * pastLen * d, keep * d, dk);
        std::copy_n(pv.data() + (bi * nkv + h) * pastLen * d, keep * d, dv);
      }
      std::copy_n(k.data() + (bi * nkv + h) * s * d, s * d, dk + first[size_t(bi)] * d);
      std::copy_n(v.data() + (bi * nkv + h) * s * d, s * d, dv + first[size_t(bi)] * d);
    }
  Attention a;
  a.b = b, a.hq = nq, a.hkv = nkv, a.sq = s, a.skv = keysLen, a.d = a.dv = d;
  a.scale = float(at.getFloat("scale", 1.0 / std::sqrt(double(d))));
  a.softcap = float(at.getFloat("softcap", 0.0));
  a.causal = at.getInt("causal", 1) != 0;
  a.offset = first;
  for (int64_t bi = 0; bi < b; ++bi)
    a.keyLimit.push_back(first[size_t(bi)] + s);
  // local_window_size counts the keys a query sees, itself included
  // (onnxruntime's CPU kernel; Mistral's sliding_window).
  if (window > 0)
    a.leftWindow = window - 1;
  a.onnxSemantics = true; // masked keys are skipped, as onnxruntime's GQA does
  std::vector<float> biasF, sinkF;
  if (attnBias) {
    LLMC_RETURN_IF_ERROR(toF32(call, *attnBias, biasF));
    BiasView view;
    LLMC_RETURN_IF_ERROR(biasView(call, *attnBias, b, nq, s, view, biasF.data()));
    view.columns = std::max(view.columns, presentLen); // indexed by absolute key
    a.biases.push_back(view);
  }
  if (sink) {
    if (sink->numel() != nq)
      return call.fail("head_sink must have num_heads entries");
    LLMC_RETURN_IF_ERROR(toF32(call, *sink, sinkF));
    a.sink = sinkF.data();
  } else if (at.getInt("smooth_softmax", -1) > 0) {
    a.smooth = true;
  }
  std::vector<float> out, qk;
  int64_t qkOutput = at.getInt("qk_output", 0);
  if (qkOutput == 1 || qkOutput == 2) { // scores before (1) or after (2) softmax
    a.qkMode = qkOutput == 1 ? 2 : 3;
    a.qkOut = &qk;
  }
  runAttention(*call.pool, a, q, presK, presV, out);
  LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {b, s, nq * d}, mergeHeads(out, b, nq, s, d), call.outputs[0]));
  DType cacheType = pastK ? pastK->dtype() : Q.dtype();
  if (windowCache) { // the last rows that fit, from row 0 of the C-row buffer
    std::vector<float> wk(size_t(b * nkv * pastLen * d), 0.0f), wv(wk.size(), 0.0f);
    for (int64_t bi = 0; bi < b; ++bi) {
      int64_t have = first[size_t(bi)] + s, keep = resident(start[size_t(bi)] + s);
      for (int64_t h = 0; h < nkv; ++h) {
        size_t from = size_t(((bi * nkv + h) * keysLen + have - keep) * d);
        size_t to = size_t((bi * nkv + h) * pastLen * d);
        std::copy_n(presK.data() + from, keep * d, wk.data() + to);
        std::copy_n(presV.data() + from, keep * d, wv.data() + to);
      }
    }
    presK.swap(wk), presV.swap(wv);
    presentLen = pastLen;
  }
  if (qk.empty())
    qk.assign(size_t(b * nq * s * presentLen), 0.0f); // not requested: zeros
  if (call.outputs.size() > 1)
    LLMC_RETURN_IF_ERROR(fromF32(cacheType, {b, nkv, presentLen, d}, presK, call.outputs[1]));
  if (call.outputs.size() > 2)
    LLMC_RETURN_IF_ERROR(fromF32(cacheType, {b, nkv, presentLen, d}, presV, call.outputs[2]));
  if (call.outputs.size() > 3)
    LLMC_RETURN_IF_ERROR(fromF32(Q.dtype(), {b, nq, s, presentLen}, qk, call.outputs[3]));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Transformer-level ops (llm.rope, llm.attention): the reference semantics
// every rewrite of the transformer passes is checked against.
//===----------------------------------------------------------------------===//

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

/// llm.attention: q [B, Sq, Hq, D], k [B, Skv, Hkv, D], v [B, Skv, Hkv, Dv];
/// query i at position Skv - Sq + i; mask broadcast to [B, Hq, Sq, Skv].
Status llmAttentionKernel(KernelCall &call) {
  const Tensor &Q = *call.input(0), &K = *call.input(1), &V = *call.input(2);
  const Tensor *mask = call.input(3);
  const Attributes &at = *call.attrs;
  if (Q.rank() != 4 || K.rank() != 4 || V.rank() != 4)
    return call.fail("q, k and v must be [B, S, H, D]");
  Attention a;
  a.b = Q.dim(0), a.sq = Q.dim(1), a.hq = Q.dim(2), a.d = Q.dim(3);
  a.skv = K.dim(1), a.hkv = K.dim(2), a.dv = V.dim(3);
  if (K.dim(0) != a.b || V.dim(0) != a.b || K.dim(3) != a.d || V.dim(1) != a.skv ||
      V.dim(2) != a.hkv)
    return call.fail("q " + Q.describe() + ", k " + K.describe() + " and v " + V.describe() +
                     " disagree");
  if (at.getInt("num_heads", -1) != a.hq || at.getInt("num_kv_heads", -1) != a.hkv ||
      a.hkv == 0 || a.hq % a.hkv)
    return call.fail("num_heads/num_kv_heads do not match q " + Q.describe() + " and k " +
                     K.describe());
  int64_t window = at.getInt("window", 0);
  bool positional = at.getInt("causal", 0) != 0 || window > 0;
  if (positional && a.sq > a.skv) // query positions Skv - Sq + i must exist
    return call.fail("more queries (" + std::to_string(a.sq) + ") than keys (" +
                     std::to_string(a.skv) + ") for causal or windowed attention");
  std::optional<double> scale = at.optFloat("scale");
  if (!scale)
    return call.fail("the scale attribute is missing");
  a.scale = float(*scale);
  a.softcap = float(at.getFloat("softcap", 0.0));
  a.causal = at.getInt("causal", 0) != 0;
  a.offset.assign(size_t(a.b), a.skv - a.sq);
  if (window > 0) // keys at or before position - window are out
    a.leftWindow = window - 1;
  a.onnxSemantics = true;
  std::vector<float> maskValues;
  if (mask) {
    BiasView view;
    LLMC_RETURN_IF_ERROR(attachMask(call, *mask, a, maskValues, view));
    if (view.columns != a.skv)
      return call.fail("mask " + mask->describe() + " must have " + std::to_string(a.skv) +
                       " key columns");
  }
  std::vector<float> q, k, v, out;
  LLMC_RETURN_IF_ERROR(toF32(call, Q, q));
  LLMC_RETURN_IF_ERROR(toF32(call, K, k));
  LLMC_RETURN_IF_ERROR(toF32(call, V, v));
  runAttention(*call.pool, a, swapHeadSeq(q, a.b, a.sq, a.hq, a.d),
               swapHeadSeq(k, a.b, a.skv, a.hkv, a.d), swapHeadSeq(v, a.b, a.skv, a.hkv, a.dv),
               out);
  return fromF32(Q.dtype(), {a.b, a.sq, a.hq, a.dv}, swapHeadSeq(out, a.b, a.hq, a.sq, a.dv),
                 call.outputs[0]);
}

//===----------------------------------------------------------------------===//
// The static KV cache (llm.cache_update, llm.cache_read, llm.cached_attention)
//===----------------------------------------------------------------------===//

/// The i64 scalar operand `t` (one element).
Status scalarI64(const KernelCall &call, const Tensor &t, const char *what, int64_t &out) {
  if (t.dtype() != DType::Int64 || t.numel() != 1)
    return call.fail(std::string(what) + " must be one i64, got " + t.describe());
  out = t.data<int64_t>()[0];
  return Status::ok();
}

Status checkCache(const KernelCall &call, const Tensor &cache, const char *what) {
  if (cache.rank() != 4)
    return call.fail(std::string(what) + " must be [B, H, capacity, D], got " + cache.describe());
  return Status::ok();
}

/// Copies rows [0, rows) of every (batch, head) of a [B, H, M, D] cache into
/// a [B, H, rows, D] tensor or back: `toCache` writes `part` at row `at`.
void copyRows(const Tensor &cache, const Tensor &part, int64_t at, bool toCache) {
  int64_t bh = cache.dim(0) * cache.dim(1), m = cache.dim(2), rows = part.dim(2);
  size_t row = size_t(cache.dim(3)) * storageSize(cache.dtype());
  char *c = static_cast<char *>(cache.mutableRaw());
  char *p = static_cast<char *>(part.mutableRaw());
  for (int64_t i = 0; i < bh; ++i) {
    char *cacheRows = c + (size_t(i * m) + size_t(at)) * row;
    char *partRows = p + size_t(i * rows) * row;
    if (toCache)
      std::memcpy(cacheRows, partRows, size_t(rows) * row);
    else
      std::memcpy(partRows, cacheRows, size_t(rows) * row);
  }
}

Status cacheUpdateKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &update = *call.input(1);
  int64_t pos;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(2), "pos", pos));
  if (update.rank() != 4 || update.dim(0) != cache.dim(0) || update.dim(1) != cache.dim(1) ||
      update.dim(3) != cache.dim(3) || update.dtype() != cache.dtype())
    return call.fail("update " + update.describe() + " does not fit cache " + cache.describe());
  if (pos < 0 || pos + update.dim(2) > cache.dim(2))
    return call.fail("writing positions [" + std::to_string(pos) + ", " +
                     std::to_string(pos + update.dim(2)) + ") past the cache capacity " +
                     std::to_string(cache.dim(2)));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  copyRows(out, update, pos, /*toCache=*/true);
  return Status::ok();
}

/// The [B, H, M, 1] f32 scales of an int8 [B, H, M, D] cache.
Status checkScales(const KernelCall &call, const Tensor &cache, const Tensor &scales,
                   const char *what) {
  if (cache.dtype() != DType::Int8 || scales.dtype() != DType::Float || scales.rank() != 4 ||
      scales.dim(0) != cache.dim(0) || scales.dim(1) != cache.dim(1) ||
      scales.dim(2) != cache.dim(2) || scales.dim(3) != 1)
    return call.fail(std::string(what) + " " + scales.describe() +
                     " are not the f32 [B, H, M, 1] scales of an int8 cache " + cache.describe());
  return Status::ok();
}

Status quantizedCacheUpdateKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &scales = *call.input(1), &update = *call.input(2);
  int64_t pos;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(checkScales(call, cache, scales, "scales"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(3), "pos", pos));
  if (update.rank() != 4 || update.dim(0) != cache.dim(0) || update.dim(1) != cache.dim(1) ||
      update.dim(3) != cache.dim(3))
    return call.fail("update " + update.describe() + " does not fit cache " + cache.describe());
  if (pos < 0 || pos + update.dim(2) > cache.dim(2))
    return call.fail("writing positions [" + std::to_string(pos) + ", " +
                     std::to_string(pos + update.dim(2)) + ") past the cache capacity " +
                     std::to_string(cache.dim(2)));
  std::vector<float> rows;
  LLMC_RETURN_IF_ERROR(toF32(call, update, rows));
  Tensor &out = call.outputs[0], &outScales = call.outputs[1];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(scales.dtype(), scales.shape(), outScales));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  std::memcpy(outScales.mutableRaw(), scales.raw(), scales.bytes());
  int64_t bh = cache.dim(0) * cache.dim(1), m = cache.dim(2), n = update.dim(2), d = cache.dim(3);
  int8_t *q = out.mutableData<int8_t>();
  float *sc = outScales.mutableData<float>();
  for (int64_t i = 0; i < bh; ++i)
    for (int64_t t = 0; t < n; ++t)
      sc[i * m + pos + t] = quantizeKvRow(rows.data() + (i * n + t) * d, d, q + (i * m + pos + t) * d);
  return Status::ok();
}

Status cacheReadKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0);
  int64_t length;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(1), "length", length));
  if (length < 0 || length > cache.dim(2))
    return call.fail("reading " + std::to_string(length) + " rows of a cache of capacity " +
                     std::to_string(cache.dim(2)));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(
      Tensor::allocate(cache.dtype(), {cache.dim(0), cache.dim(1), length, cache.dim(3)}, out));
  copyRows(cache, out, 0, /*toCache=*/false);
  return Status::ok();
}


//===----------------------------------------------------------------------===//
// Flash forms (llm.flash_attention, llm.decode_attention_partial,
// llm.attention_combine): the tiled algorithms themselves, in double
//===----------------------------------------------------------------------===//

/// The operands of an attention over a static cache, as f32 [B, H, S, D]
/// queries and the cache rows 0 .. pos + S.
struct CacheAttention {
  int64_t b, sq, hq, d, hkv, dv, pos, skv, window;
  float scale, softcap;
  bool causal;
  std::vector<float> q, k, v; // q [B, Hq, Sq, D]; k, v [B, Hkv, Skv, D|Dv]
};

Status readCacheAttention(KernelCall &call, CacheAttention &c) {
  const Tensor &Q = *call.input(0), &K = *call.input(1), &V = *call.input(2);
  const Attributes &at = *call.attrs;
  LLMC_RETURN_IF_ERROR(checkCache(call, K, "k_cache"));
  LLMC_RETURN_IF_ERROR(checkCache(call, V, "v_cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(3), "pos", c.pos));
  if (Q.rank() != 4)
    return call.fail("q must be [B, S, H, D], got " + Q.describe());
  c.b = Q.dim(0), c.sq = Q.dim(1), c.hq = Q.dim(2), c.d = Q.dim(3);
  c.hkv = K.dim(1), c.dv = V.dim(3), c.skv = c.pos + c.sq;
  if (K.dim(0) != c.b || V.dim(0) != c.b || K.dim(3) != c.d || V.dim(1) != c.hkv ||
      V.dim(2) != K.dim(2))
    return call.fail("q " + Q.describe() + " and caches " + K.describe() + ", " + V.describe() +
                     " disagree");
  if (at.getInt("num_heads", -1) != c.hq || at.getInt("num_kv_heads", -1) != c.hkv ||
      c.hkv == 0 || c.hq % c.hkv)
    return call.fail("num_heads/num_kv_heads do not match q and the caches");
  if (c.pos < 0 || c.skv > K.dim(2))
    return call.fail("positions [" + std::to_string(c.pos) + ", " + std::to_string(c.skv) +
                     ") do not fit the cache capacity " + std::to_string(K.dim(2)));
  std::optional<double> scale = at.optFloat("scale");
  if (!scale)
    return call.fail("the scale attribute is missing");
  c.scale = float(*scale);
  c.softcap = float(at.getFloat("softcap", 0.0));
  c.causal = at.getInt("causal", 1) != 0;
  c.window = at.getInt("window", 0);
  Tensor keys, values;
  LLMC_RETURN_IF_ERROR(Tensor::allocate(K.dtype(), {c.b, c.hkv, c.skv, c.d}, keys));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(V.dtype(), {c.b, c.hkv, c.skv, c.dv}, values));
  copyRows(K, keys, 0, false);
  copyRows(V, values, 0, false);
  LLMC_RETURN_IF_ERROR(toF32(call, Q, c.q));
  c.q = swapHeadSeq(c.q, c.b, c.sq, c.hq, c.d);
  // int8 caches: each row times its scale.
  auto dequantize = [&](const Tensor &rows, const Tensor &cache, const Tensor *scales,
                        const char *what, std::vector<float> &out) -> Status {
    if (!scales && cache.dtype() == DType::Int8)
      return call.fail(std::string("an int8 ") + what + " needs its kv_scales");
    if (!scales)
      return toF32(call, rows, out);
    LLMC_RETURN_IF_ERROR(checkScales(call, cache, *scales, "kv_scales"));
    int64_t width = rows.dim(3), m = cache.dim(2);
    const int8_t *q = rows.data<int8_t>();
    const float *s = scales->data<float>();
    out.resize(size_t(rows.numel()));
    for (int64_t i = 0; i < rows.dim(0) * rows.dim(1); ++i)
      for (int64_t j = 0; j < c.skv; ++j)
        for (int64_t t = 0; t < width; ++t)
          out[size_t((i * c.skv + j) * width + t)] =
              float(q[(i * c.skv + j) * width + t]) * s[i * m + j];
    return Status::ok();
  };
  if (call.inputs.size() != 4 && call.inputs.size() != 6)
    return call.fail("takes q, k_cache, v_cache, pos and, for int8 caches, their two scales");
  bool scaled = call.inputs.size() == 6;
  LLMC_RETURN_IF_ERROR(dequantize(keys, K, scaled ? call.input(4) : nullptr, "k_cache", c.k));
  LLMC_RETURN_IF_ERROR(dequantize(values, V, scaled ? call.input(5) : nullptr, "v_cache", c.v));
  return Status::ok();
}

Status cachedAttentionKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  Attention a;
  a.b = c.b, a.hq = c.hq, a.hkv = c.hkv, a.sq = c.sq, a.skv = c.skv, a.d = c.d, a.dv = c.dv;
  a.scale = c.scale, a.softcap = c.softcap, a.causal = c.causal;
  a.offset.assign(size_t(c.b), c.pos);
  if (c.window > 0) // keys at or before position - window are out
    a.leftWindow = c.window - 1;
  a.onnxSemantics = true;
  std::vector<float> out;
  runAttention(*call.pool, a, c.q, c.k, c.v, out);
  return fromF32(call.input(0)->dtype(), {c.b, c.sq, c.hq, c.dv},
                 swapHeadSeq(out, c.b, c.hq, c.sq, c.dv), call.outputs[0]);
}

/// Online-softmax state of one query row.
struct OnlineRow {
  double m = -INFINITY, l = 0;
  std::vector<double> acc;
};

/// Folds keys [j0, j1) into `row` for query `i` (absolute position p) of
/// head `h` of batch `bi`.
void foldKeys(const CacheAttention &c, int64_t bi, int64_t h, int64_t i, int64_t p, int64_t j0,
              int64_t j1, OnlineRow &row, std::vector<double> &scores) {
  int64_t hk = h / (c.hq / c.hkv);
  const float *qi = c.q.data() + ((bi * c.hq + h) * c.sq + i) * c.d;
  double blockMax = -INFINITY;
  scores.assign(size_t(j1 - j0), -INFINITY);
  for (int64_t j = j0; j < j1; ++j) {
    if ((c.causal && j > p) || (c.window > 0 && j <= p - c.window))
      continue;
    const float *kj = c.k.data() + ((bi * c.hkv + hk) * c.skv + j) * c.d;
    float dot = 0;
    for (int64_t t = 0; t < c.d; ++t)
      dot += qi[t] * kj[t];
    float s = dot * c.scale;
    if (c.softcap > 0)
      s = c.softcap * std::tanh(s / c.softcap);
    scores[size_t(j - j0)] = s;
    blockMax = std::max(blockMax, double(s));
  }
  if (blockMax == -INFINITY)
    return;
  double m = std::max(row.m, blockMax), alpha = std::exp(row.m - m);
  row.l *= alpha;
  for (double &a : row.acc)
    a *= alpha;
  for (int64_t j = j0; j < j1; ++j) {
    double s = scores[size_t(j - j0)];
    if (s == -INFINITY)
      continue;
    double w = std::exp(s - m);
    row.l += w;
    const float *vj = c.v.data() + ((bi * c.hkv + hk) * c.skv + j) * c.dv;
    for (int64_t t = 0; t < c.dv; ++t)
      row.acc[size_t(t)] += w * vj[t];
  }
  row.m = m;
}

Status flashAttentionKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  int64_t bq = call.attrs->getInt("block_q", 64), bk = call.attrs->getInt("block_k", 64);
  if (bq <= 0 || bk <= 0)
    return call.fail("block_q and block_k must be positive");
  std::vector<float> out(size_t(c.b * c.hq * c.sq * c.dv), 0.0f);
  call.pool->parallelFor(c.b * c.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> scores;
    std::vector<OnlineRow> rows;
    for (int64_t bh = r0; bh < r1; ++bh) {
      int64_t bi = bh / c.hq, h = bh % c.hq;
      for (int64_t q0 = 0; q0 < c.sq; q0 += bq) {
        int64_t q1 = std::min(c.sq, q0 + bq);
        rows.assign(size_t(q1 - q0), OnlineRow());
        for (OnlineRow &r : rows)
          r.acc.assign(size_t(c.dv), 0.0);
        int64_t lastPos = c.pos + q1 - 1, firstPos = c.pos + q0;
        for (int64_t k0 = 0; k0 < c.skv; k0 += bk) {
          int64_t k1 = std::min(c.skv, k0 + bk);
          if (c.causal && k0 > lastPos)
            break; // every later block is in the future of every row
          if (c.window > 0 && k1 - 1 <= firstPos - c.window)
            continue; // wholly before every row's window
          for (int64_t i = q0; i < q1; ++i)
            foldKeys(c, bi, h, i, c.pos + i, k0, k1, rows[size_t(i - q0)], scores);
        }
        for (int64_t i = q0; i < q1; ++i) {
          const OnlineRow &r = rows[size_t(i - q0)];
          float *o = out.data() + ((bi * c.hq + h) * c.sq + i) * c.dv;
          if (r.l > 0)
            for (int64_t t = 0; t < c.dv; ++t)
              o[t] = float(r.acc[size_t(t)] / r.l);
        }
      }
    }
  });
  const Tensor &Q = *call.input(0);
  return fromF32(Q.dtype(), {c.b, c.sq, c.hq, c.dv}, swapHeadSeq(out, c.b, c.hq, c.sq, c.dv),
                 call.outputs[0]);
}

Status decodeAttentionPartialKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  int64_t splits = call.attrs->getInt("num_splits", 0);
  if (splits <= 0)
    return call.fail("num_splits must be positive");
  if (c.sq != 1)
    return call.fail("split-KV attention takes one query token, got " + std::to_string(c.sq));
  c.causal = true;
  int64_t chunk = (c.skv + splits - 1) / splits;
  Tensor &partial = call.outputs[0], &lse = call.outputs[1];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {c.b, splits, c.hq, c.dv}, partial));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {c.b, splits, c.hq}, lse));
  float *po = partial.mutableData<float>(), *lo = lse.mutableData<float>();
  call.pool->parallelFor(c.b * c.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> scores;
    for (int64_t bh = r0; bh < r1; ++bh) {
      int64_t bi = bh / c.hq, h = bh % c.hq;
      for (int64_t sp = 0; sp < splits; ++sp) {
        OnlineRow row;
        row.acc.assign(size_t(c.dv), 0.0);
        int64_t j0 = std::min(c.skv, sp * chunk), j1 = std::min(c.skv, j0 + chunk);
        if (j0 < j1)
          foldKeys(c, bi, h, 0, c.pos, j0, j1, row, scores);
        float *o = po + ((bi * splits + sp) * c.hq + h) * c.dv;
        for (int64_t t = 0; t < c.dv; ++t)
          o[t] = row.l > 0 ? float(row.acc[size_t(t)] / row.l) : 0.0f;
        lo[(bi * splits + sp) * c.hq + h] = row.l > 0 ? float(row.m + std::log(row.l)) : -INFINITY;
      }
    }
  });
  return Status::ok();
}

Status attentionCombineKernel(KernelCall &call) {
  const Tensor &partial = *call.input(0), &lse = *call.input(1);
  if (partial.rank() != 4 || lse.rank() != 3 || partial.dtype() != DType::Float ||
      lse.dtype() != DType::Float || lse.dim(0) != partial.dim(0) ||
      lse.dim(1) != partial.dim(1) || lse.dim(2) != partial.dim(2))
    return call.fail("partial " + partial.describe() + " and lse " + lse.describe() +
                     " do not go together");
  int64_t b = partial.dim(0), splits = partial.dim(1), h = partial.dim(2), dv = partial.dim(3);
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {b, 1, h, dv}, out));
  const float *p = partial.data<float>(), *l = lse.data<float>();
  float *o = out.mutableData<float>();
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      double m = -INFINITY;
      for (int64_t s = 0; s < splits; ++s)
        m = std::max(m, double(l[(bi * splits + s) * h + hi]));
      std::vector<double> acc(size_t(dv), 0.0);
      double total = 0;
      if (m != -INFINITY)
        for (int64_t s = 0; s < splits; ++s) {
          double w = std::exp(double(l[(bi * splits + s) * h + hi]) - m);
          total += w;
          for (int64_t t = 0; t < dv; ++t)
            acc[size_t(t)] += w * p[((bi * splits + s) * h + hi) * dv + t];
        }
      for (int64_t t = 0; t < dv; ++t)
        o[(bi * h + hi) * dv + t] = total > 0 ? float(acc[size_t(t)] / total) : 0.0f;
    }
  return Status::ok();
}

} // namespace

void addAttentionKernels(KernelTable &table) {
  table.add("onnx.attention", onnxAttentionKernel);
  table.add("onnx.rotary_embedding", onnxRotaryEmbeddingKernel);
  table.add("onnx.tensor_scatter", tensorScatterKernel);
  table.add("ms.attention", msAttentionKernel);
  table.add("ms.multi_head_attention", msMultiHeadAttentionKernel);
  table.add("ms.group_query_attention", msGroupQueryAttentionKernel);
  table.add("ms.rotary_embedding", msRotaryEmbeddingKernel);
  table.add("rope", llmRopeKernel);
  table.add("attention", llmAttentionKernel);
  table.add("cache_update", cacheUpdateKernel);
  table.add("quantized_cache_update", quantizedCacheUpdateKernel);
  table.add("cache_read", cacheReadKernel);
  table.add("cached_attention", cachedAttentionKernel);
  table.add("flash_attention", flashAttentionKernel);
  table.add("decode_attention_partial", decodeAttentionPartialKernel);
  table.add("attention_combine", attentionCombineKernel);
}

} // namespace llmc::cpu
