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
//            for the split-KV form), the query heads that share a kv head
//            together (attendGroupPartial: each cache row read once for
//            them, 4 keys' dot products reduced at once). Prefill (llm.flash_attention): S
//            queries at pos .. pos + S - 1, causal or not, with a window,
//            up to 8 query rows of a head at a time over blocks of 16 keys
//            (attendTile: an online softmax, never more than [8, 16]
//            scores); a few queries per kv head (verification passes of
//            speculative decoding, short prompts) 8 of its rows at a time,
//            the cache rows read as they are (attendByKey: [keys, 8]
//            scores, never [S, S]). Attention sinks (llm.attention's
//            `sinks`, one logit per query head, as double: the attribute's
//            own values; null without) add exp(sink - m) to a row's
//            denominator (m its scores' maximum) and nothing to its values.
//
// The caches hold f32, Half, Bf16 or int8 (T). An int8 cache
// (llm.quantized_cache_update) comes with its f32 scales, one per row
// ([B, Hkv, capacity]): a key's dot product is taken over the int8 values
// and then scaled, a value's weight is scaled before its axpy, so no row is
// ever copied to float. Float caches pass null scales.
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
#include <type_traits>
#include <vector>

namespace llmc::model::kernels {

/// Whether caches of T carry per-row scales (int8).
template <typename T> constexpr bool kScaledCache = std::is_same_v<T, int8_t>;

/// The scales of the head whose rows start at row `first` (null for a float
/// cache).
inline const float *headScales(const float *scales, int64_t first) {
  return scales ? scales + first : nullptr;
}

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
/// kh/vh ([capacity, D] / [capacity, Dv]; ksh/vsh their scales when int8),
/// unnormalised:
/// the scores into `scores` (room for hi - lo + 1), their maximum `m`,
/// acc = sum_j e^(s_j - m) v_j and l = sum_j e^(s_j - m) (max first, so no
/// rescaling). An empty range gives m = -inf, l = 0, acc = 0.
template <typename T>
void attendRowPartial(const float *q, const T *kh, const T *vh, const float *ksh,
                      const float *vsh, int64_t d, int64_t dv, int64_t lo, int64_t hi,
                      float scale, float softcap, float *scores, float *acc, float &m, float &l) {
  std::fill(acc, acc + dv, 0.f);
  m = -INFINITY, l = 0;
  if (hi < lo)
    return;
  int64_t n = hi - lo + 1;
  for (int64_t j = 0; j < n; ++j) {
    float s = dot(q, kh + (lo + j) * d, d);
    if constexpr (kScaledCache<T>)
      s *= ksh[lo + j];
    s *= scale;
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
  for (int64_t j = 0; j < n; ++j) {
    float w = scores[j];
    if constexpr (kScaledCache<T>)
      w *= vsh[lo + j];
    axpy(acc, w, vh + (lo + j) * dv, dv);
  }
}

/// 1 / the softmax denominator of a row whose scores have maximum m and
/// sum of exps l, with a sink's share (sink = -inf: none); 0 for a row with
/// no key.
inline float rowNorm(float m, float l, float sink) {
  return l > 0 ? 1.f / (l + std::exp(sink - m)) : 0.f;
}

/// A row's sink: sinks[h], or -inf without sinks.
inline float sinkOf(const double *sinks, int64_t h) {
  return sinks ? float(sinks[h]) : -INFINITY;
}

/// The same, normalised: out = softmax-weighted sum of the values (zeros for
/// an empty range), with the row's `sink` (-inf: none).
template <typename T>
void attendRow(const float *q, const T *kh, const T *vh, const float *ksh, const float *vsh,
               int64_t d, int64_t dv, int64_t lo, int64_t hi, float scale, float softcap,
               float *scores, float *out, float sink = -INFINITY) {
  float m, l;
  attendRowPartial(q, kh, vh, ksh, vsh, d, dv, lo, hi, scale, softcap, scores, out, m, l);
  float inv = rowNorm(m, l, sink);
  for (int64_t t = 0; t < dv; ++t)
    out[t] *= inv;
}

/// Query rows per pass of attendGroupPartial: its 4-key score accumulators
/// (and its value accumulators, 4 vectors per row) stay in registers.
constexpr int kGroupRows = VecF::kLanes >= 16 ? 4 : 2;

/// Calls f(std::integral_constant<int, R>()) for R = rows (1 ..
/// kGroupRows): the row count as a constant, so the accumulators of a pass
/// are registers and no padded row is computed.
template <typename F> void withRows(int rows, F &&f) {
  switch (rows) {
  case 1: f(std::integral_constant<int, 1>()); break;
  case 2: f(std::integral_constant<int, 2>()); break;
  case 3: if constexpr (kGroupRows >= 3) f(std::integral_constant<int, 3>()); break;
  default: if constexpr (kGroupRows >= 4) f(std::integral_constant<int, 4>()); break;
  }
}

/// R query rows qg' scores over keys lo .. lo + n - 1 of rows kh (scaled by
/// ksh when int8), into rows of `scores` (stride n): 4 keys at a time, R x 4
/// vector accumulators, each key row loaded once for the R rows and the 4
/// keys' dot products reduced in one tree (VecF::sum4).
template <int R, typename T>
void scoreRows(const float *const *qg, const T *kh, const float *ksh, int64_t d, int64_t lo,
               int64_t n, float scale, float softcap, float *scores) {
  constexpr int L = VecF::kLanes;
  int64_t dvec = d / L * L;
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    int keys = int(std::min<int64_t>(4, n - j0));
    const T *kr[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
      kr[c] = kh + (lo + j0 + std::min(c, keys - 1)) * d;
    VecF a[R][4];
#pragma GCC unroll 4
    for (int g = 0; g < R; ++g)
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c)
        a[g][c] = VecF::zero();
    for (int64_t t = 0; t < dvec; t += L) {
      VecF kv[4];
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c)
        kv[c] = VecF::load(kr[c] + t);
#pragma GCC unroll 4
      for (int g = 0; g < R; ++g) {
        VecF qv = VecF::load(qg[g] + t);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
          a[g][c] = VecF::fma(qv, kv[c], a[g][c]);
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < R; ++g) {
      float dots[4];
      VecF::sum4(a[g][0], a[g][1], a[g][2], a[g][3], dots);
      for (int c = 0; c < keys; ++c) {
        float sc = dots[c];
        for (int64_t t = dvec; t < d; ++t)
          sc += qg[g][t] * toFloat(kr[c][t]);
        if constexpr (kScaledCache<T>)
          sc *= ksh[lo + j0 + c];
        sc *= scale;
        if (softcap > 0)
          sc = softcap * std::tanh(sc / softcap);
        scores[g * n + j0 + c] = sc;
      }
    }
  }
}

/// R query rows' P V over values lo .. lo + n - 1 (rows of vh, scaled by
/// vsh when int8) for channels t0 .. t0 + NV * L: acc rows (stride
/// accStride) = sum_j w[g][j] v_j. Each value row is loaded once for all
/// the rows.
template <int NV, int R, typename T>
void valueBlock(const float *const *w, const T *vh, const float *vsh, int64_t dv, int64_t lo,
                int64_t n, int64_t t0, float *acc, int64_t accStride) {
  constexpr int L = VecF::kLanes;
  VecF a[R][NV];
#pragma GCC unroll 4
  for (int g = 0; g < R; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      a[g][v] = VecF::zero();
  for (int64_t j = 0; j < n; ++j) {
    const T *vr = vh + (lo + j) * dv + t0;
    float vscale = 1.f;
    if constexpr (kScaledCache<T>)
      vscale = vsh[lo + j];
    VecF wj[R];
#pragma GCC unroll 4
    for (int g = 0; g < R; ++g)
      wj[g] = VecF::splat(w[g][j] * vscale);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      VecF vv = VecF::load(vr + v * L);
#pragma GCC unroll 4
      for (int g = 0; g < R; ++g)
        a[g][v] = VecF::fma(wj[g], vv, a[g][v]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < R; ++g)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      a[g][v].store(acc + g * accStride + t0 + v * L);
}

/// P V for G rows of weights (rows of `w`, stride n: the weights of values
/// lo .. lo + n - 1, rows of vh, scaled by vsh when int8): acc row g (at acc
/// + g * accStride) = sum_j w[g][j] v_j. Blocks of up to 4 vectors of
/// channels through valueBlock, kGroupRows rows at a time, then the scalar
/// tail.
template <typename T>
void weightedValues(const float *weights, int64_t G, int64_t n, const T *vh, const float *vsh,
                    int64_t dv, int64_t lo, float *acc, int64_t accStride) {
  constexpr int L = VecF::kLanes;
  for (int64_t g0 = 0; g0 < G; g0 += kGroupRows) {
    int rows = int(std::min<int64_t>(kGroupRows, G - g0));
    float *ag = acc + g0 * accStride;
    withRows(rows, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const float *w[R];
      for (int g = 0; g < R; ++g)
        w[g] = weights + (g0 + g) * n;
      int64_t t0 = 0;
      for (; t0 + 4 * L <= dv; t0 += 4 * L)
        valueBlock<4, R>(w, vh, vsh, dv, lo, n, t0, ag, accStride);
      switch ((dv - t0) / L) {
      case 3: valueBlock<3, R>(w, vh, vsh, dv, lo, n, t0, ag, accStride); break;
      case 2: valueBlock<2, R>(w, vh, vsh, dv, lo, n, t0, ag, accStride); break;
      case 1: valueBlock<1, R>(w, vh, vsh, dv, lo, n, t0, ag, accStride); break;
      default: break;
      }
      for (int64_t t = dv / L * L; t < dv; ++t)
        for (int g = 0; g < R; ++g) {
          float sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            float wj = w[g][j];
            if constexpr (kScaledCache<T>)
              wj *= vsh[lo + j];
            sum += wj * toFloat(vh[(lo + j) * dv + t]);
          }
          ag[g * accStride + t] = sum;
        }
    });
  }
}

/// G query rows q (rows of D one after another: the query heads that share
/// one kv head) over keys lo .. hi (inclusive) of that head's cache rows
/// kh/vh ([capacity, D] / [capacity, Dv]; ksh/vsh their scales when int8),
/// unnormalised: for row g, its maximum score m[g * mlStride], acc row g
/// (at acc + g * accStride) = sum_j e^(s_j - m) v_j and l[g * mlStride] =
/// sum_j e^(s_j - m). An empty range gives m = -inf, l = 0, acc = 0. The
/// rows go kGroupRows at a time through scoreRows and valueBlock, which read
/// each key and value row once for them. `scores` has room for
/// G * (hi - lo + 1) floats.
template <typename T>
void attendGroupPartial(const float *q, int64_t G, const T *kh, const T *vh, const float *ksh,
                        const float *vsh, int64_t d, int64_t dv, int64_t lo, int64_t hi,
                        float scale, float softcap, float *scores, float *acc, int64_t accStride,
                        float *m, float *l, int64_t mlStride) {
  for (int64_t g = 0; g < G; ++g) {
    std::fill(acc + g * accStride, acc + g * accStride + dv, 0.f);
    m[g * mlStride] = -INFINITY, l[g * mlStride] = 0;
  }
  if (hi < lo)
    return;
  int64_t n = hi - lo + 1;
  for (int64_t g0 = 0; g0 < G; g0 += kGroupRows) {
    int rows = int(std::min<int64_t>(kGroupRows, G - g0));
    withRows(rows, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const float *qg[R];
      for (int g = 0; g < R; ++g)
        qg[g] = q + (g0 + g) * d;
      scoreRows<R>(qg, kh, ksh, d, lo, n, scale, softcap, scores + g0 * n);
    });
  }
  // Softmax weights (max first, so no rescaling).
  for (int64_t g = 0; g < G; ++g) {
    float *sg = scores + g * n, mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j)
      mx = std::max(mx, sg[j]);
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      sg[j] = fastExp(sg[j] - mx);
      sum += sg[j];
    }
    m[g * mlStride] = mx, l[g * mlStride] = sum;
  }
  weightedValues(scores, G, n, vh, vsh, dv, lo, acc, accStride);
}

