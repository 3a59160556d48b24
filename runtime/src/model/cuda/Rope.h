//===- Rope.h - rotary position embedding, embedding gather, cache writes -===//
//
// rope       x, y [B, S, N, D] (y may be x): the first R channels of each
//            head rotated by cos/sin [P, R/2] at the token's position, pairs
//            (i, i + R/2), or (2i, 2i + 1) when interleaved; channels R .. D
//            copied. positions int64 [B, S], or [1, S] shared by the batch
//            (positionsPerBatch = 0). One thread per (token, head, pair).
//            A position outside [0, P) records kPositionOutOfRange.
// ropePair   two ropes over the same positions and tables (the queries and
//            the keys of an attention: N may differ) in one launch,
//            blockIdx.y choosing the tensor.
// embedding  table [V, H], ids int64 or int32 [n]: out [n, H]; one block per id,
//            16-byte copies when H allows. An id outside [0, V) records
//            kTokenOutOfRange and writes zeros. With `scale` (one T on the
//            device: Gemma's sqrt(H)), each value times it, rounded to T
//            (the element-wise Mul after the Gather).
// selectRows  x [B, S, H]: out [B, R, H] = rows p .. p + R - 1 of each
//            sequence, p = row0 plus *first when `first` (a position on the
//            device: one captured graph then serves every prompt length), a
//            row past S - 1 read as row S - 1 (a logits chunk's padding:
//            whatever it computes is never stored); one block per output
//            row, 16-byte copies when H allows. The rows a prefill's logits
//            tail runs on (the positions the caller asks for, EmitCuda.cpp).
// cacheWrite cache [B, Hkv, C, D]; update element (b, h, s, d) at
//            update[b * sb + s * ss + h * sh + d] (so [B, S, Hkv, D]
//            projections are read in place); rows *pos .. *pos + S - 1.
//            *pos lives on the device, so a captured graph replays with
//            each step's position. A write past C records kCacheOverflow.
// cacheWritePair  two such writes of one shape (the keys and the values of
//            a layer) in one launch, blockIdx.y choosing the cache.
// ropeCacheWrite  an attention's ropePair and cacheWritePair in one launch:
//            the thread that ropes a key pair writes it into the key cache
//            as well (the keys' update read as [B, S, Hkv, D]), blockIdx.y
//            2 writes the values. With HeadNorms (Qwen 3's and Gemma 3's
//            RMS norms of each query and key head before the rope), a warp
//            a head's row: its squares summed, then each channel
//            normalised, rounded to T and roped.
// cacheWriteInt8  the same into an int8 cache and its scales [B, Hkv, C]
//            (llm.quantized_cache_update): per row, s = max|x| / 127 and
//            q = rint(x / s) in [-127, 127] (round half to even, as
//            cpu::quantizeKvRow), a warp per row.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_ROPE_H
#define LLMC_RUNTIME_MODEL_CUDA_ROPE_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

/// One tensor of a rope launch: x, y [B, S, n, D].
template <class T> struct RopeTensor {
  const T *x;
  T *y;
  int n;
};

/// Where a rope also writes its result (ropeCacheWrite's keys): cache [B,
/// n, C, D] rows *pos + s, or nothing (cache null).
template <class T> struct RopeCacheRows {
  T *cache;
  const int64_t *pos;
  int capacity;
};

/// The cache row that token si of sequence bi, head hi (of n) is also
/// written to: `row` (null without a cache); false, with kCacheOverflow
/// recorded, when it lies past the capacity.
template <class T>
LLMC_DEVICE bool ropeCacheRow(const RopeCacheRows<T> &rows, int bi, int hi, int si, int n, int d,
                              T *&row, unsigned long long *error) {
  row = nullptr;
  if (!rows.cache)
    return true;
  int64_t at = *rows.pos + si;
  if (*rows.pos < 0 || at >= rows.capacity) {
    recordError(error, kCacheOverflow, (long long)at);
    return false;
  }
  row = rows.cache +
        ((size_t(bi) * size_t(n) + size_t(hi)) * size_t(rows.capacity) + size_t(at)) * size_t(d);
  return true;
}

/// A rope pair (a, b) turned by the angle whose cosine and sine are c and
/// sn, rounded to T: (a c - b sn, b c + a sn). Every rope kernel's (and the
/// decode attention's, AttentionDecode.h) one expression for it.
template <class T> LLMC_DEVICE void rotatePair(float a, float b, float c, float sn, T &v1, T &v2) {
  v1 = fromFloat<T>(a * c - b * sn);
  v2 = fromFloat<T>(b * c + a * sn);
}

