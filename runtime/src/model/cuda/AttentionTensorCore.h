//===- AttentionTensorCore.h - flash prefill attention on tensor cores ----===//
//
// Shapes, layouts and semantics: Attention.h's prefill (q [B, S, Hq, D],
// keys 0 .. *pos + S - 1 of the [B, Hkv, C, D] caches, out [B, S, Hq, Dv],
// scale, softcap, causal, window, GQA/MQA; a query with no key gives
// zeros). flashAttention takes a tensor-core form when queries and caches
// are both half or both bfloat16, D = Dv, a multiple of 16 up to 128: on
// sm_80 and later AttentionMma.h's (mma.sync, everything in registers; in
// code built for sm_90a at D = 64 and 128, AttentionWgmma.h's with Hopper's
// wgmma when LLMC_CUDA_WGMMA=1: 1-18% slower than mma.sync on an H200,
// bench/results/2026-11-30-cuda-decode-h200-5.md),
// before it (sm_75, which `--cuda-arch` accepts), for half, the WMMA form
// below (on an H200 the mma.sync form ran 2.1-2.5x faster at head_dim 128:
// bench/results/2026-11-27-cuda-decode-h200-4.md); Attention.h's SIMT form
// runs the rest (f32, int8 caches, other head sizes).
//
// Tiling of the WMMA form
//   A block of 4 warps takes kTcAttnQueries = 64 queries of one head (each
//   warp 16, its queries' D values held as WMMA A tiles for the whole
//   kernel) and walks the keys in tiles of kTcAttnKeys = 64 rows, staged
//   in shared memory (Attention.h's loadTile: 16-byte loads, rows padded by
//   8 elements; rows past the last key zeroed). Per tile and warp:
//     S = Q K^T     16 x 64 scores, f32 WMMA accumulators, then to the
//                   warp's f32 tile in shared memory;
//     softmax       two lanes per query row, 32 keys each: scale, softcap,
//                   the causal and window masks, the running maximum and
//                   sum (online softmax in f32), P = exp(s - max) rounded to
//                   T into the warp's P tile, the row's O rescaled;
//     O += P V      the warp's 16 x Dv f32 accumulator lives in shared
//                   memory (WMMA does not say which lane holds which row, so
//                   the rescale cannot touch the fragments): loaded as
//                   accumulators, 4 WMMA steps over the tile's keys, stored.
//   Key tiles wholly outside the block's causal range or window are not
//   loaded; a warp whose queries all end before a tile (causal) skips it.
//   No [S, S] buffer: at most 64 scores per query exist at once.
//   Shared memory (D = Dv = 128, half): K and V tiles 2 x 17 KiB, per warp
//   S 4.3 KiB + P 2.3 KiB + O 8.3 KiB: 93 KiB (sm_86 and sm_89 allow 99).
//   No __launch_bounds__: with it ptxas held the half D = 64 instance to 96
//   registers and spilled.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ATTENTIONTENSORCORE_H
#define LLMC_RUNTIME_MODEL_CUDA_ATTENTIONTENSORCORE_H

#include "runtime/src/model/cuda/AttentionMma.h"
#include "runtime/src/model/cuda/AttentionWgmma.h"

#include <type_traits>

