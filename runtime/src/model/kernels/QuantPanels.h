//===- QuantPanels.h - 4- and 8-bit linear layers packed in row panels ----===//
//
// y[m, n] = x[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]) over the
// weights of an llm.quantized_linear with int8 activations (groups of a
// multiple of 32), which llmc compile stores for the CPU in panels of 16
// output rows, each panel one contiguous stream (packQuantPanels):
//
//   panel p (rows 16p .. 16p + 15; rows past N are zeros) = G group records;
//   record g = the group's blocks of 32 values along K, then the 16 rows'
//              scales (f16 when every scale of the weight is exactly an f16,
//              else f32), then their zero points (uint8, when the weight
//              has them; else 2^(bits-1));
//   block (4 bits, 256 bytes) = 4 chunks of 64 bytes; byte 4j + t of chunk
//              c holds row j's value at k = 8c + t of the block in its low
//              nibble and at k = 8c + 4 + t in its high nibble;
//   block (8 bits, 512 bytes) = 8 chunks; byte 4j + t of chunk c holds row
//              j's value at k = 4c + t.
//
// So a 32-bit lane of a 64-byte vector is one row, and its four bytes (or
// nibbles) meet four consecutive activations: an integer dot product
// (vpdpbusd with VNNI, vpmaddubsw + vpmaddwd without) of the chunk by those
// four int8 activations broadcast to every lane advances all 16 rows at once.
// x is rounded to int8 per block of 32 (scale max|x| / 127, nearest even;
// prepareQuantActivations), so each block ends with one conversion and one
// FMA by (the rows' scales x the block's activation scale), no horizontal
// sums, no shuffles; the zero points cost one multiply per block (the
// accumulator starts at -zp x (sum of the block's activations)). With VNNI
// the high nibbles are used in place (x16, undone by a shift at the block's
// end), so splitting a chunk costs two ANDs.
//
// Against the row layout (Quant.h) this halves the arithmetic per weight
// and makes a thread's weights one stream: int4 decode of a 125M Llama's
// layers went from 23 to 40 GB/s on one core of the development EPYC with
// the weights in L3, from 21-26 to 28-33 GB/s from memory on two
// (bench/results/2026-11-26-quant-panels.md).
//
// Decode (one row of x) on AVX-512 passes over two panels at a time (each
// chunk's activations broadcast once for both), each stream prefetching the
// panel two further on into L2 as it is read; prefill with VNNI takes up to
// four rows of x per pass over a panel (each chunk split once for all of
// them), without VNNI it goes through dequantized f32 panels
// (dequantizeQuantPanel and Packed.h's tile).
//
// Header-only: libmodel.so compiles it with the artifact's -march; the
// compiler uses packQuantPanels to write weights.bin.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_QUANTPANELS_H
#define LLMC_RUNTIME_MODEL_KERNELS_QUANTPANELS_H

#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/Vec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace llmc::model::kernels {

constexpr int64_t kQuantPanel = 16; // rows per panel
constexpr int64_t kQuantBlock = 32; // values per int8 activation scale

/// A quantized weight as packQuantPanels stores it.
struct QuantPanelShape {
  int64_t n = 0, k = 0, groups = 0, groupSize = 0, bits = 0;
  bool halfScales = false, zeroPoints = false;

  int64_t panels() const { return (n + kQuantPanel - 1) / kQuantPanel; }
  int64_t blocksPerGroup() const { return groupSize / kQuantBlock; }
  int64_t blocks() const { return groups * blocksPerGroup(); }
  int64_t blockBytes() const { return kQuantPanel * kQuantBlock * bits / 8; }
  int64_t scaleBytes() const { return halfScales ? 2 : 4; }
  /// A group record: its blocks, the scales, the zero points.
  int64_t recordBytes() const {
    return blocksPerGroup() * blockBytes() + kQuantPanel * scaleBytes() +
           (zeroPoints ? kQuantPanel : 0);
  }
  int64_t panelBytes() const { return groups * recordBytes(); }
  int64_t bytes() const { return panels() * panelBytes(); }
  /// Whether the layout takes weights of this shape.
  bool valid() const {
    return (bits == 4 || bits == 8) && n > 0 && k > 0 && groupSize > 0 &&
           groupSize % kQuantBlock == 0 && groups == (k + groupSize - 1) / groupSize;
  }
};

