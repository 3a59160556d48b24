//===- Decode.h - rope and attention over the static KV cache --------------===//
//
// The attention-side kernels of the emitted models, in f32:
//
// rope       x [B, S, N, D] in place of a copy: the first R channels of every
//            head rotated by the angle tables cos/sin [P, R/2] at each
//            token's position (pairs (i, i + R/2), or (2i, 2i + 1) when
//            interleaved); positions [B, S] or [1, S].
// attention  a query row over cache rows lo .. hi of k/v [B, Hkv, capacity,
//            D] (query head h reads kv head h / (Hq / Hkv)); scores scale *
//            q.k, softcap * tanh(s / softcap) when softcap > 0; softmax over
//            the row's scores (one row, never the [S, S] matrix), then the
//            weighted sum of the values. Decode: one query per sequence at
//            `pos`, keys 0 .. pos (the same result as llm.decode_attention_
//            partial + llm.attention_combine, which the fusion pass splits
//            for the split-KV form). Prefill (llm.flash_attention): S
//            queries at pos .. pos + S - 1, causal or not, with a window.
//
// Header-only so libmodel.so compiles them for its -march (the dot products
// and axpys vectorise).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
#define LLMC_RUNTIME_MODEL_KERNELS_DECODE_H

#include "runtime/src/model/kernels/Pointwise.h" // fastExp
#include "runtime/src/model/kernels/Vec.h"

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
  // A row's cos and sin, on the stack for head sizes up to 1024.
  constexpr int64_t kOnStack = 1024;
  float stack[kOnStack];
  std::vector<float> heap(half > kOnStack / 2 ? size_t(2 * half) : 0);
  float *cs = heap.empty() ? stack : heap.data();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      cs[i] = toFloat(cosT[positionOfRow[r] * half + i]);
      cs[half + i] = toFloat(sinT[positionOfRow[r] * half + i]);
    }
    const float *c = cs, *s = cs + half;
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

/// acc += w * v over n elements (v f32, Half or Bf16).
template <typename T> void axpy(float *acc, float w, const T *v, int64_t n) {
  constexpr int L = VecF::kLanes;
  VecF vw = VecF::splat(w);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    VecF::fma(VecF::load(v + i), vw, VecF::load(acc + i)).store(acc + i);
  for (; i < n; ++i)
    acc[i] += w * toFloat(v[i]);
}

/// One query row over keys lo .. hi (inclusive) of one head's cache rows
/// kh/vh ([capacity, D] / [capacity, Dv], f32, Half or Bf16), unnormalised:
/// the scores into `scores` (room for hi - lo + 1), their maximum `m`,
/// acc = sum_j e^(s_j - m) v_j and l = sum_j e^(s_j - m) (max first, so no
/// rescaling). An empty range gives m = -inf, l = 0, acc = 0.
template <typename T>
void attendRowPartial(const float *q, const T *kh, const T *vh, int64_t d, int64_t dv,
                      int64_t lo, int64_t hi, float scale, float softcap, float *scores,
                      float *acc, float &m, float &l) {
  std::fill(acc, acc + dv, 0.f);
  m = -INFINITY, l = 0;
  if (hi < lo)
    return;
  int64_t n = hi - lo + 1;
  for (int64_t j = 0; j < n; ++j) {
    float s = dot(q, kh + (lo + j) * d, d) * scale;
    if (softcap > 0)
      s = softcap * std::tanh(s / softcap);
    scores[j] = s;
    m = std::max(m, s);
  }
  float sum = 0, mx = m;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = fastExp(scores[j] - mx);
    sum += scores[j];
  }
  l = sum;
  for (int64_t j = 0; j < n; ++j)
    axpy(acc, scores[j], vh + (lo + j) * dv, dv);
}

/// The same, normalised: out = softmax-weighted sum of the values (zeros for
/// an empty range).
template <typename T>
void attendRow(const float *q, const T *kh, const T *vh, int64_t d, int64_t dv, int64_t lo,
               int64_t hi, float scale, float softcap, float *scores, float *out) {
  float m, l;
  attendRowPartial(q, kh, vh, d, dv, lo, hi, scale, softcap, scores, out, m, l);
  float inv = l > 0 ? 1.f / l : 0.f;
  for (int64_t t = 0; t < dv; ++t)
    out[t] *= inv;
}

