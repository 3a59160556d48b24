//===- Attention.cpp - ONNX, com.microsoft and llm attention --------------===//
//
// The attention operators on the shared core (AttentionCore.h): ONNX
// Attention (opsets 23 to 25), com.microsoft Attention, MultiHeadAttention
// and GroupQueryAttention, and llm.attention, the reference semantics the
// transformer passes' rewrites are checked against. Rotary embeddings:
// Rotary.cpp; caches and the flash forms: KvCache.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/AttentionCore.h"
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

/// out [B, Hq, Sq, Dv] from q [B,Hq,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv].
void core::runAttention(ThreadPool &pool, const Attention &a, const std::vector<float> &q,
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

namespace {

using namespace core;

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
// Masks and biases
//===----------------------------------------------------------------------===//

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
  std::vector<float> maskValues, sinks;
  if (mask) {
    BiasView view;
    LLMC_RETURN_IF_ERROR(attachMask(call, *mask, a, maskValues, view));
    if (view.columns != a.skv)
      return call.fail("mask " + mask->describe() + " must have " + std::to_string(a.skv) +
                       " key columns");
  }
  LLMC_RETURN_IF_ERROR(readSinks(call, a.hq, sinks));
  if (!sinks.empty())
    a.sink = sinks.data();
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

} // namespace

void addAttentionKernels(KernelTable &table) {
  table.add("onnx.attention", onnxAttentionKernel);
  table.add("ms.attention", msAttentionKernel);
  table.add("ms.multi_head_attention", msMultiHeadAttentionKernel);
  table.add("ms.group_query_attention", msGroupQueryAttentionKernel);
  table.add("attention", llmAttentionKernel);
}

} // namespace llmc::cpu
