//===- GemvTensorCore.h - decode linear layers of several rows on tensor cores -===//
//
// Shapes, layouts and semantics: Gemv.h's (y = x W^T (+ bias) (+ residual)
// for M <= kGemvMaxRows rows of x, normGemv's rms_norm or swigluGemv's
// SwiGLU folded in (Gemv.h's blockInput, over the block's split of K for
// the SwiGLU), split-K over `partial` and the split counters, the output
// in column ranges (GemvSegments)), for x and W both half or both
// bfloat16 and K a multiple of 32, on sm_80 and later (Gemv.h's launchGemv
// takes this form from kTcGemvMinRows rows). With several rows
// the SIMT GEMV converts and multiplies every weight once per row in f32,
// which at 8 rows makes it compute-bound; here each weight feeds a
// tensor-core product with all the rows at once.
//
// Tiling
//   A block of 8 warps takes 16 columns (rows of W); its warps cut the
//   block's K range (its split's) into 8 consecutive parts. One mma.sync
//   m16n8k16 multiplies the 16 columns' weights (A: 16 x 16) by the M rows
//   of x (B: 16 x 8, rows past M zero). A lane (g = lane / 4, t = lane % 4)
//   loads 16 bytes of W rows g and g + 8 and of x row g, all at K offset
//   32 j + 8 t: its 8 values are two mma steps' worth, registers 0-1 the
//   first (A's k pairs 2t and 2t + 8, B's the same), 2-3 the second. Which
//   physical k a step's slot holds does not matter to the sum, as long as A
//   and B agree, and they do: so every load is a plain 16-byte vector and
//   no value moves between lanes. kTcGemvUnroll such chunks per lane in
//   flight, twice over (the next batch issued before the current one is
//   multiplied; the first before the wait for the kernel before and the
//   prologue, as Gemv.h's). The warps' accumulators meet in shared memory
//   and warp 0 adds them in warp order (deterministic), then writes y
//   (bias, residual) or its split's partial sums; Gemv.h's finishSplits
//   ends split-K.
//
// W is read through a row reader (`Rows`): DenseTcRows, W's own 16 bytes;
// or QuantTcRows, for QuantGemv.h's qgemv of 4- and 8-bit weights from
// kQuantTcMinRows rows of half or bfloat16 x (K and the groups a multiple
// of 32 values): a lane reads the same 8 values' 4 or 8 bytes and their
// group's scale and zero point, and where they are multiplied makes them 8
// values of x's type, each the exact q - zero (QuantGemv.h's quantPairs);
// the chunk's two mma steps then sum into registers of their own, which
// the two rows' scales take into the accumulators (kChunkScale: the four
// lanes' loads of a row that meet in one mma lie in one group of 32 or
// more). The loads are issued as above; only the expansion waits for them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_GEMVTENSORCORE_H
#define LLMC_RUNTIME_MODEL_CUDA_GEMVTENSORCORE_H

#include "runtime/src/model/cuda/Gemv.h"

#include <type_traits>

