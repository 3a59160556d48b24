//===- AttentionWgmma.h - flash prefill attention on sm_90a's wgmma -------===//
//
// Shapes, layouts and semantics: Attention.h's prefill (q [B, S, Hq, D],
// keys 0 .. *pos + S - 1 of the [B, Hkv, C, D] caches, out [B, S, Hq, Dv],
// scale, softcap, causal, window, GQA/MQA; a query with no key gives
// zeros), for half or bfloat16 queries and caches with D = Dv = 64 or 128,
// on device code built for sm_90a (wg::wgmmaBuilt(); AttentionTensorCore.h's
// flashAttention picks it there only with LLMC_CUDA_WGMMA=1: on an H200 it
// ran 1-18% slower than AttentionMma.h's mma.sync form, which flashAttention
// takes otherwise; bench/results/2026-11-30-cuda-decode-h200-5.md).
//
// Tiling (FlashAttention-3's consumers on Hopper's warpgroup products,
// Wgmma.h, with its overlap of the softmax with the products, without its
// producer warp and TMA)
//   A block of two warpgroups (8 warps, 256 threads) takes kQueries = 128
//   queries of one head, warpgroup i the 64 queries 64 i .. and its warp w
//   the 16 rows 16 w .. of them (the rows of a wgmma's m64); blocks of the
//   last queries (the longest under causal masks) are scheduled first, one
//   block a multiprocessor. Keys and values go through shared memory in
//   tiles of kKeys = 128 rows by cp.async from all 256 threads, in three
//   stages: while tile t's keys are used, tile t - 128's values still are
//   (below) and tile t + 128 is being copied (one barrier a tile). The
//   layout is wgmma's no-swizzle core-matrix one (row r, column c at
//   (r / 8) 16 D + (c / 8) 128 + (r % 8) 16 + (c % 8) 2 bytes: each
//   thread's 16-byte chunks are contiguous in shared memory; rows past the
//   last key zero-filled); the queries stay there in the same layout. Both
//   warpgroups read each tile: 4 bytes of keys and values a (query, key)
//   pair at head_dim 128, as FlashAttention-2's 128 x 64 tiles (a block of
//   one warpgroup, 64 queries, read twice as many from L2).
//   Per tile and warpgroup (those whose queries the tile does not reach
//   skip it):
//     S = Q K^T    D / 16 wgmma m64n128k16, A (Q) and B (K, K-major) from
//                  shared memory; f32 accumulators in registers, the
//                  m16n8 C layout of mma.sync for each warp's 16 rows
//     O += P V     of the tile before: 8 wgmma m64nDk16 with A (its P)
//                  from registers (S's accumulators rounded to T are the A
//                  fragments) and B (V, MN-major: values' rows as they
//                  are) from shared memory, issued right after S's as a
//                  second group, so the two products run together
//     softmax      once S is done (wait<1>), while P V still runs:
//                  AttentionMma.h's fa2 steps on S's registers (the same
//                  instances: the scale in the exp2's FFMA, or each score
//                  scaled and capped first; masks only on tiles that need
//                  them), 128 keys; then, once P V is done too, O's rows
//                  rescaled and this tile's P into the A registers
//   and after the last tile its P V, then O / l to out. No [S, S] buffer:
//   128 scores per query exist at once. Shared memory: the queries and
//   three stages of a K and a V tile (D = 128: 32 + 3 x 64 = 224 KiB of
//   the 227 a block may have). Registers: S 64 floats, O D / 2, P 32 words
//   a thread (at most 203 at D = 128, no spills).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ATTENTIONWGMMA_H
#define LLMC_RUNTIME_MODEL_CUDA_ATTENTIONWGMMA_H

#include "runtime/src/model/cuda/AttentionMma.h"
#include "runtime/src/model/cuda/Wgmma.h"