/// RMS norms of each query head and of each key head before their rope
/// (Qwen 3's and Gemma 3's), done by the kernel that ropes them
/// (ropeCacheWrite's, and the decode attention's: decodeAttentionRope): a
/// head's row x of D channels becomes x / sqrt(mean(x^2) + eps) * (w +
/// offset), f32 inside, rounded to T, as rmsNorm writes it. Null weights:
/// no norms.
template <class T> struct HeadNorms {
  const T *q = nullptr, *k = nullptr; // [D] each
  float qEps = 0.0f, kEps = 0.0f, qOffset = 0.0f, kOffset = 0.0f;
};

/// Channel e of a head's row x, as float: x[e], or with a norm's weight w,
/// x[e] * inv * (w[e] + offset) rounded to T (rmsNormRow's value; inv is
/// the row's 1 / sqrt(mean(x^2) + eps)).
template <class T>
LLMC_DEVICE float headChannel(const T *x, int e, const T *w, float inv, float offset) {
  return w ? toFloat(fromFloat<T>(toFloat(x[e]) * inv * (toFloat(w[e]) + offset))) : toFloat(x[e]);
}

/// 1 / sqrt(mean(x^2) + eps) of a head's row x of d channels, summed by the
/// calling warp (every lane gets it): a head norm's factor (HeadNorms).
template <class T> LLMC_DEVICE float warpRmsInv(const T *x, int d, float eps) {
  float squares = 0.0f;
  for (int e = int(threadIdx.x % 32u); e < d; e += 32) {
    float v = toFloat(x[e]);
    squares = fmaf(v, v, squares);
  }
  return rsqrtf(warpSum(squares) / float(d) + eps);
}

/// Channel e of a row (x(c) its channel c as a float of T) roped as the
/// rope kernel ropes it (channels past r as they are; pairs (i, i + r/2),
/// or (2i, 2i + 1) interleaved) at table row `row` of cosT/sinT [P, r/2]
/// (cos 1, sin 0 when row < 0), as a float of the rounded T.
template <class T, class C, class Read>
LLMC_DEVICE float ropeChannel(Read x, int e, int r, bool interleaved, const C *cosT,
                              const C *sinT, long long row) {
  if (e >= r)
    return x(e);
  int half = r / 2;
  int item = interleaved ? e / 2 : e % half;
  int c1 = interleaved ? 2 * item : item, c2 = interleaved ? 2 * item + 1 : item + half;
  float c = 1.0f, sn = 0.0f;
  if (row >= 0) {
    c = toFloat(cosT[size_t(row) * size_t(half) + size_t(item)]);
    sn = toFloat(sinT[size_t(row) * size_t(half) + size_t(item)]);
  }
  T v1, v2;
  rotatePair(x(c1), x(c2), c, sn, v1, v2);
  return toFloat(e == c1 ? v1 : v2);
}

/// Work item i of a rope over t (one thread per (token, head, pair), then
/// the channels past R, copied), and its cache row when `rows` has one.
template <class T, class C>
LLMC_DEVICE void ropeItem(const RopeTensor<T> &t, RopeCacheRows<T> rows, size_t i, const C *cosT,
                          const C *sinT, const int64_t *positions, int positionsPerBatch, int b,
                          int s, int d, int r, int p, bool interleaved,
                          unsigned long long *error) {
  const T *x = t.x;
  T *y = t.y;
  int n = t.n;
  int half = r / 2, rest = d - r;
  int perHead = half + rest;
  size_t total = size_t(b) * size_t(s) * size_t(n) * size_t(perHead);
  if (i >= total)
    return;
  int item = int(i % size_t(perHead));
  size_t head = i / size_t(perHead); // (batch, token, head) flattened
  size_t token = head / size_t(n);
  size_t rowBase = head * size_t(d);
  int bi = int(token / size_t(s)), si = int(token % size_t(s));
  T *cacheRow = nullptr;
  if (!ropeCacheRow(rows, bi, int(head % size_t(n)), si, n, d, cacheRow, error))
    return;
  if (item >= half) {
    int ch = r + (item - half);
    y[rowBase + size_t(ch)] = x[rowBase + size_t(ch)];
    if (cacheRow)
      cacheRow[ch] = x[rowBase + size_t(ch)];
    return;
  }
  int64_t pos = positions[size_t(positionsPerBatch ? bi : 0) * size_t(s) + size_t(si)];
  if (pos < 0 || pos >= p) {
    recordError(error, kPositionOutOfRange, (long long)token);
    return;
  }
  float c = toFloat(cosT[size_t(pos) * size_t(half) + size_t(item)]);
  float sn = toFloat(sinT[size_t(pos) * size_t(half) + size_t(item)]);
  int c1 = interleaved ? 2 * item : item, c2 = interleaved ? 2 * item + 1 : item + half;
  T v1, v2;
  rotatePair(toFloat(x[rowBase + size_t(c1)]), toFloat(x[rowBase + size_t(c2)]), c, sn, v1, v2);
  y[rowBase + size_t(c1)] = v1;
  y[rowBase + size_t(c2)] = v2;
  if (cacheRow) {
    cacheRow[c1] = v1;
    cacheRow[c2] = v2;
  }
}

