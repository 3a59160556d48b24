//===- AttentionMma.h - flash prefill attention on mma.sync, in registers -===//
//
// Shapes, layouts and semantics: Attention.h's prefill (q [B, S, Hq, D],
// keys 0 .. *pos + S - 1 of the [B, Hkv, C, D] caches, out [B, S, Hq, Dv],
// scale, softcap, causal, window, GQA/MQA; a query with no key gives
// zeros), for half or bfloat16 queries and caches, D = Dv a multiple of 16
// up to 128, on sm_80 and later (AttentionTensorCore.h's flashAttention
// picks it).
//
// Tiling (FlashAttention-2's: the scores, probabilities and output stay in
// registers)
//   A block of 4 warps takes kQueries = 128 queries of one head, each warp
//   two 16-query atoms (so each K and V fragment feeds two products);
//   blocks of the last queries (the longest under causal masks) are
//   scheduled first. Keys and values go
//   through shared memory in tiles of kMmaAttnKeys = 64 rows by cp.async
//   (rows padded by 16 bytes, so the 8 rows an ldmatrix reads hit distinct
//   banks; rows past the last key zero-filled). Per tile:
//     copy V(j);   wait for K(j)     (V's copy overlaps S = Q K^T)
//     S = Q K^T    mma.sync m16n8k16: Q fragments by ldmatrix from the
//                  staged queries, K fragments by ldmatrix (K rows are B's
//                  columns); f32 accumulators: a lane holds rows g, g + 8
//                  of each 16 x 8 tile (g = lane / 4), keys 2t, 2t + 1
//     copy K(j+1)  (overlaps the softmax and P V)
//     softmax      scale, softcap, masks (only on tiles that need them),
//                  running maximum over the row's four lanes (shuffles),
//                  p = 2^(s log2 e - m), the lane's share of the row sum;
//                  O's rows rescaled in registers
//     wait V(j)
//     O += P V     P's A fragments are S's accumulators rounded to T (the
//                  m16n8k16 C layout of two key tiles is the A layout of
//                  one 16-key step), V fragments by ldmatrix.trans
//   then O / l (the row sum reduced over its four lanes) to out.
//   No [S, S] buffer: 64 scores per query exist at once. Shared memory:
//   the queries, one K and one V tile (256 * (D + 8) * 2 bytes: 68 KiB at
//   D = 128; sm_86 and sm_89 allow 99).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ATTENTIONMMA_H
#define LLMC_RUNTIME_MODEL_CUDA_ATTENTIONMMA_H

#include "runtime/src/model/cuda/Attention.h"

namespace llmc::cuda {

constexpr int kMmaAttnKeys = 64, kMmaAttnThreads = 128;

template <class T, int D> struct MmaAttnLayout {
  static_assert(sizeof(T) == 2 && D % 16 == 0 && D <= 128, "16-bit tiles, D a multiple of 16");
  /// 16-query atoms per warp: two, so that each K and V fragment read from
  /// shared memory feeds two products (at D = 128 ptxas then holds the
  /// kernel in 255 registers without spilling: 2 blocks an SM on sm_80 and
  /// sm_90 by registers and shared memory, 1 on sm_86 and sm_89, whose
  /// 100 KiB of shared memory hold one block's 68).
  static constexpr int kAtoms = 2;
  static constexpr int kQueries = 4 * 16 * kAtoms;
  static constexpr int kLd = D + 8; // elements per shared row
  static constexpr size_t kQ = sizeof(T) * size_t(kQueries) * kLd;
  static constexpr size_t kTile = sizeof(T) * size_t(kMmaAttnKeys) * kLd;
  static constexpr size_t kBytes = kQ + 2 * kTile;
};

template <class T, int D, class Y>
LLMC_DEVICE void flashAttentionMmaBody(const T *q, const T *kCache, const T *vCache,
                                       const int64_t *pos, Y *out, int s, int hq, int hkv,
                                       int capacity, bool causal, int window, float scale,
                                       float softcap) {
  using L = MmaAttnLayout<T, D>;
  constexpr int A = L::kAtoms, kLd = L::kLd, kNt = kMmaAttnKeys / 8, kDt = D / 8;
  constexpr float kLog2e = 1.4426950408889634f;
  int q0 = (int(gridDim.x) - 1 - int(blockIdx.x)) * L::kQueries; // the longest first
  int h = int(blockIdx.y), b = int(blockIdx.z), kvh = h / (hq / hkv);
  int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32), g = lane / 4, t4 = lane % 4;
  // The lane's row of the matrices its ldmatrix names: matrix lane / 8,
  // row lane % 8.
  int mRow = lane % 8 + (lane / 8 % 2) * 8, mCol = lane / 16 * 8; // A (Q), and V (trans)
  int kRow = lane % 8 + lane / 16 * 8, kCol = lane / 8 % 2 * 8;   // B from K's rows
  LLMC_DYNAMIC_SHARED(unsigned char, smem);
  T *sq = reinterpret_cast<T *>(smem);
  T *sk = reinterpret_cast<T *>(smem + L::kQ);
  T *sv = reinterpret_cast<T *>(smem + L::kQ + L::kTile);