/// Split-KV decode: the partials of split `split` of `splits` equal ranges of
/// keys lo .. pos for the query heads of kv head hk of sequence bi (what
/// attendGroupPartial gives: acc rows at stride accStride, m and l at
/// stride mlStride), and combineSplits, which merges the splits' (m, l,
/// acc) into the row: out = sum_s e^(m_s - M) acc_s / (sum_s e^(m_s - M) l_s
/// + e^(sink - M)), M = max_s m_s (sink -inf: none). `scratch` has room for
/// (Hq / Hkv) * (pos + 1) floats.
template <typename T>
void decodeAttentionSplit(const float *q, const T *k, const T *v, const float *ks,
                          const float *vs, int64_t bi, int64_t hk, int64_t split, int64_t splits,
                          int64_t hq, int64_t hkv, int64_t d, int64_t dv, int64_t capacity,
                          int64_t pos, int64_t window, float scale, float softcap, float *scratch,
                          float *acc, int64_t accStride, float *m, float *l, int64_t mlStride) {
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  int64_t n = pos - lo + 1, per = (n + splits - 1) / splits;
  int64_t from = lo + split * per, to = std::min(pos, from + per - 1);
  int64_t group = hq / hkv, first = (bi * hkv + hk) * capacity;
  attendGroupPartial(q + (bi * hq + hk * group) * d, group, k + first * d, v + first * dv,
                     headScales(ks, first), headScales(vs, first), d, dv, from, to, scale,
                     softcap, scratch, acc, accStride, m, l, mlStride);
}

