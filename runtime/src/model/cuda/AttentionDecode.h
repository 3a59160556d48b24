//===- AttentionDecode.h - split-KV flash-decoding over the static cache ===//
//
// Shapes, layouts, scores, masks and int8 caches: Attention.h's.
//   decode  q       [B, Hq, D] (one token per sequence, at *pos; keys 0 ..
//                   *pos; a *pos outside [0, C) reads no key and writes
//                   nothing: the cache write before failed). partial [B,
//                   splits, Hq, Dv] f32 and lse [B, splits, Hq] f32:
//                   llm.decode_attention_partial (keys cut
//                   into chunks of ceil((*pos + 1) / splits) rounded up to
//                   whole kAttnKeys tiles, so the number of busy blocks
//                   follows the context, read on the device: a short one
//                   leaves the last splits empty, and their blocks leave
//                   at once; each busy chunk's softmax-normalised values
//                   and log-sum-exp, -inf and zeros for a chunk wholly
//                   outside the window); the busy block that finishes its
//                   (batch, kv head) last (Common.h's lastOfGroup over
//                   `counters`, a word per pair) merges the busy splits
//                   into out [B, Hq, Dv] (llm.attention_combine), in the
//                   same launch; when only one split is busy (a context
//                   of one chunk) its block writes out itself.
//   decodeAttentionRope  the same with the step's ropes and cache writes
//                   (Rope.h's ropeCacheWrite at one token, or its rope pair
//                   and two cacheWriteInt8) in its launch: q and the new
//                   key row are read before their rope; every block ropes
//                   its group's queries as it reads them (rotatePair,
//                   rounded to T as rope rounds), and the block whose chunk
//                   holds row *pos writes the roped key and the value row
//                   there (into int8 caches a warp a row, quantized as
//                   cacheWriteInt8 quantizes), then asks for that tile;
//                   into caches of T, where that tile was asked for before
//                   the wait with the others, it puts the two rows into the
//                   tile from shared memory instead, once the copy is in.
//                   With HeadNorms, each query head and the new key head
//                   are RMS-normalised first (Qwen 3's and Gemma 3's head
//                   norms; rmsNormPair's work at one token): a warp a row
//                   sums its squares, and each channel is normalised and
//                   rounded to T as it is read for the rope.
//
// Tiling
//   A block per (kv head, split, batch) serves the G = Hq / Hkv
//   query heads that share the kv head, so each cache row is read once for
//   all of them; its tiles (Attention.h's, kAttnKeys rows) come by cp.async
//   into up to kDecodeMaxStages
//   buffers (decodeStages: one per tile a chunk can have, within
//   kDecodeStageBytes of shared memory), stages - 1 tiles ahead of the one
//   in use, so a chunk of a few tiles has all its copies in flight at once
//   (with two buffers, one ahead, a block of an H200 waited a memory round
//   trip for nearly every tile), and all but the tile holding the new row
//   (*pos, which the kernel before writes) are asked for before the wait
//   for that kernel (LLMC_KERNEL_BEGIN); where this launch writes that row
//   into caches of T and the chunk's tiles are all in flight at once, that
//   tile is asked for too, and the row put into it from shared memory
//   (`patch`); scores are computed thread per (head,
//   key), the softmax and the value sum warp per head (lane per key; a run
//   of kValueRun consecutive value channels per lane, read in one shared
//   load). Half or bfloat16 queries over caches of their type with head
//   sizes the tensor cores take (kMmaDecode) and groups of at most 16 heads
//   do each tile on them instead (decodeTilesMma, sm_80 and later): the
//   group's heads are the rows of mma.sync m16n8k16 products, each warp
//   scores 8 of the tile's keys and sums the values of a quarter of the
//   channels over all 32, the softmax state in registers, the same in every
//   warp. A single busy split writes the output itself; with several, the
//   last one merges them in one pass, a batch of splits' loads at a time.
//   The kernel asks for kDecodeMinBlocks blocks a multiprocessor over float
//   caches (64 or 72 registers, no spills), none over int8 ones.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ATTENTIONDECODE_H
#define LLMC_RUNTIME_MODEL_CUDA_ATTENTIONDECODE_H

#include "runtime/src/model/cuda/Attention.h"
#include "runtime/src/model/cuda/Rope.h"

#include <cstdlib>
#include <type_traits>

