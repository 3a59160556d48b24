//===- Gemv.h - decode linear layers: y = x W^T (+ bias) (+ residual) -----===//
//
// Shapes and layouts
//   x         [M, K] of X, row-major (M <= kMaxRows: the decode batch)
//   w         [N, K] of W (f32, f16, bf16), row-major: llm.linear's weight
//   bias      [N] of W or null; residual [M, N] of Y or null (added last)
//   y         [M, N] of Y; or, with segments (GemvSegments: column ends
//             e1 < e2 < N), each column range [0, e1), [e1, e2), [e2, N)
//             as a [M, width] block of its own at M * start (a merged
//             projection's q, k and v, or gate and up: the slices its
//             readers take are then contiguous)
//   partial   [splits, M, N] f32 workspace when splits > 1; counters:
//             Common.h's split counters (at least ceil(N / kWarps))
//
// Tiling
//   One warp per output column n (a row of W), kWarps warps per block:
//   grid = (ceil(N / kWarps), splits). Each lane reads W in 16-byte
//   vectors (8 halves or 4 floats), lanes side by side so a warp reads 512
//   contiguous bytes per step, kUnroll steps in flight (see below); x is
//   read through L1 (every warp of the block reads the same rows). Sums in
//   f32, reduced across the warp with shuffles. K that is not a multiple of
//   the vector width is read element by element. w, x and y are 16-byte
//   aligned. The body (gemvSimtBody) reads W through a row reader:
//   DenseGemvRows, W's own vectors; or QuantGemv.h's QuantGemvRows, 4- or
//   8-bit values with their groups' scales and zero points (qgemv).
//
//   normGemv: the same over llm.rms_norm(x) folded in (norm [K] of W):
//   each block first sums the squares of its M rows of x (16-byte loads,
//   all of a thread's issued together, one pair of barriers for all rows:
//   element loads, each waiting for the one before, took the folded layers
//   to half the plain ones' speed on an H200), then writes them scaled by
//   the row's inverse RMS and (norm + offset), rounded to X as rmsNorm
//   would have written them, into shared memory (M * K values, at most
//   kGemvPrologueSharedBytes; all its threads, before any warp leaves),
//   which the warps read as x. One launch instead of two per normalised
//   layer of a decode step; the extra reads of x (M * K values per block)
//   come from L2. (Normalising each value as a warp read it made every
//   warp repeat the block's work: on an H200 the folded GEMVs ran at half
//   the plain ones' bandwidth, and a SwiGLU folded the same way, with an
//   exp per value, at a fifth.)
//
//   swigluGemv: the same over silu(gate) * up (llm.swiglu, gate and up
//   [M, K] of X) folded in: each block writes the values of its split's K
//   range, rounded to X as the SwiGLU kernel would have written them, into
//   shared memory (M * K values at most kGemvPrologueSharedBytes), once per
//   block: a block of 8 columns computes each of its values once where the
//   per-warp fold computed it 8 times. gatedGemv: the same with GELU (tanh
//   or erf) in SiLU's place (Gemma's GeGLU, gelu(gate) * up).
//
//   A lane keeps two batches of kUnroll vectors in flight: the next
//   batch's loads are issued before the current one is multiplied. Its
//   first batch is loaded before LLMC_KERNEL_BEGIN() (the wait for the
//   kernel before, launches being programmatic on sm_90+) and before the
//   prologue (normGemv's norm, swigluGemv's SwiGLU), and the next
//   kPrefetch vectors are asked for in L2: weights are written by no
//   kernel. (On an H200, with each batch issued after the norm and used
//   before the next was issued, the folded layers of K = 2048 ran at 38-64%
//   of a streaming read, the plain ones at 54%.) This tiling runs below
//   kTcGemvMinRows rows; at one row it beat 2 and 4 columns per warp and 8
//   loads in flight on an H200, and from 3 rows the tensor-core form beat
//   them all (bench/results/2026-11-27-cuda-decode-h200-4.md).
//
//   Split-K (splits > 1, for layers with few columns): split s covers
//   K-chunks [s * per, (s + 1) * per) and writes its sums to `partial`; the
//   block that finishes its column group last (Common.h's lastOfGroup over
//   `counters`, a word per column group) adds the splits in order
//   (deterministic: no atomics on the sums), then the bias and residual,
//   in the same launch.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_GEMV_H
#define LLMC_RUNTIME_MODEL_CUDA_GEMV_H