/// Whether every scale is exactly an f16 (so the panels can store them in
/// two bytes without changing a result).
inline bool scalesFitHalf(const float *scales, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!(cpu::halfToFloat(cpu::floatToHalf(scales[i])) == scales[i]))
      return false;
  return true;
}

/// Writes the weight stored as llm.quantized_linear keeps it (q uint8 [N,
/// G, groupSize * bits / 8], values along K, low nibble first; scales f32
/// [N, G]; zp uint8 [N, G] or null) into shape.bytes() bytes at `out` in the
/// layout above. shape.halfScales must only be set when scalesFitHalf.
inline void packQuantPanels(const QuantPanelShape &shape, const uint8_t *q, const float *scales,
                            const uint8_t *zp, uint8_t *out) {
  const int64_t G = shape.groups, rowBytes = G * shape.groupSize * shape.bits / 8;
  const int64_t perGroup = shape.blocksPerGroup(), blockBytes = shape.blockBytes();
  std::memset(out, 0, size_t(shape.bytes()));
  auto value = [&](int64_t n, int64_t k) -> uint8_t {
    const uint8_t *row = q + n * rowBytes;
    return shape.bits == 8 ? row[k] : uint8_t((row[k / 2] >> ((k % 2) * 4)) & 15);
  };
  for (int64_t n = 0; n < shape.n; ++n) {
    const int64_t j = n % kQuantPanel;
    uint8_t *panel = out + (n / kQuantPanel) * shape.panelBytes();
    for (int64_t g = 0; g < G; ++g) {
      uint8_t *record = panel + g * shape.recordBytes();
      for (int64_t i = 0; i < perGroup; ++i) {
        uint8_t *block = record + i * blockBytes;
        const int64_t k0 = (g * perGroup + i) * kQuantBlock;
        if (shape.bits == 4) {
          for (int64_t c = 0; c < 4; ++c)
            for (int64_t t = 0; t < 4; ++t)
              block[c * 64 + 4 * j + t] = uint8_t(value(n, k0 + 8 * c + t) |
                                                  (value(n, k0 + 8 * c + 4 + t) << 4));
        } else {
          for (int64_t c = 0; c < 8; ++c)
            for (int64_t t = 0; t < 4; ++t)
              block[c * 64 + 4 * j + t] = value(n, k0 + 4 * c + t);
        }
      }
      uint8_t *sc = record + perGroup * blockBytes;
      float s = scales[n * G + g];
      if (shape.halfScales) {
        uint16_t h = cpu::floatToHalf(s);
        std::memcpy(sc + 2 * j, &h, 2);
      } else {
        std::memcpy(sc + 4 * j, &s, 4);
      }
      if (shape.zeroPoints)
        sc[kQuantPanel * shape.scaleBytes() + j] = zp[n * G + g];
    }
  }
}

/// A group record's scale of row j, and its zero point.
inline float panelScale(const QuantPanelShape &shape, const uint8_t *record, int64_t j) {
  const uint8_t *sc = record + shape.blocksPerGroup() * shape.blockBytes();
  if (shape.halfScales) {
    uint16_t h;
    std::memcpy(&h, sc + 2 * j, 2);
    return cpu::halfToFloat(h);
  }
  float s;
  std::memcpy(&s, sc + 4 * j, 4);
  return s;
}
inline int32_t panelZero(const QuantPanelShape &shape, const uint8_t *record, int64_t j) {
  if (!shape.zeroPoints)
    return int32_t(1) << (shape.bits - 1);
  return record[shape.blocksPerGroup() * shape.blockBytes() + kQuantPanel * shape.scaleBytes() + j];
}

