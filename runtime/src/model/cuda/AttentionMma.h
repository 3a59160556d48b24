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
//     softmax      masks (only on tiles that need them), the running
//                  maximum over the row's four lanes (shuffles), p =
//                  2^(s * scale * log2 e - m) with the scale in the exp2's
//                  FFMA, the lane's share of the row sum; O's rows rescaled
//                  in registers. That is the kernel instance for a positive
//                  scale without softcap (every model's); the other scales
//                  (and caps) each score first. At head_dim 128 an unmasked
//                  tile's softmax is about 430 SASS instructions a warp
//                  (per-score tests for the softcap and masks had made it
//                  about 4000, branching around every pair of scores)
//     wait V(j)
//     O += P V     P's A fragments are S's accumulators rounded to T (the
//                  m16n8k16 C layout of two key tiles is the A layout of
//                  one 16-key step), V fragments by ldmatrix.trans
//   then O / l (the row sum reduced over its four lanes) to out.
//   Tiles are copied by the block's 128 threads with a fixed 16-byte
//   chunk of a row per thread (Attention.h's asyncTile<.., kThreads>).
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

/// The steps of FlashAttention-2's online softmax over one 16-query atom's
/// scores for a key tile, shared by this form and AttentionWgmma.h's: s in
/// mma.sync's m16n8 C layout, s[j][2 hr + e] the atom's row g + 8 hr (g =
/// lane / 4), key 8 j + 2 t4 + e of the tile (t4 = lane % 4), which is also
/// the layout of wgmma's accumulators for each warp's 16 rows; o the same
/// over the value dims, m and l the rows' running maxima (base 2) and sums.
namespace fa2 {

/// The kernel instance without the fold: each score scaled, capped and
/// times log2 e (each step a loop of its own: a test per score made ptxas
/// branch around every pair of scores).
template <int kNt> LLMC_DEVICE void scaleScores(float (&s)[kNt][4], float scale, float softcap) {
  constexpr float kLog2e = 1.4426950408889634f;
  if (softcap > 0.0f) {
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      LLMC_UNROLL
      for (int e = 0; e < 4; ++e)
        s[j][e] = capScore(s[j][e] * scale, softcap) * kLog2e;
  } else {
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      LLMC_UNROLL
      for (int e = 0; e < 4; ++e)
        s[j][e] *= scale * kLog2e;
  }
}

/// -inf for the keys a row may not see (the tile starts at key t; row g's
/// query is at position pos, row g + 8's at pos + 8): before its window,
/// past its own position under a causal mask, from kEnd on.
template <int kNt>
LLMC_DEVICE void maskScores(float (&s)[kNt][4], int t, int pos, int t4, bool causal, int window,
                            int kEnd) {
  LLMC_UNROLL
  for (int hr = 0; hr < 2; ++hr) {
    int qpos = pos + 8 * hr, lo = firstKey(qpos, window);
    int last = causal && qpos < kEnd - 1 ? qpos : kEnd - 1;
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      LLMC_UNROLL
      for (int e = 0; e < 2; ++e) {
        int key = t + 8 * j + 2 * t4 + e;
        if (key < lo || key > last)
          s[j][2 * hr + e] = -INFINITY;
      }
  }
}

/// The online update without O: the rows' maxima over the tile (across
/// the row's four lanes), p = 2^(s f - m) in place of s (f = scale log2 e
/// with the fold, the row maximum then taken over the raw products, f > 0;
/// else 1), the rows' sums; alpha: the factor O's rows take (rescaleRows),
/// which may be done later (AttentionWgmma.h does it once the product of
/// the tile before has left O).
template <int kNt>
LLMC_DEVICE void softmaxStep(float (&s)[kNt][4], float (&m)[2], float (&l)[2], float f,
                             float (&alpha)[2]) {
  LLMC_UNROLL
  for (int hr = 0; hr < 2; ++hr) {
    float most = -INFINITY;
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      most = fmaxf(most, fmaxf(s[j][2 * hr], s[j][2 * hr + 1]));
    most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 1));
    most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 2));
    float mNew = fmaxf(m[hr], most * f);
    float mUse = mNew == -INFINITY ? 0.0f : mNew; // (no key yet: p and alpha 0)
    float sum = 0.0f;
    alpha[hr] = fastExp2(m[hr] - mUse);
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      LLMC_UNROLL
      for (int e = 0; e < 2; ++e) {
        float &x = s[j][2 * hr + e];
        x = fastExp2(fmaf(x, f, -mUse));
        sum += x;
      }
    l[hr] = l[hr] * alpha[hr] + sum;
    m[hr] = mNew;
  }
}

