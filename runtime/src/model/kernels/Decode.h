//===- Decode.h - rope and attention over the cache for one new token ------===//
//
// The small kernels of a decode step, in f32, for the emitted models:
//
// rope       x [B, S, N, D] in place of a copy: the first R channels of every
//            head rotated by the angle tables cos/sin [P, R/2] at each
//            token's position (pairs (i, i + R/2), or (2i, 2i + 1) when
//            interleaved); positions [B, S] or [1, S].
// attention  one query per sequence, q [B, 1, Hq, D] at position `pos`, over
//            cache rows 0 .. pos (those after pos - window when window > 0)
//            of k/v [B, Hkv, capacity, D]; query head h reads kv head
//            h / (Hq / Hkv); scores scale * q.k, softcap * tanh(s / softcap)
//            when softcap > 0; one online-softmax pass (no score buffer).
//            Out [B, 1, Hq, Dv]. The same result as llm.decode_attention_
//            partial + llm.attention_combine, which the fusion pass splits
//            for the split-KV form.
//
// Header-only so libmodel.so compiles them for its -march (the dot products
// and axpys vectorise).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
#define LLMC_RUNTIME_MODEL_KERNELS_DECODE_H

#include "runtime/src/model/kernels/Gemv.h" // Half, Bf16, toFloat

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace llmc::model::kernels {

/// The tables hold f32, Half or Bf16 (T); x and y are f32.
template <typename T>
void ropeRows(const float *x, float *y, int64_t rows, int64_t heads, int64_t d, int64_t rot,
              bool interleaved, const T *cosT, const T *sinT, const int64_t *positionOfRow) {
  int64_t half = rot / 2;
  std::vector<float> cs(size_t(2 * half));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      cs[size_t(i)] = toFloat(cosT[positionOfRow[r] * half + i]);
      cs[size_t(half + i)] = toFloat(sinT[positionOfRow[r] * half + i]);
    }
    const float *c = cs.data(), *s = cs.data() + half;
    for (int64_t h = 0; h < heads; ++h) {
      const float *xi = x + (r * heads + h) * d;
      float *yi = y + (r * heads + h) * d;
      if (interleaved) {
        for (int64_t i = 0; i < half; ++i) {
          float a = xi[2 * i], b = xi[2 * i + 1];
          yi[2 * i] = a * c[i] - b * s[i];
          yi[2 * i + 1] = b * c[i] + a * s[i];
        }
      } else {
        for (int64_t i = 0; i < half; ++i) {
          float a = xi[i], b = xi[i + half];
          yi[i] = a * c[i] - b * s[i];
          yi[i + half] = b * c[i] + a * s[i];
        }
      }
      for (int64_t i = rot; i < d; ++i)
        yi[i] = xi[i];
    }
  }
}

/// a . b over n elements (b f32, Half or Bf16), in vectors.
template <typename T> float dot(const float *a, const T *b, int64_t n) {
  constexpr int L = VecF::kLanes;
  VecF s0 = VecF::zero(), s1 = VecF::zero();
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = VecF::fma(VecF::load(a + i), VecF::load(b + i), s0);
    s1 = VecF::fma(VecF::load(a + i + L), VecF::load(b + i + L), s1);
  }
  for (; i + L <= n; i += L)
    s0 = VecF::fma(VecF::load(a + i), VecF::load(b + i), s0);
  float s = VecF::sum(VecF::add(s0, s1));
  for (; i < n; ++i)
    s += a[i] * toFloat(b[i]);
  return s;
}

/// acc = acc * alpha + w * v over n elements (v f32, Half or Bf16).
template <typename T> void scaleAdd(float *acc, float alpha, float w, const T *v, int64_t n) {
  constexpr int L = VecF::kLanes;
  VecF va = VecF::splat(alpha), vw = VecF::splat(w);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    VecF::fma(VecF::load(v + i), vw, VecF::mul(VecF::load(acc + i), va)).store(acc + i);
  for (; i < n; ++i)
    acc[i] = acc[i] * alpha + w * toFloat(v[i]);
}

/// Heads [h0, h1) of sequence bi; `acc` has room for Dv floats. The caches
/// hold f32, Half or Bf16 (T); q and out are f32.
template <typename T>
void decodeAttentionHeads(const float *q, const T *k, const T *v, float *out,
                                 int64_t bi, int64_t h0, int64_t h1, int64_t hq, int64_t hkv,
                                 int64_t d, int64_t dv, int64_t capacity, int64_t pos,
                                 int64_t window, float scale, float softcap, float *acc) {
  int64_t group = hq / hkv;
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  for (int64_t h = h0; h < h1; ++h) {
    int64_t hk = h / group;
    const float *qh = q + (bi * hq + h) * d;
    const T *kh = k + (bi * hkv + hk) * capacity * d;
    const T *vh = v + (bi * hkv + hk) * capacity * dv;
    float m = -INFINITY, l = 0;
    std::fill(acc, acc + dv, 0.f);
    for (int64_t j = lo; j <= pos; ++j) {
      float s = dot(qh, kh + j * d, d) * scale;
      if (softcap > 0)
        s = softcap * std::tanh(s / softcap);
      float alpha = 1.f;
      if (s > m) {
        alpha = m == -INFINITY ? 0.f : std::exp(m - s);
        l *= alpha;
        m = s;
      }
      float w = std::exp(s - m);
      l += w;
      scaleAdd(acc, alpha, w, vh + j * dv, dv);
    }
    float *o = out + (bi * hq + h) * dv;
    for (int64_t t = 0; t < dv; ++t)
      o[t] = l > 0 ? acc[t] / l : 0.f;
  }
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