/// The stored value of row j at k (within the block) of a packed block.
inline int32_t panelValue(int64_t bits, const uint8_t *block, int64_t j, int64_t k) {
  if (bits == 8)
    return block[(k / 4) * 64 + 4 * j + k % 4];
  uint8_t byte = block[(k / 8) * 64 + 4 * j + k % 4];
  return (k % 8) < 4 ? byte & 15 : byte >> 4;
}

/// Panel p dequantized ((q - zp) * scale, as the reference kernel computes
/// it) into the column-panel layout of Packed.h: out[k * 16 + j] = W[16p +
/// j, k] for k < K (rows past N are zeros).
inline void dequantizeQuantPanel(const QuantPanelShape &shape, const uint8_t *packed, int64_t p,
                                 float *out) {
  const uint8_t *record = packed + p * shape.panelBytes();
  const int64_t perGroup = shape.blocksPerGroup();
  for (int64_t g = 0; g < shape.groups; ++g, record += shape.recordBytes())
    for (int64_t j = 0; j < kQuantPanel; ++j) {
      const float sc = panelScale(shape, record, j), z = float(panelZero(shape, record, j));
      for (int64_t i = 0; i < perGroup; ++i) {
        const uint8_t *block = record + i * shape.blockBytes();
        const int64_t k0 = (g * perGroup + i) * kQuantBlock;
        for (int64_t k = 0; k < kQuantBlock && k0 + k < shape.k; ++k)
          out[(k0 + k) * kQuantPanel + j] = (float(panelValue(shape.bits, block, j, k)) - z) * sc;
      }
    }
}

/// Rows of x rounded to int8 per block of 32 values (scale max|x| / 127,
/// round to nearest even; zeros past K), with each block's scale and the
/// sum of its int8 values.
struct QuantActivations {
  int64_t rows = 0, blocks = 0;
  std::vector<int8_t> q;     // [rows, blocks * 32]
  std::vector<float> scale;  // [rows, blocks]
  std::vector<int32_t> sum;  // [rows, blocks]

  const int8_t *qRow(int64_t m) const { return q.data() + m * blocks * kQuantBlock; }
  const float *scaleRow(int64_t m) const { return scale.data() + m * blocks; }
  const int32_t *sumRow(int64_t m) const { return sum.data() + m * blocks; }
};

/// One block of 32 values rounded: q, the block's scale and the sum of q;
/// `n` < 32 values are the row's last (zeros after them).
inline void quantizeBlockScalar(const float *x, int64_t n, int8_t *q, float &scale,
                                int32_t &sum) {
  float amax = 0;
  for (int64_t k = 0; k < n; ++k)
    amax = std::max(amax, std::fabs(x[k]));
  const float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
  sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    q[k] = int8_t(std::max(-127.f, std::min(127.f, std::nearbyint(x[k] * inv))));
    sum += q[k];
  }
  scale = d;
}

/// A whole block in vectors: the same values (x * inv rounded to nearest
/// even by the conversion, clamped to +-127) without a call per value; the
/// rounding of a decode step's activations had cost ~5% of an int4 token.
inline void quantizeBlock(const float *x, int8_t *q, float &scale, int32_t &sum) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
  const float d = amax / 127.f, inv = d > 0 ? 1.f / d : 0.f;
  const __m512 vi = _mm512_set1_ps(inv);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, vi));
  __m512i qb = _mm512_cvtps_epi32(_mm512_mul_ps(b, vi));
  qa = _mm512_min_epi32(_mm512_max_epi32(qa, lo), hi);
  qb = _mm512_min_epi32(_mm512_max_epi32(qb, lo), hi);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(q), _mm512_cvtepi32_epi8(qa));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 16), _mm512_cvtepi32_epi8(qb));
  sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
  scale = d;