/// O's two rows of the thread times their alpha.
template <int kDt> LLMC_DEVICE void rescaleRows(float (&o)[kDt][4], const float (&alpha)[2]) {
  LLMC_UNROLL
  for (int j = 0; j < kDt; ++j)
    LLMC_UNROLL
    for (int e = 0; e < 4; ++e)
      o[j][e] *= alpha[e / 2];
}

/// softmaxStep, then O's rows rescaled.
template <int kNt, int kDt>
LLMC_DEVICE void softmaxUpdate(float (&s)[kNt][4], float (&o)[kDt][4], float (&m)[2],
                               float (&l)[2], float f) {
  float alpha[2];
  softmaxStep(s, m, l, f, alpha);
  rescaleRows(o, alpha);
}

/// P's A fragment for the tile's keys 16 kk .. 16 kk + 15: the
/// probabilities of two 8-key chunks rounded to T (the m16n8 C layout of
/// two chunks is the A layout of one 16-key step).
template <class T, int kNt>
LLMC_DEVICE void probabilities(unsigned (&pa)[4], const float (&s)[kNt][4], int kk) {
  pa[0] = tc::packFloats<T>(s[2 * kk][0], s[2 * kk][1]);
  pa[1] = tc::packFloats<T>(s[2 * kk][2], s[2 * kk][3]);
  pa[2] = tc::packFloats<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  pa[3] = tc::packFloats<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

/// O / l (the row sums reduced over the row's four lanes, with the sink's
/// share against the rows' maxima m in log2 units (withSink2): sinks[h],
/// none when null; 0 for a row with no key) into the atom's rows that
/// exist (rows of 16): row r at out + (token + r) * stride.
template <int kDt, class Y>
LLMC_DEVICE void writeRows(const float (&o)[kDt][4], const float (&l)[2], const float (&m)[2],
                           const float *sinks, int h, Y *out, size_t token, size_t stride,
                           int rows, int g, int t4) {
  LLMC_UNROLL
  for (int hr = 0; hr < 2; ++hr) {
    float sum = l[hr];
    sum += __shfl_xor_sync(kFullMask, sum, 1);
    sum += __shfl_xor_sync(kFullMask, sum, 2);
    sum = withSink2(sum, m[hr], sinks, h);
    int r = g + 8 * hr;
    if (r >= rows)
      continue;
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    Y *dst = out + (token + size_t(r)) * stride;
    LLMC_UNROLL
    for (int j = 0; j < kDt; ++j) {
      dst[8 * j + 2 * t4] = fromFloat<Y>(o[j][2 * hr] * inv);
      dst[8 * j + 2 * t4 + 1] = fromFloat<Y>(o[j][2 * hr + 1] * inv);
    }
  }
}

/// Whether a launch takes the kernel instance that folds the scale into
/// the exp2 (a positive scale without softcap: every model's).
inline bool foldsScale(float scale, float softcap) { return softcap <= 0.0f && scale > 0.0f; }

/// The launchers' refusal when the caches' rows (b * hkv * capacity) pass
/// what the kernels' ints count, else "".
inline std::string cacheRowsCheck(int b, int hkv, int capacity) {
  return int64_t(b) * hkv * capacity > INT32_MAX
             ? "flash attention: more cache rows than an int counts"
             : "";
}

} // namespace fa2

