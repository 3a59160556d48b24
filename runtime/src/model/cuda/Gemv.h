//===- Gemv.h - decode linear layers: y = x W^T (+ bias) (+ residual) -----===//
//
// Shapes and layouts
//   x         [M, K] of X, row-major (M <= kMaxRows: the decode batch)
//   w         [N, K] of W (f32, f16, bf16), row-major: llm.linear's weight
//   bias      [N] of W or null; residual [M, N] of Y or null (added last)
//   y         [M, N] of Y
//   partial   [splits, M, N] f32 workspace when splits > 1; counters:
//             Common.h's split counters (at least ceil(N / kWarps))
//
// Tiling
//   One warp per output column n (a row of W), kWarps warps per block:
//   grid = (ceil(N / kWarps), splits). Each lane reads W in 16-byte vectors
//   (8 halves or 4 floats), lanes side by side so a warp reads 512
//   contiguous bytes per step, kUnroll steps issued before any is used so
//   that enough bytes are in flight to saturate HBM; x is read through L1
//   (every warp of the block reads the same rows). Sums in f32, reduced
//   across the warp with shuffles. K that is not a multiple of the vector
//   width is read element by element. w, x and y are 16-byte aligned.
//
//   normGemv: the same over llm.rms_norm(x) folded in (norm [K] of W):
//   each block first sums the squares of its M rows of x (all its threads,
//   before any warp leaves), then every x value read is scaled by its row's
//   inverse RMS and (norm + offset) and rounded to X, as rmsNorm would have
//   written it. One launch instead of two per normalised layer of a decode
//   step; the extra reads of x (M * K values per block) come from L2.
//   swigluGemv: x = silu(gate) * up (llm.swiglu folded in, gate and up
//   [M, K] of X), computed as each value is read and rounded to X as
//   swiglu's output would be.
//
//   Before LLMC_KERNEL_BEGIN() (the wait for the kernel before, launches
//   being programmatic on sm_90+), each lane asks for its first
//   kPrefetch vectors of W in L2: weights are written by no kernel.
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

namespace llmc::cuda {

constexpr int kGemvWarps = 8;
constexpr int kGemvUnroll = 4;
constexpr int kGemvMaxRows = 8;
constexpr int kGemvPrefetch = 2 * kGemvUnroll; // vectors per lane asked for before the wait

/// The end of a warp's column `col` of a GEMV (gemv, qgemv): the lanes'
/// sums of its M rows reduced across the warp, then lane 0 writes them to
/// `partial` (split-K) or to y with the bias and residual added.
template <int M, class B, class Y>
LLMC_DEVICE void finishColumn(float (&acc)[M], unsigned lane, int split, int splits, int col,
                              int n, const B *bias, const Y *residual, Y *y, float *partial) {
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
    y[size_t(m) * size_t(n) + size_t(col)] = fromFloat<Y>(v);
  }
}

/// Split-K's end, by every thread of every block of a gemv or qgemv launch
/// after its warps' finishColumn: in the block that finishes its column
/// group last, y[m, col] = the splits' partial sums added in split order +
/// bias + residual for the group's kGemvWarps columns. Nothing without
/// splits (finishColumn wrote y).
template <int M, class B, class Y>
LLMC_DEVICE void finishSplits(const float *partial, unsigned *counters, const B *bias,
                              const Y *residual, Y *y, int n) {
  int splits = int(gridDim.y);
  if (splits == 1 || !lastOfGroup(counters + blockIdx.x, unsigned(splits)))
    return;
  for (int i = int(threadIdx.x); i < M * kGemvWarps; i += int(blockDim.x)) {
    int m = i / kGemvWarps, col = int(blockIdx.x) * kGemvWarps + i % kGemvWarps;
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
    y[at] = fromFloat<Y>(v);
  }
}

/// The inverse RMS of each of the M rows of x [M, k] (rms_norm's
/// 1 / sqrt(mean(x^2) + eps)), by every thread of the block.
template <int M, class X>
LLMC_DEVICE void rowInverseRms(const X *x, int k, float eps, float (&inv)[M]) {
  LLMC_SHARED(float[32], scratch);
  LLMC_UNROLL
  for (int m = 0; m < M; ++m) {
    float squares = 0.0f;
    for (int i = int(threadIdx.x); i < k; i += int(blockDim.x)) {
      float v = toFloat(x[size_t(m) * size_t(k) + size_t(i)]);
      squares = fmaf(v, v, squares);
    }
    inv[m] = rsqrtf(blockSum(squares, scratch) / float(k) + eps);
  }
}

/// What gemvKernel applies to x as it reads it.
enum GemvPrologue { kPlainX, kRmsNormX, kSwigluX };

