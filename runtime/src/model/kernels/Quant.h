//===- Quant.h - linear layers over 4- and 8-bit weights ------------------===//
//
// y[m, n] = x[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]) where W is
// stored as llm.quantized_linear keeps it: q (uint8) [N, G, gs * bits / 8],
// row n contiguous, values in order along K, two 4-bit values per byte (low
// nibble first); scales f32 [N, G]; zero points uint8 [N, G] or none
// (2^(bits-1)); W[n, k] = (q - zp[n, g]) * scale[n, g], g = k / gs. The
// bytes are read as they are stored (the same as MatMulNBits'), so a
// pre-quantized model's weights go to weights.bin untouched.
//
// Two ways to compute it:
//
// - int8 activations (quantizedRowsInt8; group sizes that are multiples of
//   32): each row of x is rounded once per call to int8 in blocks of 32
//   values with a scale per block (prepareActivations), in the order the
//   kernel unpacks the weight nibbles, so a step is: load weight bytes,
//   split nibbles (two ANDs and a shift), one integer dot product of u8
//   weights by s8 activations into 32-bit lanes (VNNI vpdpbusd, or
//   vpmaddubsw + vpmaddwd without it), convert, and one FMA by the
//   product of the two scales. The zero point never costs a step: the
//   accumulator starts at -zp x (sum of the activations each lane reads),
//   computed with the activations. AVX-512 steps through 64 values
//   (lanes 0-3 and 8-11 from one block of 32, 4-7 and 12-15 from the
//   next), AVX2 through 32, plain C++ one block at a time.
// - float activations (quantizedRowsF32): the weights dequantized a group
//   at a time in registers, multiplied by x as it is. What MatMulNBits of
//   accuracy_level < 4 and llm.quantized_linear without int8_activations
//   ask for.
//
// Both walk rows of W in blocks of kQuantRows (4) rows for all rows of x
// (x stays in L1, each weight byte is read once per call), so the same
// loop serves decode (M = batch) and prefill (M = prompt rows: the block of
// weight rows stays in L1 while x streams past).
//
// Header-only: libmodel.so compiles it with the artifact's -march.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_QUANT_H
#define LLMC_RUNTIME_MODEL_KERNELS_QUANT_H

#include "runtime/src/model/kernels/Vec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace llmc::model::kernels {

/// Shape of a quantized weight as stored.
struct QuantShape {
  int64_t n = 0, k = 0, groups = 0, groupSize = 0, bits = 0;
  int64_t rowBytes() const { return groups * groupSize * bits / 8; }
  int64_t paddedK() const { return groups * groupSize; }
};

/// Activation values one step of the int8 kernel reads.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
constexpr int64_t kQuantStep = 64;
#elif defined(__AVX2__)
constexpr int64_t kQuantStep = 32;
#else
constexpr int64_t kQuantStep = 32;
#endif
constexpr int64_t kQuantBlock = 32; // activation values per int8 scale
constexpr int64_t kQuantRows = 4;   // weight rows per pass over x

/// The K offset, within its step, of the activation at position p of the
/// step: where the kernel's nibble split puts each weight value. 8-bit
/// weights (and plain C++) keep the natural order.
inline int64_t stepOrder(int64_t p, int64_t bits) {
  if (bits != 4)
    return p;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  // [block A even k, block B even k, A odd k, B odd k], 16 each.
  int64_t quarter = p / 16, r = p % 16;
  return (quarter & 1) * 32 + 2 * r + (quarter >> 1);
#elif defined(__AVX2__)
  return p < 16 ? 2 * p : 2 * (p - 16) + 1; // [even k, odd k]
#else
  return p;
#endif
}

/// The rows of x as the int8 kernel reads them.
struct QuantActivations {
  int64_t rows = 0, paddedK = 0; // paddedK: a multiple of kQuantStep
  std::vector<int8_t> q;         // [rows, paddedK], each step in stepOrder
  std::vector<float> scale;      // [rows, paddedK / 4]: the scale of each 4-value lane
  std::vector<int32_t> init;     // [rows, paddedK / 4]: -zp x (lane sum), or -(lane sum)
};