template <class T, class C>
LLMC_GLOBAL void ropeKernel(RopeTensor<T> t0, RopeTensor<T> t1, const C *cosT, const C *sinT,
                            const int64_t *positions, int positionsPerBatch, int b, int s, int d,
                            int r, int p, bool interleaved, unsigned long long *error) {
  LLMC_KERNEL_BEGIN();
  ropeItem(blockIdx.y == 0 ? t0 : t1, RopeCacheRows<T>{nullptr, nullptr, 0},
           size_t(blockIdx.x) * blockDim.x + threadIdx.x, cosT, sinT, positions,
           positionsPerBatch, b, s, d, r, p, interleaved, error);
}

/// ropePair's launch; rope's with t1 = t0 and one tensor (grid.y = 1).
template <class T, class C>
std::string launchRope(RopeTensor<T> t0, RopeTensor<T> t1, int tensors, const C *cosT,
                       const C *sinT, const int64_t *positions, bool positionsPerBatch, int b,
                       int s, int d, int r, int p, bool interleaved, unsigned long long *error,
                       Stream stream) {
  if (r == 0)
    r = d;
  if (b < 1 || s < 1 || t0.n < 1 || t1.n < 1 || d < 1 || r % 2 || r > d || p < 1)
    return "rope: invalid arguments";
  int n = t0.n > t1.n ? t0.n : t1.n;
  size_t total = size_t(b) * size_t(s) * size_t(n) * size_t(r / 2 + d - r);
  return launch(ropeKernel<T, C>, dim3(ceilDiv(total, 256), unsigned(tensors)), dim3(256), 0,
                stream, t0, t1, cosT, sinT, positions, positionsPerBatch ? 1 : 0, b, s, d, r, p,
                interleaved, error);
}

template <class T, class C>
std::string rope(const T *x, T *y, const C *cosT, const C *sinT, const int64_t *positions,
                 bool positionsPerBatch, int b, int s, int n, int d, int r, int p,
                 bool interleaved, unsigned long long *error, Stream stream) {
  RopeTensor<T> t{x, y, n};
  return launchRope(t, t, 1, cosT, sinT, positions, positionsPerBatch, b, s, d, r, p,
                    interleaved, error, stream);
}

/// rope over x0 -> y0 [B, S, n0, D] and x1 -> y1 [B, S, n1, D] (the same
/// positions and tables), one launch.
template <class T, class C>
std::string ropePair(const T *x0, T *y0, int n0, const T *x1, T *y1, int n1, const C *cosT,
                     const C *sinT, const int64_t *positions, bool positionsPerBatch, int b, int s,
                     int d, int r, int p, bool interleaved, unsigned long long *error,
                     Stream stream) {
  return launchRope(RopeTensor<T>{x0, y0, n0}, RopeTensor<T>{x1, y1, n1}, 2, cosT, sinT,
                    positions, positionsPerBatch, b, s, d, r, p, interleaved, error, stream);
}

