//===- Packed.h - linear layers over weights packed in column panels ------===//
//
// llmc compile stores the [N, K] weight of a linear layer as panels of
// kPanel = 16 output columns: panel p is [K][16], element (k, j) being
// W[16p + j, k] (zero past N). One layout serves both shapes of the work:
//
// - decode (a few rows of x): each panel is one contiguous stream that the
//   loop reads once, a broadcast x[m, k] times a vector of the panel row per
//   FMA, no horizontal sums, with a software prefetch ahead of the stream;
// - prefill (many rows of x): the same loop is an outer-product micro-kernel,
//   an MR x (P x 16) tile of accumulators in registers (12 x 32 with
//   AVX-512's 32 registers, 6 x 16 with AVX2's 16) updated by P panel
//   vectors and MR broadcasts per k, so each load feeds several FMAs and the
//   loop is bound by FMA throughput rather than loads.
//
// Weights are f32, Half or Bf16 (widened as loaded); x, bias, residual and y
// are f32. Header-only: libmodel.so compiles it with the artifact's -march;
// the compiler uses packPanels to write weights.bin.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_KERNELS_PACKED_H
#define LLMC_RUNTIME_MODEL_KERNELS_PACKED_H

#include "runtime/src/model/kernels/Vec.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace llmc::model::kernels {

constexpr int64_t kPanel = 16;

inline int64_t numPanels(int64_t n) { return (n + kPanel - 1) / kPanel; }

/// Packs w [N, K] (elements of `elemBytes` bytes) into numPanels(N) x K x
/// kPanel elements at `out`, zero-filling the columns past N.
inline void packPanels(const void *w, int64_t N, int64_t K, size_t elemBytes, void *out) {
  const char *src = static_cast<const char *>(w);
  char *dst = static_cast<char *>(out);
  std::memset(dst, 0, size_t(numPanels(N) * K * kPanel) * elemBytes);
  for (int64_t n = 0; n < N; ++n) {
    int64_t p = n / kPanel, j = n % kPanel;
    for (int64_t k = 0; k < K; ++k)
      std::memcpy(dst + size_t((p * K + k) * kPanel + j) * elemBytes,
                  src + size_t(n * K + k) * elemBytes, elemBytes);
  }
}

/// A register tile: its vector type, rows of x (MR) and panels (P).
template <class Vec, int Rows, int Panels> struct Tile {
  using V = Vec;
  static constexpr int kRows = Rows, kPanels = Panels;
};
/// The tile of this build's width, and the 256-bit one that AVX-512 builds
/// also carry: on CPUs whose AVX-512 FMAs run on 256-bit units (AMD Zen 4,
/// some Intel client and low-end server parts) it reaches a larger share of
/// the same peak (one core of the development EPYC: 90% against 85% with
/// f32 weights, 90% against 81% with f16; bench/results/2026-11-25-cpu-
/// prefill.md). narrowTilesFaster() measures which, once per process. Both
/// sum each output over k in the same order: the choice changes the speed,
/// never a bit of the result.
#if defined(__AVX512F__)
using WideTile = Tile<VecF, 12, 2>;
using NarrowTile = Tile<Vec8, 6, 1>;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using WideTile = Tile<VecF, 6, 1>;
using NarrowTile = WideTile;
#else
using WideTile = Tile<VecF, 2, 1>;
using NarrowTile = WideTile;
#endif
/// The unit of work packedLinear splits between threads (panels) and the
/// largest tile's rows.
constexpr int kTilePanels = WideTile::kPanels, kTileRows = WideTile::kRows;

/// Prefetch distance ahead of the panels' stream (as in Gemv.h).
constexpr int64_t kPanelPrefetch = 4096;