/// Rounds x [M, K] to int8 per block of 32 values (scale = max |x| / 127,
/// round to nearest even) for weights of `shape`; zero points: when the
/// weights carry their own (then init holds -(lane sum), which the kernel
/// multiplies by each group's zero point).
inline void prepareActivations(const float *x, int64_t M, const QuantShape &shape,
                               bool ownZeroPoints, QuantActivations &out) {
  int64_t K = shape.k, Kp = (shape.paddedK() + kQuantStep - 1) / kQuantStep * kQuantStep;
  out.rows = M, out.paddedK = Kp;
  out.q.assign(size_t(M * Kp), 0);
  out.scale.assign(size_t(M * Kp / 4), 0.f);
  out.init.assign(size_t(M * Kp / 4), 0);
  std::vector<float> blockScale(static_cast<size_t>(Kp / kQuantBlock));
  std::vector<int8_t> natural(static_cast<size_t>(Kp));
  int64_t zp = int64_t(1) << (shape.bits - 1);
  for (int64_t m = 0; m < M; ++m) {
    const float *xm = x + m * K;
    for (int64_t b = 0; b < Kp / kQuantBlock; ++b) {
      int64_t k0 = b * kQuantBlock, k1 = std::min(K, k0 + kQuantBlock);
      float amax = 0;
      for (int64_t k = k0; k < k1; ++k)
        amax = std::max(amax, std::fabs(xm[k]));
      float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
      blockScale[size_t(b)] = d;
      for (int64_t k = k0; k < k0 + kQuantBlock; ++k)
        natural[size_t(k)] =
            k < k1 ? int8_t(std::max(-127.f, std::min(127.f, std::nearbyint(xm[k] * inv)))) : 0;
    }
    int8_t *qm = out.q.data() + m * Kp;
    for (int64_t s = 0; s < Kp; s += kQuantStep)
      for (int64_t p = 0; p < kQuantStep; ++p)
        qm[s + p] = natural[size_t(s + stepOrder(p, shape.bits))];
    for (int64_t l = 0; l < Kp / 4; ++l) {
      int64_t s = l * 4 / kQuantStep * kQuantStep, k = s + stepOrder(l * 4 % kQuantStep, shape.bits);
      out.scale[size_t(m * Kp / 4 + l)] = blockScale[size_t(k / kQuantBlock)];
      int32_t sum = qm[4 * l] + qm[4 * l + 1] + qm[4 * l + 2] + qm[4 * l + 3];
      out.init[size_t(m * Kp / 4 + l)] = ownZeroPoints ? -sum : -int32_t(zp) * sum;
    }
  }
}

namespace detail {

/// The weight bytes of step s of a row (kQuantStep values), unpacked to one
/// u8 per value in stepOrder; `avail` bytes remain in the row from there.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
using QVec = __m512i;
inline QVec loadWeights(const uint8_t *p, int64_t avail, int64_t bits) {
  if (bits == 4) {
    __m256i b = avail >= 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))
                            : _mm256_maskz_loadu_epi8(__mmask32((uint64_t(1) << avail) - 1), p);
    __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_and_si256(b, m4), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  return avail >= 64 ? _mm512_loadu_si512(p)
                     : _mm512_maskz_loadu_epi8(__mmask64((uint64_t(1) << avail) - 1), p);
}
/// acc + the dot products of four u8 weights by four s8 activations per
/// 32-bit lane. Without VNNI the 16-bit pair sums saturate beyond 32767, so
/// 8-bit weights go as two nibble halves (15 x 127 x 2 < 32767).
inline __m512i dotLanes(__m512i acc, __m512i w, const int8_t *x, int64_t bits) {
  __m512i xv = _mm512_loadu_si512(x);
#if defined(__AVX512VNNI__)
  (void)bits;
  return _mm512_dpbusd_epi32(acc, w, xv);
#else
  __m512i ones = _mm512_set1_epi16(1);
  if (bits == 4)
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, xv), ones));
  __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
  __m512i dl = _mm512_madd_epi16(_mm512_maddubs_epi16(lo, xv), ones);
  __m512i dh = _mm512_madd_epi16(_mm512_maddubs_epi16(hi, xv), ones);
  return _mm512_add_epi32(acc, _mm512_add_epi32(dl, _mm512_slli_epi32(dh, 4)));