#include "runtime/src/model/cuda/Common.h"

#include <type_traits>

namespace llmc::cuda {

constexpr int kGemvWarps = 8;
constexpr int kGemvUnroll = 4;
constexpr int kGemvMaxRows = 8;
constexpr int kGemvPrefetch = 2 * kGemvUnroll; // vectors per lane asked for before the wait
/// The rows normGemv normalises (swigluGemv computes) into shared memory,
/// at most (under the 48 KiB a block has without an opt-in, beside the
/// static scratch).
constexpr int kGemvPrologueSharedBytes = 40 * 1024;

/// From this many rows of half or bfloat16 x and W (K a multiple of 32, on
/// sm_80 and later) gemv and normGemv run on tensor cores
/// (GemvTensorCore.h, included at the end of this file). On an H200 the
/// faster form at every layer of a 1B Llama from 3 rows, within 2% of the
/// SIMT one at 2 (bench/results/2026-11-27-cuda-decode-h200-4.md).
constexpr int kTcGemvMinRows = 3;
template <class W, class X>
constexpr bool kTensorCoreGemv =
    std::is_same_v<W, X> && (std::is_same_v<W, half> || std::is_same_v<W, bfloat16>);
/// A GEMV's output in column ranges (see the top of this file): the ends
/// of the first one or two ranges (e1 < e2 < N), 0 where there is none.
struct GemvSegments {
  int e1 = 0, e2 = 0;
};
/// What a GEMV applies to x as each block writes it into shared memory:
/// nothing (gemv reads x itself), llm.rms_norm (normGemv) or a gated
/// activation, act(gate) * up (swigluGemv, gatedGemv: x is the gate).
enum class GemvIn { Plain, RmsNorm, Swiglu };
/// The gated activation's act: SiLU (llm.swiglu), or GELU with tanh or erf
/// (llm.gelu times up: Gemma's GeGLU), each as llmc's element-wise kernels
/// compute it in f32.
enum class GateAct { Silu, GeluTanh, GeluErf };
/// The shared memory a GEMV block's prologue writes M rows of K into.
template <GemvIn IN, class X> constexpr size_t gemvSharedBytes(int m, int k) {
  return IN == GemvIn::Plain ? 0 : size_t(m) * size_t(k) * sizeof(X);
}
/// Their operands beyond x: the norm's weights, epsilon and weight offset;
/// the gated activation's up and act.
template <class W, class X> struct GemvPrologue {
  const W *norm = nullptr;
  float eps = 0.0f, offset = 0.0f;
  const X *up = nullptr;
  GateAct act = GateAct::Silu;
};
template <GemvIn IN, int ROWS = 0, class T, class Y>
std::string launchGemvTc(const T *x, const GemvPrologue<T, T> &pro, const T *w, const T *bias,
                         const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                         int k, int splits, Stream stream, const GemvSegments &seg = {});

/// The GEMV launchers take the rows at run time (1 .. kGemvMaxRows), and
/// instantiate a kernel for each count; generated code, whose every call
/// has rows fixed, passes them as ROWS too, so that only that kernel is
/// compiled (a model's libraries, the emulation's and nvcc's, then hold a
/// GEMV kernel per form it uses, not eight). Whether a call for `rows` rows
/// instantiates the kernel for R of them:
template <int ROWS> constexpr bool gemvRowsWanted(int r) { return ROWS == 0 || ROWS == r; }
/// A call compiled for ROWS rows given another count: the error, or "".
template <int ROWS> std::string gemvRowsError(const char *name, int m) {
  if (ROWS == 0 || m == ROWS)
    return "";
  return std::string(name) + ": " + std::to_string(m) + " rows, where the call was compiled for " +
         std::to_string(ROWS);
}

/// Where y[m, col] of `rows` rows of n columns is, in `seg`'s layout.
LLMC_HOST_DEVICE size_t outputAt(const GemvSegments &seg, int rows, int m, int col, int n) {
  int start = 0, end = n;
  if (seg.e1 > 0) {
    if (col < seg.e1)
      end = seg.e1;
    else if (seg.e2 > 0 && col < seg.e2)
      start = seg.e1, end = seg.e2;
    else
      start = seg.e2 > 0 ? seg.e2 : seg.e1;
  }
  return size_t(rows) * size_t(start) + size_t(m) * size_t(end - start) + size_t(col - start);
}

/// What is wrong with segments for n columns (a residual is read as
/// [M, N], so none goes with them), or "".
inline std::string segmentsError(const GemvSegments &seg, int n, bool residual) {
  bool valid = seg.e1 == 0 ? seg.e2 == 0
                           : seg.e1 > 0 && seg.e1 < n &&
                                 (seg.e2 == 0 || (seg.e2 > seg.e1 && seg.e2 < n));
  if (!valid)
    return "gemv: invalid output segments";
  if (seg.e1 > 0 && residual)
    return "gemv: output segments with a residual";
  return "";
}

/// The end of a warp's column `col` of a GEMV (gemv, qgemv): the lanes'
/// sums of its M rows reduced across the warp, then lane 0 writes them to
/// `partial` (split-K) or to y (in seg's layout) with the bias and residual
/// added.
template <int M, class B, class Y>
LLMC_DEVICE void finishColumn(float (&acc)[M], unsigned lane, int split, int splits, int col,
                              int n, const B *bias, const Y *residual, Y *y, float *partial,
                              const GemvSegments &seg) {
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    acc[m] = warpSum(acc[m]);
  if (lane != 0)
    return;
  if (splits > 1) {
    LLMC_UNROLL
    for (int m = 0; m < M; ++m)
      partial[(size_t(split) * M + size_t(m)) * size_t(n) + size_t(col)] = acc[m];
    return;
  }
  float b = bias ? toFloat(bias[col]) : 0.0f;
  LLMC_UNROLL
  for (int m = 0; m < M; ++m) {
    float v = acc[m] + b;
    if (residual)
      v += toFloat(residual[size_t(m) * size_t(n) + size_t(col)]);
    y[outputAt(seg, M, m, col, n)] = fromFloat<Y>(v);
  }
}

/// Split-K's end, by every thread of every block of a gemv or qgemv launch
/// after its warps' finishColumn: in the block that finishes its column
/// group (the G columns of the block) last, y[m, col] = the splits' partial
/// sums added in split order + bias + residual for the group's columns
/// (y in seg's layout). Nothing without splits (finishColumn wrote y).
template <int M, int G = kGemvWarps, class B, class Y>
LLMC_DEVICE void finishSplits(const float *partial, unsigned *counters, const B *bias,
                              const Y *residual, Y *y, int n, const GemvSegments &seg) {
  int splits = int(gridDim.y);
  if (splits == 1 || !lastOfGroup(counters + blockIdx.x, unsigned(splits)))
    return;
  for (int i = int(threadIdx.x); i < M * G; i += int(blockDim.x)) {
    int m = i / G, col = int(blockIdx.x) * G + i % G;
    if (col >= n)
      continue;
    size_t at = size_t(m) * size_t(n) + size_t(col);
    float v = 0.0f;
    for (int s = 0; s < splits; ++s)
      v += __ldcg(partial + size_t(s) * M * size_t(n) + at);
    if (bias)
      v += toFloat(bias[col]);
    if (residual)
      v += toFloat(residual[at]);
    y[outputAt(seg, M, m, col, n)] = fromFloat<Y>(v);
  }
}

/// x [M, k] as rms_norm writes it (v * inv * (norm + offset), rounded to X,
/// inv = 1 / sqrt(mean(v^2) + eps) per row) into xs [M, k] in shared
/// memory, by every thread of the block: once per block, so that the warps
/// then read it as they would read x. x and norm are read in 16-byte
/// vectors where K is a whole number of them (all of a row's loads of a
/// thread issued before their sums: at K = 2048 each thread has one vector
/// per row), else element by element.
template <int M, class X, class W>
LLMC_DEVICE void normaliseRows(const X *x, const W *norm, int k, float eps, float offset, X *xs) {
  constexpr int kVec = int(16 / sizeof(X));
  LLMC_SHARED(float[M * 32], scratch);
  int tid = int(threadIdx.x), threads = int(blockDim.x);
  bool vectors = k % kVec == 0 && aligned16(x) && aligned16(norm) &&
                 (kVec * sizeof(W)) % 16 == 0;
  float inv[M];
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    inv[m] = 0.0f;
  if (vectors) {
    for (int i = tid; i < k / kVec; i += threads) {
      uint4 raw[M];
      LLMC_UNROLL
      for (int m = 0; m < M; ++m)
        raw[m] = load16(x + size_t(m) * size_t(k) + size_t(i) * kVec);
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float v[kVec];
        unpackFloats(raw[m], v, x);
        LLMC_UNROLL
        for (int e = 0; e < kVec; ++e)
          inv[m] = fmaf(v[e], v[e], inv[m]);
      }
    }
  } else {
    for (int i = tid; i < k; i += threads)
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float v = toFloat(x[size_t(m) * size_t(k) + size_t(i)]);
        inv[m] = fmaf(v, v, inv[m]);
      }
  }
  blockSums<M>(inv, scratch);
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    inv[m] = rsqrtf(inv[m] / float(k) + eps);
  if (vectors) {
    for (int i = tid; i < k / kVec; i += threads) {
      float scale[kVec];
      loadRun<kVec>(norm + size_t(i) * kVec, scale);
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        size_t at = size_t(m) * size_t(k) + size_t(i) * kVec;
        float v[kVec];
        loadFloats(x + at, v);
        LLMC_UNROLL
        for (int e = 0; e < kVec; ++e)
          xs[at + e] = fromFloat<X>(v[e] * inv[m] * (scale[e] + offset));
      }
    }
  } else {
    LLMC_UNROLL
    for (int m = 0; m < M; ++m)
      for (int i = tid; i < k; i += threads) {
        size_t at = size_t(m) * size_t(k) + size_t(i);
        xs[at] = fromFloat<X>(toFloat(x[at]) * inv[m] * (toFloat(norm[i]) + offset));
      }
  }
  __syncthreads();
}