/// out[i][c] = sum_k x[i, k] * panel column c, for R rows of x (stride K)
/// and P panels starting at `b` (each K x kPanel), in vectors of VecT.
template <class VecT, int R, int P, typename T>
void panelTile(const float *x, int64_t K, const T *b, float (&out)[kTileRows][kTilePanels * kPanel]) {
  using VecF = VecT;
  constexpr int L = VecF::kLanes;
  constexpr int V = int(kPanel) / L; // vectors per panel row
  // The tile lives in registers only if every loop over it is unrolled.
  VecF acc[R][P * V];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < P * V; ++j)
      acc[i][j] = VecF::zero();
  // Each panel is a stream reading rowBytes per k; prefetch each stream's
  // line kPanelPrefetch bytes ahead whenever it starts a new line.
  constexpr int64_t rowBytes = kPanel * int64_t(sizeof(T));
  constexpr int64_t kPerLine = rowBytes >= 64 ? 1 : 64 / rowBytes;
  const char *start = reinterpret_cast<const char *>(b) + kPanelPrefetch;
  for (int64_t k = 0; k < K; ++k) {
    if (k % kPerLine == 0) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p)
        prefetchLine(start + (p * K + k) * rowBytes);
    }
    VecF bv[P * V];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v)
        bv[p * V + v] = VecF::load(b + (p * K + k) * kPanel + v * L);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      VecF a = VecF::splat(x[i * K + k]);
#pragma GCC unroll 32
      for (int j = 0; j < P * V; ++j)
        acc[i][j] = VecF::fma(a, bv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < P * V; ++j)
      acc[i][j].store(&out[i][j * L]);
}

template <class Tl, int P, typename T>
void panelTileRows(int rows, const float *x, int64_t K, const T *b,
                   float (&out)[kTileRows][kTilePanels * kPanel]) {
  switch (rows) {
#define LLMC_TILE_CASE(r)                                                                          \
  case r:                                                                                          \
    if constexpr (r <= Tl::kRows)                                                                  \
      panelTile<typename Tl::V, r, P>(x, K, b, out);                                               \
    break;
    LLMC_TILE_CASE(1)
    LLMC_TILE_CASE(2)
    LLMC_TILE_CASE(3)
    LLMC_TILE_CASE(4)
    LLMC_TILE_CASE(5)
    LLMC_TILE_CASE(6)
    LLMC_TILE_CASE(7)
    LLMC_TILE_CASE(8)
    LLMC_TILE_CASE(9)
    LLMC_TILE_CASE(10)
    LLMC_TILE_CASE(11)
    LLMC_TILE_CASE(12)
#undef LLMC_TILE_CASE
  default:
    break;
  }
}

/// y's columns [n0, n1) (n1 - n0 <= count x 16) of y [M, N] for every row
/// of x [M, K], from `count` (<= kTilePanels) consecutive f32 panels at
/// `panels`, tile by tile of rows, with the linear epilogue.
static_assert(kTilePanels <= 2, "multiplyPanels runs a partial tile as one panel");
inline void multiplyPanels(const float *x, int64_t M, int64_t K, const float *panels,
                           int64_t count, const float *bias, const float *residual, float *y,
                           int64_t N, int64_t n0, int64_t n1) {
  float tile[kTileRows][kTilePanels * kPanel];
  const int64_t cols = n1 - n0;
  for (int64_t m = 0; m < M; m += kTileRows) {
    int mr = int(std::min<int64_t>(kTileRows, M - m));
    if (count == kTilePanels)
      panelTileRows<WideTile, kTilePanels>(mr, x + m * K, K, panels, tile);
    else
      panelTileRows<WideTile, 1>(mr, x + m * K, K, panels, tile);
    for (int i = 0; i < mr; ++i)
      for (int64_t c = 0; c < cols; ++c)
        y[(m + i) * N + n0 + c] = linearEpilogue(tile[i][c], bias, residual, m + i, n0 + c, N);
  }
}

/// Rows of x per block of packedRows: 120 rows of a 768-wide x are 360 KiB,
/// which stay in a core's L2 while every panel passes over them.
constexpr int64_t kRowBlock = 10 * 12;

