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
// The kernels here read that layout with x used as it is (f32): what
// MatMulNBits of accuracy_level < 4 and llm.quantized_linear without
// int8_activations ask for.
//
// - quantizedRowsF32 (decode): blocks of kQuantRows (4) rows of W for all
//   rows of x, the weights dequantized a group at a time in registers;
// - quantizedRowsPanels (prefill): kTilePanels x 16 rows dequantized into
//   Packed.h's column panels and multiplied with its register tile.
//
// Layers with int8 activations are packed by llmc compile into the layout
// of QuantPanels.h and run there.
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

namespace llmc::model::kernels {

/// Shape of a quantized weight as stored.
struct QuantShape {
  int64_t n = 0, k = 0, groups = 0, groupSize = 0, bits = 0;
  int64_t rowBytes() const { return groups * groupSize * bits / 8; }
};

constexpr int64_t kQuantRows = 4; // weight rows per pass over x (quantizedRowsF32)

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
  for (int64_t nb = n0; nb < n1; nb += width) {
    const int64_t rows = std::min(width, n1 - nb);
    const int64_t count = (rows + kPanel - 1) / kPanel; // panels in this tile
    if (rows < width) // a partial tile: its missing columns are zeros
      std::fill(panels, panels + panelsSize, 0.f);
    for (int64_t r = 0; r < rows; ++r)
      dequantizeRange(shape, q, scales, zp, nb + r, 0, K,
                      panels + (r / kPanel) * K * kPanel + r % kPanel, kPanel);
    multiplyPanels(x, M, K, panels, count, bias, residual, y, N, nb, nb + rows);
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