/// act(g) * u in f32, as the generated element-wise kernels compute it.
LLMC_DEVICE float gated(GateAct act, float g, float u) {
  if (act == GateAct::GeluTanh)
    return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
  if (act == GateAct::GeluErf)
    return 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)) * u;
  return g / (1.0f + expf(-g)) * u;
}

/// act(gate) * up for values [lo, hi) of M rows of K into xs [M, K] in
/// shared memory, rounded to X as the generated SwiGLU (or GELU and
/// product) kernel rounds them (`gated` in f32), by every thread of the
/// block; 16-byte vectors where the range and rows allow, else element by
/// element.
template <int M, class X>
LLMC_DEVICE void gatedRows(const X *gate, const X *up, GateAct act, int k, int lo, int hi,
                           X *xs) {
  constexpr int kVec = int(16 / sizeof(X));
  int tid = int(threadIdx.x), threads = int(blockDim.x);
  bool vectors = lo % kVec == 0 && k % kVec == 0 && aligned16(gate) && aligned16(up);
  int vEnd = vectors ? lo + (hi - lo) / kVec * kVec : lo;
  auto value = [act](float g, float u) { return fromFloat<X>(gated(act, g, u)); };
  for (int i = lo / kVec + tid; i < vEnd / kVec; i += threads) {
    uint4 g[M], u[M];
    LLMC_UNROLL
    for (int m = 0; m < M; ++m) {
      g[m] = load16(gate + size_t(m) * size_t(k) + size_t(i) * kVec);
      u[m] = load16(up + size_t(m) * size_t(k) + size_t(i) * kVec);
    }
    LLMC_UNROLL
    for (int m = 0; m < M; ++m) {
      float gv[kVec], uv[kVec];
      unpackFloats(g[m], gv, gate);
      unpackFloats(u[m], uv, up);
      LLMC_UNROLL
      for (int e = 0; e < kVec; ++e)
        xs[size_t(m) * size_t(k) + size_t(i) * kVec + size_t(e)] = value(gv[e], uv[e]);
    }
  }
  for (int i = vEnd + tid; i < hi; i += threads)
    LLMC_UNROLL
    for (int m = 0; m < M; ++m) {
      size_t at = size_t(m) * size_t(k) + size_t(i);
      xs[at] = value(toFloat(gate[at]), toFloat(up[at]));
    }
  __syncthreads();
}

