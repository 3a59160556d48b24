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

#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/Vec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace llmc::model::kernels {

/// Shape of a quantized weight as stored.
struct QuantShape {
  int64_t n = 0, k = 0, groups = 0, groupSize = 0, bits = 0;
  int64_t rowBytes() const { return groups * groupSize * bits / 8; }
  int64_t paddedK() const { return groups * groupSize; }
};

/// Value i (along K) of a row of stored values (bits 4 or 8).
template <int Bits> inline int64_t storedValue(const uint8_t *row, int64_t i) {
  if constexpr (Bits == 4)
    return (row[i / 2] >> ((i % 2) * 4)) & 15;
  else
    return row[i];
}

/// Values [k0, k1) of weight row n dequantized, (q - zp) * scale in f32 as
/// the reference kernel computes them, to dst[(k - k0) * stride].
template <int Bits>
void dequantizeRange(const QuantShape &shape, const uint8_t *q, const float *scales,
                     const uint8_t *zp, int64_t n, int64_t k0, int64_t k1, float *dst,
                     int64_t stride) {
  const uint8_t *row = q + n * shape.rowBytes();
  const int64_t G = shape.groups, gs = shape.groupSize;
  const float symmetric = float(int64_t(1) << (Bits - 1));
  for (int64_t g = k0 / gs; g * gs < k1; ++g) {
    const float z = zp ? float(zp[n * G + g]) : symmetric, sc = scales[n * G + g];
    for (int64_t k = std::max(k0, g * gs), e = std::min(k1, (g + 1) * gs); k < e; ++k)
      dst[(k - k0) * stride] = (float(storedValue<Bits>(row, k)) - z) * sc;
  }
}
inline void dequantizeRange(const QuantShape &shape, const uint8_t *q, const float *scales,
                            const uint8_t *zp, int64_t n, int64_t k0, int64_t k1, float *dst,
                            int64_t stride) {
  if (shape.bits == 4)
    dequantizeRange<4>(shape, q, scales, zp, n, k0, k1, dst, stride);
  else
    dequantizeRange<8>(shape, q, scales, zp, n, k0, k1, dst, stride);
}

#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define LLMC_QUANT_AVX512 1
#elif defined(__AVX2__)
#define LLMC_QUANT_AVX2 1
#endif

constexpr int64_t kQuantBlock = 32; // activation values per int8 scale
constexpr int64_t kQuantRows = 4;   // weight rows per pass over x

/// Activation values one step of the int8 kernel reads for `bits`-bit
/// weights (AVX-512: 64 bytes of weights, four blocks of 32 at 4 bits, two
/// at 8; otherwise one block), and the 32-bit lanes of its accumulator.
constexpr int64_t quantStep(int64_t bits) {
#if defined(LLMC_QUANT_AVX512)
  return bits == 4 ? 128 : 64;
#else
  return (void)bits, 32;
#endif
}
#if defined(LLMC_QUANT_AVX512)
constexpr int64_t kQuantLanes = 16;
#else
constexpr int64_t kQuantLanes = 8;
#endif

/// The accumulator lane that position p of a step feeds: four consecutive
/// positions per lane, the lanes starting over every 4 x lanes positions
/// (AVX-512 at 4 bits: the low and the high nibbles of a byte both feed one
/// lane).
inline int64_t stepLane(int64_t p) { return (p % (4 * kQuantLanes)) / 4; }

/// The K offset, within its step, of the activation at position p of the
/// step: where the kernel's nibble split puts each weight value (byte i of
/// a block holds k = 2i low, 2i + 1 high). 8-bit weights (and plain C++)
/// keep the natural order.
inline int64_t stepOrder(int64_t p, int64_t bits) {
  if (bits != 4)
    return p;
#if defined(LLMC_QUANT_AVX512)
  // 64 bytes = 4 blocks: [even k of blocks 0-3 | odd k of blocks 0-3].
  int64_t half = p / 64, i = p % 64;
  return 32 * (i / 16) + 2 * (i % 16) + half;
#elif defined(LLMC_QUANT_AVX2)
  return p < 16 ? 2 * p : 2 * (p - 16) + 1; // [even k, odd k] of one block
#else
  return p;
#endif
}