namespace llmc::cuda {

/// The decode kernel's tile buffers (stages): at most kDecodeMaxStages, in
/// at most kDecodeStageBytes of shared memory (with the rest of its
/// shared words): the smallest opt-in of the GPUs llmc builds for (sm_86
/// and sm_89: 99 KiB).
constexpr int kDecodeMaxStages = 4;
constexpr size_t kDecodeStageBytes = 99 * 1024;
/// Whether the decode kernel takes its tiles on tensor cores (for query
/// groups of at most kMmaDecodeRows heads, on sm_80 and later): half or
/// bfloat16 queries and caches, D a multiple of 16 and Dv of 64 (each of
/// the 4 warps a run of Dv / 4 value channels, whole 16-channel steps),
/// both at most 128 (at 256 the kernel spilled in its 72 registers).
template <class T, class K, int D, int Dv>
constexpr bool kMmaDecode = std::is_same_v<T, K> &&
                            (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) &&
                            D % 16 == 0 && Dv % 64 == 0 && D <= 128 && Dv <= 128;
constexpr int kMmaDecodeRows = 16; // an mma's rows: the group's heads, padded

/// Blocks of the decode kernel that its registers let share a
/// multiprocessor: 8 (64 registers a thread) over float caches (ptxas gave
/// it 128 unbounded, which let only 4 blocks of 4 warps run at once beside
/// each other, and a block walks its tiles one after another), 7 (72) where
/// the tiles may go to tensor cores (in 64, half at head_dim 128 spilled on
/// sm_86 and sm_89); no bound over int8 ones, which spilled in 64 registers
/// and, at head_dim 256, in 128.
/// The instance with the heads' norms (kNorms) 6 (80) where 7 would be
/// taken: in 72 it spilled on sm_86 and sm_89.
template <class T, class K, int D, int Dv, bool kNorms = false>
constexpr int kDecodeMinBlocks = sizeof(K) == 1             ? 1
                                 : kMmaDecode<T, K, D, Dv> ? (kNorms ? 6 : 7)
                                                           : 8;

/// Floats before the tiles in the decode kernel's shared memory (a whole
/// number of 16-byte vectors, so the tiles start aligned).
template <class K, int D, int Dv> LLMC_HOST_DEVICE int decodeFloats(int g) {
  constexpr int kNewRow = int((size_t(D + Dv) * sizeof(K) + 3) / 4);
  return (g * (D + Dv + kAttnKeys + 3) + 2 * kAttnKeys + 1 + kNewRow + 3) / 4 * 4;
}

/// The decode kernel's shared memory with `stages` key and value tile
/// buffers.
template <class K, int D, int Dv>
size_t decodeSharedBytes(int g, int stages = 2) {
  return sizeof(float) * size_t(decodeFloats<K, D, Dv>(g)) +
         size_t(stages) * sizeof(K) * size_t(kAttnKeys) *
             size_t(paddedRow<K>(D) + paddedRow<K>(Dv));
}

/// LLMC_CUDA_DECODE_STAGES=N (1 to 4) caps the decode kernel's tile
/// buffers at N, to compare stage counts on a GPU; 0 (no cap) otherwise.
/// Read at each launch (a decode step's launches are captured once).
inline int decodeStageCap() {
  const char *e = std::getenv("LLMC_CUDA_DECODE_STAGES");
  return e && e[0] >= '1' && e[0] <= '0' + kDecodeMaxStages && e[1] == '\0' ? e[0] - '0' : 0;
}

/// LLMC_CUDA_DECODE_MMA=0 keeps the decode kernel's tiles off the tensor
/// cores (the SIMT loop for every type), to compare the two on a GPU. Read
/// at each launch.
inline bool decodeMmaEnabled() {
  const char *e = std::getenv("LLMC_CUDA_DECODE_MMA");
  return !(e && e[0] == '0' && e[1] == '\0');
}

/// LLMC_CUDA_DECODE_PATCH=0 has the block that writes the new rows into
/// caches of T ask for their tile after writing them (a copy back from
/// memory, as before 2026-12-01) rather than put them into the tile from
/// shared memory, to compare the two on a GPU. Read at each launch.
inline bool decodePatchEnabled() {
  const char *e = std::getenv("LLMC_CUDA_DECODE_PATCH");
  return !(e && e[0] == '0' && e[1] == '\0');
}

/// The tile buffers of a decode launch over a [.., capacity, ..] cache cut
/// into `splits` chunks: one per tile a chunk can have (a chunk of the
/// whole cache then has every tile's copy in flight at once), at most
/// kDecodeMaxStages and `cap` when positive, fewer where they do not fit
/// kDecodeStageBytes; at least one.
template <class K, int D, int Dv> int decodeStages(int g, int capacity, int splits, int cap) {
  int tiles = int(ceilDiv(ceilDiv(unsigned(capacity), unsigned(splits)), unsigned(kAttnKeys)));
  int stages = kDecodeMaxStages;
  if (cap > 0 && cap < stages)
    stages = cap;
  if (tiles < stages)
    stages = tiles;
  while (stages > 1 && decodeSharedBytes<K, D, Dv>(g, stages) > kDecodeStageBytes)
    --stages;
  return stages < 1 ? 1 : stages;
}

/// cp.async.wait_group with a count known at run time: returns with at
/// most n newer committed groups pending (n past kDecodeMaxStages - 1
/// waits as for that: sooner than needed, never later).
LLMC_DEVICE void asyncWaitAtMost(int n) {
  static_assert(kDecodeMaxStages == 4, "a case per count");
  if (n <= 0)
    asyncWait<0>();
  else if (n == 1)
    asyncWait<1>();
  else if (n == 2)
    asyncWait<2>();
  else
    asyncWait<3>();
}

/// A lane's run of channels (valueChannel) of a partial row that other
/// blocks of the launch wrote (loads past L1), 0 past Dv or where row is
/// null: 8- or 16-byte loads where Dv is 32 runs, else one per channel.
template <int Dv>
LLMC_DEVICE void loadPartialRun(const float *row, unsigned lane, float (&out)[kValueRun<Dv>]) {
  constexpr int N = kValueRun<Dv>;
  int d0 = valueChannel<Dv>(lane, 0);
  if constexpr (Dv == 32 * N && N % 4 == 0) {
    LLMC_UNROLL
    for (int i = 0; i < N; i += 4) {
      float4 v = row ? __ldcg(reinterpret_cast<const float4 *>(row + d0 + i)) : float4{};
      out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
    }
  } else if constexpr (Dv == 32 * N && N == 2) {
    float2 v = row ? __ldcg(reinterpret_cast<const float2 *>(row + d0)) : float2{};
    out[0] = v.x, out[1] = v.y;
  } else {
    LLMC_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = row && d0 + i < Dv ? __ldcg(row + d0 + i) : 0.0f;
  }
}

/// A decode attention's ropes and cache writes, done by its own kernel
/// (decodeAttentionRope): q is read before its rope, and the new key row
/// (roped) and value row are written into the caches at *pos (int8 ones
/// with their scales, as cacheWriteInt8 writes them). `k` null: none (q is
/// roped, the rows cached by kernels before).
template <class T, class K> struct DecodeRope {
  const T *k = nullptr; // the new keys before their rope, [B, Hkv, D]
  const T *v = nullptr; // the new values: (b, h, e) at v[b * vsb + h * vsh + e]
  int64_t vsb = 0, vsh = 0;
  K *kCache = nullptr, *vCache = nullptr;       // the caches, written at row *pos
  float *kScales = nullptr, *vScales = nullptr; // int8 caches' scales [B, Hkv, C]
  const T *cosT = nullptr, *sinT = nullptr; // [p, r / 2]
  const int64_t *positions = nullptr;       // [B, 1], or [1, 1] (perBatch 0)
  int positionsPerBatch = 0, r = 0, p = 0;
  bool interleaved = false;
  unsigned long long *error = nullptr;
  HeadNorms<T> norms; // the heads' norms before the rope, if any
};

/// Channel e of a row roped at table row `row` (Rope.h's ropeChannel with
/// the rope's tables and form).
template <class T, class K, class Read>
LLMC_DEVICE float ropedChannel(const DecodeRope<T, K> &rope, Read x, int e, long long row) {
  return ropeChannel<T>(x, e, rope.r, rope.interleaved, rope.cosT, rope.sinT, row);
}

/// Two 16-bit values at p (4-byte aligned) as one 32-bit word.
template <class T> LLMC_DEVICE unsigned word16x2(const T *p) {
  unsigned w[1];
  loadWords<4>(reinterpret_cast<const uint8_t *>(p), w);
  return w[0];
}

/// The decode kernel's tiles on tensor cores (kMmaDecode, g <= 16 heads):
/// rows of the products are the group's heads (those past g zero), the
/// queries qt [g][D] of T in shared memory, unscaled, in padded rows
/// (paddedRow: the 8 rows a fragment load reads hit distinct banks; rows
/// of D = 64 were 128 bytes apart, an 8-way conflict). Per tile
/// (awaitTile(ti) waits for it and returns its keys; values after them):
///   S   warp w the tile's keys 8 w .. 8 w + 7: D / 16 mma.sync m16n8k16,
///       A the queries (32-bit shared loads), B the keys' rows as they lie;
///       scaled and masked (keys past `rows`: -inf) into sc [g][32], then,
///       with a softcap, capped there after a barrier
///   softmax  after a barrier every warp reads all 32 scores of its rows
///       (the same in every warp) and updates the same running maximum and
///       sum, natural exp as the SIMT form, P rounded to T as A fragments
///   O  += P V over warp w's value channels Dv / 4 w .. (two k-steps of 16
///       keys, B by ldmatrix.trans), in registers, rescaled by alpha
/// then O (unnormalised), m and l of the g heads into os, ms and ls, as the
/// SIMT loop leaves them.
template <class T, int D, int Dv, class Await>
LLMC_DEVICE void decodeTilesMma(const T *qt, float *sc, float *os, float *ms, float *ls, int g,
                                int start, int end, int tileCount, float scale, float softcap,
                                Await awaitTile) {
  constexpr int kLdK = paddedRow<T>(D), kLdV = paddedRow<T>(Dv), kSlice = Dv / 4;
  constexpr int kLdQ = kLdK; // qt's rows, padded (fits qs: g D floats)
  constexpr int kNt = kSlice / 8;
  int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32), gr = lane / 4, t4 = lane % 4;
  int mRow = lane % 8 + (lane / 8 % 2) * 8, mCol = lane / 16 * 8; // ldmatrix's rows
  int d0 = warp * kSlice;
  float o[kNt][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  LLMC_UNROLL
  for (int j = 0; j < kNt; ++j)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  for (int ti = 0; ti < tileCount; ++ti) {
    int t = start + ti * kAttnKeys;
    int rows = end - t < kAttnKeys ? end - t : kAttnKeys;
    const T *kt = awaitTile(ti), *vt = kt + kAttnKeys * kLdK;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const T *krow = kt + (8 * warp + gr) * kLdK + 2 * t4;
    LLMC_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
      const T *q0 = qt + gr * kLdQ + kk * 16 + 2 * t4, *q1 = q0 + 8 * kLdQ;
      const unsigned a[4] = {gr < g ? word16x2(q0) : 0u, gr + 8 < g ? word16x2(q1) : 0u,
                             gr < g ? word16x2(q0 + 8) : 0u, gr + 8 < g ? word16x2(q1 + 8) : 0u};
      const unsigned b[2] = {word16x2(krow + kk * 16), word16x2(krow + kk * 16 + 8)};
      tc::mma16816<T>(s, a, b);
    }
    LLMC_UNROLL
    for (int e = 0; e < 4; ++e) {
      int key = 8 * warp + 2 * t4 + e % 2, row = gr + 8 * (e / 2);
      if (row < g)
        sc[row * kAttnKeys + key] = key < rows ? s[e] * scale : -INFINITY;
    }
    __syncthreads();
    if (softcap > 0.0f) { // (block-uniform; capped here, not above: there it spilled on sm_80)
      for (int i = int(threadIdx.x); i < g * kAttnKeys; i += int(blockDim.x))
        if (sc[i] != -INFINITY)
          sc[i] = capScore(sc[i], softcap);
      __syncthreads();
    }
    // This lane's scores of P's A fragments: row gr + 8 hr, keys 16 kk +
    // 2 t4 + {0, 1} (+ 8), read from sc twice (the maximum, then the
    // exps, packed as they come: fewer registers than keeping them).
    auto score = [&](int hr, int kk, int j) {
      int row = gr + 8 * hr, key = 16 * kk + 2 * t4 + j % 2 + 8 * (j / 2);
      return row < g ? sc[row * kAttnKeys + key] : -INFINITY;
    };
    float mUse[2], alpha[2], sum[2] = {0.0f, 0.0f};
    LLMC_UNROLL
    for (int hr = 0; hr < 2; ++hr) {
      float most = -INFINITY;
      LLMC_UNROLL
      for (int j = 0; j < 8; ++j)
        most = fmaxf(most, score(hr, j / 4, j % 4));
      most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 1));
      most = fmaxf(most, __shfl_xor_sync(kFullMask, most, 2));
      float mNew = fmaxf(m[hr], most);
      mUse[hr] = mNew == -INFINITY ? 0.0f : mNew; // (no key yet: p and alpha 0)
      alpha[hr] = expf(m[hr] - mUse[hr]);
      m[hr] = mNew;
    }
    unsigned pa[2][4];
    LLMC_UNROLL
    for (int kk = 0; kk < 2; ++kk)
      LLMC_UNROLL
      for (int i = 0; i < 4; ++i) { // A's registers: (row gr, row gr + 8) x (keys, keys + 8)
        int hr = i % 2, j = 2 * (i / 2);
        float p0 = expf(score(hr, kk, j) - mUse[hr]), p1 = expf(score(hr, kk, j + 1) - mUse[hr]);
        sum[hr] += p0 + p1;
        pa[kk][i] = tc::packFloats<T>(p0, p1);
      }
    LLMC_UNROLL
    for (int hr = 0; hr < 2; ++hr) {
      sum[hr] += __shfl_xor_sync(kFullMask, sum[hr], 1);
      sum[hr] += __shfl_xor_sync(kFullMask, sum[hr], 2);
      l[hr] = l[hr] * alpha[hr] + sum[hr];
    }
    LLMC_UNROLL
    for (int j = 0; j < kNt; ++j)
      LLMC_UNROLL
      for (int e = 0; e < 4; ++e)
        o[j][e] *= alpha[e / 2];
    LLMC_UNROLL
    for (int kk = 0; kk < 2; ++kk)
      LLMC_UNROLL
      for (int dp = 0; dp < kNt / 2; ++dp) {
        unsigned vb[4];
        tc::ldmatrixTrans(vb, vt + (kk * 16 + mRow) * kLdV + d0 + dp * 16 + mCol);
        const unsigned b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
        tc::mma16816<T>(o[2 * dp], pa[kk], b0);
        tc::mma16816<T>(o[2 * dp + 1], pa[kk], b1);
      }
  }
  LLMC_UNROLL
  for (int j = 0; j < kNt; ++j)
    LLMC_UNROLL
    for (int e = 0; e < 4; ++e) {
      int row = gr + 8 * (e / 2), d = d0 + 8 * j + 2 * t4 + e % 2;
      if (row < g)
        os[row * Dv + d] = o[j][e];
    }
  if (warp == 0 && t4 == 0)
    LLMC_UNROLL
    for (int hr = 0; hr < 2; ++hr)
      if (gr + 8 * hr < g)
        ms[gr + 8 * hr] = m[hr], ls[gr + 8 * hr] = l[hr];
}