/// x's values [lo, hi) as a GEMV block reads them: into shared memory
/// through the prologue IN (the whole rows for a norm, whose sums need
/// them), by every thread of the block; x itself for GemvIn::Plain.
template <GemvIn IN, int M, class W, class X>
LLMC_DEVICE const X *blockInput(const X *x, const GemvPrologue<W, X> &pro, int k, int lo,
                                int hi) {
  if constexpr (IN == GemvIn::Plain) {
    return x;
  } else {
    LLMC_DYNAMIC_SHARED(X, xs);
    if constexpr (IN == GemvIn::RmsNorm)
      normaliseRows<M>(x, pro.norm, k, pro.eps, pro.offset, xs);
    else
      gatedRows<M>(x, pro.up, pro.act, k, lo, hi, xs);
    return xs;
  }
}

/// W's rows as gemvSimtBody reads them, in vectors of kVals values a lane
/// reads in one step (kUnroll of them a batch): vectors() whole ones a row
/// (0: the scalar tail reads all of it); row(r) a cursor over row r whose
/// load(v) issues vector v's reads (a Raw), multiply adds that vector times
/// x's values into the M rows' sums where it is used, and value(e) is W[r,
/// e] in f32 (the tail). DenseGemvRows: W's own 16 bytes (8 halves or 4
/// floats); QuantGemv.h's QuantGemvRows: 4- or 8-bit values with their
/// group's scale and zero point.
template <class W> struct DenseGemvRows {
  static constexpr int kVals = int(16 / sizeof(W)), kUnroll = kGemvUnroll;
  const W *w;
  int k;
  /// Whole vectors per row; none when rows are not 16-byte aligned (K not
  /// a multiple of the vector width).
  LLMC_DEVICE int vectors() const { return k % kVals == 0 ? k / kVals : 0; }
  struct Cursor {
    using Raw = uint4;
    const W *p;
    LLMC_DEVICE Raw load(int v) const { return load16(p + size_t(v) * kVals); }
    LLMC_DEVICE void prefetch(int v) const { prefetchL2(p + size_t(v) * kVals); }
    /// x's vector v of every row, times W's.
    template <int M, class X>
    LLMC_DEVICE void multiply(const Raw &raw, const X *x, int k, int v, float (&acc)[M]) const {
      float wv[kVals];
      unpackFloats(raw, wv, p);
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float xv[kVals];
        loadRun<kVals>(x + size_t(m) * size_t(k) + size_t(v) * kVals, xv);
        LLMC_UNROLL
        for (int i = 0; i < kVals; ++i)
          acc[m] = fmaf(wv[i], xv[i], acc[m]);
      }
    }
    LLMC_DEVICE float value(int e) const { return toFloat(p[e]); }
  };
  LLMC_DEVICE Cursor row(int r) const { return {w + size_t(r) * size_t(k)}; }
};