/// The rows of x as the int8 kernel reads them.
struct QuantActivations {
  int64_t rows = 0, paddedK = 0, step = 0; // paddedK: a multiple of step
  std::vector<int8_t> q;       // [rows, paddedK], each step in stepOrder
  std::vector<float> scale;    // [rows, steps, kQuantLanes]: each lane's block scale
  std::vector<int32_t> init;   // [rows, steps, kQuantLanes]: -zp x (lane sum), or -(lane sum)
  std::vector<float> blockScale; // scratch
  std::vector<int8_t> natural;   // scratch

  int64_t steps() const { return paddedK / step; }
  const int8_t *qRow(int64_t m) const { return q.data() + m * paddedK; }
  const float *scaleRow(int64_t m) const { return scale.data() + m * steps() * kQuantLanes; }
  const int32_t *initRow(int64_t m) const { return init.data() + m * steps() * kQuantLanes; }
};

/// Rounds x [M, K] to int8 per block of 32 values (scale = max |x| / 127,
/// round to nearest even) for weights of `shape`; with the weights' own
/// zero points init holds -(lane sum), which the kernel multiplies by each
/// group's zero point, else -2^(bits-1) x (lane sum).
inline void prepareActivations(const float *x, int64_t M, const QuantShape &shape,
                               bool ownZeroPoints, QuantActivations &out) {
  const int64_t K = shape.k, step = quantStep(shape.bits);
  const int64_t Kp = (shape.paddedK() + step - 1) / step * step, steps = Kp / step;
  out.rows = M, out.paddedK = Kp, out.step = step;
  out.q.assign(static_cast<size_t>(M * Kp), 0);
  out.scale.assign(static_cast<size_t>(M * steps * kQuantLanes), 0.f);
  out.init.assign(static_cast<size_t>(M * steps * kQuantLanes), 0);
  std::vector<float> &blockScale = out.blockScale;
  std::vector<int8_t> &natural = out.natural;
  blockScale.resize(static_cast<size_t>(Kp / kQuantBlock));
  natural.resize(static_cast<size_t>(Kp));
  int64_t order[128], lane[128]; // quantStep(bits) <= 128
  for (int64_t p = 0; p < step; ++p)
    order[p] = stepOrder(p, shape.bits), lane[p] = stepLane(p);
  const int32_t zp = int32_t(1) << (shape.bits - 1);
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
    for (int64_t s = 0; s < steps; ++s) {
      float *scale = out.scale.data() + (m * steps + s) * kQuantLanes;
      int32_t *init = out.init.data() + (m * steps + s) * kQuantLanes;
      const int8_t *nat = natural.data() + s * step;
      const int32_t weight = ownZeroPoints ? 1 : zp;
      for (int64_t p = 0; p < step; ++p) {
        int8_t v = nat[order[p]];
        qm[s * step + p] = v;
        init[lane[p]] -= weight * int32_t(v);
      }
      for (int64_t l = 0; l < kQuantLanes; ++l) // a lane's values share a block
        scale[l] = blockScale[size_t((s * step + order[4 * l]) / kQuantBlock)];
    }
  }
}

/// Whether quantizedRowsInt8 takes weights of `shape`: groups of whole
/// blocks of 32 that a step's blocks either share or split evenly.
inline bool quantizedInt8Supported(const QuantShape &shape) {
  if (shape.groupSize % kQuantBlock != 0)
    return false;
  int64_t perGroup = shape.groupSize / kQuantBlock, perStep = quantStep(shape.bits) / kQuantBlock;
  return perGroup % perStep == 0 || perStep % perGroup == 0;
}

namespace detail {

#if defined(LLMC_QUANT_AVX512)
/// acc + the dot products of four u8 weights by four s8 activations per
/// 32-bit lane. Without VNNI the 16-bit pair sums of vpmaddubsw saturate
/// beyond 32767: 4-bit weights stay below (15 x 127 x 2), 8-bit ones go
/// as two nibble halves.
inline __m512i dotLanes(__m512i acc, __m512i w, __m512i x, int64_t bits) {
#if defined(__AVX512VNNI__)
  (void)bits;
  return _mm512_dpbusd_epi32(acc, w, x);
#else
  const __m512i ones = _mm512_set1_epi16(1);
  if (bits == 4)
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), ones));
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512i lo = _mm512_and_si512(w, m4), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
  __m512i dl = _mm512_madd_epi16(_mm512_maddubs_epi16(lo, x), ones);
  __m512i dh = _mm512_madd_epi16(_mm512_maddubs_epi16(hi, x), ones);
  return _mm512_add_epi32(acc, _mm512_add_epi32(dl, _mm512_slli_epi32(dh, 4)));