/// Split-KV decode: the partial of split `split` of `splits` equal ranges of
/// keys lo .. pos for head h of sequence bi (what attendRowPartial gives),
/// and combineSplits, which merges the splits' (m, l, acc) into the row:
/// out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s, M = max_s m_s.
template <typename T>
void decodeAttentionSplit(const float *q, const T *k, const T *v, int64_t bi, int64_t h,
                          int64_t split, int64_t splits, int64_t hq, int64_t hkv, int64_t d,
                          int64_t dv, int64_t capacity, int64_t pos, int64_t window, float scale,
                          float softcap, float *scratch, float *acc, float &m, float &l) {
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  int64_t n = pos - lo + 1, per = (n + splits - 1) / splits;
  int64_t from = lo + split * per, to = std::min(pos, from + per - 1);
  int64_t hk = h / (hq / hkv);
  attendRowPartial(q + (bi * hq + h) * d, k + (bi * hkv + hk) * capacity * d,
                   v + (bi * hkv + hk) * capacity * dv, d, dv, from, to, scale, softcap, scratch,
                   acc, m, l);
}

inline void combineSplits(const float *acc, const float *m, const float *l, int64_t splits,
                          int64_t dv, float *out) {
  float mx = -INFINITY, total = 0;
  for (int64_t s = 0; s < splits; ++s)
    mx = std::max(mx, m[s]);
  std::fill(out, out + dv, 0.f);
  if (mx == -INFINITY)
    return;
  for (int64_t s = 0; s < splits; ++s) {
    if (m[s] == -INFINITY)
      continue;
    float w = std::exp(m[s] - mx);
    total += w * l[s];
    axpy(out, w, acc + s * dv, dv);
  }
  for (int64_t t = 0; t < dv; ++t)
    out[t] /= total;
}

/// Heads [h0, h1) of sequence bi at position `pos` (one query each): keys
/// 0 .. pos, or pos - window + 1 .. pos when window > 0. `scratch` has room
/// for pos + 1 floats. The caches hold f32, Half or Bf16 (T); q and out f32.
template <typename T>
void decodeAttentionHeads(const float *q, const T *k, const T *v, float *out, int64_t bi,
                          int64_t h0, int64_t h1, int64_t hq, int64_t hkv, int64_t d, int64_t dv,
                          int64_t capacity, int64_t pos, int64_t window, float scale,
                          float softcap, float *scratch) {
  int64_t group = hq / hkv;
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  for (int64_t h = h0; h < h1; ++h) {
    int64_t hk = h / group;
    attendRow(q + (bi * hq + h) * d, k + (bi * hkv + hk) * capacity * d,
              v + (bi * hkv + hk) * capacity * dv, d, dv, lo, pos, scale, softcap, scratch,
              out + (bi * hq + h) * dv);
  }
}

/// Prefill attention over the cache: q [B, S, Hq, D] of tokens at positions
/// pos .. pos + S - 1 (already written to the caches [B, Hkv, capacity, D]),
/// row r = (bi, h, i) of the rows [r0, r1) ordered by (bi, h, i); query i
/// sees keys up to pos + i when causal (else up to pos + S - 1), from
/// pos + i - window + 1 when window > 0. out [B, S, Hq, Dv] f32; `scratch`
/// has room for pos + S floats. No [S, S] score matrix: one row at a time.
template <typename T>
void prefillAttentionRows(const float *q, const T *k, const T *v, float *out, int64_t s,
                          int64_t hq, int64_t hkv, int64_t d, int64_t dv, int64_t capacity,
                          int64_t pos, bool causal, int64_t window, float scale, float softcap,
                          int64_t r0, int64_t r1, float *scratch) {
  int64_t group = hq / hkv;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t i = r % s, h = (r / s) % hq, bi = r / (s * hq), hk = h / group;
    int64_t p = pos + i, hi = causal ? p : pos + s - 1;
    int64_t lo = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
    attendRow(q + ((bi * s + i) * hq + h) * d, k + (bi * hkv + hk) * capacity * d,
              v + (bi * hkv + hk) * capacity * dv, d, dv, lo, hi, scale, softcap, scratch,
              out + ((bi * s + i) * hq + h) * dv);
  }
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
