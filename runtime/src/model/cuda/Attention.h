//===- Attention.h - flash prefill attention (SIMT) and what the attention
//                   kernels share ------------------------------------===//
//
// Shapes and layouts (T: the queries' type, f32, f16 or bf16; K: the
// caches', T or int8)
//   kCache, vCache  [B, Hkv, C, D] / [B, Hkv, C, Dv], row-major; query head
//                   h reads kv head h / (Hq / Hkv) (MHA, GQA, MQA)
//   kScales,        with int8 caches (llm.quantized_cache_update): [B, Hkv,
//   vScales         C] f32, row j reading as cache row j * its scale; null
//                   for float caches
//   pos             int64 on the device: the first new token's position, so
//                   a captured CUDA graph replays with each step's value
//   prefill q       [B, S, Hq, D] at positions *pos .. *pos + S - 1 over
//                   keys 0 .. *pos + S - 1; out [B, S, Hq, Dv]
//                   (llm.flash_attention).
//   Scores are scale * q.k, then softcap * tanh(s / softcap) when softcap >
//   0; `causal` drops keys after the query, `window` > 0 keys at or before
//   position - window. A query with no key left gives zeros. `sinks` (null,
//   or one f32 logit per query head: llm.attention's attention sinks) add
//   e^(sink - m) to a row's softmax denominator (m the maximum of its
//   scores) and nothing to its values; every attention kernel takes them.
//   The split-KV decode over the same caches is AttentionDecode.h's.
//
// Tiling
//   Keys and values move through shared memory in tiles of kAttnKeys rows
//   (16-byte coalesced loads; rows padded by 16 bytes so the 16-byte reads of
//   eight lanes in a quarter-warp hit distinct banks). Online softmax in f32:
//   a running maximum, sum and value accumulator per query; no more than
//   kAttnKeys scores per query exist at once (never the [S, S] matrix).
//   Prefill: a block per (kAttnQueries queries, head, batch), each warp four
//   queries, lane per key for the scores, a run of channels per lane for
//   the values;
//   tiles wholly outside the causal range or the window are skipped.
//   D * sizeof(K) and Dv * sizeof(K) are multiples of 16. An int8 tile's
//   scales go to shared memory beside it: a score is the int8 row's dot
//   product times the key's scale, a value row's weight p times its scale.
//
//   This is the SIMT form (every architecture and type); prefill over half
//   or bfloat16 queries and caches runs on tensor cores instead
//   (AttentionTensorCore.h). The prefill kernel has no __launch_bounds__
//   (with it ptxas spilled a few bytes in the f32 instances).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ATTENTION_H
#define LLMC_RUNTIME_MODEL_CUDA_ATTENTION_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kAttnKeys = 32;    // keys per tile (one per lane)
constexpr int kAttnThreads = 128; // 4 warps
constexpr int kAttnWarps = kAttnThreads / 32;
constexpr int kAttnQueries = 16; // prefill queries per block
constexpr int kAttnQueriesPerWarp = kAttnQueries / kAttnWarps;

/// Elements of T per padded shared-memory row of n elements.
template <class T> constexpr LLMC_HOST_DEVICE int paddedRow(int n) {
  return n + int(16 / sizeof(T));
}

/// A lane's value channels: kValueRun<Dv> consecutive ones from lane *
/// kValueRun<Dv> (lanes past Dv have none), so that a lane reads its share
/// of a value row in one 4-, 8- or 16-byte load where the run is that wide.
template <int Dv> constexpr int kValueRun = (Dv + 31) / 32;
template <int Dv> LLMC_HOST_DEVICE int valueChannel(unsigned lane, int c) {
  return int(lane) * kValueRun<Dv> + c;
}

/// A lane's run of value channels of a tile row as floats (0 past Dv): one
/// shared load where the run is 4, 8 or 16 bytes and Dv a whole number of
/// runs, else one per value.
template <class T, int Dv>
LLMC_DEVICE void loadValueRun(const T *vrow, unsigned lane, float (&out)[kValueRun<Dv>]) {
  constexpr int N = kValueRun<Dv>, kBytes = N * int(sizeof(T));
  int d0 = valueChannel<Dv>(lane, 0);
  if constexpr ((kBytes == 4 || kBytes == 8 || kBytes == 16) && Dv % N == 0) {
    unsigned words[kBytes / 4] = {};
    if (d0 < Dv)
      loadWords<kBytes>(reinterpret_cast<const uint8_t *>(vrow + d0), words);
    T values[N];
    memcpy(values, words, size_t(kBytes));
    LLMC_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = toFloat(values[i]);
  } else {
    LLMC_UNROLL
    for (int i = 0; i < N; ++i)
      out[i] = d0 + i < Dv ? toFloat(vrow[d0 + i]) : 0.0f;
  }
}