template <class T, class I>
LLMC_GLOBAL void embeddingKernel(const T *table, const I *ids, T *out, int64_t vocab, int h,
                                 unsigned long long *error, const T *scale) {
  LLMC_KERNEL_BEGIN();
  int64_t id = ids[blockIdx.x];
  T *dst = out + size_t(blockIdx.x) * size_t(h);
  bool valid = id >= 0 && id < vocab;
  if (!valid && threadIdx.x == 0)
    recordError(error, kTokenOutOfRange, (long long)blockIdx.x);
  const T *src = table + size_t(valid ? id : 0) * size_t(h);
  constexpr int kVec = int(16 / sizeof(T));
  if (valid && h % kVec == 0) {
    const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
    uint4 *d4 = reinterpret_cast<uint4 *>(dst);
    float sc = scale ? toFloat(*scale) : 1.0f;
    for (int i = int(threadIdx.x); i < h / kVec; i += int(blockDim.x)) {
      uint4 v = s4[i];
      if (scale) {
        T *e = reinterpret_cast<T *>(&v);
        LLMC_UNROLL
        for (int j = 0; j < kVec; ++j)
          e[j] = fromFloat<T>(toFloat(e[j]) * sc);
      }
      d4[i] = v;
    }
    return;
  }
  for (int i = int(threadIdx.x); i < h; i += int(blockDim.x))
    dst[i] = !valid  ? fromFloat<T>(0.0f)
             : scale ? fromFloat<T>(toFloat(src[i]) * toFloat(*scale))
                     : src[i];
}

/// Gathers n rows of the table by id (`scale`: each value times *scale,
/// rounded to T, or null).
template <class T, class I>
std::string embedding(const T *table, const I *ids, T *out, int n, int64_t vocab, int h,
                      unsigned long long *error, Stream stream, const T *scale = nullptr) {
  if (n < 1 || h < 1 || vocab < 1)
    return "embedding: invalid arguments";
  return launch(embeddingKernel<T, I>, dim3(unsigned(n)), dim3(128), 0, stream, table, ids, out,
                vocab, h, error, scale);
}

template <class T>
LLMC_GLOBAL void selectRowsKernel(const T *x, T *out, int s, int h, const int64_t *first,
                                  int64_t row0, int r) {
  LLMC_KERNEL_BEGIN();
  int b = int(blockIdx.x) / r, i = int(blockIdx.x) % r;
  int64_t row = (first ? *first : 0) + row0 + i;
  row = row < 0 ? 0 : row < s ? row : s - 1;
  const T *src = x + (size_t(b) * size_t(s) + size_t(row)) * size_t(h);
  T *dst = out + size_t(blockIdx.x) * size_t(h);
  constexpr int kVec = int(16 / sizeof(T));
  if (h % kVec == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) % 16 == 0) {
    const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
    uint4 *d4 = reinterpret_cast<uint4 *>(dst);
    for (int j = int(threadIdx.x); j < h / kVec; j += int(blockDim.x))
      d4[j] = s4[j];
    return;
  }
  for (int j = int(threadIdx.x); j < h; j += int(blockDim.x))
    dst[j] = src[j];
}

/// Rows p .. p + r - 1 of each of the b sequences of x [b, s, h] into out
/// [b, r, h], p = row0 (+ *first, read on the device, when `first` is not
/// null); past s - 1: row s - 1.
template <class T>
std::string selectRows(const T *x, T *out, int b, int s, int h, const int64_t *first,
                       int64_t row0, int r, Stream stream) {
  if (b < 1 || s < 1 || h < 1 || r < 1 || row0 < 0 || (!first && row0 >= s))
    return "selectRows: invalid arguments";
  return launch(selectRowsKernel<T>, dim3(unsigned(b * r)), dim3(128), 0, stream, x, out, s, h,
                first, row0, r);
}

/// One cache of a cacheWrite launch and where its update's elements are.
template <class T, class U> struct CacheUpdate {
  T *cache;
  const U *update;
  int64_t sb, ss, sh;
};

/// Element i of a cache write (one thread per element of the update).
template <class T, class U>
LLMC_DEVICE void cacheWriteItem(const CacheUpdate<T, U> &u, size_t i, const int64_t *pos, int b,
                                int hkv, int capacity, int s, int d, unsigned long long *error) {
  T *cache = u.cache;
  const U *update = u.update;
  int64_t sb = u.sb, ss = u.ss, sh = u.sh;
  size_t total = size_t(b) * size_t(hkv) * size_t(s) * size_t(d);
  if (i >= total)
    return;
  int di = int(i % size_t(d));
  size_t rest = i / size_t(d);
  int si = int(rest % size_t(s));
  rest /= size_t(s);
  int hi = int(rest % size_t(hkv));
  int bi = int(rest / size_t(hkv));
  int64_t row = *pos + si;
  if (*pos < 0 || row >= capacity) {
    recordError(error, kCacheOverflow, (long long)row);
    return;
  }
  T v = fromFloat<T>(toFloat(update[bi * sb + si * ss + hi * sh + di]));
  cache[((size_t(bi) * size_t(hkv) + size_t(hi)) * size_t(capacity) + size_t(row)) * size_t(d) +
        size_t(di)] = v;
}