#elif defined(__AVX2__)
  const __m256 signBit = _mm256_set1_ps(-0.f);
  __m256 v[4], m = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    m = _mm256_max_ps(m, _mm256_andnot_ps(signBit, v[i]));
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  const float d = _mm_cvtss_f32(h) / 127.f, inv = d > 0 ? 1.f / d : 0.f;
  const __m256 vi = _mm256_set1_ps(inv);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  __m256i qi[4], total = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) {
    qi[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v[i], vi)), lo), hi);
    total = _mm256_add_epi32(total, qi[i]);
  }
  // int32 -> int8 (in range, so the saturating packs are exact), the
  // packs' lane interleave undone by one permute.
  __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
  p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(q), p);
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
  sum = _mm_cvtsi128_si32(t);
  scale = d;
#else
  quantizeBlockScalar(x, kQuantBlock, q, scale, sum);
#endif
}

/// x [M, K] (row stride K) rounded for weights of `blocks` blocks of 32.
inline void prepareQuantActivations(const float *x, int64_t M, int64_t K, int64_t blocks,
                                    QuantActivations &out) {
  out.rows = M, out.blocks = blocks;
  out.q.resize(size_t(M * blocks * kQuantBlock));
  out.scale.resize(size_t(M * blocks));
  out.sum.resize(size_t(M * blocks));
  for (int64_t m = 0; m < M; ++m) {
    const float *xm = x + m * K;
    int8_t *qm = out.q.data() + m * blocks * kQuantBlock;
    float *scale = out.scale.data() + m * blocks;
    int32_t *sum = out.sum.data() + m * blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * kQuantBlock, n = std::max<int64_t>(0, std::min(K - k0, kQuantBlock));
      if (n == kQuantBlock) {
        quantizeBlock(xm + k0, qm + k0, scale[b], sum[b]);
      } else {
        std::fill(qm + k0, qm + k0 + kQuantBlock, int8_t(0));
        quantizeBlockScalar(xm + k0, n, qm + k0, scale[b], sum[b]);
      }
    }
  }
}

#if defined(__AVX512BW__) && defined(__AVX512VL__)
#define LLMC_QUANT_PANELS_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LLMC_QUANT_PANELS_AVX2 1
#endif

/// The most rows of x one pass over a panel serves (prefill with VNNI).
#if defined(LLMC_QUANT_PANELS_AVX512) && defined(__AVX512VNNI__)
constexpr int kQuantPanelRows = 4;
#else
constexpr int kQuantPanelRows = 1;
#endif

namespace detail {

/// Walks a prefetch pointer up to `until`, a line at a time, into L2.
inline void prefetchTo(const uint8_t *&ahead, const uint8_t *until) {
  for (; ahead < until; ahead += 64)
    prefetchLineL2(ahead);
}

#if defined(LLMC_QUANT_PANELS_AVX512)
/// acc + per 32-bit lane the dot product of four u8 weights by four s8
/// activations; without VNNI through 16-bit pair sums, which stay below
/// 32768 for values < 16 (15 x 127 x 2).
inline __m512i dot4(__m512i acc, __m512i w, __m512i x) {
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(acc, w, x);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(w, x),
                                                 _mm512_set1_epi16(1)));
#endif
}