inline void combineSplits(const float *acc, const float *m, const float *l, int64_t splits,
                          int64_t dv, float *out, float sink = -INFINITY) {
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
  total += std::exp(sink - mx);
  for (int64_t t = 0; t < dv; ++t)
    out[t] /= total;
}

/// The query heads of kv head hk of sequence bi at position `pos` (one query
/// each): keys 0 .. pos, or pos - window + 1 .. pos when window > 0.
/// `scratch` has room for (Hq / Hkv) * (pos + 3) floats. The caches hold
/// f32, Half, Bf16 or int8 (T, with their scales ks/vs [B, Hkv, capacity]);
/// q and out f32; `sinks` [Hq] or null.
template <typename T>
void decodeAttentionHeads(const float *q, const T *k, const T *v, const float *ks,
                          const float *vs, float *out, int64_t bi, int64_t hk, int64_t hq,
                          int64_t hkv, int64_t d, int64_t dv, int64_t capacity, int64_t pos,
                          int64_t window, float scale, float softcap, float *scratch,
                          const double *sinks = nullptr) {
  int64_t group = hq / hkv, h0 = bi * hq + hk * group;
  int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
  int64_t first = (bi * hkv + hk) * capacity;
  // Each row's m and l after the scores.
  float *m = scratch + group * (pos - lo + 1), *l = m + group;
  attendGroupPartial(q + h0 * d, group, k + first * d, v + first * dv, headScales(ks, first),
                     headScales(vs, first), d, dv, lo, pos, scale, softcap, scratch,
                     out + h0 * dv, dv, m, l, 1);
  for (int64_t g = 0; g < group; ++g) {
    float inv = rowNorm(m[g], l[g], sinkOf(sinks, hk * group + g));
    for (int64_t t = 0; t < dv; ++t)
      out[(h0 + g) * dv + t] *= inv;
  }
}