namespace llmc::cuda {

constexpr int kTcAttnQueries = 64, kTcAttnKeys = 64, kTcAttnThreads = 128;
constexpr int kTcAttnSLd = kTcAttnKeys + 4;   // f32 score rows (WMMA: a multiple of 4)
constexpr int kTcAttnPLd = kTcAttnKeys + 8;   // T probability rows (a multiple of 8)

/// Where each part of the kernel's dynamic shared memory starts (bytes; all
/// multiples of 128, so every WMMA tile pointer is 32-byte aligned).
template <class T, int D> struct TcAttnLayout {
  static_assert(sizeof(T) == 2, "16-bit tiles: D + 8 is Attention.h's padded row");
  static constexpr int kLd = D + 8; // K, V (and Q, at first) rows: paddedRow<T>(D)
  static constexpr int kOLd = D + 4;
  static constexpr size_t round(size_t n) { return (n + 127) / 128 * 128; }
  static constexpr size_t kTile = round(sizeof(T) * kTcAttnKeys * kLd);
  static constexpr size_t kS = round(sizeof(float) * 16 * kTcAttnSLd);
  static constexpr size_t kP = round(sizeof(T) * 16 * kTcAttnPLd);
  static constexpr size_t kO = round(sizeof(float) * 16 * kOLd);
  static constexpr size_t kWarp = kS + kP + kO;
  static constexpr size_t kBytes = 2 * kTile + 4 * kWarp;
};

/// Whether flashAttention<T, K, D, Dv, Y> takes the tensor-core form (and
/// for bfloat16, tc::bf16() on the device).
template <class T, class K, int D, int Dv>
constexpr bool kTensorCoreAttention =
    std::is_same_v<T, K> && (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) && D == Dv &&
    D % 16 == 0 && D <= 128;

template <class T, int D, class Y>
LLMC_DEVICE void flashAttentionTcBody(const T *q, const T *kCache, const T *vCache,
                                      const int64_t *pos, Y *out, int s, int hq, int hkv,
                                      int capacity, bool causal, int window, float scale,
                                      float softcap, const float *sinks) {
  using L = TcAttnLayout<T, D>;
  constexpr int kLd = L::kLd, kOLd = L::kOLd, kVec = int(16 / sizeof(T)), kHalf = D / 2;
  int q0 = int(blockIdx.x) * kTcAttnQueries, h = int(blockIdx.y), b = int(blockIdx.z);
  int kvh = h / (hq / hkv);
  int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  LLMC_DYNAMIC_SHARED(unsigned char, smem);
  T *kt = reinterpret_cast<T *>(smem);
  T *vt = reinterpret_cast<T *>(smem + L::kTile);
  unsigned char *mine = smem + 2 * L::kTile + size_t(warp) * L::kWarp;
  float *sw = reinterpret_cast<float *>(mine);
  T *pw = reinterpret_cast<T *>(mine + L::kS);
  float *ow = reinterpret_cast<float *>(mine + L::kS + L::kP);

  long long p0 = *pos;
  int queries = s - q0 < kTcAttnQueries ? s - q0 : kTcAttnQueries;
  // The queries, staged in the key tile, into each warp's A tiles.
  for (int i = int(threadIdx.x); i < kTcAttnQueries * (D / kVec); i += int(blockDim.x)) {
    int r = i / (D / kVec), v = i % (D / kVec);
    uint4 value = {0, 0, 0, 0};
    if (r < queries)
      value = *reinterpret_cast<const uint4 *>(
          q + ((size_t(b) * size_t(s) + size_t(q0 + r)) * size_t(hq) + size_t(h)) * D +
          size_t(v) * kVec);
    *reinterpret_cast<uint4 *>(kt + r * kLd + v * kVec) = value;
  }
  __syncthreads();
  tc::FragA<T> qf[D / 16];
  LLMC_UNROLL
  for (int c = 0; c < D / 16; ++c)
    tc::loadA(qf[c], kt + warp * 16 * kLd + 16 * c, kLd);
  for (int i = lane; i < 16 * kOLd; i += 32)
    ow[i] = 0.0f;
  __syncwarp(); // (rows are zeroed by other lanes than the two that own them)

  // Two lanes per query row: `side` picks its 32 keys of a tile and its
  // D / 2 channels of O.
  int row = lane / 2, side = lane % 2;
  long long qpos = p0 + q0 + warp * 16 + row;
  int myFirst = firstKey(qpos, window);
  int warpQueries = queries - warp * 16; // (<= 0: this warp has none)
  long long warpLast = p0 + q0 + warp * 16 + (warpQueries < 16 ? warpQueries : 16) - 1;
  float mRow = -INFINITY, lRow = 0.0f;

  long long firstPos = p0 + q0, lastPos = p0 + q0 + queries - 1;
  int kStart = firstKey(firstPos, window);
  int kEnd = causal ? int(lastPos + 1) : int(p0 + s);
  size_t head = (size_t(b) * size_t(hkv) + size_t(kvh)) * size_t(capacity);
  for (int t = kStart - kStart % kTcAttnKeys; t < kEnd; t += kTcAttnKeys) {
    int rows = kEnd - t < kTcAttnKeys ? kEnd - t : kTcAttnKeys;
    __syncthreads(); // every warp is done with the last tile (and Q)
    loadTile(kt, kCache + head * D, t, rows, D, kTcAttnKeys); // (the rest zeroed)
    loadTile(vt, vCache + head * D, t, rows, D, kTcAttnKeys);
    __syncthreads();
    if (warpQueries <= 0 || (causal && t > warpLast) ||
        t + kTcAttnKeys <= firstKey(p0 + q0 + warp * 16, window))
      continue; // warp-uniform: nothing in this tile for these queries

    tc::Acc acc[kTcAttnKeys / 16];
    LLMC_UNROLL
    for (int j = 0; j < kTcAttnKeys / 16; ++j) {
      tc::zero(acc[j]);
      LLMC_UNROLL
      for (int c = 0; c < D / 16; ++c) {
        tc::FragB<T> kf;
        tc::loadB(kf, kt + j * 16 * kLd + 16 * c, kLd);
        tc::mma(acc[j], qf[c], kf);
      }
      tc::store(sw + 16 * j, acc[j], kTcAttnSLd);
    }
    __syncwarp();

    float *srow = sw + row * kTcAttnSLd + side * 32;
    float most = -INFINITY;
    for (int j = 0; j < 32; ++j) {
      int key = t + side * 32 + j;
      bool valid = key < kEnd && key >= myFirst && (!causal || key <= qpos);
      float sc = valid ? capScore(srow[j] * scale, softcap) : -INFINITY;
      srow[j] = sc;
      most = fmaxf(most, sc);
    }
    most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 1));
    float mNew = fmaxf(mRow, most);
    T *prow = pw + row * kTcAttnPLd + side * 32;
    float sum = 0.0f;
    for (int j = 0; j < 32; ++j) {
      float p = srow[j] == -INFINITY ? 0.0f : expf(srow[j] - mNew);
      prow[j] = fromFloat<T>(p);
      sum += p;
    }
    sum += __shfl_xor_sync(kFullMask, sum, 1);
    float alpha = mRow == -INFINITY ? 0.0f : expf(mRow - mNew);
    lRow = lRow * alpha + sum;
    mRow = mNew;
    float *orow = ow + row * kOLd + side * kHalf;
    for (int c = 0; c < kHalf; ++c)
      orow[c] *= alpha;
    __syncwarp();