/// The 16 rows' dot products of P consecutive panels (from `panel`) with MR
/// rows of x from row m: acc[r][i] lane j = x[m + r] . W[16 (p + i) + j].
/// Each chunk's activations are broadcast once for the P panels (decode
/// takes two panels per pass: a third fewer broadcasts per weight). With
/// MR = 1 (decode) each panel's stream asks for the lines of the panel P
/// further on as it is read, into L2 (the hardware prefetchers alone left
/// the 125M Llama's int4 layers at 20-26 GB/s on two cores of the
/// development VM, against 28-33 with this; a prefetch a whole group
/// record at once flooded the queue at per-channel int8's 12 KiB records).
template <int Bits, bool Zp, int MR, int P>
void panelDots(const QuantActivations &xa, int64_t m, const QuantPanelShape &shape,
               const uint8_t *panel, __m512 (&acc)[MR][P]) {
  const int64_t perGroup = shape.blocksPerGroup(), recordBytes = shape.recordBytes();
  const int64_t panelBytes = shape.panelBytes();
  constexpr int64_t blockBytes = kQuantPanel * kQuantBlock * Bits / 8;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
#if defined(__AVX512VNNI__)
  const __m512i mf0 = _mm512_set1_epi8(char(0xf0));
#endif
  const int8_t *xq[MR];
  const float *xs[MR];
  const int32_t *xsum[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 2
    for (int i = 0; i < P; ++i)
      acc[r][i] = _mm512_setzero_ps();
    xq[r] = xa.qRow(m + r), xs[r] = xa.scaleRow(m + r), xsum[r] = xa.sumRow(m + r);
  }
  const uint8_t *ahead[P];
#pragma GCC unroll 2
  for (int i = 0; i < P; ++i)
    ahead[i] = panel + (i + P) * panelBytes;
  for (int64_t g = 0, b = 0; g < shape.groups; ++g) {
    const uint8_t *record = panel + g * recordBytes;
    __m512 ws[P];
    __m512i zpv[P];
#pragma GCC unroll 2
    for (int i = 0; i < P; ++i) {
      const uint8_t *sc = record + i * panelBytes + perGroup * blockBytes;
      ws[i] = shape.halfScales
                  ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(sc)))
                  : _mm512_loadu_ps(reinterpret_cast<const float *>(sc));
      zpv[i] = _mm512_setzero_si512();
      if constexpr (Zp)
        zpv[i] = _mm512_cvtepu8_epi32(_mm_loadu_si128(
            reinterpret_cast<const __m128i *>(sc + kQuantPanel * shape.scaleBytes())));
    }
    for (int64_t k = 0; k < perGroup; ++k, ++b) {
      const uint8_t *block = record + k * blockBytes;
      if (MR == 1)
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i)
          prefetchTo(ahead[i], block + (i + P) * panelBytes + blockBytes);
      __m512i lo[MR][P], hi[MR][P];
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const int32_t s = xsum[r][b];
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i) {
          lo[r][i] = Zp ? _mm512_mullo_epi32(zpv[i], _mm512_set1_epi32(-s))
                        : _mm512_set1_epi32(-(int32_t(1) << (Bits - 1)) * s);
          hi[r][i] = _mm512_setzero_si512();
        }
      }
      if constexpr (Bits == 4) {
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          __m512i x0[MR], x1[MR];
#pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            const int8_t *x = xq[r] + b * kQuantBlock + 8 * c;
            int32_t v0, v1;
            std::memcpy(&v0, x, 4), std::memcpy(&v1, x + 4, 4);
            x0[r] = _mm512_set1_epi32(v0), x1[r] = _mm512_set1_epi32(v1);
          }
#pragma GCC unroll 2
          for (int i = 0; i < P; ++i) {
            const __m512i w = _mm512_loadu_si512(block + i * panelBytes + c * 64);
            const __m512i wl = _mm512_and_si512(w, m4);
#if defined(__AVX512VNNI__)
            const __m512i wh = _mm512_and_si512(w, mf0); // 16x the high nibble
#else
            const __m512i wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
#endif
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) {
              lo[r][i] = dot4(lo[r][i], wl, x0[r]);
              hi[r][i] = dot4(hi[r][i], wh, x1[r]);
            }
          }
        }
#if defined(__AVX512VNNI__)
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
          for (int i = 0; i < P; ++i)
            hi[r][i] = _mm512_srai_epi32(hi[r][i], 4);
#endif
      } else {
        // 8-bit values: with VNNI as they are; without, as two nibble
        // halves (their 16-bit pair sums would saturate).
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
          __m512i xv[MR];
#pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            int32_t v0;
            std::memcpy(&v0, xq[r] + b * kQuantBlock + 4 * c, 4);
            xv[r] = _mm512_set1_epi32(v0);
          }