/// Query rows per tile of attendTile (its score accumulators stay in
/// registers: 8 x one AVX-512 vector, 4 x two AVX2 ones) and keys per block.
constexpr int kAttnRows = VecF::kLanes >= 16 ? 8 : 4;
constexpr int64_t kAttnKeys = 16;
/// The largest head size attendTile takes (its buffers are on the stack).
constexpr int64_t kAttnMaxDim = 256;

/// Packs keys from .. from + n - 1 of a head's cache rows kh ([.., D]; ksh
/// their scales when int8) as f32 blocks of kAttnKeys keys transposed: block
/// b is [D][16], element (t, c) key from + 16 b + c's channel t (zero past
/// the n keys).
template <typename T>
void packKeyBlocks(const T *kh, const float *ksh, int64_t d, int64_t from, int64_t n, float *kt) {
  for (int64_t b = 0; b * kAttnKeys < n; ++b) {
    float *blk = kt + b * d * kAttnKeys;
    int64_t keys = std::min<int64_t>(kAttnKeys, n - b * kAttnKeys);
    for (int64_t c = 0; c < kAttnKeys; ++c) {
      int64_t j = from + b * kAttnKeys + c;
      const T *row = kh + j * d;
      float rowScale = 1.f;
      if constexpr (kScaledCache<T>)
        rowScale = c < keys ? ksh[j] : 0.f;
      for (int64_t t = 0; t < d; ++t)
        blk[t * kAttnKeys + c] = c < keys ? toFloat(row[t]) * rowScale : 0.f;
    }
  }
}