#endif
}

/// R rows of W from row n for one row of x: 64 bytes of weights per step
/// (128 values at 4 bits: low nibbles by the step's first 64 activations,
/// high by the next; 64 at 8 bits), one FMA per step and row by the lanes'
/// weight scale x activation scale. `Bcast`: the step's blocks share a
/// group (a broadcast scale); otherwise each of its perGroup-sized pieces
/// has its own (a permute of consecutive scales).
/// Each lane's group, counted from the step's first (its block / blocks
/// per group), when a step's blocks have groups of their own.
inline __m512i laneGroups(int64_t perStep, int64_t perGroup) {
  alignas(64) int32_t offsets[16];
  for (int l = 0; l < 16; ++l)
    offsets[l] = perStep % perGroup == 0 ? int32_t(l / (kQuantLanes / perStep) / perGroup) : 0;
  return _mm512_load_si512(offsets);
}

template <int R, bool Bcast, int MR = 1>
void int8Rows(const QuantActivations &xa, int64_t m, const QuantShape &shape, const uint8_t *q,
              const float *scales, const uint8_t *zp, int64_t n, __m512i idx,
              float (&dots)[MR][kQuantRows]) {
  const int64_t bits = shape.bits, G = shape.groups, rowBytes = shape.rowBytes();
  const int64_t step = xa.step, steps = xa.paddedK / step;
  const int64_t perStep = step / kQuantBlock, perGroup = shape.groupSize / kQuantBlock;
  const int64_t groupsPerStep = Bcast ? 1 : perStep / perGroup;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  // MR rows of x (m, m + 1, ...) share each step's weight loads and unpacking.
  __m512 acc[MR][R];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      acc[i][r] = _mm512_setzero_ps();
  int64_t g = 0, blocksInGroup = 0; // the step's first group, and its blocks before the step
  for (int64_t s = 0; s < steps; ++s) {
    __m512 xscale[MR];
    __m512i init[MR], x0[MR], x1[MR];
#pragma GCC unroll 2
    for (int i = 0; i < MR; ++i) {
      const int8_t *xq = xa.qRow(m + i);
      xscale[i] = _mm512_loadu_ps(xa.scaleRow(m + i) + s * 16);
      init[i] = _mm512_loadu_si512(xa.initRow(m + i) + s * 16);
      x0[i] = _mm512_loadu_si512(xq + s * step);
      x1[i] = bits == 4 ? _mm512_loadu_si512(xq + s * step + 64) : x0[i];
    }
    const int64_t avail = rowBytes - s * 64, gl = std::min(g, G - 1);
    const __mmask64 wmask = avail >= 64 ? ~__mmask64(0) : (__mmask64(1) << avail) - 1;
    const __mmask16 smask = __mmask16((1u << std::min(groupsPerStep, G - gl)) - 1);
    // Unrolled, so the accumulators stay in registers.
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint8_t *wp = q + (n + r) * rowBytes + s * 64;
      // The R rows are one contiguous block, read a step of each row at a
      // time; the hardware prefetchers alone leave that latency-bound, so
      // each step asks for its line two blocks ahead, into L2: on the
      // development VM that took 125M-Llama-shaped int8 layers from 20 to
      // 30-40 GB/s on two cores (an L1 prefetch one block ahead: 20; none:
      // 15), int4 from 26 to 28-37.
      prefetchLineL2(wp + 2 * kQuantRows * rowBytes);
      __m512i b = avail >= 64 ? _mm512_loadu_si512(wp) : _mm512_maskz_loadu_epi8(wmask, wp);
      const float *sc = scales + (n + r) * G + gl;
      __m512 ws = Bcast ? _mm512_set1_ps(*sc)
                        : _mm512_permutexvar_ps(idx, _mm512_maskz_loadu_ps(smask, sc));
      __m512i zv = _mm512_setzero_si512();
      if (zp) {
        const uint8_t *z = zp + (n + r) * G + gl;
        zv = Bcast ? _mm512_set1_epi32(*z)
                   : _mm512_permutexvar_epi32(
                         idx, _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(smask, z)));
      }
      const __m512i lo = bits == 4 ? _mm512_and_si512(b, m4) : b;
      const __m512i hi = bits == 4 ? _mm512_and_si512(_mm512_srli_epi16(b, 4), m4) : b;
#pragma GCC unroll 2
      for (int i = 0; i < MR; ++i) {
        __m512i dp = zp ? _mm512_mullo_epi32(zv, init[i]) : init[i];
        if (bits == 4) {
          dp = dotLanes(dp, lo, x0[i], 4);
          dp = dotLanes(dp, hi, x1[i], 4);
        } else {
          dp = dotLanes(dp, b, x0[i], 8);
        }
        acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(ws, xscale[i]),
                                    acc[i][r]);
      }
    }
    if (Bcast) {
      if ((blocksInGroup += perStep) == perGroup)
        blocksInGroup = 0, ++g;
    } else {
      g += groupsPerStep;
    }
  }