#pragma GCC unroll 2
          for (int i = 0; i < P; ++i) {
            const __m512i w = _mm512_loadu_si512(block + i * panelBytes + c * 64);
#if !defined(__AVX512VNNI__)
            const __m512i wl = _mm512_and_si512(w, m4);
            const __m512i wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
#endif
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) {
#if defined(__AVX512VNNI__)
              if (c % 2 == 0)
                lo[r][i] = dot4(lo[r][i], w, xv[r]);
              else
                hi[r][i] = dot4(hi[r][i], w, xv[r]);
#else
              lo[r][i] = dot4(lo[r][i], wl, xv[r]);
              hi[r][i] = _mm512_add_epi32(
                  hi[r][i], _mm512_slli_epi32(dot4(_mm512_setzero_si512(), wh, xv[r]), 4));
#endif
            }
          }
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m512 xsv = _mm512_set1_ps(xs[r][b]);
#pragma GCC unroll 2
        for (int i = 0; i < P; ++i)
          acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(lo[r][i], hi[r][i])),
                                      _mm512_mul_ps(ws[i], xsv), acc[r][i]);
      }
    }
  }
}
#endif

#if defined(LLMC_QUANT_PANELS_AVX2)
/// acc + per 32-bit lane the dot product of four u8 weights (< 16) by four
/// s8 activations (AVX-VNNI where the CPU has it).
inline __m256i dot4(__m256i acc, __m256i w, __m256i x) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w, x);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x),
                                                 _mm256_set1_epi16(1)));
#endif
}

/// panelDots for one row of x in two 8-lane halves (rows 0-7 and 8-15 of
/// the panel: the two 32-byte halves of each chunk); acc[h] lane j is row
/// 8h + j. Values split into nibbles (8-bit ones too: 16-bit pair sums of
/// whole bytes would saturate).
template <int Bits, bool Zp>
void panelDots(const QuantActivations &xa, int64_t m, const QuantPanelShape &shape,
               const uint8_t *panel, __m256 (&acc)[2]) {
  const int64_t perGroup = shape.blocksPerGroup(), recordBytes = shape.recordBytes();
  const int64_t panelBytes = shape.panelBytes();
  constexpr int64_t blockBytes = kQuantPanel * kQuantBlock * Bits / 8;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const uint8_t *ahead = panel + panelBytes; // the next panel, as this one is read
  const int8_t *xq = xa.qRow(m);
  const float *xs = xa.scaleRow(m);
  const int32_t *xsum = xa.sumRow(m);
  acc[0] = acc[1] = _mm256_setzero_ps();
  const uint8_t *record = panel;
  for (int64_t g = 0, b = 0; g < shape.groups; ++g, record += recordBytes) {
    const uint8_t *sc = record + perGroup * blockBytes;
    __m256 ws[2];
    __m256i zpv[2];
    for (int h = 0; h < 2; ++h) {
      ws[h] = shape.halfScales ? _mm256_cvtph_ps(_mm_loadu_si128(
                                     reinterpret_cast<const __m128i *>(sc + 16 * h)))
                               : _mm256_loadu_ps(reinterpret_cast<const float *>(sc) + 8 * h);
      zpv[h] = _mm256_setzero_si256();
      if constexpr (Zp)
        zpv[h] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i *>(sc + kQuantPanel * shape.scaleBytes() + 8 * h)));
    }
    for (int64_t i = 0; i < perGroup; ++i, ++b) {
      const uint8_t *block = record + i * blockBytes;
      prefetchTo(ahead, block + panelBytes + blockBytes);
      const int32_t s = xsum[b];
      __m256i lo[2], hi[2];
      for (int h = 0; h < 2; ++h) {
        lo[h] = Zp ? _mm256_mullo_epi32(zpv[h], _mm256_set1_epi32(-s))
                   : _mm256_set1_epi32(-(int32_t(1) << (Bits - 1)) * s);
        hi[h] = _mm256_setzero_si256();
      }
      constexpr int chunks = Bits == 4 ? 4 : 8;
#pragma GCC unroll 8
      for (int c = 0; c < chunks; ++c) {
        int32_t x0, x1 = 0;
        std::memcpy(&x0, xq + b * kQuantBlock + (Bits == 4 ? 8 : 4) * c, 4);
        if (Bits == 4)
          std::memcpy(&x1, xq + b * kQuantBlock + 8 * c + 4, 4);
        const __m256i xv0 = _mm256_set1_epi32(x0), xv1 = _mm256_set1_epi32(x1);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i w =
              _mm256_loadu_si256(reinterpret_cast<const __m256i *>(block + c * 64 + 32 * h));
          const __m256i wl = _mm256_and_si256(w, m4);
          const __m256i wh = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
          if (Bits == 4) {
            lo[h] = dot4(lo[h], wl, xv0);
            hi[h] = dot4(hi[h], wh, xv1);
          } else {
            lo[h] = dot4(lo[h], wl, xv0);
            hi[h] = _mm256_add_epi32(hi[h], _mm256_slli_epi32(dot4(_mm256_setzero_si256(), wh, xv0), 4));
          }
        }
      }
      const __m256 xsv = _mm256_set1_ps(xs[b]);
      for (int h = 0; h < 2; ++h)
        acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(lo[h], hi[h])),
                                 _mm256_mul_ps(ws[h], xsv), acc[h]);
    }
  }
}
#endif