    tc::FragA<T> pf[kTcAttnKeys / 16];
    LLMC_UNROLL
    for (int j = 0; j < kTcAttnKeys / 16; ++j)
      tc::loadA(pf[j], pw + 16 * j, kTcAttnPLd);
    LLMC_UNROLL
    for (int c = 0; c < D / 16; ++c) {
      tc::Acc o;
      tc::load(o, ow + 16 * c, kOLd);
      LLMC_UNROLL
      for (int j = 0; j < kTcAttnKeys / 16; ++j) {
        tc::FragBRow<T> vf;
        tc::loadBRow(vf, vt + j * 16 * kLd + 16 * c, kLd);
        tc::mma(o, pf[j], vf);
      }
      tc::store(ow + 16 * c, o, kOLd);
    }
    __syncwarp();
  }
  if (warp * 16 + row < queries) {
    Y *dst = out + ((size_t(b) * size_t(s) + size_t(q0 + warp * 16 + row)) * size_t(hq) +
                    size_t(h)) *
                       D +
             side * kHalf;
    float inv = lRow > 0.0f ? 1.0f / withSink(lRow, mRow, sinks, h) : 0.0f;
    const float *orow = ow + row * kOLd + side * kHalf;
    for (int c = 0; c < kHalf; ++c)
      dst[c] = fromFloat<Y>(orow[c] * inv);
  }
}