template <class T, class K, int D, int Dv, class Y, bool kNorms>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS_MIN(kAttnThreads, (kDecodeMinBlocks<T, K, D, Dv, kNorms>))
    decodeAttentionKernel(const T *q, const K *kCache, const K *vCache, const float *kScales,
                          const float *vScales, const int64_t *pos, float *partial, float *lse,
                          Y *out, unsigned *counters, int hq, int hkv, int capacity, int window,
                          float scale, float softcap, int stages, bool tensorTiles, bool patchRows,
                          bool posAfterWait, DecodeRope<T, K> rope, const float *sinks) {
  constexpr int kOut = kValueRun<Dv>; // value channels per lane
  int g = hq / hkv;
  int kvh = int(blockIdx.x), split = int(blockIdx.y), b = int(blockIdx.z);
  int splits = int(gridDim.y);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Shared memory: q [G][D], o [G][Dv], scores [G][keys], m [G], l [G], the
  // tile's key and value scales [keys], the heads' norms' 1 / rms [G + 1]
  // (rope.norms) as floats, the new key and value rows [D + Dv] as K
  // (written where this block writes them into caches of T; read where it
  // patches them into their tile), then the key and value tiles.
  LLMC_DYNAMIC_SHARED(float, smem);
  float *qs = smem, *os = qs + g * D, *sc = os + g * Dv, *ms = sc + g * kAttnKeys, *ls = ms + g;
  float *kst = ls + g, *vst = kst + kAttnKeys, *invs = vst + kAttnKeys;
  K *newRow = reinterpret_cast<K *>(invs + g + 1);
  // Tile buffers: buffer i's keys at tiles + i * kStage, its values after.
  K *tiles = reinterpret_cast<K *>(smem + decodeFloats<K, D, Dv>(g));
  constexpr int kStage = kAttnKeys * (paddedRow<K>(D) + paddedRow<K>(Dv));

  // *pos before the wait for the kernel before, unless a kernel may write
  // it (posAfterWait: decodeAttention); the step's position buffer is
  // copied in before its first kernel.
  if (posAfterWait) // (a second LLMC_KERNEL_BEGIN() below waits for nothing)
    LLMC_KERNEL_BEGIN();
  long long p0 = *pos;
  if (p0 < 0 || p0 >= capacity) { // block-uniform: the new row has no place in the cache
    // No key is read (past the cache, or a chunk of none) and nothing is
    // written: the step fails on the error recorded here (the rope fold's
    // cache write) or by the cache write before (the host's checks keep
    // such a position out).
    LLMC_KERNEL_BEGIN();
    if (rope.k && threadIdx.x == 0 && kvh == 0 && split == 0 && b == 0)
      recordError(rope.error, kCacheOverflow, p0);
    return;
  }
  int n = int(p0 + 1);
  int chunk = ((n + splits - 1) / splits + kAttnKeys - 1) / kAttnKeys * kAttnKeys;
  // The splits with keys (the others leave at once: they write nothing and
  // are not counted, and the merge reads only these).
  int busy = (n + chunk - 1) / chunk;
  if (split >= busy) { // block-uniform
    LLMC_KERNEL_BEGIN();
    return;
  }
  int start = split * chunk, end = n - start > chunk ? start + chunk : n;
  int lo = firstKey(p0, window);
  if (start < lo)
    start = lo;

  size_t head = (size_t(b) * size_t(hkv) + size_t(kvh)) * size_t(capacity);
  const K *kBase = kCache + head * D;
  const K *vBase = vCache + head * Dv;
  const float *ksBase = kScales ? kScales + head : nullptr;
  const float *vsBase = vScales ? vScales + head : nullptr;
  // Tile i of the chunk (keys start + i * kAttnKeys ..) goes to buffer
  // i % stages by cp.async, a commit group a tile. The first `ahead` tiles
  // are issued before q is loaded; tile i + stages - 1 at tile i, after the
  // barrier that frees its buffer (tile i - 1's). With as many buffers as
  // the chunk has tiles, every copy is in flight before the first wait.
  int tileCount = start < end ? (end - start + kAttnKeys - 1) / kAttnKeys : 0;
  int ahead = stages > 1 ? stages - 1 : 1;
  auto issue = [&](int i) {
    int t0 = start + i * kAttnKeys;
    int rows = end - t0 < kAttnKeys ? end - t0 : kAttnKeys;
    K *kDst = tiles + (i % stages) * kStage;
    asyncTile<K, D, kAttnKeys>(kDst, kBase + size_t(t0) * D, D, rows);
    asyncTile<K, Dv, kAttnKeys>(kDst + kAttnKeys * paddedRow<K>(D), vBase + size_t(t0) * Dv, Dv,
                                rows);
    asyncCommit();
  };
  // Only the kernel before this one may still be running here
  // (programmatic launches: it has passed its own wait), and of the cache
  // it writes at most the new row, *pos: every tile but the one that holds
  // it is asked for before the wait. Where this launch writes that row
  // itself into caches of T (the ropes folded in), that tile is asked for
  // too (`patch`): the block puts the row into it once its copy is in,
  // from newRow, rather than waiting on a copy of the row back from
  // memory (a round trip more than the other blocks wait).
  int first = ahead < tileCount ? ahead : tileCount;
  const bool patch =
      patchRows && sizeof(K) != 1 && rope.k && end == n && first == tileCount && first > 0;
  if (end == n && first > 0 && first == tileCount && !patch)
    --first; // (the last busy split's last tile holds row *pos)
  for (int i = 0; i < first; ++i)
    issue(i);
  LLMC_KERNEL_BEGIN();
  // With the ropes folded in (rope.k): the queries' and the new key's table
  // row, read now that the kernels before are done.
  long long ropeRow = -1;
  if (rope.k) {
    ropeRow = rope.positions[rope.positionsPerBatch ? b : 0];
    if (ropeRow < 0 || ropeRow >= rope.p) {
      if (threadIdx.x == 0 && kvh == 0 && split == 0)
        recordError(rope.error, kPositionOutOfRange, b);
      ropeRow = -1; // (not turned; the step fails on the recorded error)
    }
    // The heads' norms (rope.norms): a warp a row sums its squares, for the
    // group's queries and the new key where this block writes it.
    // (A kernel instance of its own: in the other one's 72 registers the
    // norms made ptxas spill on sm_86 and sm_89.)
    if (kNorms && (rope.norms.q || rope.norms.k)) { // block-uniform
      for (int r = int(warp); r <= g; r += kAttnWarps) {
        if (r < g ? !rope.norms.q : (!rope.norms.k || end != n))
          continue;
        const T *x = r < g ? q + (size_t(b) * size_t(hq) + size_t(kvh * g + r)) * D
                           : rope.k + (size_t(b) * size_t(hkv) + size_t(kvh)) * D;
        float inv = warpRmsInv(x, D, r < g ? rope.norms.qEps : rope.norms.kEps);
        if (lane == 0)
          invs[r] = inv;
      }
      __syncthreads();
    }
    if (end == n) { // block-uniform: this split's last tile holds row *pos
      size_t at = head + size_t(p0);
      const T *kx = rope.k + (size_t(b) * size_t(hkv) + size_t(kvh)) * D;
      auto keyIn = [&](int e) {
        return headChannel(kx, e, kNorms ? rope.norms.k : nullptr, invs[g], rope.norms.kOffset);
      };
      const T *vx = rope.v + size_t(b) * size_t(rope.vsb) + size_t(kvh) * size_t(rope.vsh);
      if constexpr (sizeof(K) == 1) {
        // int8 caches: a warp a row (warp 0 the key's, 1 the value's),
        // quantized from the roped key rounded to T, as rope and
        // cacheWriteInt8 one after the other.
        if (warp == 0)
          warpQuantizeRow([&](int e) { return ropedChannel(rope, keyIn, e, ropeRow); }, D,
                          rope.kCache + at * D, rope.kScales + at);
        else if (warp == 1)
          warpQuantizeRow([&](int e) { return toFloat(vx[e]); }, Dv, rope.vCache + at * Dv,
                          rope.vScales + at);
      } else {
        for (int e = int(threadIdx.x); e < D; e += int(blockDim.x))
          rope.kCache[at * D + size_t(e)] = newRow[e] =
              fromFloat<K>(ropedChannel(rope, keyIn, e, ropeRow));
        for (int e = int(threadIdx.x); e < Dv; e += int(blockDim.x))
          rope.vCache[at * Dv + size_t(e)] = newRow[D + e] = fromFloat<K>(toFloat(vx[e]));
      }
      if (!patch) // (block-uniform)
        __syncthreads(); // the rows written before their tile is asked for
    }
  }
  for (int i = first; i < ahead && i < tileCount; ++i)
    issue(i);

  int h0 = kvh * g;
  const T *qx = q + (size_t(b) * size_t(hq) + size_t(h0)) * D;

  // The tiles on tensor cores (decodeTilesMma) read the queries as T,
  // unscaled, in padded rows within qs; the SIMT loop as scaled floats.
  bool mma = kMmaDecode<T, K, D, Dv> && tc::kBf16 && g <= kMmaDecodeRows && tensorTiles;
  for (int i = int(threadIdx.x); i < g * D; i += int(blockDim.x)) {
    int hi = i / D;
    float v = rope.k ? ropedChannel(
                           rope,
                           [&](int e) {
                             return headChannel(qx + hi * D, e, kNorms ? rope.norms.q : nullptr,
                                                invs[hi], rope.norms.qOffset);
                           },
                           i % D, ropeRow)
                     : toFloat(qx[i]);
    if (mma) // (in padded rows, as decodeTilesMma reads them)
      reinterpret_cast<T *>(qs)[hi * paddedRow<T>(D) + i % D] = fromFloat<T>(v);
    else
      qs[i] = v * scale;
  }
  for (int i = int(threadIdx.x); i < g * Dv; i += int(blockDim.x))
    os[i] = 0.0f;
  for (int i = int(threadIdx.x); i < g; i += int(blockDim.x)) {
    ms[i] = -INFINITY;
    ls[i] = 0.0f;
  }
  if (patch) { // block-uniform: every copy in (the tile's last), then the new rows into it
    asyncWait<0>();
    __syncthreads();
    int tile = tileCount - 1, row = int(p0) - (start + tile * kAttnKeys);
    K *kDst = tiles + (tile % stages) * kStage, *vDst = kDst + kAttnKeys * paddedRow<K>(D);
    for (int e = int(threadIdx.x); e < D; e += int(blockDim.x))
      kDst[row * paddedRow<K>(D) + e] = newRow[e];
    for (int e = int(threadIdx.x); e < Dv; e += int(blockDim.x))
      vDst[row * paddedRow<K>(Dv) + e] = newRow[D + e];
    // (after the queries, whose loads the copies' wait then overlaps;
    // awaitTile's first barrier makes the rows every thread's)
  }

  // Tile ti in: after the barrier that says the tile before it is consumed
  // (and q, o are set), the next copy goes out into that tile's buffer,
  // then this tile's copies are awaited (done once no more than the tiles
  // issued after it are pending), then a barrier makes them every thread's.
  // (The SIMT loop has its own barrier after it, once the tile's scales
  // are in shared memory too: `synced` false.)
  auto awaitTile = [&](int ti, bool synced = true) -> const K * {
    __syncthreads();
    int last = ti + stages - 1; // the tile whose copy goes out now, if any
    if (last >= ahead && last < tileCount)
      issue(last);
    int issued = last > ahead - 1 ? last : ahead - 1;
    asyncWaitAtMost((issued < tileCount - 1 ? issued : tileCount - 1) - ti);
    if (synced)
      __syncthreads();
    return tiles + (ti % stages) * kStage;
  };
  bool simt = true; // (a flag of its own: `!mma` in the loop's test made ptxas spill bf16
                    // at head_dim 128 on sm_80 to sm_89)
  if constexpr (kMmaDecode<T, K, D, Dv> && tc::kBf16) {
    if (mma) { // block-uniform
      decodeTilesMma<T, D, Dv>(reinterpret_cast<const T *>(qs), sc, os, ms, ls, g, start, end,
                               tileCount, scale, softcap, [&](int ti) { return awaitTile(ti); });
      simt = false;
    }
  }
  for (int ti = 0; simt && ti < tileCount; ++ti) {
    int t = start + ti * kAttnKeys;
    int rows = end - t < kAttnKeys ? end - t : kAttnKeys;
    const K *kt = awaitTile(ti, false), *vt = kt + kAttnKeys * paddedRow<K>(D);
    const float *ksTile = loadTileScales(kst, ksBase, t, rows);
    const float *vsTile = loadTileScales(vst, vsBase, t, rows);
    __syncthreads();
    for (int i = int(threadIdx.x); i < g * kAttnKeys; i += int(blockDim.x)) {
      int hi = i / kAttnKeys, j = i % kAttnKeys;
      float dot = j < rows ? dotRow<K, D>(qs + hi * D, kt + j * paddedRow<K>(D)) : 0.0f;
      if (ksTile && j < rows)
        dot *= ksTile[j];
      sc[i] = j < rows ? capScore(dot, softcap) : -INFINITY;
    }
    __syncthreads();
    for (int hi = int(warp); hi < g; hi += kAttnWarps) {
      float s = sc[hi * kAttnKeys + int(lane)];
      float mOld = ms[hi];
      float mNew = fmaxf(mOld, warpMax(s));
      float p = s == -INFINITY ? 0.0f : expf(s - mNew);
      float alpha = mOld == -INFINITY ? 0.0f : expf(mOld - mNew);
      float sum = warpSum(p);
      float acc[kOut];
      LLMC_UNROLL
      for (int c = 0; c < kOut; ++c) {
        int d = valueChannel<Dv>(lane, c);
        acc[c] = d < Dv ? os[hi * Dv + d] * alpha : 0.0f;
      }
      addWeightedValues<K, Dv>(acc, p, vt, rows, vsTile);
      LLMC_UNROLL
      for (int c = 0; c < kOut; ++c) {
        int d = valueChannel<Dv>(lane, c);
        if (d < Dv)
          os[hi * Dv + d] = acc[c];
      }
      // Every lane read ms[hi] before the shuffles above, which already
      // order it before this write; compute-sanitizer's racecheck does not
      // count shuffles (its first GPU run warned here), a __syncwarp it does.
      __syncwarp();
      if (lane == 0) {
        ms[hi] = mNew;
        ls[hi] = ls[hi] * alpha + sum;
      }
    }
  }
  __syncthreads();
  if (busy == 1) {
    // The only busy split: its normalised values are the output (the merge
    // of one split would give them back), with no partial and no count.
    for (int hi = int(warp); hi < g; hi += kAttnWarps) {
      float l = ls[hi], den = withSink(l, ms[hi], sinks, h0 + hi);
      Y *dst = out + (size_t(b) * size_t(hq) + size_t(h0 + hi)) * size_t(Dv);
      for (int d = int(lane); d < Dv; d += 32)
        dst[d] = fromFloat<Y>(l > 0.0f ? os[hi * Dv + d] / den : 0.0f);
    }
    return;
  }
  for (int hi = int(warp); hi < g; hi += kAttnWarps) {
    float l = ls[hi];
    size_t row = (size_t(b) * size_t(splits) + size_t(split)) * size_t(hq) + size_t(h0 + hi);
    for (int d = int(lane); d < Dv; d += 32)
      partial[row * Dv + size_t(d)] = l > 0.0f ? os[hi * Dv + d] / l : 0.0f;
    if (lane == 0)
      lse[row] = l > 0.0f ? ms[hi] + logf(l) : -INFINITY;
  }

  // The group's last block: out[b, h, :] = sum_s exp(lse_s - L) partial_s,
  // L = log (sum_s exp(lse_s) + exp(sinks[h])) (no sink term without
  // sinks), a warp per head of the group, a lane per run of channels
  // (valueChannel).
  if (!lastOfGroup(counters + size_t(b) * size_t(hkv) + size_t(kvh), unsigned(busy)))
    return;
  // One pass over the splits, kCombineLoads at a time: a batch's log-sum-
  // exps and each lane's runs of channels (8- or 16-byte loads where Dv is
  // 32 runs) are loaded before any is used (each an L2 round trip: one
  // after another they made this merge most of a short context's step),
  // then summed in split order against a running maximum, the sums
  // rescaled when it grows.
  constexpr int kCombineLoads = kOut <= 4 ? 4 : 2;
  size_t splitStride = size_t(hq); // from one split's row to the next
  for (int hi = int(warp); hi < g; hi += kAttnWarps) {
    size_t h = size_t(h0 + hi);
    const float *lseRow = lse + size_t(b) * size_t(splits) * splitStride + h;
    const float *partialRow = partial + (size_t(b) * size_t(splits) * splitStride + h) * Dv;
    float m = -INFINITY, den = 0.0f, num[kOut];
    LLMC_UNROLL
    for (int c = 0; c < kOut; ++c)
      num[c] = 0.0f;
    for (int s0 = 0; s0 < busy; s0 += kCombineLoads) {
      float l[kCombineLoads], p[kCombineLoads][kOut];
      LLMC_UNROLL
      for (int j = 0; j < kCombineLoads; ++j) {
        bool in = s0 + j < busy;
        size_t at = size_t(s0 + j) * splitStride;
        l[j] = in ? __ldcg(lseRow + at) : -INFINITY;
        loadPartialRun<Dv>(in ? partialRow + at * Dv : nullptr, lane, p[j]);
      }
      float mNew = m;
      LLMC_UNROLL
      for (int j = 0; j < kCombineLoads; ++j)
        mNew = fmaxf(mNew, l[j]);
      if (mNew == -INFINITY)
        continue; // no split so far has a key in the window
      float alpha = expf(m - mNew); // 0 while m is -inf
      den *= alpha;
      LLMC_UNROLL
      for (int c = 0; c < kOut; ++c)
        num[c] *= alpha;
      LLMC_UNROLL
      for (int j = 0; j < kCombineLoads; ++j) {
        float w = l[j] == -INFINITY ? 0.0f : expf(l[j] - mNew);
        den += w;
        LLMC_UNROLL
        for (int c = 0; c < kOut; ++c)
          num[c] = fmaf(w, p[j][c], num[c]);
      }
      m = mNew;
    }
    den = withSink(den, m, sinks, int(h));
    LLMC_UNROLL
    for (int c = 0; c < kOut; ++c) {
      int d = valueChannel<Dv>(lane, c);
      if (d < Dv)
        out[(size_t(b) * size_t(hq) + h) * size_t(Dv) + size_t(d)] =
            fromFloat<Y>(den > 0.0f ? num[c] / den : 0.0f);
    }
  }
}