/// The SIMT GEMV (see the top of this file) over the row reader `rows`, by
/// every thread of the block. IN: what x goes through into shared memory
/// first (blockInput).
template <class Y, int M, GemvIn IN, class Rows, class X, class P, class B>
LLMC_DEVICE void gemvSimtBody(const X *x, const Rows &rows, const B *bias, const Y *residual, Y *y,
                              float *partial, unsigned *counters, int n, int k,
                              const GemvPrologue<P, X> &pro, const GemvSegments &seg) {
  constexpr int kVals = Rows::kVals, U = Rows::kUnroll;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int col = int(blockIdx.x) * kGemvWarps + int(warp);
  int splits = int(gridDim.y), split = int(blockIdx.y);
  bool live = col < n;
  int chunks = rows.vectors();
  int perSplit = (chunks + splits - 1) / splits;
  int c0 = split * perSplit, c1 = c0 + perSplit < chunks ? c0 + perSplit : chunks;
  // The split's values of x (the last split's reach past the last whole
  // vector: the scalar tail's).
  int lo = (c0 < chunks ? c0 : chunks) * kVals, hi = split == splits - 1 ? k : c1 * kVals;
  if (!live)
    c1 = c0;
  const auto row = rows.row(live ? col : 0);
  using Raw = typename decltype(row)::Raw;
  // U vectors per lane in flight (a batch): batch b + 1 is issued before
  // batch b is used. The first batch is issued before the wait for the
  // kernel before this one (programmatic launches) and before the
  // prologue, and the batch after it asked for in L2: no kernel writes the
  // weights. (A lane's vector past its range is zero, unused.)
  const Raw none = {};
  auto issue = [&](Raw (&raw)[U], int at) {
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      raw[u] = at + u * 32 < c1 ? row.load(at + u * 32) : none;
  };
  int v = c0 + int(lane);
  Raw batch[U];
  issue(batch, v);
  for (int p = v + U * 32, u = 0; p < c1 && u < kGemvPrefetch; p += 32, ++u)
    row.prefetch(p);
  LLMC_KERNEL_BEGIN();
  x = blockInput<IN, M>(x, pro, k, lo, hi); // (block barriers: before any warp leaves)
  if (!live && splits == 1)
    return; // the whole warp leaves together; no block barrier follows
  // (With splits, a warp past N stays for lastOfGroup's barriers.)

  float acc[M];
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    acc[m] = 0.0f;
  for (; v < c1; v += U * 32) {
    Raw next[U];
    issue(next, v + U * 32);
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      if (v + u * 32 < c1)
        row.template multiply<M>(batch[u], x, k, v + u * 32, acc);
    LLMC_UNROLL
    for (int u = 0; u < U; ++u)
      batch[u] = next[u];
  }
  // The scalar tail past the last whole vector, in the last split.
  if (live && split == splits - 1)
    for (int e = chunks * kVals + int(lane); e < k; e += 32)
      LLMC_UNROLL
      for (int m = 0; m < M; ++m)
        acc[m] = fmaf(row.value(e), toFloat(x[size_t(m) * size_t(k) + size_t(e)]), acc[m]);

  if (live) // (warp-uniform: finishColumn shuffles)
    finishColumn<M>(acc, lane, split, splits, col, n, bias, residual, y, partial, seg);
  finishSplits<M>(partial, counters, bias, residual, y, n, seg);
}