namespace llmc::cuda {

constexpr int kTcGemvWarps = 8, kTcGemvColumns = 16, kTcGemvUnroll = 4;

/// W's rows as gemvTcBody reads them: row(r, offset) is a cursor over row r
/// from value `offset` (a multiple of 8); its load(j) issues the reads of
/// the 8 values at offset + 32 j (a Raw), expand(raw) makes them 16 bytes of
/// T as they would lie in a row of T, where they are multiplied (a reader
/// whose cursor has kChunkScale, QuantTcRows, makes them unscaled and gives
/// each chunk's scale by scale(raw)).
template <class T> struct DenseTcRows {
  const T *w;
  int k;
  struct Cursor {
    using Raw = uint4;
    const T *p;
    LLMC_DEVICE Raw load(int j) const { return load16(p + size_t(j) * 32); }
    LLMC_DEVICE void prefetch(int j) const { prefetchL2(p + size_t(j) * 32); }
    LLMC_DEVICE uint4 expand(const Raw &raw) const { return raw; }
  };
  LLMC_DEVICE Cursor row(int r, int offset) const {
    return {w + size_t(r) * size_t(k) + size_t(offset)};
  }
};

/// Whether a row reader's cursor C has its chunks' sums scaled
/// (QuantTcRows: C::kChunkScale and C::scale(raw)); DenseTcRows' has not.
template <class C, class = void> constexpr bool kChunkScale = false;
template <class C> constexpr bool kChunkScale<C, std::void_t<decltype(C::kChunkScale)>> =
    C::kChunkScale;

template <class T, class Y, int M, GemvIn IN, class Rows, class B>
LLMC_DEVICE void gemvTcBody(const T *x, const Rows &rows, const B *bias, const Y *residual, Y *y,
                            float *partial, unsigned *counters, int n, int k,
                            const GemvPrologue<T, T> &pro, const GemvSegments &seg) {
  constexpr int U = kTcGemvUnroll;
  int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32), g = lane / 4, t = lane % 4;
  int col0 = int(blockIdx.x) * kTcGemvColumns;
  int splits = int(gridDim.y), split = int(blockIdx.y);
  // Chunks of 32 values of K: the split's, then the warp's share of them.
  int chunks = k / 32, perSplit = (chunks + splits - 1) / splits;
  int s0 = split * perSplit < chunks ? split * perSplit : chunks;
  int s1 = s0 + perSplit < chunks ? s0 + perSplit : chunks;
  int perWarp = (s1 - s0 + kTcGemvWarps - 1) / kTcGemvWarps;
  int c0 = s0 + warp * perWarp < s1 ? s0 + warp * perWarp : s1;
  int c1 = c0 + perWarp < s1 ? c0 + perWarp : s1;
  int r0 = col0 + g, r1 = col0 + g + 8; // (a column past N reads column col0; dropped)
  const auto w0 = rows.row(r0 < n ? r0 : col0, 8 * t), w1 = rows.row(r1 < n ? r1 : col0, 8 * t);
  using Raw = typename decltype(w0)::Raw;
  // U chunks of W per lane in flight (a batch), the next batch issued
  // before the current one is multiplied; the first before the wait for
  // the kernel before (programmatic launches) and the prologue, the one
  // after it asked for in L2 (no kernel writes the weights). A chunk past
  // the warp's range is zero, unused.
  const uint4 zero = {0, 0, 0, 0};
  const Raw none = {};
  auto issue = [&](Raw (&a)[U], Raw (&b)[U], int at) {
    LLMC_UNROLL
    for (int u = 0; u < U; ++u) {
      a[u] = at + u < c1 ? w0.load(at + u) : none;
      b[u] = at + u < c1 ? w1.load(at + u) : none;
    }
  };
  Raw a[U], b[U];
  issue(a, b, c0);
  for (int j = c0 + U; j < c1 && j < c0 + 2 * U; ++j) {
    w0.prefetch(j);
    w1.prefetch(j);
  }
  LLMC_KERNEL_BEGIN();
  x = blockInput<IN, M>(x, pro, k, s0 * 32, s1 * 32); // (block barriers: every thread is here)
  const T *xr = x + size_t(g < M ? g : 0) * size_t(k) + 8 * t;

  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  // Two m16n8k16 steps over one chunk's loads: into c; or, for rows whose
  // chunks carry a scale (kChunkScale), into sums of their own, which
  // the rows' scales then take into c (c[0..1] row r0's, c[2..3] r1's).
  auto multiply = [&](const Raw &ra, const Raw &rb, const uint4 &xv) {
    const uint4 wa = w0.expand(ra), wb = w1.expand(rb);
    const unsigned a0[4] = {wa.x, wb.x, wa.y, wb.y}, x0[2] = {xv.x, xv.y};
    const unsigned a1[4] = {wa.z, wb.z, wa.w, wb.w}, x1[2] = {xv.z, xv.w};
    if constexpr (kChunkScale<typename Rows::Cursor>) {
      float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      tc::mma16816<T>(d, a0, x0);
      tc::mma16816<T>(d, a1, x1);
      float sa = w0.scale(ra), sb = w1.scale(rb);
      c[0] = fmaf(sa, d[0], c[0]), c[1] = fmaf(sa, d[1], c[1]);
      c[2] = fmaf(sb, d[2], c[2]), c[3] = fmaf(sb, d[3], c[3]);
    } else {
      tc::mma16816<T>(c, a0, x0);
      tc::mma16816<T>(c, a1, x1);
    }
  };
  for (int j = c0; j < c1; j += U) {
    uint4 xv[U];
    Raw na[U], nb[U];
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      xv[u] = g < M && j + u < c1 ? load16(xr + size_t(j + u) * 32) : zero;
    issue(na, nb, j + U);
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      if (j + u < c1) // (warp-uniform: c1 is the warp's)
        multiply(a[u], b[u], xv[u]);
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      a[u] = na[u], b[u] = nb[u];
  }