namespace llmc::cuda {

constexpr int kWgAttnGroups = 2; // warpgroups a block
constexpr int kWgAttnStages = 3; // key and value tiles in shared memory
constexpr int kWgAttnQueries = 64 * kWgAttnGroups, kWgAttnKeys = 128;
constexpr int kWgAttnThreads = 128 * kWgAttnGroups;

template <class T, int D> struct WgAttnLayout {
  static_assert(sizeof(T) == 2 && (D == 64 || D == 128), "16-bit tiles, D 64 or 128");
  static constexpr size_t kQ = sizeof(T) * size_t(kWgAttnQueries) * D;
  static constexpr size_t kTile = sizeof(T) * size_t(kWgAttnKeys) * D;
  static constexpr size_t kStage = 2 * kTile; // a key tile, then its value tile
  static constexpr size_t kBytes = kQ + kWgAttnStages * kStage;
  /// Bytes between core matrices: along a row (8 columns) and between
  /// 8-row groups.
  static constexpr uint32_t kAlongRow = 128, kRowGroup = 16 * D;
};

/// Rows [0, rows) of a [*, D] tile of T at src (row stride `stride`
/// elements) into dst [N][D] in the core-matrix layout above, by cp.async
/// from every thread of the block (the caller commits and waits); rows
/// from `rows` to N become zeros. Chunk i (16 bytes) of dst holds row
/// (i / D) 8 + i % 8, columns (i / 8) % (D / 8) 8 .. + 7: a warp's copies
/// fill 512 contiguous bytes.
template <class T, int D, int N>
LLMC_DEVICE void coreTile(T *dst, const T *src, size_t stride, int rows) {
  constexpr int kChunks = N * D / 8;
  LLMC_NO_UNROLL
  for (int i = int(threadIdx.x); i < kChunks; i += kWgAttnThreads) {
    int r = i / D * 8 + i % 8, c = i / 8 % (D / 8);
    bool valid = r < rows;
    asyncCopy16(dst + size_t(i) * 8, src + (valid ? size_t(r) * stride + size_t(c) * 8 : 0),
                valid);
  }
}

template <class T, int D, class Y, bool kFold>
LLMC_DEVICE void flashAttentionWgmmaBody(const T *q, const T *kCache, const T *vCache,
                                         const int64_t *pos, Y *out, int s, int hq, int hkv,
                                         int capacity, bool causal, int window, float scale,
                                         float softcap, const float *sinks) {
  using L = WgAttnLayout<T, D>;
  constexpr int kNt = kWgAttnKeys / 8, kDt = D / 8;
  constexpr float kLog2e = 1.4426950408889634f;
  int q0 = (int(gridDim.x) - 1 - int(blockIdx.x)) * kWgAttnQueries; // the longest first
  int h = int(blockIdx.y), b = int(blockIdx.z), kvh = h / (hq / hkv);
  int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32), g = lane / 4, t4 = lane % 4;
  // The warpgroup (queries 64 group .. + 63 of the block), broadcast from
  // lane 0 so that ptxas knows it is the same across the warp: from
  // warp / 4 alone it took the tests on it below (busy, pending) as
  // divergent and serialised every wgmma (C7520, on all 16 instances).
  int group = __shfl_sync(0xffffffffu, warp / 4, 0);
  LLMC_DYNAMIC_SHARED(unsigned char, smem);
  T *sq = reinterpret_cast<T *>(smem);
  auto keyTile = [&](int stage) { return reinterpret_cast<T *>(smem + L::kQ + stage * L::kStage); };
  auto valueTile = [&](int stage) { return keyTile(stage) + kWgAttnKeys * D; };

  int p0 = int(*pos);
  int queries = s - q0 < kWgAttnQueries ? s - q0 : kWgAttnQueries;
  int firstPos = p0 + q0, lastPos = firstPos + queries - 1;
  int kEnd = causal ? lastPos + 1 : p0 + s;
  int kStart = firstKey(firstPos, window);
  int tFirst = kStart - kStart % kWgAttnKeys;
  int head = (b * hkv + kvh) * capacity; // the (batch, kv head)'s first cache row
  auto rowsFrom = [&](int t) { return kEnd - t < kWgAttnKeys ? kEnd - t : kWgAttnKeys; };
  // Tile t's keys and values into stage `stage` (one cp.async group).
  auto issue = [&](int stage, int t) {
    coreTile<T, D, kWgAttnKeys>(keyTile(stage), kCache + size_t(head + t) * D, D, rowsFrom(t));
    coreTile<T, D, kWgAttnKeys>(valueTile(stage), vCache + size_t(head + t) * D, D, rowsFrom(t));
    asyncCommit();
  };