// (No __launch_bounds__: with it ptxas trades registers for occupancy and
// spills at M = 8; without it M = 8 takes 78 registers and 3 blocks fit an
// SM, which keeps enough loads in flight.)
template <class W, class X, class Y, int M, GemvIn IN>
LLMC_GLOBAL void gemvKernel(const X *x, const W *w, const W *bias, const Y *residual, Y *y,
                            float *partial, unsigned *counters, int n, int k,
                            GemvPrologue<W, X> pro, GemvSegments seg) {
  gemvSimtBody<Y, M, IN>(x, DenseGemvRows<W>{w, k}, bias, residual, y, partial, counters, n, k,
                         pro, seg);
}

/// Whether split-K has its workspace: partial sums and a split counter per
/// column group.
inline bool splitWorkspace(const float *partial, const unsigned *counters, int n) {
  return partial && counters && (n + kGemvWarps - 1) / kGemvWarps <= kSplitCounters;
}

/// The split count for a layer of n columns whose rows are `vectors` loads
/// of a lane on a device of `sms` multiprocessors: enough blocks for two
/// waves, each split keeping at least 8 loads per lane.
inline int splitCount(int n, int vectors, int sms) {
  int blocks = (n + kGemvWarps - 1) / kGemvWarps;
  int splits = 1;
  while (blocks * splits < 2 * sms && vectors / (splits * 2) >= 8 * 32)
    splits *= 2;
  return splits;
}