/// Flash attention for up to kAttnRows query rows of one head at once:
/// q[i] (f32) sees keys lo[i] .. hi[i], whose transposed blocks packKeyBlocks
/// wrote at kt from key `kbase` on (covering every row's range), and whose
/// values are rows of vh (vsh their scales when int8: folded into the
/// weights). A block's scores for all rows are an outer-product
/// micro-kernel (a broadcast of q[i][t] times one row of the block, no
/// horizontal sums); then an online softmax (running max and sum per row,
/// the accumulator rescaled when the max grows) and P V with each value row
/// loaded once for all rows. Rows past `rows` repeat the last one (computed,
/// not stored). No [S, S] score matrix: a block's [rows][16] only.
template <typename T>
void attendTile(const float *const *q, int rows, const float *kt, int64_t kbase, const T *vh,
                const float *vsh, int64_t d, int64_t dv, const int64_t *lo, const int64_t *hi,
                float scale, float softcap, float *const *out, float sink = -INFINITY) {
  constexpr int L = VecF::kLanes, R = kAttnRows;
  constexpr int V = int(kAttnKeys) / L; // score vectors per row
  alignas(64) float p[R][kAttnKeys];
  alignas(64) float acc[R][kAttnMaxDim];
  const float *qr[R];
  float m[R], l[R];
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (int i = 0; i < R; ++i) {
    qr[i] = q[std::min(i, rows - 1)];
    m[i] = -INFINITY, l[i] = 0;
    std::fill(acc[i], acc[i] + dv, 0.f);
    if (i < rows && lo[i] <= hi[i])
      from = std::min(from, lo[i]), to = std::max(to, hi[i]);
  }
  if (from > to)
    to = from - 1; // no keys: zeros
  else
    from = kbase + (from - kbase) / kAttnKeys * kAttnKeys; // on the blocks' grid
  for (int64_t j0 = from; j0 <= to; j0 += kAttnKeys) {
    const float *blk = kt + (j0 - kbase) * d;
    int64_t n = std::min<int64_t>(kAttnKeys, to - j0 + 1);
    VecF sv[R][V];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v)
        sv[i][v] = VecF::zero();
    for (int64_t t = 0; t < d; ++t) {
      VecF kv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v)
        kv[v] = VecF::load(blk + t * kAttnKeys + v * L);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        VecF a = VecF::splat(qr[i][t]);
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v)
          sv[i][v] = VecF::fma(a, kv[v], sv[i][v]);
      }
    }
    VecF sc = VecF::splat(scale);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v)
        VecF::mul(sv[i][v], sc).store(p[i] + v * L);
    for (int i = 0; i < rows; ++i) {
      float *pi = p[i];
      if (softcap > 0)
        for (int64_t c = 0; c < kAttnKeys; ++c)
          pi[c] = softcap * std::tanh(pi[c] / softcap);
      // Keys outside the row's range (the causal diagonal, a window's
      // edge, the block's tail) only in the blocks that have them.
      if (j0 < lo[i] || j0 + kAttnKeys - 1 > hi[i])
        for (int64_t c = 0; c < kAttnKeys; ++c)
          if (j0 + c < lo[i] || j0 + c > hi[i])
            pi[c] = -INFINITY;
      float blockMax = -INFINITY;
#pragma omp simd reduction(max : blockMax)
      for (int64_t c = 0; c < kAttnKeys; ++c)
        blockMax = std::max(blockMax, pi[c]);
      if (blockMax == -INFINITY) { // no key of this block for the row
        std::fill(pi, pi + kAttnKeys, 0.f);
        continue;
      }
      float mNew = std::max(m[i], blockMax), sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < kAttnKeys; ++c) {
        pi[c] = pi[c] == -INFINITY ? 0.f : fastExp(pi[c] - mNew);
        sum += pi[c];
      }
      if (m[i] != -INFINITY && mNew > m[i]) {
        float corr = fastExp(m[i] - mNew);
        l[i] *= corr;
        for (int64_t t = 0; t < dv; ++t)
          acc[i][t] *= corr;
      }
      m[i] = mNew;
      l[i] += sum;
    }
    for (int i = rows; i < R; ++i)
      std::fill(p[i], p[i] + kAttnKeys, 0.f);
    if constexpr (kScaledCache<T>)
      for (int64_t c = 0; c < n; ++c)
        for (int i = 0; i < rows; ++i)
          p[i][c] *= vsh[j0 + c];
    int64_t t = 0;
    for (; t + L <= dv; t += L) {
      VecF a[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        a[i] = VecF::load(acc[i] + t);
      for (int64_t c = 0; c < n; ++c) {
        VecF vv = VecF::load(vh + (j0 + c) * dv + t);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i)
          a[i] = VecF::fma(VecF::splat(p[i][c]), vv, a[i]);
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        a[i].store(acc[i] + t);
    }
    for (; t < dv; ++t)
      for (int64_t c = 0; c < n; ++c) {
        float vv = toFloat(vh[(j0 + c) * dv + t]);
        for (int i = 0; i < R; ++i)
          acc[i][t] += p[i][c] * vv;
      }
  }
  for (int i = 0; i < rows; ++i) {
    float inv = rowNorm(m[i], l[i], sink);
    for (int64_t t = 0; t < dv; ++t)
      out[i][t] = acc[i][t] * inv;
  }
}