template <class T, int D, class Y, bool kFold>
LLMC_DEVICE void flashAttentionMmaBody(const T *q, const T *kCache, const T *vCache,
                                       const int64_t *pos, Y *out, int s, int hq, int hkv,
                                       int capacity, bool causal, int window, float scale,
                                       float softcap, const float *sinks) {
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

  // Positions and cache rows as ints (they are below the cache's capacity,
  // and the caches' rows fit an int): fewer registers for 64-bit values
  // (at head_dim 128 ptxas has none to spare).
  int p0 = int(*pos);
  int queries = s - q0 < L::kQueries ? s - q0 : L::kQueries;
  int firstPos = p0 + q0, lastPos = firstPos + queries - 1;
  int kEnd = causal ? lastPos + 1 : p0 + s;
  int kStart = firstKey(firstPos, window);
  int tFirst = kStart - kStart % kMmaAttnKeys;
  int head = (b * hkv + kvh) * capacity; // the (batch, kv head)'s first cache row
  auto keys = [&](int t) { return kCache + size_t(head + t) * D; };
  auto values = [&](int t) { return vCache + size_t(head + t) * D; };
  auto rowsFrom = [&](int t) { return kEnd - t < kMmaAttnKeys ? kEnd - t : kMmaAttnKeys; };

  asyncTile<T, D, L::kQueries, kMmaAttnThreads>(
      sq, q + ((size_t(b) * size_t(s) + size_t(q0)) * size_t(hq) + size_t(h)) * D,
      size_t(hq) * D, queries);
  asyncTile<T, D, kMmaAttnKeys, kMmaAttnThreads>(sk, keys(tFirst), D, rowsFrom(tFirst));
  asyncCommit();

  int wq0 = warp * 16 * A; // the warp's first query in the block
  int warpQueries = queries - wq0 < 16 * A ? queries - wq0 : 16 * A;
  int wFirst = firstPos + wq0, wLast = wFirst + warpQueries - 1;
  float o[A][kDt][4], sc[A][kNt][4], mMax[A][2], lSum[A][2];
  LLMC_UNROLL
  for (int a = 0; a < A; ++a) {
    LLMC_UNROLL
    for (int j = 0; j < kDt; ++j)
      o[a][j][0] = o[a][j][1] = o[a][j][2] = o[a][j][3] = 0.0f;
    mMax[a][0] = mMax[a][1] = -INFINITY;
    lSum[a][0] = lSum[a][1] = 0.0f;
  }
  const float f = kFold ? scale * kLog2e : 1.0f; // the exp2's factor (see the softmax)

  for (int t = tFirst; t < kEnd; t += kMmaAttnKeys) {
    bool more = t + kMmaAttnKeys < kEnd;
    asyncTile<T, D, kMmaAttnKeys, kMmaAttnThreads>(sv, values(t), D, rowsFrom(t));
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
      asyncTile<T, D, kMmaAttnKeys, kMmaAttnThreads>(sk, keys(t + kMmaAttnKeys), D,
                                                     rowsFrom(t + kMmaAttnKeys));
      asyncCommit();
    }
    if (busy) {
      // Scores into base 2: with kFold, x * f - m inside the exp2's FFMA
      // (f = scale * log2 e > 0, so the row maximum of the raw products is
      // the maximum of the scaled ones); else each score scaled, capped and
      // times log2 e first (f = 1). The masks only on tiles that need them.
      LLMC_UNROLL
      for (int a = 0; a < A; ++a) {
        if constexpr (!kFold)
          fa2::scaleScores(sc[a], scale, softcap);
        if (masked)
          fa2::maskScores(sc[a], t, wFirst + 16 * a + g, t4, causal, window, kEnd);
        fa2::softmaxUpdate(sc[a], o[a], mMax[a], lSum[a], f);
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
        for (int a = 0; a < A; ++a)
          fa2::probabilities<T>(pa[a], sc[a], kk);
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
    fa2::writeRows(o[a], lSum[a], mMax[a], sinks, h, out + size_t(h) * D,
                   size_t(b) * size_t(s) + size_t(q0 + wq0 + 16 * a), size_t(hq) * D,
                   queries - wq0 - 16 * a, g, t4);
}

template <class T, int D, class Y, bool kFold>
LLMC_GLOBAL void
    flashAttentionMmaKernel(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                            Y *out, int s, int hq, int hkv, int capacity, bool causal, int window,
                            float scale, float softcap, const float *sinks) {
  LLMC_KERNEL_BEGIN();
  if constexpr (!tc::kBf16)
    __trap(); // mma.sync m16n8k16 and cp.async: sm_80 and later (tc::bf16() on the host);
              // code built for an older GPU on a newer one: a launch error, not silence
  else
    flashAttentionMmaBody<T, D, Y, kFold>(q, kCache, vCache, pos, out, s, hq, hkv, capacity,
                                          causal, window, scale, softcap, sinks);
}

/// Launches the mma.sync form (the caller checked the arguments and that
/// the device is sm_80 or later): without a softcap and with a positive
/// scale (every model's), the instance that folds the scale into the
/// exp2; else the one that scales (and caps) each score first.
template <class T, int D, class Y>
std::string flashAttentionMma(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                              Y *out, int b, int s, int hq, int hkv, int capacity, bool causal,
                              int window, float scale, float softcap, Stream stream,
                              const float *sinks = nullptr) {
  constexpr size_t bytes = MmaAttnLayout<T, D>::kBytes;
  if (std::string e = fa2::cacheRowsCheck(b, hkv, capacity); !e.empty())
    return e;
  dim3 grid(ceilDiv(s, MmaAttnLayout<T, D>::kQueries), unsigned(hq), unsigned(b));
  auto kernel = fa2::foldsScale(scale, softcap) ? flashAttentionMmaKernel<T, D, Y, true>
                                                : flashAttentionMmaKernel<T, D, Y, false>;
  return launchWithShared(kernel, grid, dim3(kMmaAttnThreads), bytes, stream, q, kCache, vCache,
                          pos, out, s, hq, hkv, capacity, causal, window, scale, softcap, sinks);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTIONMMA_H