/// The split count for gemv over n columns and k inputs.
inline int gemvSplits(int n, int k, int sizeofW, int sms) {
  return splitCount(n, k / (16 / sizeofW), sms);
}

/// Whether the rows a prologue IN writes into shared memory fit it: "", or
/// the error, named `name`.
template <GemvIn IN, class X> std::string gemvSharedError(const char *name, int m, int k) {
  if (gemvSharedBytes<IN, X>(m, k) <= size_t(kGemvPrologueSharedBytes))
    return "";
  return std::string(name) + ": " + std::to_string(m) + " x " + std::to_string(k) +
         " inputs exceed the block's shared memory";
}

/// What is wrong with a gemv's, normGemv's or swigluGemv's arguments, or "".
template <GemvIn IN, class W, class X>
std::string gemvArgumentError(const GemvPrologue<W, X> &pro, const float *partial,
                              const unsigned *counters, int m, int n, int k, int splits,
                              const GemvSegments &seg, bool residual) {
  if (m < 1 || m > kGemvMaxRows || n < 1 || k < 1 || splits < 1 ||
      (splits > 1 && !splitWorkspace(partial, counters, n)) ||
      (IN == GemvIn::RmsNorm && !pro.norm) || (IN == GemvIn::Swiglu && !pro.up))
    return "gemv: invalid arguments";
  if (std::string e = segmentsError(seg, n, residual); !e.empty())
    return e;
  if (k % int(16 / sizeof(W)) != 0 && splits > 1)
    return "gemv: split-K needs K a multiple of the vector width";
  return gemvSharedError<IN, X>(IN == GemvIn::RmsNorm ? "normGemv" : "swigluGemv", m, k);
}

/// gemv, normGemv and swigluGemv in the SIMT form (one column a warp; see
/// gemvKernel), whatever the rows.
template <GemvIn IN, int ROWS = 0, class W, class X, class Y>
std::string launchGemvSimt(const X *x, const GemvPrologue<W, X> &pro, const W *w, const W *bias,
                           const Y *residual, Y *y, float *partial, unsigned *counters, int m,
                           int n, int k, int splits, Stream stream, GemvSegments seg = {}) {
  if (std::string e = gemvArgumentError<IN>(pro, partial, counters, m, n, k, splits, seg,
                                            residual != nullptr);
      !e.empty())
    return e;
  if (std::string e = gemvRowsError<ROWS>("gemv", m); !e.empty())
    return e;
  size_t shared = gemvSharedBytes<IN, X>(m, k);
  dim3 grid(ceilDiv(n, kGemvWarps), unsigned(splits));
  dim3 block(kGemvWarps * 32);
  std::string e;
  switch (m) {
#define LLMC_GEMV_CASE(R)                                                                          \
  case R:                                                                                          \
    if constexpr (gemvRowsWanted<ROWS>(R))                                                         \
      e = launch(gemvKernel<W, X, Y, R, IN>, grid, block, shared, stream, x, w, bias, residual, y, \
                 partial, counters, n, k, pro, seg);                                               \
    break;
    LLMC_GEMV_CASE(1)
    LLMC_GEMV_CASE(2)
    LLMC_GEMV_CASE(3)
    LLMC_GEMV_CASE(4)
    LLMC_GEMV_CASE(5)
    LLMC_GEMV_CASE(6)
    LLMC_GEMV_CASE(7)
    LLMC_GEMV_CASE(8)
#undef LLMC_GEMV_CASE
  }
  return e;
}