#endif
}
#endif

} // namespace detail

/// Rows [n0, n1) of y [M, N] for every row of the prepared x: the int8
/// activation kernel. Needs shape.groupSize % 32 == 0. scales f32 [N, G];
/// zp uint8 [N, G] or null.
inline void quantizedRowsInt8(const QuantActivations &xa, const QuantShape &shape,
                              const uint8_t *q, const float *scales, const uint8_t *zp,
                              const float *bias, const float *residual, float *y, int64_t n0,
                              int64_t n1) {
  const int64_t M = xa.rows, Kp = xa.paddedK, N = shape.n, G = shape.groups;
  const int64_t bits = shape.bits, rowBytes = shape.rowBytes();
  const int64_t steps = Kp / kQuantStep, stepBytes = kQuantStep * bits / 8;
  const int64_t blocksPerGroup = shape.groupSize / kQuantBlock;
  for (int64_t nb = n0; nb < n1; nb += kQuantRows) {
    const int64_t rows = std::min<int64_t>(kQuantRows, n1 - nb);
    for (int64_t m = 0; m < M; ++m) {
      const int8_t *xq = xa.q.data() + m * Kp;
      const float *xs = xa.scale.data() + m * Kp / 4;
      const int32_t *xi = xa.init.data() + m * Kp / 4;
      float dots[kQuantRows] = {};
#if defined(__AVX512BW__) && defined(__AVX512VL__)
      // Lanes 4-7 and 12-15 (int4) or 8-15 (int8) read the step's second
      // block of 32.
      const __mmask16 second = bits == 4 ? 0xF0F0 : 0xFF00;
      __m512 acc[kQuantRows];
      for (int64_t r = 0; r < kQuantRows; ++r)
        acc[r] = _mm512_setzero_ps();
      for (int64_t s = 0; s < steps; ++s) {
        __m512 xscale = _mm512_loadu_ps(xs + s * 16);
        __m512i init = _mm512_loadu_si512(xi + s * 16);
        int64_t gA = std::min(G - 1, 2 * s / blocksPerGroup);
        int64_t gB = std::min(G - 1, (2 * s + 1) / blocksPerGroup);
        for (int64_t r = 0; r < rows; ++r) {
          int64_t n = nb + r;
          const uint8_t *wp = q + n * rowBytes + s * stepBytes;
          __m512i w = detail::loadWeights(wp, rowBytes - s * stepBytes, bits);
          __m512i start = init;
          if (zp) {
            __m512i z = _mm512_mask_blend_epi32(second, _mm512_set1_epi32(zp[n * G + gA]),
                                                _mm512_set1_epi32(zp[n * G + gB]));
            start = _mm512_mullo_epi32(z, init);
          }
          __m512i dp = detail::dotLanes(start, w, xq + s * kQuantStep, bits);
          const float *sc = scales + n * G;
          __m512 ws = gA == gB ? _mm512_set1_ps(sc[gA])
                               : _mm512_mask_blend_ps(second, _mm512_set1_ps(sc[gA]),
                                                      _mm512_set1_ps(sc[gB]));
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(ws, xscale), acc[r]);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        dots[r] = _mm512_reduce_add_ps(acc[r]);
#else
      // One block of 32 per step: the lanes of a step share both scales.
      for (int64_t s = 0; s < steps; ++s) {
        int64_t g = std::min(G - 1, s / blocksPerGroup);
        for (int64_t r = 0; r < rows; ++r) {
          int64_t n = nb + r;
          const uint8_t *wp = q + n * rowBytes + s * stepBytes;
          int64_t avail = rowBytes - s * stepBytes;
          int32_t z = zp ? int32_t(zp[n * G + g]) : 1;
          int32_t dot = 0;
#if defined(__AVX2__)
          alignas(32) uint8_t tail[32] = {};
          const uint8_t *bytes = wp;
          if (avail < stepBytes) // the row's last bytes, zero-padded
            bytes = static_cast<const uint8_t *>(std::memcpy(tail, wp, size_t(avail)));
          __m256i w;
          if (bits == 4) {
            __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes));
            __m128i m4 = _mm_set1_epi8(0x0f);
            w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m4), _mm_and_si128(b, m4));
          } else {
            w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bytes));
          }
          __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + s * kQuantStep));
          __m256i init = _mm256_mullo_epi32(_mm256_set1_epi32(z),
                                            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xi + s * 8)));
          __m256i ones = _mm256_set1_epi16(1), dp;
          if (bits == 4) {
            dp = _mm256_add_epi32(init, _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), ones));
          } else {
            __m256i m4 = _mm256_set1_epi8(0x0f);
            __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
            __m256i dl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xv), ones);
            __m256i dh = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xv), ones);
            dp = _mm256_add_epi32(init, _mm256_add_epi32(dl, _mm256_slli_epi32(dh, 4)));
          }
          __m128i h = _mm_add_epi32(_mm256_castsi256_si128(dp), _mm256_extracti128_si256(dp, 1));
          h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
          h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
          dot = _mm_cvtsi128_si32(h);