/// packedRows with the tile Tl (see packedRows).
template <class Tl, typename T>
void packedRowsTiled(const float *x, int64_t M, int64_t K, const T *packed, int64_t N,
                     const float *bias, const float *residual, float *y, int64_t p0,
                     int64_t p1) {
  static_assert(kRowBlock % Tl::kRows == 0, "row blocks of whole tiles");
  float tile[kTileRows][kTilePanels * kPanel];
  for (int64_t mb = 0; mb < M; mb += kRowBlock) {
    int64_t me = std::min(M, mb + kRowBlock);
    for (int64_t p = p0; p < p1; p += Tl::kPanels) {
      int64_t panels = std::min<int64_t>(Tl::kPanels, p1 - p);
      const T *b = packed + p * K * kPanel;
      for (int64_t m = mb; m < me; m += Tl::kRows) {
        int rows = int(std::min<int64_t>(Tl::kRows, me - m));
        if (panels == Tl::kPanels)
          panelTileRows<Tl, Tl::kPanels>(rows, x + m * K, K, b, tile);
        else
          panelTileRows<Tl, 1>(rows, x + m * K, K, b, tile);
        int64_t n0 = p * kPanel, n1 = std::min(N, (p + panels) * kPanel);
        for (int i = 0; i < rows; ++i)
          for (int64_t n = n0; n < n1; ++n)
            y[(m + i) * N + n] = linearEpilogue(tile[i][n - n0], bias, residual, m + i, n, N);
      }
    }
  }
}

/// y[m, n] = x[m, :] . W[n, :] (+ bias[n]) (+ residual[m, n]) for every m <
/// M and the columns of panels [p0, p1) (n < N), W packed by packPanels, in
/// the narrow tile when `narrow` (AVX-512 builds; the same result).
/// Rows go by blocks of kRowBlock, each block over all the panels: a long
/// prefill's x (512 x 768 f32 is 1.5 MiB) does not fit L2, and reading all
/// of it again for every pair of panels is what held 2 threads back.
template <typename T>
void packedRows(const float *x, int64_t M, int64_t K, const T *packed, int64_t N,
                const float *bias, const float *residual, float *y, int64_t p0, int64_t p1,
                bool narrow = false) {
  if (narrow && !std::is_same_v<NarrowTile, WideTile>)
    packedRowsTiled<NarrowTile>(x, M, K, packed, N, bias, residual, y, p0, p1);
  else
    packedRowsTiled<WideTile>(x, M, K, packed, N, bias, residual, y, p0, p1);
}

/// FLOP rate of 12 independent FMA chains in vectors of Vec (a peak probe).
/// Never inlined: inlined into a large caller (GCC 12 did so into
/// ModelSupport.h's packedLinear and the model's create once the dispatchers
/// moved into the support object), the chains were stored to the stack on
/// every trip, the 512-bit ones measured at 90 instead of 214 GFLOP/s, and
/// the narrow tile won on a CPU where it is the slower one (f16 decode 20%
/// slower: bench/results/2026-11-28-cpu-support-object.md).
template <class Vec> __attribute__((noinline)) double fmaChainRate(int64_t iterations) {
  Vec acc[12], m = Vec::splat(0.999999f), c = Vec::splat(1e-9f);
  for (int i = 0; i < 12; ++i)
    acc[i] = Vec::splat(float(i));
  auto start = std::chrono::steady_clock::now();
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      acc[i] = Vec::fma(acc[i], m, c);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The chains' sum is stored, so none of them is dead (and they stay in
  // registers: pinning each with an asm operand spilled them to memory, a
  // store-to-load chain at a third of the FMA rate).
  Vec sum = acc[0];
  for (int i = 1; i < 12; ++i)
    sum = Vec::add(sum, acc[i]);
  float lanes[Vec::kLanes];
  sum.store(lanes);
  volatile float sink = lanes[0];
  (void)sink;
  return double(iterations) * 12 * Vec::kLanes * 2 / std::max(s, 1e-9);
}

/// Whether this CPU's AVX-512 FMAs run at no more than 1.4 times its AVX2
/// FMAs' FLOP rate (256-bit units: ~1x; full 512-bit units: ~2x), so that
/// the narrow tile is the faster one; the best of 3 alternating ~1 ms probes
/// each, measured once per process (the first model context created).
/// Always false in builds without AVX-512.
inline bool narrowTilesFaster() {
#if defined(__AVX512F__)
  static const bool narrow = [] {
    double wide = 0, narrow8 = 0;
    for (int pass = 0; pass < 3; ++pass) {
      wide = std::max(wide, fmaChainRate<VecF>(1 << 16));
      narrow8 = std::max(narrow8, fmaChainRate<Vec8>(1 << 16));
    }
    return wide < 1.4 * narrow8;
  }();
  return narrow;
#else
  return false;
#endif
}

} // namespace llmc::model::kernels

#endif // LLMC_RUNTIME_MODEL_KERNELS_PACKED_H