/// x values as rms_norm writes them: v * inv * (norm + offset), rounded to X.
template <int N, class X> LLMC_DEVICE void normalise(float (&v)[N], float inv, const float (&nw)[N],
                                                    float offset) {
  LLMC_UNROLL
  for (int i = 0; i < N; ++i)
    v[i] = toFloat(fromFloat<X>(v[i] * inv * (nw[i] + offset)));
}

/// x values as swiglu writes them: silu(v) * up, rounded to X (up[0 .. N)
/// read as loadRun reads x).
template <int N, class X> LLMC_DEVICE void applySwiglu(float (&v)[N], const X *up) {
  float u[N];
  loadRun<N>(up, u);
  LLMC_UNROLL
  for (int i = 0; i < N; ++i)
    v[i] = toFloat(fromFloat<X>(v[i] / (1.0f + expf(-v[i])) * u[i]));
}

// (No __launch_bounds__: with it ptxas trades registers for occupancy and
// spills at M = 8; without it M = 8 takes 80 registers and 3 blocks fit an
// SM, which keeps enough loads in flight.) PRO: what is applied to x
// (norm, eps and offset serve kRmsNormX, up kSwigluX; unused otherwise).
template <class W, class X, class Y, int M, int PRO>
LLMC_GLOBAL void gemvKernel(const X *x, const W *w, const W *bias, const Y *residual, Y *y,
                            float *partial, unsigned *counters, int n, int k, const W *norm,
                            float eps, float offset, const X *up) {
  constexpr int kVec = int(16 / sizeof(W));
  constexpr bool NORM = PRO == kRmsNormX, SWIGLU = PRO == kSwigluX;
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int col = int(blockIdx.x) * kGemvWarps + int(warp);
  int splits = int(gridDim.y), split = int(blockIdx.y);
  bool live = col < n;
  // Whole vectors per row; none when rows are not 16-byte aligned (K not a
  // multiple of the vector width): then the scalar tail does everything.
  int chunks = k % kVec == 0 ? k / kVec : 0;
  int perSplit = (chunks + splits - 1) / splits;
  int c0 = split * perSplit, c1 = c0 + perSplit < chunks ? c0 + perSplit : chunks;
  if (!live)
    c1 = c0;
  const W *row = w + static_cast<size_t>(live ? col : 0) * size_t(k);
  // The lane's first steps of W toward L2 while the kernel before this one
  // (programmatic launches) finishes: no kernel writes the weights.
  for (int c = c0 + int(lane), u = 0; c < c1 && u < kGemvPrefetch; c += 32, ++u)
    prefetchL2(row + size_t(c) * kVec);
  LLMC_KERNEL_BEGIN();
  [[maybe_unused]] float inv[M];
  if constexpr (NORM)
    rowInverseRms<M>(x, k, eps, inv); // (block barriers: before any warp leaves)
  if (!live && splits == 1)
    return; // the whole warp leaves together; no block barrier follows
  // (With splits, a warp past N stays for lastOfGroup's barriers.)

  float acc[M];
  LLMC_UNROLL
  for (int m = 0; m < M; ++m)
    acc[m] = 0.0f;

  int c = c0 + int(lane);
  // kUnroll vectors per lane in flight, then their products.
  for (; c + (kGemvUnroll - 1) * 32 < c1; c += kGemvUnroll * 32) {
    float wv[kGemvUnroll][kVec];
    LLMC_UNROLL
    for (int u = 0; u < kGemvUnroll; ++u)
      loadFloats(row + size_t(c + u * 32) * kVec, wv[u]);
    LLMC_UNROLL
    for (int u = 0; u < kGemvUnroll; ++u) {
      float nw[kVec];
      if constexpr (NORM)
        loadFloats(norm + size_t(c + u * 32) * kVec, nw);
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float xv[kVec];
        loadRun<kVec>(x + size_t(m) * size_t(k) + size_t(c + u * 32) * kVec, xv);
        if constexpr (NORM)
          normalise<kVec, X>(xv, inv[m], nw, offset);
        if constexpr (SWIGLU)
          applySwiglu<kVec, X>(xv, up + size_t(m) * size_t(k) + size_t(c + u * 32) * kVec);
        LLMC_UNROLL
        for (int i = 0; i < kVec; ++i)
          acc[m] = fmaf(wv[u][i], xv[i], acc[m]);
      }
    }
  }
  for (; c < c1; c += 32) {
    float wv[kVec], nw[kVec];
    loadFloats(row + size_t(c) * kVec, wv);
    if constexpr (NORM)
      loadFloats(norm + size_t(c) * kVec, nw);
    LLMC_UNROLL
    for (int m = 0; m < M; ++m) {
      float xv[kVec];
      loadRun<kVec>(x + size_t(m) * size_t(k) + size_t(c) * kVec, xv);
      if constexpr (NORM)
        normalise<kVec, X>(xv, inv[m], nw, offset);
      if constexpr (SWIGLU)
        applySwiglu<kVec, X>(xv, up + size_t(m) * size_t(k) + size_t(c) * kVec);
      LLMC_UNROLL
      for (int i = 0; i < kVec; ++i)
        acc[m] = fmaf(wv[i], xv[i], acc[m]);
    }
  }
  // The scalar tail past the last whole vector, in the last split.
  if (live && split == splits - 1)
    for (int e = chunks * kVec + int(lane); e < k; e += 32) {
      float nw[1] = {NORM ? toFloat(norm[e]) : 0.0f};
      LLMC_UNROLL
      for (int m = 0; m < M; ++m) {
        float xv[1] = {toFloat(x[size_t(m) * size_t(k) + size_t(e)])};
        if constexpr (NORM)
          normalise<1, X>(xv, inv[m], nw, offset);
        if constexpr (SWIGLU)
          applySwiglu<1, X>(xv, up + size_t(m) * size_t(k) + size_t(e));
        acc[m] = fmaf(toFloat(row[e]), xv[0], acc[m]);
      }
    }

  if (live)
    finishColumn<M>(acc, lane, split, splits, col, n, bias, residual, y, partial);
  finishSplits<M>(partial, counters, bias, residual, y, n);
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