#pragma GCC unroll 2
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
      dots[i][r] = _mm512_reduce_add_ps(acc[i][r]);
}
#endif

#if defined(LLMC_QUANT_AVX2)
/// R rows of W from row n for one row of x, one block of 32 values per step:
/// unpacked to u8 in stepOrder, vpmaddubsw + vpmaddwd against the block's
/// s8 activations (8-bit weights as two nibble halves: the 16-bit pair sums
/// would saturate), the accumulator started at -zp x (lane sums), one FMA
/// by the block's two scales. Unrolled so the accumulators stay in
/// registers; x's loads are shared by the rows.
template <int R>
void int8RowsAvx2(const QuantActivations &xa, int64_t m, const QuantShape &shape,
                  const uint8_t *q, const float *scales, const uint8_t *zp, int64_t n,
                  float (&dots)[kQuantRows]) {
  const int64_t bits = shape.bits, G = shape.groups, rowBytes = shape.rowBytes();
  const int64_t steps = xa.paddedK / kQuantBlock, stepBytes = kQuantBlock * bits / 8;
  const int64_t perGroup = shape.groupSize / kQuantBlock;
  const int8_t *xq = xa.qRow(m);
  const float *xs = xa.scaleRow(m);
  const int32_t *xi = xa.initRow(m);
  const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
  const __m128i m4x = _mm_set1_epi8(0x0f);
  __m256 acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    acc[r] = _mm256_setzero_ps();
  for (int64_t s = 0, g = 0, inGroup = 0; s < steps; ++s) {
    const int64_t gl = std::min(g, G - 1), avail = rowBytes - s * stepBytes;
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + s * kQuantBlock));
    const __m256i init =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xi + s * kQuantLanes));
    const float xscale = xs[s * kQuantLanes];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint8_t *wp = q + (n + r) * rowBytes + s * stepBytes;
      if ((s * stepBytes) % 64 == 0) // a new line: its place two blocks of rows ahead
        prefetchLineL2(wp + 2 * kQuantRows * rowBytes);
      alignas(32) uint8_t tail[32] = {};
      const uint8_t *bytes = wp;
      if (avail < stepBytes) // the row's last bytes, zero-padded
        bytes = static_cast<const uint8_t *>(std::memcpy(tail, wp, size_t(avail)));
      __m256i start = init;
      if (zp)
        start = _mm256_mullo_epi32(_mm256_set1_epi32(zp[(n + r) * G + gl]), init);
      __m256i dp;
      if (bits == 4) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes));
        __m256i w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m4x), _mm_and_si128(b, m4x));
        dp = _mm256_add_epi32(start, _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), ones));
      } else {
        __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bytes));
        __m256i lo = _mm256_and_si256(w, m4), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
        __m256i dl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xv), ones);
        __m256i dh = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xv), ones);
        dp = _mm256_add_epi32(start, _mm256_add_epi32(dl, _mm256_slli_epi32(dh, 4)));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp),
                               _mm256_set1_ps(scales[(n + r) * G + gl] * xscale), acc[r]);
    }
    if (++inGroup == perGroup)
      inGroup = 0, ++g;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    dots[r] = _mm_cvtss_f32(h);
  }
}
#endif

/// kernel(R, n, dots) for a block of `rows` weight rows from nb and MR rows
/// of x (dots[i][r]: x row i by weight row nb + r): with R = kQuantRows
/// when the block is full, else once per weight row with R = 1.
template <int MR, typename F>
void forRowBlock(int64_t rows, int64_t nb, float (&dots)[MR][kQuantRows], F &&kernel) {
  if (rows == kQuantRows) {
    kernel(std::integral_constant<int, kQuantRows>(), nb, dots);
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    float one[MR][kQuantRows] = {};
    kernel(std::integral_constant<int, 1>(), nb + r, one);
    for (int i = 0; i < MR; ++i)
      dots[i][r] = one[i][0];
  }
}

} // namespace detail