/// panelDots in plain C++: the same integer sums and, per lane, the same
/// float steps (fma of each block's converted sum by scale x xscale).
inline void panelDotsScalar(const QuantActivations &xa, int64_t m, const QuantPanelShape &shape,
                            const uint8_t *panel, float (&acc)[kQuantPanel]) {
  const int64_t perGroup = shape.blocksPerGroup();
  const int8_t *xq = xa.qRow(m);
  const float *xs = xa.scaleRow(m);
  const int32_t *xsum = xa.sumRow(m);
  std::fill(acc, acc + kQuantPanel, 0.f);
  const uint8_t *record = panel;
  for (int64_t g = 0, b = 0; g < shape.groups; ++g, record += shape.recordBytes())
    for (int64_t i = 0; i < perGroup; ++i, ++b) {
      const uint8_t *block = record + i * shape.blockBytes();
      for (int64_t j = 0; j < kQuantPanel; ++j) {
        int32_t dot = -panelZero(shape, record, j) * xsum[b];
        for (int64_t k = 0; k < kQuantBlock; ++k)
          dot += panelValue(shape.bits, block, j, k) * int32_t(xq[b * kQuantBlock + k]);
        acc[j] = std::fma(float(dot), panelScale(shape, record, j) * xs[b], acc[j]);
      }
    }
}

#if defined(LLMC_QUANT_PANELS_AVX512)
template <int Bits, bool Zp, int MR, int P>
void panelRowsTile(const QuantActivations &xa, int64_t m, const QuantPanelShape &shape,
                   const uint8_t *panel, float (&dots)[kQuantPanelRows][2][kQuantPanel]) {
  __m512 acc[MR][P];
  panelDots<Bits, Zp, MR, P>(xa, m, shape, panel, acc);
  for (int r = 0; r < MR; ++r)
    for (int i = 0; i < P; ++i)
      _mm512_storeu_ps(dots[r][i], acc[r][i]);
}
#endif

/// Rows m .. m + rows - 1 (rows <= kQuantPanelRows) of x by `panels` (1, or
/// 2 for one row of x on AVX-512) consecutive panels from p: dots[r][i] =
/// row m + r by panel p + i.
template <int Bits, bool Zp>
void panelRows(const QuantActivations &xa, int64_t m, int rows, int panels,
               const QuantPanelShape &shape, const uint8_t *packed, int64_t p,
               float (&dots)[kQuantPanelRows][2][kQuantPanel]) {
  const uint8_t *panel = packed + p * shape.panelBytes();
#if defined(LLMC_QUANT_PANELS_AVX512)
  if (panels == 2)
    return panelRowsTile<Bits, Zp, 1, 2>(xa, m, shape, panel, dots);
  switch (rows) {
  case 1:
    return panelRowsTile<Bits, Zp, 1, 1>(xa, m, shape, panel, dots);
#if defined(__AVX512VNNI__)
  case 2:
    return panelRowsTile<Bits, Zp, 2, 1>(xa, m, shape, panel, dots);
  case 3:
    return panelRowsTile<Bits, Zp, 3, 1>(xa, m, shape, panel, dots);
  case 4:
    return panelRowsTile<Bits, Zp, 4, 1>(xa, m, shape, panel, dots);
#endif
  default:
    return;
  }
#elif defined(LLMC_QUANT_PANELS_AVX2)
  (void)rows, (void)panels;
  __m256 acc[2];
  panelDots<Bits, Zp>(xa, m, shape, panel, acc);
  _mm256_storeu_ps(dots[0][0], acc[0]);
  _mm256_storeu_ps(dots[0][0] + 8, acc[1]);
#else
  (void)rows, (void)panels;
  panelDotsScalar(xa, m, shape, panel, dots[0][0]);
#endif
}

} // namespace detail