/// gemv and normGemv.
template <int PRO, class W, class X, class Y>
std::string launchGemv(const X *x, const W *norm, float eps, float offset, const X *up, const W *w,
                       const W *bias, const Y *residual, Y *y, float *partial,
                       unsigned *counters, int m, int n, int k, int splits, Stream stream) {
  if (m < 1 || m > kGemvMaxRows || n < 1 || k < 1 || splits < 1 ||
      (splits > 1 && !splitWorkspace(partial, counters, n)) || (PRO == kRmsNormX && !norm) ||
      (PRO == kSwigluX && !up))
    return "gemv: invalid arguments";
  if (k % int(16 / sizeof(W)) != 0 && splits > 1)
    return "gemv: split-K needs K a multiple of the vector width";
  dim3 grid(ceilDiv(n, kGemvWarps), unsigned(splits));
  dim3 block(kGemvWarps * 32);
  std::string e;
  switch (m) {
#define LLMC_GEMV_CASE(R)                                                                          \
  case R:                                                                                          \
    e = launch(gemvKernel<W, X, Y, R, PRO>, grid, block, 0, stream, x, w, bias, residual, y,      \
               partial, counters, n, k, norm, eps, offset, up);                                    \
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

/// Launches y = x W^T (+ bias) (+ residual) for M rows (1 .. kGemvMaxRows).
/// When splits > 1, `partial` must hold splits * M * N floats and
/// `counters` be the context's split counters.
template <class W, class X, class Y>
std::string gemv(const X *x, const W *w, const W *bias, const Y *residual, Y *y, float *partial,
                 unsigned *counters, int m, int n, int k, int splits, Stream stream) {
  return launchGemv<kPlainX>(x, static_cast<const W *>(nullptr), 0.0f, 0.0f,
                             static_cast<const X *>(nullptr), w, bias, residual, y, partial,
                             counters, m, n, k, splits, stream);
}

/// y = rms_norm(x; norm, eps, offset) W^T (+ bias) (+ residual), the norm's
/// output rounded to X as llm.rms_norm's would be, without writing it.
template <class W, class X, class Y>
std::string normGemv(const X *x, const W *norm, float eps, float offset, const W *w, const W *bias,
                     const Y *residual, Y *y, float *partial, unsigned *counters, int m, int n,
                     int k, int splits, Stream stream) {
  return launchGemv<kRmsNormX>(x, norm, eps, offset, static_cast<const X *>(nullptr), w, bias,
                               residual, y, partial, counters, m, n, k, splits, stream);
}

/// y = swiglu(gate, up) W^T (+ bias) (+ residual), the gate's output
/// rounded to X as llm.swiglu's would be, without writing it.
template <class W, class X, class Y>
std::string swigluGemv(const X *gate, const X *up, const W *w, const W *bias, const Y *residual,
                       Y *y, float *partial, unsigned *counters, int m, int n, int k, int splits,
                       Stream stream) {
  return launchGemv<kSwigluX>(gate, static_cast<const W *>(nullptr), 0.0f, 0.0f, up, w, bias,
                              residual, y, partial, counters, m, n, k, splits, stream);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_GEMV_H