/// Rows [n0, n1) of y [M, N] for every row of the prepared x: the int8
/// activation kernel (quantizedInt8Supported(shape) must hold). scales f32
/// [N, G]; zp uint8 [N, G] or null.
inline void quantizedRowsInt8(const QuantActivations &xa, const QuantShape &shape,
                              const uint8_t *q, const float *scales, const uint8_t *zp,
                              const float *bias, const float *residual, float *y, int64_t n0,
                              int64_t n1) {
  const int64_t M = xa.rows, N = shape.n;
#if defined(LLMC_QUANT_AVX512)
  const int64_t perStep = xa.step / kQuantBlock, perGroup = shape.groupSize / kQuantBlock;
  const bool bcast = perGroup % perStep == 0;
  const __m512i idx = detail::laneGroups(perStep, perGroup);
#endif
  for (int64_t nb = n0; nb < n1; nb += kQuantRows) {
    const int64_t rows = std::min<int64_t>(kQuantRows, n1 - nb);
    int64_t m = 0;
#if defined(LLMC_QUANT_AVX512)
    // Prefill: two rows of x per pass over the block's weights (each step's
    // weight load and unpacking serves both).
    for (; m + 1 < M; m += 2) {
      float pair[2][kQuantRows] = {};
      detail::forRowBlock(rows, nb, pair, [&](auto R, int64_t n, float(&out)[2][kQuantRows]) {
        if (bcast)
          detail::int8Rows<decltype(R)::value, true, 2>(xa, m, shape, q, scales, zp, n, idx, out);
        else
          detail::int8Rows<decltype(R)::value, false, 2>(xa, m, shape, q, scales, zp, n, idx, out);
      });
      for (int i = 0; i < 2; ++i)
        for (int64_t r = 0; r < rows; ++r)
          y[(m + i) * N + nb + r] = linearEpilogue(pair[i][r], bias, residual, m + i, nb + r, N);
    }
#endif
    for (; m < M; ++m) {
      float one[1][kQuantRows] = {};
      float(&dots)[kQuantRows] = one[0];
#if defined(LLMC_QUANT_AVX512)
      detail::forRowBlock(rows, nb, one, [&](auto R, int64_t n, float(&out)[1][kQuantRows]) {
        if (bcast)
          detail::int8Rows<decltype(R)::value, true>(xa, m, shape, q, scales, zp, n, idx, out);
        else
          detail::int8Rows<decltype(R)::value, false>(xa, m, shape, q, scales, zp, n, idx, out);
      });
#elif defined(LLMC_QUANT_AVX2)
      detail::forRowBlock(rows, nb, one, [&](auto R, int64_t n, float(&out)[1][kQuantRows]) {
        detail::int8RowsAvx2<decltype(R)::value>(xa, m, shape, q, scales, zp, n, out[0]);
      });
#else
      // Plain C++: one block of 32 per step, the arithmetic of the vector
      // kernels.
      const int64_t G = shape.groups, bits = shape.bits, rowBytes = shape.rowBytes();
      const int64_t steps = xa.paddedK / kQuantBlock, stepBytes = kQuantBlock * bits / 8;
      const int64_t perGroup = shape.groupSize / kQuantBlock;
      const int8_t *xq = xa.qRow(m);
      const float *xs = xa.scaleRow(m);
      const int32_t *xi = xa.initRow(m);
      for (int64_t s = 0, g = 0, inGroup = 0; s < steps; ++s) {
        const int64_t gl = std::min(g, G - 1), avail = rowBytes - s * stepBytes;
        for (int64_t r = 0; r < rows; ++r) {
          int64_t n = nb + r;
          const uint8_t *wp = q + n * rowBytes + s * stepBytes;
          int32_t z = zp ? int32_t(zp[n * G + gl]) : 1;
          int32_t dot = 0;
          for (int64_t p = 0; p < kQuantBlock; ++p) {
            int32_t v = 0;
            if (p * bits / 8 < avail)
              v = int32_t(bits == 4 ? storedValue<4>(wp, p) : storedValue<8>(wp, p));
            dot += v * int32_t(xq[s * kQuantBlock + p]);
          }
          for (int64_t l = 0; l < kQuantLanes; ++l)
            dot += z * xi[s * kQuantLanes + l];
          dots[r] += float(dot) * (scales[n * G + gl] * xs[s * kQuantLanes]);
        }
        if (++inGroup == perGroup)
          inGroup = 0, ++g;
      }
#endif
      for (int64_t r = 0; r < rows; ++r)
        y[m * N + nb + r] = linearEpilogue(dots[r], bias, residual, m, nb + r, N);
    }
  }
}