/// softcap * tanh(s / softcap), tanh as 1 - 2 / (2^(2x log2 e) + 1) by
/// ex2.approx and the fast division (each within 2 ulps): within a few
/// ulps of the scores' scale, and no call or branch per score (tanhf's
/// slow path made ptxas spill in the attention kernels; an IEEE division
/// branched around each score).
LLMC_DEVICE float capScore(float s, float softcap) {
  if (softcap <= 0.0f)
    return s;
  constexpr float kTwoLog2e = 2.8853900817779268f; // 2 log2(e)
  return softcap * (1.0f - fastDivide(2.0f, fastExp2(s * (kTwoLog2e / softcap)) + 1.0f));
}

/// Copies rows [row0, row0 + rows) of a [.., C, n] cache slice into a padded
/// shared tile with 16-byte vectors, all threads of the block; the tile's
/// rows [rows, zeroTo) are zeroed (a tensor-core product reads whole
/// tiles, and 0 times stale shared memory could be NaN).
template <class T>
LLMC_DEVICE void loadTile(T *tile, const T *src, int row0, int rows, int n, int zeroTo = 0) {
  constexpr int kVec = int(16 / sizeof(T));
  int vecs = n / kVec, stride = paddedRow<T>(n), total = rows > zeroTo ? rows : zeroTo;
  for (int i = int(threadIdx.x); i < total * vecs; i += int(blockDim.x)) {
    int r = i / vecs, v = i % vecs;
    uint4 value = {0, 0, 0, 0};
    if (r < rows)
      value = *reinterpret_cast<const uint4 *>(src + size_t(row0 + r) * size_t(n) +
                                               size_t(v) * kVec);
    *reinterpret_cast<uint4 *>(tile + r * stride + v * kVec) = value;
  }
}

/// Rows [0, rows) of a [*, D] tile of T at src (row stride `stride`
/// elements) into the padded tile dst [N][paddedRow<T>(D)] by cp.async, by
/// every thread of the block (the caller commits and waits); rows from
/// `rows` to N become zeros. kThreads, when not 0, is the block's size.
template <class T, int D, int N, int kThreads = 0>
LLMC_DEVICE void asyncTile(T *dst, const T *src, size_t stride, int rows) {
  constexpr int kVec = int(16 / sizeof(T)), kChunks = D / kVec;
  if constexpr (kThreads > 0 && kThreads % kChunks == 0) {
    // A thread's chunk is the same in every row it copies: pointers step by
    // whole rows. (Not unrolled: unrolled, the copies' addresses took
    // registers, and the mma.sync attention kernel spilled.)
    constexpr int kRowStep = kThreads / kChunks;
    int r = int(threadIdx.x) / kChunks, c = int(threadIdx.x) % kChunks;
    T *d = dst + r * paddedRow<T>(D) + c * kVec;
    const T *p = src + size_t(r) * stride + size_t(c) * kVec;
    LLMC_NO_UNROLL
    for (; r < N; r += kRowStep, d += kRowStep * paddedRow<T>(D), p += kRowStep * stride)
      asyncCopy16(d, r < rows ? p : src, r < rows);
  } else {
    for (int i = int(threadIdx.x); i < N * kChunks; i += int(blockDim.x)) {
      int r = i / kChunks, c = i % kChunks;
      bool valid = r < rows;
      asyncCopy16(dst + r * paddedRow<T>(D) + c * kVec,
                  src + (valid ? size_t(r) * stride + size_t(c) * kVec : 0), valid);
    }
  }
}

/// q (floats, in shared memory) . row of a padded tile, over D.
template <class T, int D> LLMC_DEVICE float dotRow(const float *q, const T *row) {
  constexpr int kVec = int(16 / sizeof(T));
  float s = 0.0f;
  LLMC_UNROLL
  for (int v = 0; v < D / kVec; ++v) {
    float k[kVec];
    loadFloats(row + v * kVec, k);
    LLMC_UNROLL
    for (int i = 0; i < kVec; ++i)
      s = fmaf(q[v * kVec + i], k[i], s);
  }
  return s;
}