#else
          for (int64_t p = 0; p < kQuantStep; ++p) {
            int64_t i = s * kQuantStep + p; // natural order
            int32_t v = 0;
            if (p * bits / 8 < avail)
              v = bits == 4 ? (wp[p / 2] >> ((p % 2) * 4)) & 15 : wp[p];
            dot += v * int32_t(xq[i]);
          }
          for (int64_t l = 0; l < kQuantStep / 4; ++l)
            dot += z * xi[s * kQuantStep / 4 + l];
#endif
          dots[r] += float(dot) * (scales[n * G + g] * xs[s * kQuantStep / 4]);
        }
      }
#endif
      for (int64_t r = 0; r < rows; ++r)
        y[m * N + nb + r] = linearEpilogue(dots[r], bias, residual, m, nb + r, N);
    }
  }
}

/// Rows [n0, n1) of y [M, N] with x [M, K] used as it is (f32): the weights
/// dequantized one group at a time, exactly as the reference does.
inline void quantizedRowsF32(const float *x, int64_t M, const QuantShape &shape, const uint8_t *q,
                             const float *scales, const uint8_t *zp, const float *bias,
                             const float *residual, float *y, int64_t n0, int64_t n1) {
  constexpr int L = VecF::kLanes;
  const int64_t K = shape.k, N = shape.n, G = shape.groups, gs = shape.groupSize;
  const int64_t bits = shape.bits, rowBytes = shape.rowBytes();
  const float symmetric = float(int64_t(1) << (bits - 1));
  std::vector<float> w(size_t(kQuantRows * gs + L));
  for (int64_t nb = n0; nb < n1; nb += kQuantRows) {
    const int64_t rows = std::min<int64_t>(kQuantRows, n1 - nb);
    std::vector<float> dots(size_t(rows * M), 0.f);
    for (int64_t g = 0; g < G; ++g) {
      int64_t k0 = g * gs, len = std::min(gs, K - k0);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t n = nb + r;
        const uint8_t *wp = q + n * rowBytes + g * gs * bits / 8;
        float z = zp ? float(zp[n * G + g]) : symmetric, s = scales[n * G + g];
        float *wr = w.data() + r * gs;
        if (bits == 4)
          for (int64_t i = 0; i < len; ++i)
            wr[i] = (float((wp[i / 2] >> ((i % 2) * 4)) & 15) - z) * s;
        else
          for (int64_t i = 0; i < len; ++i)
            wr[i] = (float(wp[i]) - z) * s;
      }
      const int64_t lv = len / L * L;
      for (int64_t m = 0; m < M; ++m) {
        const float *xm = x + m * K + k0;
        for (int64_t r = 0; r < rows; ++r) {
          const float *wr = w.data() + r * gs;
          VecF a = VecF::zero();
          for (int64_t i = 0; i < lv; i += L)
            a = VecF::fma(VecF::load(wr + i), VecF::load(xm + i), a);
          float d = VecF::sum(a);
          for (int64_t i = lv; i < len; ++i)
            d += wr[i] * xm[i];
          dots[size_t(r * M + m)] += d;
        }
      }
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t r = 0; r < rows; ++r)
        y[m * N + nb + r] = linearEpilogue(dots[size_t(r * M + m)], bias, residual, m, nb + r, N);
  }
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_QUANT_H