/// Rows [n0, n1) of y [M, N] for many rows of x (prefill), x used as it is
/// (f32): kTilePanels x 16 weight rows at a time are dequantized ((q - zp)
/// * scale, exactly as the reference does) into the column panels of
/// Packed.h, [K][16] each, in a buffer that stays in L2, and multiplied by
/// every row of x with its register-tiled kernel; the dequantization costs
/// one pass over the weights per call, shared by all rows of x.
/// `scratch` holds quantizedPanelsScratch(shape) floats.
inline int64_t quantizedPanelsScratch(const QuantShape &shape) {
  return kTilePanels * shape.k * kPanel;
}
inline void quantizedRowsPanels(const float *x, int64_t M, const QuantShape &shape,
                                const uint8_t *q, const float *scales, const uint8_t *zp,
                                const float *bias, const float *residual, float *y, int64_t n0,
                                int64_t n1, float *scratch) {
  const int64_t K = shape.k, N = shape.n;
  const int64_t width = kTilePanels * kPanel;
  const int64_t panelsSize = quantizedPanelsScratch(shape);
  float *panels = scratch;
  float tile[kTileRows][kTilePanels * kPanel];
  for (int64_t nb = n0; nb < n1; nb += width) {
    const int64_t rows = std::min(width, n1 - nb);
    const int64_t count = (rows + kPanel - 1) / kPanel; // panels in this tile
    if (rows < width) // a partial tile: its missing columns are zeros
      std::fill(panels, panels + panelsSize, 0.f);
    for (int64_t r = 0; r < rows; ++r)
      dequantizeRange(shape, q, scales, zp, nb + r, 0, K,
                      panels + (r / kPanel) * K * kPanel + r % kPanel, kPanel);
    for (int64_t m = 0; m < M; m += kTileRows) {
      int mr = int(std::min<int64_t>(kTileRows, M - m));
      if (count == kTilePanels)
        panelTileRows<WideTile, kTilePanels>(mr, x + m * K, K, panels, tile);
      else
        panelTileRows<WideTile, 1>(mr, x + m * K, K, panels, tile);
      for (int i = 0; i < mr; ++i)
        for (int64_t c = 0; c < rows; ++c)
          y[(m + i) * N + nb + c] = linearEpilogue(tile[i][c], bias, residual, m + i, nb + c, N);
    }
  }
}

/// Rows [n0, n1) of y [M, N] with x [M, K] used as it is (f32): the weights
/// dequantized one group at a time, exactly as the reference does.
/// (scratch holds quantizedF32Scratch(shape, M) floats.)
inline int64_t quantizedF32Scratch(const QuantShape &shape, int64_t M) {
  return kQuantRows * shape.groupSize + VecF::kLanes + kQuantRows * M;
}
inline void quantizedRowsF32(const float *x, int64_t M, const QuantShape &shape, const uint8_t *q,
                             const float *scales, const uint8_t *zp, const float *bias,
                             const float *residual, float *y, int64_t n0, int64_t n1,
                             float *scratch) {
  constexpr int L = VecF::kLanes;
  const int64_t K = shape.k, N = shape.n, G = shape.groups, gs = shape.groupSize;
  float *w = scratch, *dots = scratch + kQuantRows * gs + L;
  for (int64_t nb = n0; nb < n1; nb += kQuantRows) {
    const int64_t rows = std::min<int64_t>(kQuantRows, n1 - nb);
    std::fill(dots, dots + kQuantRows * M, 0.f);
    for (int64_t g = 0; g < G; ++g) {
      int64_t k0 = g * gs, len = std::min(gs, K - k0);
      for (int64_t r = 0; r < rows; ++r)
        dequantizeRange(shape, q, scales, zp, nb + r, k0, k0 + len, w + r * gs, 1);
      const int64_t lv = len / L * L;
      for (int64_t m = 0; m < M; ++m) {
        const float *xm = x + m * K + k0;
        for (int64_t r = 0; r < rows; ++r) {
          const float *wr = w + r * gs;
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