/// acc[c] += sum over the tile's rows j of p_j * v[j][valueChannel(lane,
/// c)], with p_j the probability lane j holds (one key per lane): the value
/// half of the online softmax, a run of value channels per lane.
template <class T, int Dv>
LLMC_DEVICE void addWeightedValues(float (&acc)[kValueRun<Dv>], float p, const T *vt, int rows,
                                   const float *vScales) {
  unsigned lane = threadIdx.x % 32;
  for (int j = 0; j < rows; ++j) {
    float pj = __shfl_sync(kFullMask, p, j);
    if (vScales) // an int8 tile: the row's scale
      pj *= vScales[j];
    float v[kValueRun<Dv>];
    loadValueRun<T, Dv>(vt + j * paddedRow<T>(Dv), lane, v);
    LLMC_UNROLL
    for (int c = 0; c < kValueRun<Dv>; ++c)
      acc[c] = fmaf(pj, v[c], acc[c]);
  }
}

/// A row's softmax denominator with its sink's share: l (the sum of the
/// exps of its scores against their maximum m) + e^(sinks[h] - m); l
/// itself without sinks or for a row with no key (l = 0).
LLMC_DEVICE float withSink(float l, float m, const float *sinks, int h) {
  return sinks && l > 0.0f ? l + expf(sinks[h] - m) : l;
}

/// The same with m in log2 units (the exps are 2^(s log2 e - m)).
LLMC_DEVICE float withSink2(float l, float m, const float *sinks, int h) {
  constexpr float kLog2e = 1.4426950408889634f;
  return sinks && l > 0.0f ? l + exp2f(sinks[h] * kLog2e - m) : l;
}

/// The first key a query at `qpos` may see (the window).
LLMC_DEVICE int firstKey(long long qpos, int window) {
  return window > 0 && qpos - window + 1 > 0 ? int(qpos - window + 1) : 0;
}

/// The scales of a tile's rows (int8 caches) into shared memory, or null.
LLMC_DEVICE const float *loadTileScales(float *tile, const float *scales, int row0, int rows) {
  if (!scales)
    return nullptr;
  for (int i = int(threadIdx.x); i < rows; i += int(blockDim.x))
    tile[i] = scales[row0 + i];
  return tile;
}

template <class K, int D, int Dv> size_t prefillSharedBytes() {
  return sizeof(float) * size_t(kAttnQueries * D + 2 * kAttnKeys) +
         sizeof(K) * size_t(kAttnKeys) * size_t(paddedRow<K>(D) + paddedRow<K>(Dv));
}