  coreTile<T, D, kWgAttnQueries>(
      sq, q + ((size_t(b) * size_t(s) + size_t(q0)) * size_t(hq) + size_t(h)) * D,
      size_t(hq) * D, queries);
  issue(0, tFirst); // (one group with the queries)

  // The warpgroup's queries, and the descriptors of k-step 0: Q (its 64
  // rows) and K K-major, V MN-major (its rows are the product's k).
  int gq0 = 64 * group, gQueries = queries - gq0;
  int gFirst = firstPos + gq0, gLast = firstPos + (gQueries < 64 ? queries : gq0 + 64) - 1;
  const uint64_t qDesc = wg::smemDesc(sq + gq0 * D, L::kAlongRow, L::kRowGroup);

  int wFirst = gFirst + 16 * (warp % 4); // the warp's first query position
  // S and O: wgmma's accumulators of the warp's 16 rows, in mma.sync's
  // m16n8 C layout (AttentionMma.h's fa2 steps); sFlat and oFlat the same
  // registers as wgmma takes them.
  float o[kDt][4], sc[kNt][4], mMax[2], lSum[2];
  auto &sFlat = reinterpret_cast<float(&)[kWgAttnKeys / 2]>(sc);
  auto &oFlat = reinterpret_cast<float(&)[D / 2]>(o);
  LLMC_UNROLL
  for (int j = 0; j < kDt; ++j)
    o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  mMax[0] = mMax[1] = -INFINITY;
  lSum[0] = lSum[1] = 0.0f;
  const float f = kFold ? scale * kLog2e : 1.0f; // the exp2's factor (see the softmax)

  // P of the warpgroup's last tile, whose product with that tile's values
  // (in stage pvStage) is still to be done: it is issued with the next
  // tile's scores.
  unsigned pa[kWgAttnKeys / 16][4] = {};
  bool pending = false;
  int pvStage = 0;
  // O += P V over stage `at`'s values (issued; the caller commits).
  auto issueValues = [&](int at) {
    const uint64_t vDesc = wg::smemDesc(valueTile(at), L::kRowGroup, L::kAlongRow);
    LLMC_UNROLL
    for (int kk = 0; kk < kWgAttnKeys / 16; ++kk)
      wg::mmaRS<D, T, true>(oFlat, pa[kk], wg::advance(vDesc, uint32_t(kk) * 2 * L::kRowGroup),
                            true);
  };
  for (int t = tFirst, stage = 0; t < kEnd;
       t += kWgAttnKeys, stage = (stage + 1) % kWgAttnStages) {
    asyncWait<0>(); // this thread's copies of tile t
    wg::fenceProxyAsync();
    // Tile t is in for every thread, and every warpgroup is done with tile
    // t - 256 (its values' product was waited for in the last trip), whose
    // stage the next tile's copy now takes (it runs while this tile is
    // used; tile t - 128's values are still being read).
    __syncthreads();
    if (t + kWgAttnKeys < kEnd)
      issue((stage + 1) % kWgAttnStages, t + kWgAttnKeys);
    // Warpgroup-uniform (a wgmma is the whole warpgroup's): whether the
    // tile holds keys for the group's queries, and whether some are masked.
    bool busy = gQueries > 0 && !(causal && t > gLast) &&
                t + kWgAttnKeys > firstKey(gFirst, window);
    bool masked = (causal && t + kWgAttnKeys - 1 > gFirst) ||
                  (window > 0 && t < firstKey(gLast, window)) || t + kWgAttnKeys > kEnd;
    wg::fenceOperand(sFlat); // (then the fence: nothing may touch them after it)
    wg::fenceOperand(pa);
    wg::fenceOperand(oFlat);
    wg::fence();
    if (!busy) {
      if (pending) { // (the group's tiles are consecutive: this was its last)
        issueValues(pvStage);
        wg::commit();
        wg::wait<0>();
        wg::fenceOperand(oFlat);
        pending = false;
      }
      continue;
    }
    const uint64_t kDesc = wg::smemDesc(keyTile(stage), L::kAlongRow, L::kRowGroup);
    LLMC_UNROLL
    for (int kk = 0; kk < D / 16; ++kk)
      wg::mmaSS<kWgAttnKeys, T, false>(sFlat, wg::advance(qDesc, uint32_t(kk) * 2 * L::kAlongRow),
                                       wg::advance(kDesc, uint32_t(kk) * 2 * L::kAlongRow),
                                       kk > 0);
    wg::commit();
    // The values' product of the tile before, as a second group: an empty
    // one without it, so that on every path wait<1> is for the scores
    // alone (with the group count path-dependent, ptxas could not tell
    // that the scores were done when the softmax read them, and serialised
    // every wgmma: C7514). The product then runs under the softmax
    // (FlashAttention-3's overlap), which reads and writes S's registers
    // only; O and P wait for it.
    if (pending)
      issueValues(pvStage);
    wg::commit();
    wg::wait<1>();
    wg::fenceOperand(sFlat);
    // Scores into base 2, as AttentionMma.h's (the same steps), and this
    // tile's probabilities in their place.
    if constexpr (!kFold)
      fa2::scaleScores(sc, scale, softcap);
    if (masked)
      fa2::maskScores(sc, t, wFirst + g, t4, causal, window, kEnd);
    float alpha[2];
    fa2::softmaxStep(sc, mMax, lSum, f, alpha);
    // O rescaled once the product into it is done, and P's A fragments,
    // 16 keys a step, once the product has read the last ones.
    wg::wait<0>();
    wg::fenceOperand(pa);
    wg::fenceOperand(oFlat);
    fa2::rescaleRows(o, alpha);
    LLMC_UNROLL
    for (int kk = 0; kk < kWgAttnKeys / 16; ++kk)
      fa2::probabilities<T>(pa[kk], sc, kk);
    pending = true;
    pvStage = stage;
  }
  if (pending) { // the last tile's values
    wg::fenceOperand(pa);
    wg::fenceOperand(oFlat);
    wg::fence();
    issueValues(pvStage);
    wg::commit();
    wg::wait<0>();
    wg::fenceOperand(oFlat);
  }

