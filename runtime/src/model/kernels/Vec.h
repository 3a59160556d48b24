//===- Vec.h - the f32 vector the kernel templates are written over -------===//
//
// VecF is one register of floats: 16 lanes with AVX-512, 8 with AVX2 + FMA +
// F16C, 1 in plain C++, chosen by the -march libmodel.so is compiled with.
// It loads f32, IEEE half (Half) and bfloat16 (Bf16) memory, converting as
// it loads, and stores back to each (round to nearest even, NaN kept
// quiet), so a kernel template is written once for the three storage types.
// toF32 / fromF32 convert whole arrays (the f16/bf16 activations of a model
// compiled with --dtype f16/bf16 on their way in and out of f32 kernels).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_VEC_H
#define LLMC_RUNTIME_MODEL_KERNELS_VEC_H

#include "runtime/src/cpu/Numeric.h"

#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace llmc::model::kernels {

/// 16-bit values as stored: IEEE half and bfloat16.
struct Half {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};
inline float toFloat(float x) { return x; }
inline float toFloat(Half h) { return cpu::halfToFloat(h.bits); }
inline float toFloat(Bf16 b) { return cpu::bf16ToFloat(b.bits); }
inline float toFloat(int8_t q) { return float(q); } // an int8 KV cache's values
inline void fromFloat(float v, float &out) { out = v; }
inline void fromFloat(float v, Half &out) { out.bits = cpu::floatToHalf(v); }
inline void fromFloat(float v, Bf16 &out) { out.bits = cpu::floatToBf16(v); }

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/// Eight floats in a 256-bit register: VecF of AVX2 builds, and the narrow
/// tile of AVX-512 builds on CPUs whose AVX-512 runs on 256-bit units
/// (kernels/Packed.h).
struct Vec8 {
  static constexpr int kLanes = 8;
  __m256 v;
  static Vec8 zero() { return {_mm256_setzero_ps()}; }
  static Vec8 splat(float s) { return {_mm256_set1_ps(s)}; }
  static Vec8 load(const float *p) { return {_mm256_loadu_ps(p)}; }
  static Vec8 load(const Half *p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)))};
  }
  static Vec8 load(const Bf16 *p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))};
  }
  static Vec8 load(const int8_t *p) {
    return {_mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))))};
  }
  void store(float *p) const { _mm256_storeu_ps(p, v); }
  void store(Half *p) const {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  void store(Bf16 *p) const {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, quiet, nan);
    // Pack the eight 32-bit values (all < 2^16) to 16 bits, in order.
    __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm_packus_epi32(lo, hi));
  }
  static Vec8 fma(Vec8 a, Vec8 b, Vec8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
  static Vec8 mul(Vec8 a, Vec8 b) { return {_mm256_mul_ps(a.v, b.v)}; }
  static Vec8 add(Vec8 a, Vec8 b) { return {_mm256_add_ps(a.v, b.v)}; }
  static float sum(Vec8 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  /// The four sums of a, b, c and d into out[0..3] (one reduction tree).
  static void sum4(Vec8 a, Vec8 b, Vec8 c, Vec8 d, float *out) {
    __m256 ab = _mm256_hadd_ps(a.v, b.v), cd = _mm256_hadd_ps(c.v, d.v);
    __m256 abcd = _mm256_hadd_ps(ab, cd); // [a b c d | a b c d] partial sums
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }
};
#endif

#if defined(__AVX512F__)
struct VecF {
  static constexpr int kLanes = 16;
  __m512 v;
  static VecF zero() { return {_mm512_setzero_ps()}; }
  static VecF splat(float s) { return {_mm512_set1_ps(s)}; }
  static VecF load(const float *p) { return {_mm512_loadu_ps(p)}; }
  static VecF load(const Half *p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))};
  }
  static VecF load(const Bf16 *p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16))};
  }
  static VecF load(const int8_t *p) {
    return {_mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))))};
  }
  void store(float *p) const { _mm512_storeu_ps(p, v); }
  void store(Half *p) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  void store(Bf16 *p) const {
    // Round to nearest even on the bits; NaN keeps its top bits, made quiet.
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtepi32_epi16(r));
  }
  static VecF fma(VecF a, VecF b, VecF c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  static VecF mul(VecF a, VecF b) { return {_mm512_mul_ps(a.v, b.v)}; }
  static VecF add(VecF a, VecF b) { return {_mm512_add_ps(a.v, b.v)}; }
  static float sum(VecF a) { return _mm512_reduce_add_ps(a.v); }
  /// The four sums of a, b, c and d into out[0..3] (one reduction tree).
  static void sum4(VecF a, VecF b, VecF c, VecF d, float *out) {
    auto half = [](__m512 x) {
      return _mm256_add_ps(_mm512_castps512_ps256(x),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    };
    Vec8::sum4({half(a.v)}, {half(b.v)}, {half(c.v)}, {half(d.v)}, out);
  }
};
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using VecF = Vec8;
#else
struct VecF {
  static constexpr int kLanes = 1;
  float v;
  static VecF zero() { return {0.f}; }
  static VecF splat(float s) { return {s}; }
  template <typename T> static VecF load(const T *p) { return {toFloat(*p)}; }
  template <typename T> void store(T *p) const { fromFloat(v, *p); }
  static VecF fma(VecF a, VecF b, VecF c) { return {a.v * b.v + c.v}; }
  static VecF mul(VecF a, VecF b) { return {a.v * b.v}; }
  static VecF add(VecF a, VecF b) { return {a.v + b.v}; }
  static float sum(VecF a) { return a.v; }
  static void sum4(VecF a, VecF b, VecF c, VecF d, float *out) {
    out[0] = a.v, out[1] = b.v, out[2] = c.v, out[3] = d.v;
  }
};
#endif

/// A linear layer's epilogue for y[m, n] of an [M, N] result: the dot
/// product plus bias[n] and residual[m, n], each when given.
inline float linearEpilogue(float dot, const float *bias, const float *residual, int64_t m,
                            int64_t n, int64_t N) {
  if (bias)
    dot += bias[n];
  if (residual)
    dot += residual[m * N + n];
  return dot;
}

/// A hint to bring the cache line at p into L1 (never faults).
inline void prefetchLine(const void *p) {
#if defined(__AVX512F__) || defined(__AVX2__)
  _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0);
#else
  __builtin_prefetch(p);
#endif
}

/// A hint to bring the cache line at p into L2 only (never faults): for
/// streams whose lines are read well after the hint, where an L1 prefetch
/// would hold a fill buffer the whole time.
inline void prefetchLineL2(const void *p) {
#if defined(__AVX512F__) || defined(__AVX2__)
  _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T1);
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

/// dst[i] = src[i] as f32, i < n.
template <typename T> void toF32(const T *src, float *dst, int64_t n) {
  constexpr int L = VecF::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    VecF::load(src + i).store(dst + i);
  for (; i < n; ++i)
    dst[i] = toFloat(src[i]);
}

/// dst[i] = src[i] rounded to T (nearest even), i < n.
template <typename T> void fromF32(const float *src, T *dst, int64_t n) {
  constexpr int L = VecF::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    VecF::load(src + i).store(dst + i);
  for (; i < n; ++i)
    fromFloat(src[i], dst[i]);
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_VEC_H