template <class T, int D, class Y>
LLMC_GLOBAL void
    flashAttentionTcKernel(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                           Y *out, int s, int hq, int hkv, int capacity, bool causal, int window,
                           float scale, float softcap, const float *sinks) {
  LLMC_KERNEL_BEGIN();
  if constexpr (std::is_same_v<T, bfloat16> && !tc::kBf16)
    return; // sm_75's build has no bfloat16 tiles: never launched there (tc::bf16())
  else
    flashAttentionTcBody<T, D, Y>(q, kCache, vCache, pos, out, s, hq, hkv, capacity, causal,
                                  window, scale, softcap, sinks);
}

/// Launches the WMMA form (the caller checked the arguments and, for
/// bfloat16, tc::bf16()).
template <class T, int D, class Y>
std::string flashAttentionWmma(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                               Y *out, int b, int s, int hq, int hkv, int capacity, bool causal,
                               int window, float scale, float softcap, Stream stream,
                               const float *sinks = nullptr) {
  constexpr size_t bytes = TcAttnLayout<T, D>::kBytes;
  return launchWithShared(flashAttentionTcKernel<T, D, Y>,
                          dim3(ceilDiv(s, kTcAttnQueries), unsigned(hq), unsigned(b)),
                          dim3(kTcAttnThreads), bytes, stream, q, kCache, vCache, pos, out, s, hq,
                          hkv, capacity, causal, window, scale, softcap, sinks);
}

/// Flash prefill attention (K: the caches' type; with int8 caches kScales
/// and vScales are their scales, else null): on tensor cores where it
/// applies (see the top of this file), by mma.sync on sm_80 and later
/// (or by wgmma in sm_90a code at head_dim 64 and 128 with LLMC_CUDA_WGMMA=1:
/// AttentionWgmma.h, slower on an H200; Wgmma.h's wgmmaEnabled)
/// (AttentionMma.h), else by WMMA (half on sm_70 and sm_75); else the SIMT
/// form. `sinks`: one logit per query head on the device, or null
/// (Attention.h).
template <class T, class K, int D, int Dv, class Y>
std::string flashAttention(const T *q, const K *kCache, const K *vCache, const float *kScales,
                           const float *vScales, const int64_t *pos, Y *out, int b, int s, int hq,
                           int hkv, int capacity, bool causal, int window, float scale,
                           float softcap, Stream stream, const float *sinks = nullptr) {
  if constexpr (kTensorCoreAttention<T, K, D, Dv>) {
    if (b < 1 || s < 1 || hq < 1 || hkv < 1 || hq % hkv || capacity < 1 || kScales || vScales)
      return "flash attention: invalid arguments";
    if constexpr (D == 64 || D == 128)
      if (wg::wgmmaEnabled())
        return flashAttentionWgmma<T, D, Y>(q, kCache, vCache, pos, out, b, s, hq, hkv, capacity,
                                            causal, window, scale, softcap, stream, sinks);
    if (tc::bf16())
      return flashAttentionMma<T, D, Y>(q, kCache, vCache, pos, out, b, s, hq, hkv, capacity,
                                        causal, window, scale, softcap, stream, sinks);
    if (std::is_same_v<T, half>)
      return flashAttentionWmma<T, D, Y>(q, kCache, vCache, pos, out, b, s, hq, hkv, capacity,
                                         causal, window, scale, softcap, stream, sinks);
  }
  return flashAttentionSimt<T, K, D, Dv, Y>(q, kCache, vCache, kScales, vScales, pos, out, b, s,
                                            hq, hkv, capacity, causal, window, scale, softcap,
                                            stream, sinks);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTIONTENSORCORE_H