  fa2::writeRows(o, lSum, mMax, sinks, h, out + size_t(h) * D,
                 size_t(b) * size_t(s) + size_t(q0 + 64 * group + 16 * (warp % 4)),
                 size_t(hq) * D, queries - 64 * group - 16 * (warp % 4), g, t4);
}

template <class T, int D, class Y, bool kFold>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS_MIN(kWgAttnThreads, 1)
    flashAttentionWgmmaKernel(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                              Y *out, int s, int hq, int hkv, int capacity, bool causal,
                              int window, float scale, float softcap, const float *sinks) {
  LLMC_KERNEL_BEGIN();
  if constexpr (!wg::kWgmma)
    __trap(); // not sm_90a code: never launched there (wg::wgmmaBuilt())
  else
    flashAttentionWgmmaBody<T, D, Y, kFold>(q, kCache, vCache, pos, out, s, hq, hkv, capacity,
                                            causal, window, scale, softcap, sinks);
}

/// Launches the wgmma form (the caller checked the arguments and
/// wg::wgmmaBuilt()): the instance that folds the scale into the exp2
/// without a softcap and with a positive scale, else the other.
template <class T, int D, class Y>
std::string flashAttentionWgmma(const T *q, const T *kCache, const T *vCache, const int64_t *pos,
                                Y *out, int b, int s, int hq, int hkv, int capacity, bool causal,
                                int window, float scale, float softcap, Stream stream,
                                const float *sinks = nullptr) {
  if (std::string e = fa2::cacheRowsCheck(b, hkv, capacity); !e.empty())
    return e;
  dim3 grid(ceilDiv(s, kWgAttnQueries), unsigned(hq), unsigned(b));
  auto kernel = fa2::foldsScale(scale, softcap) ? flashAttentionWgmmaKernel<T, D, Y, true>
                                                : flashAttentionWgmmaKernel<T, D, Y, false>;
  return launchWithShared(kernel, grid, dim3(kWgAttnThreads), WgAttnLayout<T, D>::kBytes, stream,
                          q, kCache, vCache, pos, out, s, hq, hkv, capacity, causal, window,
                          scale, softcap, sinks);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTIONWGMMA_H