template <class T, class U>
LLMC_GLOBAL void cacheWriteKernel(CacheUpdate<T, U> u0, CacheUpdate<T, U> u1, const int64_t *pos,
                                  int b, int hkv, int capacity, int s, int d,
                                  unsigned long long *error) {
  LLMC_KERNEL_BEGIN();
  cacheWriteItem(blockIdx.y == 0 ? u0 : u1, size_t(blockIdx.x) * blockDim.x + threadIdx.x, pos, b,
                 hkv, capacity, s, d, error);
}

/// cacheWritePair's launch; cacheWrite's with u1 = u0 and one cache.
template <class T, class U>
std::string launchCacheWrite(CacheUpdate<T, U> u0, CacheUpdate<T, U> u1, int caches,
                             const int64_t *pos, int b, int hkv, int capacity, int s, int d,
                             unsigned long long *error, Stream stream) {
  if (b < 1 || hkv < 1 || capacity < 1 || s < 1 || d < 1)
    return "cache write: invalid arguments";
  size_t total = size_t(b) * size_t(hkv) * size_t(s) * size_t(d);
  return launch(cacheWriteKernel<T, U>, dim3(ceilDiv(total, 256), unsigned(caches)), dim3(256), 0,
                stream, u0, u1, pos, b, hkv, capacity, s, d, error);
}

template <class T, class U>
std::string cacheWrite(T *cache, const U *update, const int64_t *pos, int b, int hkv, int capacity,
                       int s, int d, int64_t sb, int64_t ss, int64_t sh,
                       unsigned long long *error, Stream stream) {
  CacheUpdate<T, U> u{cache, update, sb, ss, sh};
  return launchCacheWrite(u, u, 1, pos, b, hkv, capacity, s, d, error, stream);
}

/// Two cache writes of one shape (keys and values), one launch: update0
/// into cache0 and update1 into cache1, each read at its own strides.
template <class T, class U>
std::string cacheWritePair(T *cache0, const U *update0, int64_t sb0, int64_t ss0, int64_t sh0,
                           T *cache1, const U *update1, int64_t sb1, int64_t ss1, int64_t sh1,
                           const int64_t *pos, int b, int hkv, int capacity, int s, int d,
                           unsigned long long *error, Stream stream) {
  return launchCacheWrite(CacheUpdate<T, U>{cache0, update0, sb0, ss0, sh0},
                          CacheUpdate<T, U>{cache1, update1, sb1, ss1, sh1}, 2, pos, b, hkv,
                          capacity, s, d, error, stream);
}

template <class T, class C>
LLMC_GLOBAL void ropeCacheWriteKernel(RopeTensor<T> queries, RopeTensor<T> keys, T *kCache,
                                      CacheUpdate<T, T> values, const C *cosT, const C *sinT,
                                      const int64_t *positions, int positionsPerBatch,
                                      const int64_t *pos, int b, int s, int d, int r, int p,
                                      bool interleaved, int capacity, unsigned long long *error) {
  LLMC_KERNEL_BEGIN();
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (blockIdx.y == 2)
    cacheWriteItem(values, i, pos, b, keys.n, capacity, s, d, error);
  else
    ropeItem(blockIdx.y == 0 ? queries : keys,
             RopeCacheRows<T>{blockIdx.y == 0 ? nullptr : kCache, pos, capacity}, i, cosT, sinT,
             positions, positionsPerBatch, b, s, d, r, p, interleaved, error);
}