/// decodeAttention's and decodeAttentionRope's launch (kNorms: the kernel
/// instance that takes rope.norms).
template <class T, class K, int D, int Dv, class Y, bool kNorms = false>
std::string launchDecodeAttention(const T *q, const K *kCache, const K *vCache,
                                  const float *kScales, const float *vScales, const int64_t *pos,
                                  float *partial, float *lse, Y *out, unsigned *counters, int b,
                                  int hq, int hkv, int capacity, int splits, int window,
                                  float scale, float softcap, Stream stream, int maxStages,
                                  bool posAfterWait, const DecodeRope<T, K> &rope,
                                  const float *sinks) {
  static_assert(D * sizeof(K) % 16 == 0 && Dv * sizeof(K) % 16 == 0, "16-byte rows");
  if (b < 1 || hq < 1 || hkv < 1 || hq % hkv || capacity < 1 || splits < 1 ||
      (sizeof(K) == 1) != (kScales && vScales) || !counters ||
      size_t(b) * size_t(hkv) > size_t(kSplitCounters))
    return "decode attention: invalid arguments";
  int stages = decodeStages<K, D, Dv>(hq / hkv, capacity, splits,
                                      maxStages > 0 ? maxStages : decodeStageCap());
  size_t bytes = decodeSharedBytes<K, D, Dv>(hq / hkv, stages);
  return launchWithShared(decodeAttentionKernel<T, K, D, Dv, Y, kNorms>,
                          dim3(unsigned(hkv), unsigned(splits), unsigned(b)), dim3(kAttnThreads),
                          bytes, stream, q, kCache, vCache, kScales, vScales, pos, partial, lse,
                          out, counters, hq, hkv, capacity, window, scale, softcap, stages,
                          decodeMmaEnabled(), decodePatchEnabled(), posAfterWait, rope, sinks);
}