/// gemv, normGemv and swigluGemv as the runtime runs them: on tensor cores
/// from kTcGemvMinRows rows where they apply, else one column per warp.
template <GemvIn IN, int ROWS = 0, class W, class X, class Y>
std::string launchGemv(const X *x, const GemvPrologue<W, X> &pro, const W *w, const W *bias,
                       const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                       int k, int splits, Stream stream, GemvSegments seg = {}) {
  if constexpr (kTensorCoreGemv<W, X>)
    if (m >= kTcGemvMinRows && k % 32 == 0 && tc::bf16()) {
      if (std::string e = gemvArgumentError<IN>(pro, partial, counters, m, n, k, splits, seg,
                                                residual != nullptr);
          !e.empty())
        return e;
      return launchGemvTc<IN, ROWS>(x, pro, w, bias, residual, y, partial, counters, m, n, k,
                                    splits, stream, seg);
    }
  return launchGemvSimt<IN, ROWS>(x, pro, w, bias, residual, y, partial, counters, m, n, k, splits,
                                  stream, seg);
}

/// Launches y = x W^T (+ bias) (+ residual) for M rows (1 .. kGemvMaxRows).
/// When splits > 1, `partial` must hold splits * M * N floats and
/// `counters` be the context's split counters; y in seg's layout. ROWS:
/// gemvRowsWanted (0, any M).
template <class W, class X, class Y, int ROWS = 0>
std::string gemv(const X *x, const W *w, const W *bias, const Y *residual, Y *y, float *partial,
                 unsigned *counters, int m, int n, int k, int splits, Stream stream,
                 GemvSegments seg = {}) {
  return launchGemv<GemvIn::Plain, ROWS>(x, GemvPrologue<W, X>{}, w, bias, residual, y, partial,
                                         counters, m, n, k, splits, stream, seg);
}

/// y = rms_norm(x; norm, eps, offset) W^T (+ bias) (+ residual), the norm's
/// output rounded to X as llm.rms_norm's would be, without writing it
/// (M * K * sizeof(X) at most kGemvPrologueSharedBytes).
template <class W, class X, class Y, int ROWS = 0>
std::string normGemv(const X *x, const W *norm, float eps, float offset, const W *w, const W *bias,
                     const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                     int k, int splits, Stream stream, GemvSegments seg = {}) {
  return launchGemv<GemvIn::RmsNorm, ROWS>(x, GemvPrologue<W, X>{norm, eps, offset, nullptr}, w,
                                           bias, residual, y, partial, counters, m, n, k, splits,
                                           stream, seg);
}

/// y = swiglu(gate, up) W^T (+ bias) (+ residual): silu(gate) * up ([M, K]
/// each) rounded to X as llm.swiglu's would be, without writing it (M * K *
/// sizeof(X) at most kGemvPrologueSharedBytes).
template <class W, class X, class Y, int ROWS = 0>
std::string swigluGemv(const X *gate, const X *up, const W *w, const W *bias, const Y *residual,
                       Y *y, float *partial, unsigned *counters, int m, int n, int k, int splits,
                       Stream stream, GemvSegments seg = {}) {
  return launchGemv<GemvIn::Swiglu, ROWS>(gate, GemvPrologue<W, X>{nullptr, 0.0f, 0.0f, up}, w,
                                          bias, residual, y, partial, counters, m, n, k, splits,
                                          stream, seg);
}

/// y = (act(gate) * up) W^T (+ bias) (+ residual), as swigluGemv with the
/// activation `act` (GateAct::GeluTanh, GeluErf: Gemma's GeGLU).
template <class W, class X, class Y, int ROWS = 0>
std::string gatedGemv(GateAct act, const X *gate, const X *up, const W *w, const W *bias,
                      const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                      int k, int splits, Stream stream, GemvSegments seg = {}) {
  return launchGemv<GemvIn::Swiglu, ROWS>(gate, GemvPrologue<W, X>{nullptr, 0.0f, 0.0f, up, act},
                                          w, bias, residual, y, partial, counters, m, n, k, splits,
                                          stream, seg);
}

} // namespace llmc::cuda

#include "runtime/src/model/cuda/GemvTensorCore.h"

#endif // LLMC_RUNTIME_MODEL_CUDA_GEMV_H