/// A rope of a tensor's rows after their RMS norm (HeadNorms), a warp a
/// row (one (token, head) of t, D channels): the warp sums the row's
/// squares, then each lane writes its channels normalised (rounded to T)
/// and roped, as rmsNorm and rope one after the other; with `rows`, into
/// the key cache as well. w null: the rope alone.
template <class T, class C>
LLMC_DEVICE void normRopeRow(const RopeTensor<T> &t, RopeCacheRows<T> rows, size_t row,
                             const T *w, float eps, float offset, const C *cosT, const C *sinT,
                             const int64_t *positions, int positionsPerBatch, int b, int s, int d,
                             int r, int p, bool interleaved, unsigned long long *error) {
  int lane = int(threadIdx.x % 32u);
  if (row >= size_t(b) * size_t(s) * size_t(t.n))
    return; // (warp-uniform)
  const T *x = t.x + row * size_t(d);
  float inv = w ? warpRmsInv(x, d, eps) : 0.0f;
  size_t token = row / size_t(t.n);
  int bi = int(token / size_t(s)), si = int(token % size_t(s));
  int64_t pos = positions[size_t(positionsPerBatch ? bi : 0) * size_t(s) + size_t(si)];
  if (pos < 0 || pos >= p) {
    if (lane == 0)
      recordError(error, kPositionOutOfRange, (long long)token);
    return;
  }
  T *cacheRow = nullptr;
  if (!ropeCacheRow(rows, bi, int(row % size_t(t.n)), si, t.n, d, cacheRow, error))
    return;
  auto in = [&](int e) { return headChannel(x, e, w, inv, offset); };
  for (int e = lane; e < d; e += 32) {
    T v = fromFloat<T>(ropeChannel<T>(in, e, r, interleaved, cosT, sinT, (long long)pos));
    t.y[row * size_t(d) + size_t(e)] = v;
    if (cacheRow)
      cacheRow[e] = v;
  }
}

template <class T, class C>
LLMC_GLOBAL void normRopeCacheWriteKernel(RopeTensor<T> queries, RopeTensor<T> keys, T *kCache,
                                          CacheUpdate<T, T> values, HeadNorms<T> norms,
                                          const C *cosT, const C *sinT, const int64_t *positions,
                                          int positionsPerBatch, const int64_t *pos, int b, int s,
                                          int d, int r, int p, bool interleaved, int capacity,
                                          unsigned long long *error) {
  LLMC_KERNEL_BEGIN();
  if (blockIdx.y == 2) {
    cacheWriteItem(values, size_t(blockIdx.x) * blockDim.x + threadIdx.x, pos, b, keys.n,
                   capacity, s, d, error);
    return;
  }
  bool k = blockIdx.y == 1;
  normRopeRow(k ? keys : queries, RopeCacheRows<T>{k ? kCache : nullptr, pos, capacity},
              size_t(blockIdx.x) * (blockDim.x / 32u) + threadIdx.x / 32u, k ? norms.k : norms.q,
              k ? norms.kEps : norms.qEps, k ? norms.kOffset : norms.qOffset, cosT, sinT,
              positions, positionsPerBatch, b, s, d, r, p, interleaved, error);
}

/// An attention's ropes and cache writes in one launch: rope over the
/// queries xq -> yq [B, S, nq, D] and the keys xk -> yk [B, S, nkv, D] (as
/// ropePair), the roped keys also into kCache [B, nkv, C, D] at rows *pos ..
/// *pos + S - 1, and the values into vCache as cacheWrite (read at their
/// strides); blockIdx.y 0, 1, 2. With `norms` (both weights), each query
/// and key head's RMS norm before its rope in the same launch, a warp a
/// head's row (normRopeCacheWriteKernel: Qwen 3's and Gemma 3's head norms
/// in a prefill).
template <class T, class C>
std::string ropeCacheWrite(const T *xq, T *yq, int nq, const T *xk, T *yk, int nkv, T *kCache,
                           T *vCache, const T *values, int64_t vsb, int64_t vss, int64_t vsh,
                           const C *cosT, const C *sinT, const int64_t *positions,
                           bool positionsPerBatch, const int64_t *pos, int b, int s, int d, int r,
                           int p, bool interleaved, int capacity, unsigned long long *error,
                           Stream stream, HeadNorms<T> norms = {}) {
  if (r == 0)
    r = d;
  if (b < 1 || s < 1 || nq < 1 || nkv < 1 || d < 1 || r % 2 || r > d || p < 1 || capacity < 1 ||
      (!norms.q != !norms.k))
    return "rope and cache write: invalid arguments";
  size_t writes = size_t(b) * size_t(nkv) * size_t(s) * size_t(d);
  if (norms.q) {
    constexpr unsigned kRows = 8; // a warp a row, 256 threads
    size_t rows = size_t(b) * size_t(s) * size_t(nq > nkv ? nq : nkv);
    size_t blocks = ceilDiv(rows, kRows) > ceilDiv(writes, 256) ? ceilDiv(rows, kRows)
                                                                 : ceilDiv(writes, 256);
    return launch(normRopeCacheWriteKernel<T, C>, dim3(unsigned(blocks), 3), dim3(32 * kRows), 0,
                  stream, RopeTensor<T>{xq, yq, nq}, RopeTensor<T>{xk, yk, nkv}, kCache,
                  CacheUpdate<T, T>{vCache, values, vsb, vss, vsh}, norms, cosT, sinT, positions,
                  positionsPerBatch ? 1 : 0, pos, b, s, d, r, p, interleaved, capacity, error);
  }
  size_t ropes = size_t(b) * size_t(s) * size_t(nq > nkv ? nq : nkv) * size_t(r / 2 + d - r);
  return launch(ropeCacheWriteKernel<T, C>, dim3(ceilDiv(ropes > writes ? ropes : writes, 256), 3),
                dim3(256), 0, stream, RopeTensor<T>{xq, yq, nq}, RopeTensor<T>{xk, yk, nkv}, kCache,
                CacheUpdate<T, T>{vCache, values, vsb, vss, vsh}, cosT, sinT, positions,
                positionsPerBatch ? 1 : 0, pos, b, s, d, r, p, interleaved, capacity, error);
}