/// Split-KV decode attention and its combination, one launch (K: the
/// caches' type; with int8 caches kScales and vScales are their scales,
/// else null; counters: the context's split counters, B * Hkv of them).
/// maxStages > 0 caps the tile buffers (decodeStages; else
/// LLMC_CUDA_DECODE_STAGES does). The kernel reads *pos, and asks for the
/// tiles it decides, before the programmatic wait for the kernel before
/// (Cuda.h), which is right for a position no kernel writes (the step's
/// position buffer); posAfterWait reads it after the wait, for a position
/// a kernel may have written just before. `sinks`: one logit per query
/// head on the device, or null (Attention.h).
template <class T, class K, int D, int Dv, class Y>
std::string decodeAttention(const T *q, const K *kCache, const K *vCache, const float *kScales,
                            const float *vScales, const int64_t *pos, float *partial, float *lse,
                            Y *out, unsigned *counters, int b, int hq, int hkv, int capacity,
                            int splits, int window, float scale, float softcap, Stream stream,
                            int maxStages = 0, bool posAfterWait = false,
                            const float *sinks = nullptr) {
  return launchDecodeAttention<T, K, D, Dv, Y>(q, kCache, vCache, kScales, vScales, pos, partial,
                                               lse, out, counters, b, hq, hkv, capacity, splits,
                                               window, scale, softcap, stream, maxStages,
                                               posAfterWait, DecodeRope<T, K>{}, sinks);
}