/// Columns of panels [p0, p1) of y [M, N] for every row of the prepared x
/// (prepareQuantActivations with shape.blocks() blocks): the int8
/// activation kernel. bias [N] and residual [M, N] may be null.
inline void quantPanelRows(const QuantActivations &xa, const QuantPanelShape &shape,
                           const uint8_t *packed, const float *bias, const float *residual,
                           float *y, int64_t p0, int64_t p1) {
  const int64_t M = xa.rows, N = shape.n;
  auto run = [&](auto bits, auto zp) {
    float dots[kQuantPanelRows][2][kQuantPanel];
    for (int64_t p = p0; p < p1;) {
      // Decode of one row on AVX-512: two panels per pass.
#if defined(LLMC_QUANT_PANELS_AVX512)
      const int panels = M == 1 && p + 1 < p1 ? 2 : 1;
#else
      const int panels = 1;
#endif
      for (int64_t m = 0; m < M; m += kQuantPanelRows) {
        const int rows = int(std::min<int64_t>(kQuantPanelRows, M - m));
        detail::panelRows<decltype(bits)::value, decltype(zp)::value>(xa, m, rows, panels, shape,
                                                                      packed, p, dots);
        for (int i = 0; i < panels; ++i) {
          const int64_t n0 = (p + i) * kQuantPanel, n1 = std::min(N, n0 + kQuantPanel);
          for (int r = 0; r < rows; ++r)
            for (int64_t n = n0; n < n1; ++n)
              y[(m + r) * N + n] = linearEpilogue(dots[r][i][n - n0], bias, residual, m + r, n, N);
        }
      }
      p += panels;
    }
  };
  using Four = std::integral_constant<int, 4>;
  using Eight = std::integral_constant<int, 8>;
  if (shape.bits == 4)
    shape.zeroPoints ? run(Four(), std::true_type()) : run(Four(), std::false_type());
  else
    shape.zeroPoints ? run(Eight(), std::true_type()) : run(Eight(), std::false_type());
}

/// Columns of panels [p0, p1) of y [M, N] with x [M, K] used as it is (f32;
/// prefill without VNNI): kTilePanels panels at a time dequantized into
/// `scratch` (quantPanelScratch(shape) floats, in L2) and multiplied by every
/// row of x with Packed.h's register tile.
inline int64_t quantPanelScratch(const QuantPanelShape &shape) {
  return kTilePanels * shape.k * kPanel;
}
inline void quantPanelRowsF32(const float *x, int64_t M, const QuantPanelShape &shape,
                              const uint8_t *packed, const float *bias, const float *residual,
                              float *y, int64_t p0, int64_t p1, float *scratch) {
  static_assert(kPanel == kQuantPanel, "a quantized panel dequantizes to one column panel");
  for (int64_t p = p0; p < p1; p += kTilePanels) {
    const int64_t count = std::min<int64_t>(kTilePanels, p1 - p);
    for (int64_t i = 0; i < count; ++i)
      dequantizeQuantPanel(shape, packed, p + i, scratch + i * shape.k * kPanel);
    multiplyPanels(x, M, shape.k, scratch, count, bias, residual, y, shape.n, p * kPanel,
                   std::min(shape.n, (p + count) * kPanel));
  }
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_QUANTPANELS_H