/// A row of n values (value(c), by the calling warp) into an int8 cache
/// row and its scale, as cpu::quantizeKvRow: s = max|x| / 127, q = rint(x /
/// s) in [-127, 127] (round half to even).
template <class F>
LLMC_DEVICE void warpQuantizeRow(const F &value, int n, int8_t *dst, float *scale) {
  unsigned lane = threadIdx.x % 32;
  float amax = 0.0f;
  for (int c = int(lane); c < n; c += 32)
    amax = fmaxf(amax, fabsf(value(c)));
  amax = warpMax(amax);
  float s = amax / 127.0f;
  for (int c = int(lane); c < n; c += 32) {
    float q = s > 0.0f ? rintf(value(c) / s) : 0.0f;
    dst[c] = int8_t(fminf(fmaxf(q, -127.0f), 127.0f));
  }
  if (lane == 0)
    *scale = s;
}

template <class U>
LLMC_GLOBAL void cacheWriteInt8Kernel(int8_t *cache, float *scales, const U *update,
                                      const int64_t *pos, int b, int hkv, int capacity, int s,
                                      int d, int64_t sb, int64_t ss, int64_t sh,
                                      unsigned long long *error) {
  LLMC_KERNEL_BEGIN();
  unsigned lane = threadIdx.x % 32;
  size_t r = size_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; // (b, h, s), per warp
  if (r >= size_t(b) * size_t(hkv) * size_t(s))
    return; // warp-uniform
  int si = int(r % size_t(s));
  size_t rest = r / size_t(s);
  int hi = int(rest % size_t(hkv)), bi = int(rest / size_t(hkv));
  int64_t row = *pos + si;
  if (*pos < 0 || row >= capacity) { // warp-uniform
    if (lane == 0)
      recordError(error, kCacheOverflow, (long long)row);
    return;
  }
  const U *src = update + bi * sb + si * ss + hi * sh;
  size_t at = (size_t(bi) * size_t(hkv) + size_t(hi)) * size_t(capacity) + size_t(row);
  warpQuantizeRow([&](int c) { return toFloat(src[c]); }, d, cache + at * size_t(d), scales + at);
}

template <class U>
std::string cacheWriteInt8(int8_t *cache, float *scales, const U *update, const int64_t *pos,
                           int b, int hkv, int capacity, int s, int d, int64_t sb, int64_t ss,
                           int64_t sh, unsigned long long *error, Stream stream) {
  if (b < 1 || hkv < 1 || capacity < 1 || s < 1 || d < 1)
    return "cache write: invalid arguments";
  size_t rows = size_t(b) * size_t(hkv) * size_t(s);
  return launch(cacheWriteInt8Kernel<U>, dim3(ceilDiv(rows, 4)), dim3(128), 0, stream, cache,
                scales, update, pos, b, hkv, capacity, s, d, sb, ss, sh, error);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_ROPE_H