  long long p0 = *pos;
  int queries = s - q0 < L::kQueries ? s - q0 : L::kQueries;
  long long firstPos = p0 + q0, lastPos = firstPos + queries - 1;
  int kEnd = causal ? int(lastPos + 1) : int(p0 + s);
  int kStart = firstKey(firstPos, window);
  int tFirst = kStart - kStart % kMmaAttnKeys;
  size_t head = (size_t(b) * size_t(hkv) + size_t(kvh)) * size_t(capacity);
  const T *kBase = kCache + head * D, *vBase = vCache + head * D;
  auto rowsFrom = [&](int t) { return kEnd - t < kMmaAttnKeys ? kEnd - t : kMmaAttnKeys; };

  asyncTile<T, D, L::kQueries>(
      sq, q + ((size_t(b) * size_t(s) + size_t(q0)) * size_t(hq) + size_t(h)) * D,
      size_t(hq) * D, queries);
  asyncTile<T, D, kMmaAttnKeys>(sk, kBase + size_t(tFirst) * D, D, rowsFrom(tFirst));
  asyncCommit();

  int wq0 = warp * 16 * A; // the warp's first query in the block
  int warpQueries = queries - wq0 < 16 * A ? queries - wq0 : 16 * A;
  long long wFirst = firstPos + wq0, wLast = wFirst + warpQueries - 1;
  float o[A][kDt][4], sc[A][kNt][4], mMax[A][2], lSum[A][2];
  LLMC_UNROLL
  for (int a = 0; a < A; ++a) {
    LLMC_UNROLL
    for (int j = 0; j < kDt; ++j)
      o[a][j][0] = o[a][j][1] = o[a][j][2] = o[a][j][3] = 0.0f;
    mMax[a][0] = mMax[a][1] = -INFINITY;
    lSum[a][0] = lSum[a][1] = 0.0f;
  }
  float scaleLog2 = scale * kLog2e;