/// The floats prefillAttentionRows needs as scratch: a head's keys packed
/// for attendTile (or one row's scores when the head is too large for it).
inline int64_t prefillAttentionScratch(int64_t capacity, int64_t d) {
  return (capacity + kAttnKeys) * std::max<int64_t>(d, 1);
}

/// Prefill attention over the cache: q [B, S, Hq, D] of tokens at positions
/// pos .. pos + S - 1 (already written to the caches [B, Hkv, capacity, D]),
/// row r = (bi, h, i) of the rows [r0, r1) ordered by (bi, h, i); query i
/// sees keys up to pos + i when causal (else up to pos + S - 1), from
/// pos + i - window + 1 when window > 0. out [B, S, Hq, Dv] f32; `scratch`
/// has prefillAttentionScratch(capacity, D) floats. No [S, S] score matrix:
/// the keys of a head's rows are packed once, then its rows go kAttnRows at
/// a time through attendTile (heads of up to kAttnMaxDim; else one row at a
/// time).
template <typename T>
void prefillAttentionRows(const float *q, const T *k, const T *v, const float *ks,
                          const float *vs, float *out, int64_t s, int64_t hq, int64_t hkv,
                          int64_t d, int64_t dv, int64_t capacity, int64_t pos, bool causal,
                          int64_t window, float scale, float softcap, int64_t r0, int64_t r1,
                          float *scratch, const double *sinks = nullptr) {
  int64_t group = hq / hkv;
  bool tiled = d <= kAttnMaxDim && dv <= kAttnMaxDim;
  auto range = [&](int64_t i, int64_t &lo, int64_t &hi) {
    int64_t p = pos + i;
    hi = causal ? p : pos + s - 1;
    lo = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
  };
  for (int64_t r = r0; r < r1;) {
    int64_t i = r % s, h = (r / s) % hq, bi = r / (s * hq), hk = h / group;
    int64_t first = (bi * hkv + hk) * capacity;
    const T *kh = k + first * d, *vh = v + first * dv;
    const float *ksh = headScales(ks, first), *vsh = headScales(vs, first);
    // This head's rows in the range: its keys packed once for all of them.
    int64_t end = std::min(r1, r - i + s);
    int64_t kbase = 0, klast = -1;
    if (tiled) {
      int64_t unused;
      range(i, kbase, unused);
      range(i + (end - r) - 1, unused, klast);
      packKeyBlocks(kh, ksh, d, kbase, klast - kbase + 1, scratch);
    }
    for (; r < end;) {
      i = r % s;
      int rows = tiled ? int(std::min<int64_t>(kAttnRows, end - r)) : 1;
      const float *qs[kAttnRows];
      float *outs[kAttnRows];
      int64_t los[kAttnRows], his[kAttnRows];
      for (int e = 0; e < rows; ++e) {
        range(i + e, los[e], his[e]);
        qs[e] = q + ((bi * s + i + e) * hq + h) * d;
        outs[e] = out + ((bi * s + i + e) * hq + h) * dv;
      }
      if (tiled)
        attendTile(qs, rows, scratch, kbase, vh, vsh, d, dv, los, his, scale, softcap, outs,
                   sinkOf(sinks, h));
      else
        attendRow(qs[0], kh, vh, ksh, vsh, d, dv, los[0], his[0], scale, softcap, scratch,
                  outs[0], sinkOf(sinks, h));
      r += rows;
    }
  }
}