template <class T, class K, int D, int Dv, class Y>
LLMC_GLOBAL void
    flashAttentionKernel(const T *q, const K *kCache, const K *vCache, const float *kScales,
                         const float *vScales, const int64_t *pos, Y *out, int s, int hq, int hkv,
                         int capacity, bool causal, int window, float scale, float softcap,
                         const float *sinks) {
  LLMC_KERNEL_BEGIN();
  constexpr int kOut = kValueRun<Dv>; // value channels per lane
  int q0 = int(blockIdx.x) * kAttnQueries, h = int(blockIdx.y), b = int(blockIdx.z);
  int kvh = h / (hq / hkv);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Shared memory: the queries [kAttnQueries][D] and the tile's key and
  // value scales [keys] as floats, then the key and value tiles.
  LLMC_DYNAMIC_SHARED(float, smem);
  float *qs = smem, *kst = qs + kAttnQueries * D, *vst = kst + kAttnKeys;
  K *kt = reinterpret_cast<K *>(vst + kAttnKeys);
  K *vt = kt + kAttnKeys * paddedRow<K>(D);

  long long p0 = *pos;
  int queries = s - q0 < kAttnQueries ? s - q0 : kAttnQueries;
  for (int i = int(threadIdx.x); i < kAttnQueries * D; i += int(blockDim.x)) {
    int qi = i / D, d = i % D;
    qs[i] = qi < queries
                ? toFloat(q[((size_t(b) * size_t(s) + size_t(q0 + qi)) * size_t(hq) + size_t(h)) *
                                D +
                            size_t(d)]) *
                      scale
                : 0.0f;
  }
  long long firstPos = p0 + q0, lastPos = p0 + q0 + queries - 1;
  int kStart = firstKey(firstPos, window);
  int kEnd = causal ? int(lastPos + 1) : int(p0 + s);

  float m[kAttnQueriesPerWarp], l[kAttnQueriesPerWarp], o[kAttnQueriesPerWarp][kOut];
  LLMC_UNROLL
  for (int w = 0; w < kAttnQueriesPerWarp; ++w) {
    m[w] = -INFINITY;
    l[w] = 0.0f;
    LLMC_UNROLL
    for (int c = 0; c < kOut; ++c)
      o[w][c] = 0.0f;
  }
  size_t head = (size_t(b) * size_t(hkv) + size_t(kvh)) * size_t(capacity);
  const K *kBase = kCache + head * D;
  const K *vBase = vCache + head * Dv;
  const float *ksBase = kScales ? kScales + head : nullptr;
  const float *vsBase = vScales ? vScales + head : nullptr;

  for (int t = kStart - kStart % kAttnKeys; t < kEnd; t += kAttnKeys) {
    int rows = kEnd - t < kAttnKeys ? kEnd - t : kAttnKeys;
    __syncthreads();
    loadTile(kt, kBase, t, rows, D);
    loadTile(vt, vBase, t, rows, Dv);
    const float *ksTile = loadTileScales(kst, ksBase, t, rows);
    const float *vsTile = loadTileScales(vst, vsBase, t, rows);
    __syncthreads();
    LLMC_UNROLL
    for (int w = 0; w < kAttnQueriesPerWarp; ++w) {
      int qi = int(warp) * kAttnQueriesPerWarp + w;
      if (qi >= queries)
        break; // warp-uniform
      long long qpos = p0 + q0 + qi;
      int key = t + int(lane);
      bool valid = int(lane) < rows && key >= firstKey(qpos, window) && (!causal || key <= qpos);
      float dot = valid ? dotRow<K, D>(qs + qi * D, kt + int(lane) * paddedRow<K>(D)) : 0.0f;
      if (ksTile && valid)
        dot *= ksTile[lane];
      float sc = valid ? capScore(dot, softcap) : -INFINITY;
      float mNew = fmaxf(m[w], warpMax(sc));
      float p = sc == -INFINITY ? 0.0f : expf(sc - mNew);
      float alpha = m[w] == -INFINITY ? 0.0f : expf(m[w] - mNew);
      l[w] = l[w] * alpha + warpSum(p);
      m[w] = mNew;
      LLMC_UNROLL
      for (int c = 0; c < kOut; ++c)
        o[w][c] *= alpha;
      addWeightedValues<K, Dv>(o[w], p, vt, rows, vsTile);
    }
  }
  LLMC_UNROLL
  for (int w = 0; w < kAttnQueriesPerWarp; ++w) {
    int qi = int(warp) * kAttnQueriesPerWarp + w;
    if (qi >= queries)
      break;
    Y *dst = out + ((size_t(b) * size_t(s) + size_t(q0 + qi)) * size_t(hq) + size_t(h)) * Dv;
    float den = withSink(l[w], m[w], sinks, h);
    LLMC_UNROLL
    for (int c = 0; c < kOut; ++c) {
      int d = valueChannel<Dv>(lane, c);
      if (d < Dv)
        dst[d] = fromFloat<Y>(l[w] > 0.0f ? o[w][c] / den : 0.0f);
    }
  }
}

/// Flash prefill attention in SIMT form (K: the caches' type; with int8
/// caches kScales and vScales are their scales, else null).
/// AttentionTensorCore.h's flashAttention calls it where tensor-core tiles
/// do not apply.
template <class T, class K, int D, int Dv, class Y>
std::string flashAttentionSimt(const T *q, const K *kCache, const K *vCache, const float *kScales,
                           const float *vScales, const int64_t *pos, Y *out, int b, int s, int hq,
                           int hkv, int capacity, bool causal, int window, float scale,
                           float softcap, Stream stream, const float *sinks = nullptr) {
  static_assert(D * sizeof(K) % 16 == 0 && Dv * sizeof(K) % 16 == 0, "16-byte rows");
  if (b < 1 || s < 1 || hq < 1 || hkv < 1 || hq % hkv || capacity < 1 ||
      (sizeof(K) == 1) != (kScales && vScales))
    return "flash attention: invalid arguments";
  size_t bytes = prefillSharedBytes<K, D, Dv>();
  return launchWithShared(flashAttentionKernel<T, K, D, Dv, Y>,
                          dim3(ceilDiv(s, kAttnQueries), unsigned(hq), unsigned(b)),
                          dim3(kAttnThreads), bytes, stream, q, kCache, vCache, kScales, vScales,
                          pos, out, s, hq, hkv, capacity, causal, window, scale, softcap, sinks);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ATTENTION_H