  // The warps' sums, added in warp order by warp 0: c[i] is column
  // (i < 2 ? r0 : r1), row 2t + i % 2.
  LLMC_SHARED(float[kTcGemvWarps][4][32], sums);
  LLMC_UNROLL
  for (int i = 0; i < 4; ++i)
    sums[warp][i][lane] = c[i];
  __syncthreads();
  if (warp == 0) {
    LLMC_UNROLL
    for (int i = 0; i < 4; ++i) {
      float v = sums[0][i][lane];
      for (int from = 1; from < kTcGemvWarps; ++from)
        v += sums[from][i][lane];
      int col = i < 2 ? r0 : r1, row = 2 * t + i % 2;
      if (row >= M || col >= n)
        continue;
      size_t at = size_t(row) * size_t(n) + size_t(col);
      if (splits > 1) {
        partial[size_t(split) * M * size_t(n) + at] = v;
        continue;
      }
      if (bias)
        v += toFloat(bias[col]);
      if (residual)
        v += toFloat(residual[at]);
      y[outputAt(seg, M, row, col, n)] = fromFloat<Y>(v);
    }
  }
  finishSplits<M, kTcGemvColumns>(partial, counters, bias, residual, y, n, seg);
}

template <class T, class Y, int M, GemvIn IN, class Rows, class B>
LLMC_GLOBAL void gemvTcKernel(const T *x, Rows rows, const B *bias, const Y *residual, Y *y,
                              float *partial, unsigned *counters, int n, int k,
                              GemvPrologue<T, T> pro, GemvSegments seg) {
  if constexpr (!tc::kBf16) { // mma.sync m16n8k16: sm_80 and later (tc::bf16() on the host)
    LLMC_KERNEL_BEGIN();
    __trap(); // code built for an older GPU on a newer one: a launch error, not silence
  } else {
    gemvTcBody<T, Y, M, IN>(x, rows, bias, residual, y, partial, counters, n, k, pro, seg);
  }
}

/// The tensor-core form over the row reader `rows` (the caller checked the
/// arguments, K % 32 == 0 and tc::bf16()); `name` names the launcher in
/// errors. Kernels are built for MIN_ROWS rows and more only (a launcher
/// that never takes the form below some row count builds none for the
/// counts below it).
template <GemvIn IN, int ROWS, int MIN_ROWS = 1, class T, class Y, class Rows, class B>
std::string launchGemvTcRows(const char *name, const T *x, const GemvPrologue<T, T> &pro,
                             const Rows &rows, const B *bias, const Y *residual, Y *y,
                             float *partial, unsigned *counters, int m, int n, int k, int splits,
                             Stream stream, const GemvSegments &seg) {
  if (std::string e = gemvRowsError<ROWS>(name, m); !e.empty())
    return e;
  size_t shared = gemvSharedBytes<IN, T>(m, k);
  dim3 grid(ceilDiv(n, kTcGemvColumns), unsigned(splits)), block(kTcGemvWarps * 32);
  std::string e;
  switch (m) {
#define LLMC_GEMV_TC_CASE(R)                                                                       \
  case R:                                                                                          \
    if constexpr (gemvRowsWanted<ROWS>(R) && R >= MIN_ROWS)                                        \
      e = launch(gemvTcKernel<T, Y, R, IN, Rows, B>, grid, block, shared, stream, x, rows, bias,   \
                 residual, y, partial, counters, n, k, pro, seg);                                  \
    else                                                                                           \
      e = std::string(name) + ": " + std::to_string(R) + " rows, below the tensor-core form's";    \
    break;
    LLMC_GEMV_TC_CASE(1)
    LLMC_GEMV_TC_CASE(2)
    LLMC_GEMV_TC_CASE(3)
    LLMC_GEMV_TC_CASE(4)
    LLMC_GEMV_TC_CASE(5)
    LLMC_GEMV_TC_CASE(6)
    LLMC_GEMV_TC_CASE(7)
    LLMC_GEMV_TC_CASE(8)
#undef LLMC_GEMV_TC_CASE
  default:
    e = std::string(name) + ": invalid arguments";
  }
  return e;
}

/// The tensor-core form of launchGemv (the caller checked the arguments,
/// K % 32 == 0 and tc::bf16()).
template <GemvIn IN, int ROWS, class T, class Y>
std::string launchGemvTc(const T *x, const GemvPrologue<T, T> &pro, const T *w, const T *bias,
                         const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                         int k, int splits, Stream stream, const GemvSegments &seg) {
  return launchGemvTcRows<IN, ROWS>("gemv", x, pro, DenseTcRows<T>{w, k}, bias, residual, y,
                                    partial, counters, m, n, k, splits, stream, seg);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_GEMVTENSORCORE_H