/// The vectors of attendByKey's scores: 8 lanes wherever AVX2 is (on
/// AVX-512 too: a pass rarely has 16 rows, and some CPUs run 512-bit FMAs
/// on 256-bit units).
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using KeyVec = Vec8;
#else
using KeyVec = VecF;
#endif
/// Query rows per pass of attendByKey: one KeyVec's lanes.
constexpr int64_t kKeyRows = KeyVec::kLanes;
/// Keys per block of attendByKey's scores.
constexpr int kKeyBlock = 8;

/// The floats attendByKey needs as scratch for keys of up to `n` positions.
inline int64_t attendByKeyScratch(int64_t n, int64_t d, int64_t dv) {
  return kKeyRows * (d + dv + 2 * n + kKeyBlock) + kKeyBlock * d;
}

/// Attention for up to kKeyRows query rows of one kv head at once (the
/// query heads of a group and a few positions each: short prefills such as
/// speculative decoding's verification passes): q[r] (f32) sees keys lo[r]
/// .. hi[r] of the head's cache rows kh/vh (ksh/vsh their scales when
/// int8); out[r] the softmax-weighted sum of the values. The queries lie
/// transposed across one vector's lanes, so a key's scores for all rows are
/// one FMA per channel with the key's value broadcast: the cache rows are
/// read as they are (attendTile packs each head's keys first, which a pass
/// of a few rows does not repay; attendGroupPartial reduces every dot
/// product across lanes). Scores of all keys first, stored [key][row], then
/// the softmax across the rows' lanes (max first, so no rescaling), then P V
/// through weightedValues. Keys a row must not see (the causal diagonal, a
/// window's edge) get no weight. `scratch` has attendByKeyScratch(hi - lo +
/// 1 over all rows, d, dv) floats.
template <typename T>
void attendByKey(const float *const *q, int rows, const T *kh, const T *vh, const float *ksh,
                 const float *vsh, int64_t d, int64_t dv, const int64_t *lo, const int64_t *hi,
                 float scale, float softcap, float *scratch, float *const *out,
                 const float *sink = nullptr) {
  constexpr int L = KeyVec::kLanes, B = kKeyBlock;
  int64_t from = INT64_MAX, to = INT64_MIN;
  for (int r = 0; r < rows; ++r)
    if (lo[r] <= hi[r])
      from = std::min(from, lo[r]), to = std::max(to, hi[r]);
  if (from > to) { // no keys: zeros
    for (int r = 0; r < rows; ++r)
      std::fill(out[r], out[r] + dv, 0.f);
    return;
  }
  int64_t n = to - from + 1;
  float *qt = scratch;     // [d][L]: the queries transposed (zero past `rows`)
  float *st = qt + d * L;  // [n + B][L]: scores, then weights
  float *w = st + (n + B) * L; // [rows][n]: the weights by row
  float *acc = w + n * L;  // [rows][dv]
  float *kb = acc + L * dv; // [B][d]: a block of keys in f32 (other than f32 caches)
  std::fill(qt, qt + d * L, 0.f);
  for (int r = 0; r < rows; ++r)
    for (int64_t t = 0; t < d; ++t)
      qt[t * L + r] = q[r][t];
  for (int64_t j0 = 0; j0 < n; j0 += B) {
    int keys = int(std::min<int64_t>(B, n - j0));
    const float *kr[B];
    for (int c = 0; c < B; ++c) {
      int64_t j = from + j0 + std::min(c, keys - 1);
      if constexpr (std::is_same_v<T, float>) {
        kr[c] = kh + j * d;
      } else {
        if (c < keys)
          toF32(kh + j * d, kb + c * d, d);
        kr[c] = kb + std::min(c, keys - 1) * d;
      }
    }
    KeyVec a[B];
#pragma GCC unroll 8
    for (int c = 0; c < B; ++c)
      a[c] = KeyVec::zero();
    for (int64_t t = 0; t < d; ++t) {
      KeyVec qv = KeyVec::load(qt + t * L);
#pragma GCC unroll 8
      for (int c = 0; c < B; ++c)
        a[c] = KeyVec::fma(KeyVec::splat(kr[c][t]), qv, a[c]);
    }
    // All B stored (st has B rows to spare), so the accumulators stay in
    // registers: a store of only the first `keys` makes GCC keep them in
    // memory through the loop above.
#pragma GCC unroll 8
    for (int c = 0; c < B; ++c) {
      float f = scale;
      if constexpr (kScaledCache<T>)
        f *= ksh[from + j0 + std::min(c, keys - 1)];
      KeyVec::mul(a[c], KeyVec::splat(f)).store(st + (j0 + c) * L);
    }
  }
  if (softcap > 0)
    for (int64_t e = 0; e < n * L; ++e)
      st[e] = softcap * std::tanh(st[e] / softcap);
  for (int r = 0; r < rows; ++r) {
    int64_t a = std::clamp(lo[r], from, to + 1), b = std::clamp(hi[r], from - 1, to);
    if (a > b) // no keys: a (from, to]
      a = to + 1, b = to;
    for (int64_t j = from; j < a; ++j)
      st[(j - from) * L + r] = -INFINITY;
    for (int64_t j = b + 1; j <= to; ++j)
      st[(j - from) * L + r] = -INFINITY;
  }
  alignas(64) float mx[L], sum[L];
  std::fill(mx, mx + L, -INFINITY);
  std::fill(sum, sum + L, 0.f);
  for (int64_t j = 0; j < n; ++j)
#pragma omp simd
    for (int r = 0; r < L; ++r)
      mx[r] = std::max(mx[r], st[j * L + r]);
  for (int64_t j = 0; j < n; ++j)
#pragma omp simd
    for (int r = 0; r < L; ++r) {
      float e = st[j * L + r] == -INFINITY ? 0.f : fastExp(st[j * L + r] - mx[r]);
      st[j * L + r] = e;
      sum[r] += e;
    }
  for (int r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      w[r * n + j] = st[j * L + r];
  weightedValues(w, rows, n, vh, vsh, dv, from, acc, dv);
  for (int r = 0; r < rows; ++r) {
    float inv = rowNorm(mx[r], sum[r], sink ? sink[r] : -INFINITY);
    for (int64_t t = 0; t < dv; ++t)
      out[r][t] = acc[r * dv + t] * inv;
  }
}

/// Passes of attendByKey over one kv head's rows in shortPrefillAttention:
/// its query heads (Hq / Hkv) at each of the S positions.
inline int64_t shortPrefillPasses(int64_t s, int64_t hq, int64_t hkv) {
  return (s * (hq / hkv) + kKeyRows - 1) / kKeyRows;
}

/// Prefill attention for a few queries (speculative decoding's
/// verification, short prompts), with prefillAttentionRows' arguments and
/// result: unit u (of B * Hkv * shortPrefillPasses) is pass u % passes over
/// kv head (u / passes) % Hkv of sequence u / (passes * Hkv), whose rows are
/// (position i, query head g of the group) in that order, kKeyRows at a
/// time through attendByKey, the head's keys read once per pass. `scratch`
/// has attendByKeyScratch(capacity, D, Dv) floats.
template <typename T>
void shortPrefillAttention(const float *q, const T *k, const T *v, const float *ks,
                           const float *vs, float *out, int64_t s, int64_t hq, int64_t hkv,
                           int64_t d, int64_t dv, int64_t capacity, int64_t pos, bool causal,
                           int64_t window, float scale, float softcap, int64_t unit,
                           float *scratch, const double *sinks = nullptr) {
  int64_t group = hq / hkv, passes = shortPrefillPasses(s, hq, hkv);
  int64_t pass = unit % passes, hk = (unit / passes) % hkv, bi = unit / (passes * hkv);
  int64_t first = (bi * hkv + hk) * capacity;
  int64_t e0 = pass * kKeyRows, e1 = std::min(s * group, e0 + kKeyRows);
  const float *qs[kKeyRows];
  float *outs[kKeyRows];
  int64_t los[kKeyRows], his[kKeyRows];
  float rowSinks[kKeyRows];
  for (int64_t e = e0; e < e1; ++e) {
    int64_t i = e / group, h = hk * group + e % group, p = pos + i;
    rowSinks[e - e0] = sinkOf(sinks, h);
    qs[e - e0] = q + ((bi * s + i) * hq + h) * d;
    outs[e - e0] = out + ((bi * s + i) * hq + h) * dv;
    his[e - e0] = causal ? p : pos + s - 1;
    los[e - e0] = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
  }
  attendByKey(qs, int(e1 - e0), k + first * d, v + first * dv, headScales(ks, first),
              headScales(vs, first), d, dv, los, his, scale, softcap, scratch, outs,
              sinks ? rowSinks : nullptr);
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_DECODE_H
