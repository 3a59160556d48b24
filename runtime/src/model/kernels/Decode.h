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

template <typename T> float dot(const float *a, const T *b, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * toFloat(b[i]);
  return s;
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
      if (s > m) {
        float alpha = m == -INFINITY ? 0.f : std::exp(m - s);
        l *= alpha;
        for (int64_t t = 0; t < dv; ++t)
          acc[t] *= alpha;
        m = s;
      }
      float w = std::exp(s - m);
      l += w;
      const T *vj = vh + j * dv;
#pragma omp simd
      for (int64_t t = 0; t < dv; ++t)
        acc[t] += w * toFloat(vj[t]);
    }
    float *o = out + (bi * hq + h) * dv;
    for (int64_t t = 0; t < dv; ++t)
      o[t] = l > 0 ? acc[t] / l : 0.f;
  }
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