/// decodeAttention with the attention's ropes and cache writes in the same
/// launch (ropeCacheWrite's work at one token, or a rope pair's and
/// cacheWriteInt8's): xq [B, Hq, D] and xk [B, Hkv, D] are the queries and
/// the new keys before their rope (cos, sin [p, r/2] at positions [B, 1],
/// or [1, 1] for the batch; r 0: all of D), values (b, h, e) at values[b *
/// vsb + h * vsh + e]; the roped key row and the value row go into the
/// caches at row *pos (K = T, or int8_t with kScales and vScales, each row
/// quantized as cacheWriteInt8 does), and the attention reads them there.
/// The block whose chunk holds row *pos writes the rows, then asks for that
/// tile (or, into caches of T where the tile was asked for before the
/// wait, puts the rows into it from shared memory); every block ropes its
/// group's queries as it reads them. `norms`:
/// each query head's and the new key head's RMS norm before its rope
/// (Qwen 3's and Gemma 3's), taken as they are read (xq and xk are then the
/// norms' inputs). A row *pos outside the cache records kCacheOverflow and
/// writes nothing; a position outside the tables records
/// kPositionOutOfRange. kNorms: the kernel instance that takes norms (the
/// other refuses them).
template <class T, class K, int D, int Dv, class Y, bool kNorms = false>
std::string decodeAttentionRope(const T *xq, const T *xk, const T *values, int64_t vsb,
                                int64_t vsh, K *kCache, K *vCache, float *kScales, float *vScales,
                                const T *cosT, const T *sinT, const int64_t *positions,
                                bool positionsPerBatch, int r, int p, bool interleaved,
                                const int64_t *pos, float *partial, float *lse, Y *out,
                                unsigned *counters, int b, int hq, int hkv, int capacity,
                                int splits, int window, float scale, float softcap,
                                unsigned long long *error, Stream stream, int maxStages = 0,
                                bool posAfterWait = false, const float *sinks = nullptr,
                                HeadNorms<T> norms = {}) {
  static_assert(std::is_same_v<K, T> || std::is_same_v<K, int8_t>, "caches of T or int8");
  if (r == 0)
    r = D;
  if (!xq || !xk || !values || !kCache || !vCache || !cosT || !sinT || !positions || r % 2 ||
      r > D || r < 2 || p < 1 || (!kNorms && (norms.q || norms.k)))
    return "decode attention with rope: invalid arguments";
  DecodeRope<T, K> rope;
  rope.k = xk, rope.v = values, rope.vsb = vsb, rope.vsh = vsh;
  rope.kCache = kCache, rope.vCache = vCache, rope.kScales = kScales, rope.vScales = vScales;
  rope.cosT = cosT, rope.sinT = sinT;
  rope.positions = positions, rope.positionsPerBatch = positionsPerBatch ? 1 : 0;
  rope.r = r, rope.p = p, rope.interleaved = interleaved, rope.error = error;
  rope.norms = norms;
  return launchDecodeAttention<T, K, D, Dv, Y, kNorms>(
      xq, kCache, vCache, kScales, vScales, pos, partial, lse, out, counters, b, hq, hkv, capacity,
      splits, window, scale, softcap, stream, maxStages, posAfterWait, rope, sinks);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTIONDECODE_H