  for (int t = tFirst; t < kEnd; t += kMmaAttnKeys) {
    bool more = t + kMmaAttnKeys < kEnd;
    asyncTile<T, D, kMmaAttnKeys>(sv, vBase + size_t(t) * D, D, rowsFrom(t));
    asyncCommit();
    asyncWait<1>(); // K(t) (and the queries) are here
    __syncthreads();
    // Warp-uniform: whether the tile holds keys for this warp's queries,
    // and whether some of them are masked.
    bool busy = warpQueries > 0 && !(causal && t > wLast) &&
                t + kMmaAttnKeys > firstKey(wFirst, window);
    bool masked = (causal && t + kMmaAttnKeys - 1 > wFirst) ||
                  (window > 0 && t < firstKey(wLast, window)) || t + kMmaAttnKeys > kEnd;
    if (busy) {
      LLMC_UNROLL
      for (int a = 0; a < A; ++a)
        LLMC_UNROLL
        for (int j = 0; j < kNt; ++j)
          sc[a][j][0] = sc[a][j][1] = sc[a][j][2] = sc[a][j][3] = 0.0f;
      LLMC_UNROLL
      for (int kk = 0; kk < D / 16; ++kk) {
        unsigned qa[A][4];
        LLMC_UNROLL
        for (int a = 0; a < A; ++a)
          tc::ldmatrix(qa[a], sq + (wq0 + 16 * a + mRow) * kLd + kk * 16 + mCol);
        LLMC_UNROLL
        for (int np = 0; np < kNt / 2; ++np) {
          unsigned kb[4];
          tc::ldmatrix(kb, sk + (np * 16 + kRow) * kLd + kk * 16 + kCol);
          const unsigned b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
          LLMC_UNROLL
          for (int a = 0; a < A; ++a) {
            tc::mma16816<T>(sc[a][2 * np], qa[a], b0);
            tc::mma16816<T>(sc[a][2 * np + 1], qa[a], b1);
          }
        }
      }
    }
    __syncthreads(); // every warp is done with K(t)
    if (more) {
      asyncTile<T, D, kMmaAttnKeys>(sk, kBase + size_t(t + kMmaAttnKeys) * D, D,
                                    rowsFrom(t + kMmaAttnKeys));
      asyncCommit();
    }
    if (busy) {
      LLMC_UNROLL
      for (int a = 0; a < A; ++a)
        LLMC_UNROLL
        for (int hr = 0; hr < 2; ++hr) {
          // (Positions fit an int: they are below the cache's capacity.
          // The softcap and mask tests stay per score: hoisting them into
          // loops of their own, or folding the scale into the exp2's FFMA,
          // cut the instructions between the two products by a third at
          // head_dim 128 but spilled 8 bytes at 255 registers on sm_80-89.)
          int qpos = int(wFirst) + 16 * a + g + 8 * hr, lo = firstKey(qpos, window);
          int last = causal && qpos < kEnd - 1 ? qpos : kEnd - 1;
          float most = -INFINITY;
          LLMC_UNROLL
          for (int j = 0; j < kNt; ++j)
            LLMC_UNROLL
            for (int e = 0; e < 2; ++e) {
              float &x = sc[a][j][2 * hr + e];
              float v = softcap > 0.0f ? capScore(x * scale, softcap) * kLog2e : x * scaleLog2;
              int key = t + 8 * j + 2 * t4 + e;
              if (masked && (key < lo || key > last))
                v = -INFINITY;
              x = v;
              most = fmaxf(most, v);
            }
          most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 1));
          most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 2));
          float mNew = fmaxf(mMax[a][hr], most);
          float mUse = mNew == -INFINITY ? 0.0f : mNew; // (no key yet: p and alpha 0)
          float alpha = fastExp2(mMax[a][hr] - mUse), sum = 0.0f;
          LLMC_UNROLL
          for (int j = 0; j < kNt; ++j)
            LLMC_UNROLL
            for (int e = 0; e < 2; ++e) {
              float &x = sc[a][j][2 * hr + e];
              x = fastExp2(x - mUse);
              sum += x;
            }
          lSum[a][hr] = lSum[a][hr] * alpha + sum;
          mMax[a][hr] = mNew;
          LLMC_UNROLL
          for (int j = 0; j < kDt; ++j) {
            o[a][j][2 * hr] *= alpha;
            o[a][j][2 * hr + 1] *= alpha;
          }
        }
    }
    if (more)
      asyncWait<1>(); // V(t); K(t + 64) may still be on its way
    else
      asyncWait<0>();
    __syncthreads();
    if (busy) {
      LLMC_UNROLL
      for (int kk = 0; kk < kMmaAttnKeys / 16; ++kk) {
        unsigned pa[A][4];
        LLMC_UNROLL
        for (int a = 0; a < A; ++a) {
          pa[a][0] = tc::packFloats<T>(sc[a][2 * kk][0], sc[a][2 * kk][1]);
          pa[a][1] = tc::packFloats<T>(sc[a][2 * kk][2], sc[a][2 * kk][3]);
          pa[a][2] = tc::packFloats<T>(sc[a][2 * kk + 1][0], sc[a][2 * kk + 1][1]);
          pa[a][3] = tc::packFloats<T>(sc[a][2 * kk + 1][2], sc[a][2 * kk + 1][3]);
        }
        LLMC_UNROLL
        for (int dp = 0; dp < D / 16; ++dp) {
          unsigned vb[4];
          tc::ldmatrixTrans(vb, sv + (kk * 16 + mRow) * kLd + dp * 16 + mCol);
          const unsigned b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
          LLMC_UNROLL
          for (int a = 0; a < A; ++a) {
            tc::mma16816<T>(o[a][2 * dp], pa[a], b0);
            tc::mma16816<T>(o[a][2 * dp + 1], pa[a], b1);
          }
        }
      }
    }
    __syncthreads(); // every warp is done with V(t)
  }

  LLMC_UNROLL
  for (int a = 0; a < A; ++a)
    LLMC_UNROLL
    for (int hr = 0; hr < 2; ++hr) {
      float l = lSum[a][hr];
      l += __shfl_xor_sync(kFullMask, l, 1);
      l += __shfl_xor_sync(kFullMask, l, 2);
      int r = wq0 + 16 * a + g + 8 * hr;
      if (r >= queries)
        continue;
      float inv = l > 0.0f ? 1.0f / l : 0.0f;
      Y *dst = out + ((size_t(b) * size_t(s) + size_t(q0 + r)) * size_t(hq) + size_t(h)) * D;
      LLMC_UNROLL
      for (int j = 0; j < kDt; ++j) {
        dst[8 * j + 2 * t4] = fromFloat<Y>(o[a][j][2 * hr] * inv);
        dst[8 * j + 2 * t4 + 1] = fromFloat<Y>(o[a][j][2 * hr + 1] * inv);
      }
    }
}

template <class T, int D, class Y>
LLMC_GLOBAL void
    flashAttentionMmaKernel(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                            Y *out, int s, int hq, int hkv, int capacity, bool causal, int window,
                            float scale, float softcap) {
  LLMC_KERNEL_BEGIN();
  if constexpr (!tc::kBf16)
    __trap(); // mma.sync m16n8k16 and cp.async: sm_80 and later (tc::bf16() on the host);
              // code built for an older GPU on a newer one: a launch error, not silence
  else
    flashAttentionMmaBody<T, D, Y>(q, kCache, vCache, pos, out, s, hq, hkv, capacity, causal,
                                   window, scale, softcap);
}

/// Launches the mma.sync form (the caller checked the arguments and that
/// the device is sm_80 or later).
template <class T, int D, class Y>
std::string flashAttentionMma(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                              Y *out, int b, int s, int hq, int hkv, int capacity, bool causal,
                              int window, float scale, float softcap, Stream stream) {
  constexpr size_t bytes = MmaAttnLayout<T, D>::kBytes;
  return launchWithShared(
      flashAttentionMmaKernel<T, D, Y>,
      dim3(ceilDiv(s, MmaAttnLayout<T, D>::kQueries), unsigned(hq), unsigned(b)),
      dim3(kMmaAttnThreads), bytes, stream, q, kCache, vCache, pos, out, s, hq, hkv, capacity,
      causal, window, scale, softcap);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTIONMMA_H
