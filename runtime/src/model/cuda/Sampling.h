//===- Sampling.h - token choice on the device ----------------------------===//
//
// argmax   logits: rows of V values (f32, or the model's type), row r at
//          r * rowStride (rowStride >= V: e.g. one position of each
//          sequence of [B, S, V] logits), ids int32 [rows]:
//          the first index of the largest value (the runtime's greedy rule;
//          NaN is never chosen unless the row holds nothing else, then 0).
//          One block per row: each thread scans a strided share, then a
//          warp and block reduction of (value, index) pairs. In greedy
//          decoding only these ids cross to the host.
//
// Both take an optional repetition penalty: `penalized` (null: none) holds
// per row (vocab + 31) / 32 words whose bit t % 32 of word t / 32 marks
// token t as already in that sequence, and the penalty is params->penalty;
// a marked logit is divided by it where positive and multiplied by it where
// not, in f32 as the host sampler does (Sampler.h), once, as it is read. A
// row left to the host keeps its logits unpenalised (the host applies the
// penalty from the sequence it holds).
//
// sample   the same rows, params (temperature > 0, top-k, top-p, min-p, as
//          one SampleParams in device memory) and one uniform double in
//          [0, 1) per row: the token the runtime's sampler (Sampler.h)
//          draws with that uniform, by the same rule: the logits in order
//          (largest first, ties by id), exp(x / T - top) weights, the top-k
//          prefix, the top-p prefix of it (weights normalised over it),
//          the min-p prefix, then the first token whose running weight
//          passes u times the kept total. The weights and sums are doubles,
//          as on the host, so a draw differs only where u lands within
//          rounding of a boundary (or a cut, where a cut lies within rounding
//          of a running weight: a top-p of 0.5 over equal weights). One block
//          per row, without sorting the whole vocabulary: a pass finds the
//          largest and the smallest logit; a second sums every weight and
//          counts the tokens (and their weight) above 8 rungs of log-weight
//          (-1 .. -18.5 below the largest); the largest rung set of at most
//          kSampleCandidates tokens (a prefix of the order, since weights
//          follow the logits) is gathered into shared memory and sorted
//          (bitonic), and the rule runs on that prefix with a prefix sum.
//          Where the kept tokens or the draw reach past the prefix (a
//          distribution so flat that more than kSampleCandidates tokens lie
//          within e^-1 of the top, top-k larger than the prefix, a top-p cut
//          or a draw in the tail), the rule runs over the whole row in order
//          without sorting it (RowOrder: each cut and the draw is the first
//          place in the order whose running count or weight reaches a mark,
//          found by passes that count and weigh the tokens in 16 buckets of a
//          range of (logit, id) keys, the range 16 times narrower each pass,
//          then one that finds the id: 3-12 passes a place at vocabularies of
//          5000 and 40000 in the tests, 3 places at most). Only a row of
//          nothing but NaN, or whose largest logit is infinite (its weights
//          NaN), is left to the host: its id is -1 and the block writes its
//          logits as f32 to leftRows, for the caller to sample that row
//          itself.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H
#define LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H

#include "runtime/src/model/cuda/Common.h"

namespace llmc::cuda {

constexpr int kArgmaxThreads = 1024;
constexpr int kArgmaxLoads = 8; // per thread, issued before any is compared

/// Whether (v, i) comes before (best, at) in the greedy order.
LLMC_DEVICE bool takes(float v, int i, float best, int at) {
  return v > best || (v == best && i < at);
}

/// The warp's first largest (best, at), in every lane.
LLMC_DEVICE void warpArgmax(float &best, int &at) {
  LLMC_UNROLL
  for (int o = 16; o > 0; o >>= 1) {
    float v = __shfl_xor_sync(kFullMask, best, o);
    int i = __shfl_xor_sync(kFullMask, at, o);
    if (takes(v, i, best, at))
      best = v, at = i;
  }
}

/// Sampling parameters, as the runtime validates them (Sampler.h).
struct SampleParams {
  float temperature; // > 0 (the sampling kernel); the argmax reads only the penalty
  int32_t topK;      // 0: every token
  float topP;        // (0, 1]
  float minP;        // [0, 1)
  float penalty = 1; // the repetition penalty (> 0) over the marked tokens
};

/// Words of a row of the repetition penalty's marks.
LLMC_HOST_DEVICE int penaltyWords(int vocab) { return (vocab + 31) / 32; }

/// One row's repetition penalty (see the top of this file): logit x of
/// token i as the rule sees it.
struct Penalty {
  const uint32_t *marks = nullptr; // the row's words; null: no penalty
  float by = 1;

  LLMC_DEVICE Penalty(const uint32_t *penalized, const SampleParams *params, int vocab) {
    if (penalized) {
      marks = penalized + size_t(blockIdx.x) * size_t(penaltyWords(vocab));
      by = params->penalty;
    }
  }
  LLMC_DEVICE float operator()(float x, int i) const {
    if (marks && (marks[i >> 5] >> (i & 31) & 1u))
      return x > 0 ? x / by : x * by;
    return x;
  }
};

template <class T>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kArgmaxThreads)
    argmaxKernel(const T *logits, int32_t *ids, int vocab, size_t rowStride,
                 const SampleParams *params, const uint32_t *penalized) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[32], bestValue);
  LLMC_SHARED(int[32], bestIndex);
  const T *row = logits + size_t(blockIdx.x) * rowStride;
  const Penalty pen(penalized, params, vocab);
  float best = -INFINITY;
  int at = vocab; // none yet
  // (A thread's ids in increasing order; its loads kArgmaxLoads at a time:
  // one after another they made a step's argmax 12 us on an H200.)
  int threads = int(blockDim.x);
  for (int base = int(threadIdx.x); base < vocab; base += threads * kArgmaxLoads) {
    float v[kArgmaxLoads];
    LLMC_UNROLL
    for (int j = 0; j < kArgmaxLoads; ++j) {
      int i = base + j * threads;
      v[j] = i < vocab ? pen(toFloat(row[i]), i) : -INFINITY;
    }
    LLMC_UNROLL
    for (int j = 0; j < kArgmaxLoads; ++j) {
      int i = base + j * threads;
      if (i < vocab && takes(v[j], i, best, at))
        best = v[j], at = i;
    }
  }
  warpArgmax(best, at);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    bestValue[warp] = best;
    bestIndex[warp] = at;
  }
  __syncthreads();
  if (warp != 0)
    return;
  best = lane < blockDim.x / 32 ? bestValue[lane] : -INFINITY;
  at = lane < blockDim.x / 32 ? bestIndex[lane] : vocab;
  warpArgmax(best, at);
  if (lane == 0)
    ids[blockIdx.x] = at < vocab ? at : 0;
}

/// The first largest logit of each row; with `penalized` (and `params`,
/// for the penalty) after the repetition penalty.
template <class T>
std::string argmax(const T *logits, int32_t *ids, int rows, int vocab, size_t rowStride,
                   Stream stream, const SampleParams *params = nullptr,
                   const uint32_t *penalized = nullptr) {
  if (rows < 1 || vocab < 1 || rowStride < size_t(vocab) || (penalized && !params))
    return "argmax: invalid arguments";
  return launch(argmaxKernel<T>, dim3(unsigned(rows)), dim3(kArgmaxThreads), 0, stream, logits, ids,
                vocab, rowStride, params, penalized);
}

constexpr int kSampleThreads = 512;
constexpr int kSampleCandidates = 2048; // a power of two, at most 4 * kSampleThreads
constexpr int kSampleRungs = 8;
// rung counts, rung weights, total, min-p set's weight, valid, min-p set's count
constexpr int kSampleSums = 2 * kSampleRungs + 4;

/// Rung j's log-weight threshold below the top token: -1, -2, -3.5, -5.5,
/// -8, -11, -14.5, -18.5.
LLMC_HOST_DEVICE double sampleRung(int j) { return -double(j * j + 3 * j + 4) / 4.0; }

/// Whether candidate (xa, a) comes before (xb, b): the larger logit, ties
/// by the smaller id (the host sampler's order).
LLMC_DEVICE bool sampledBefore(float xa, int a, float xb, int b) {
  return xa > xb || (xa == xb && a < b);
}

/// A token's place in the sampler's order as one integer, ascending keys
/// following the order: the logit's bits turned so that a larger logit has
/// a smaller key (-0 taken as +0, which the host's comparison finds equal),
/// then the id in its low `idBits` bits (ties by the smaller id).
LLMC_DEVICE unsigned long long orderKey(float x, int id, int idBits) {
  unsigned bits = bitsOfFloat(x == 0.0f ? 0.0f : x);
  unsigned up = bits & 0x80000000u ? ~bits : bits | 0x80000000u; // ascending with x
  return static_cast<unsigned long long>(~up) << idBits | unsigned(id);
}

/// The bits that hold the ids of a vocabulary of `vocab` tokens (at least 1).
LLMC_DEVICE int orderIdBits(int vocab) {
  int bits = 1;
  while (bits < 31 && (vocab - 1) >> bits != 0)
    ++bits;
  return bits;
}

/// A place in the sampler's order: the token there (-1: none found), and
/// the count and weight of the tokens up to and with it.
struct OrderPlace {
  int token;
  int count;
  double weight;
};

/// What RowOrder::first looks for: the first place where the running count
/// reaches `count` or the running weight over `over` reaches `at` (passes
/// it, if `strict`).
struct OrderMark {
  int count;
  double over, at;
  bool strict;

  LLMC_DEVICE bool reached(int c, double w) const {
    return c >= count || (strict ? w / over > at : w / over >= at);
  }
};

/// Buckets of keys a pass of RowOrder::first counts and weighs: 4 bits of
/// the key a pass.
constexpr int kOrderBuckets = 16;

/// One row's tokens (the NaN ones left out) in the sampler's order, found
/// without sorting them (the whole block calls first(), with the same
/// mark). `scratch`: shared memory for kSampleThreads / 32 * kOrderBuckets
/// * 2 + 5 doubles.
template <class T> struct RowOrder {
  const T *row;
  int vocab, idBits; // (orderIdBits(vocab))
  Penalty pen;
  float temperature;
  double top; // the weights' exp(x / temperature - top), as the sampling kernel's
  double *scratch;
  float most, least; // the row's largest and smallest logit (NaN left out)

  /// The first place that reaches `mark`. A search over the keys: the
  /// place lies in keys lo .. hi (at first the largest logit's to the
  /// smallest's), after `before` tokens of weight `beforeWeight`; a pass
  /// counts and weighs the tokens of that range in kOrderBuckets buckets of
  /// equal width (a power of two), and the place lies in the first bucket
  /// whose running count and weight reach the mark. It ends at a bucket of
  /// one token (then a pass finds its id): a pass for each 4 bits
  /// of the keys that part the range's tokens, at most 8 + ceil(idBits /
  /// 4) (a row of one value: ceil(idBits / 4)). The weights are summed per thread, warp
  /// and bucket, then in bucket order, always alike (not in the order of
  /// the tokens, as the host sums them: a place differs only where the
  /// mark lies within rounding of a running weight).
  LLMC_DEVICE OrderPlace first(const OrderMark &mark) const {
    const int tid = int(threadIdx.x), threads = int(blockDim.x);
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    double *pick = scratch + warps * kOrderBuckets * 2; // the bucket, its sums, what came before
    unsigned long long lo = orderKey(most, 0, idBits), hi = orderKey(least, vocab - 1, idBits);
    int before = 0;
    double beforeWeight = 0;
    for (;;) {
      int shift = 0;
      while ((hi - lo) >> shift >= unsigned(kOrderBuckets))
        ++shift;
      int count[kOrderBuckets];
      double weight[kOrderBuckets];
      LLMC_UNROLL
      for (int j = 0; j < kOrderBuckets; ++j)
        count[j] = 0, weight[j] = 0;
      for (int i = tid; i < vocab; i += threads) {
        float x = pen(toFloat(row[i]), i);
        if (x != x)
          continue;
        unsigned long long key = orderKey(x, i, idBits);
        if (key < lo || key > hi)
          continue;
        int b = int((key - lo) >> shift);
        double w = exp(double(x) / temperature - top);
        LLMC_UNROLL
        for (int j = 0; j < kOrderBuckets; ++j)
          if (b == j)
            ++count[j], weight[j] += w;
      }
      LLMC_UNROLL
      for (int j = 0; j < kOrderBuckets; ++j) {
        int c = count[j];
        double w = weight[j];
        LLMC_UNROLL
        for (int o = 16; o > 0; o >>= 1) {
          c += __shfl_xor_sync(kFullMask, c, o);
          w += __shfl_xor_sync(kFullMask, w, o);
        }
        if (lane == 0) {
          double *at = scratch + (warp * kOrderBuckets + unsigned(j)) * 2;
          at[0] = c, at[1] = w;
        }
      }
      __syncthreads();
      if (tid == 0) {
        int c = before;
        double w = beforeWeight;
        pick[0] = -1, pick[3] = c, pick[4] = w; // (no token in the range: none to pick)
        for (int j = 0; j < kOrderBuckets; ++j) {
          double cj = 0, wj = 0;
          for (unsigned v = 0; v < warps; ++v) {
            const double *at = scratch + (v * kOrderBuckets + unsigned(j)) * 2;
            cj += at[0], wj += at[1];
          }
          if (cj == 0)
            continue;
          // The first bucket that reaches the mark, else the last one with
          // tokens (the mark lies past them: by the caller's count, never).
          pick[0] = j, pick[1] = cj, pick[2] = wj, pick[3] = c, pick[4] = w;
          if (mark.reached(c + int(cj), w + wj))
            break;
          c += int(cj), w += wj;
        }
      }
      __syncthreads();
      const int j = int(pick[0]), cj = int(pick[1]);
      const double wj = pick[2];
      before = int(pick[3]), beforeWeight = pick[4];
      __syncthreads(); // (the next pass writes scratch)
      if (j < 0)
        return {-1, before, beforeWeight};
      lo += static_cast<unsigned long long>(j) << shift;
      unsigned long long width = (1ull << shift) - 1;
      if (hi - lo > width)
        hi = lo + width;
      if (cj == 1 || shift == 0)
        return {oneIn(lo, hi, pick), before + cj, beforeWeight + wj};
    }
  }

  /// The id of the one token whose key lies in lo .. hi (a pass that
  /// loads the logits and weighs none), through `slot` in shared memory.
  LLMC_DEVICE int oneIn(unsigned long long lo, unsigned long long hi, double *slot) const {
    for (int i = int(threadIdx.x); i < vocab; i += int(blockDim.x)) {
      float x = pen(toFloat(row[i]), i);
      unsigned long long key = orderKey(x, i, idBits);
      if (x == x && key >= lo && key <= hi)
        *slot = i;
    }
    __syncthreads();
    int id = int(*slot);
    __syncthreads();
    return id;
  }
};

template <class T>
LLMC_GLOBAL void LLMC_LAUNCH_BOUNDS(kSampleThreads)
    sampleKernel(const T *logits, int32_t *ids, int vocab, size_t rowStride,
                 const SampleParams *params, const double *uniforms, float *leftRows,
                 const uint32_t *penalized) {
  LLMC_KERNEL_BEGIN();
  LLMC_SHARED(float[kSampleCandidates], cx);
  LLMC_SHARED(int[kSampleCandidates], cid);
  LLMC_SHARED(double[kSampleCandidates], cs); // running weight of the sorted candidates
  LLMC_SHARED(double[kSampleThreads], partial);
  LLMC_SHARED(double[kSampleSums], sums);
  LLMC_SHARED(float[2 * kSampleThreads / 32], scratch);
  LLMC_SHARED(int[4], found); // candidates gathered; first top-p, min-p and drawn indices
  const T *row = logits + size_t(blockIdx.x) * rowStride;
  const SampleParams prm = *params;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const Penalty pen(penalized, params, vocab);
  // A row left to the host: id -1 and its logits as f32 in leftRows,
  // unpenalised (every thread of the block takes part).
  auto leave = [&]() {
    for (int i = tid; i < vocab; i += threads)
      leftRows[size_t(blockIdx.x) * size_t(vocab) + size_t(i)] = toFloat(row[i]);
    if (tid == 0)
      ids[blockIdx.x] = -1;
  };
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;

  // 1. The largest and the smallest logit (NaN never counts).
  float most = -INFINITY, least = INFINITY;
  for (int i = tid; i < vocab; i += threads) {
    float x = pen(toFloat(row[i]), i);
    most = fmaxf(most, x), least = fminf(least, x);
  }
  most = warpMax(most), least = -warpMax(-least);
  if (lane == 0)
    scratch[warp] = most, scratch[warps + warp] = least;
  __syncthreads();
  most = scratch[0], least = scratch[warps];
  for (unsigned w = 1; w < warps; ++w)
    most = fmaxf(most, scratch[w]), least = fminf(least, scratch[warps + w]);
  // The host's top: its float quotient, then a double.
  const double top = double(most / prm.temperature);
  const double topWeight = exp(double(most) / prm.temperature - top);
  const double minWeight = double(prm.minP) * topWeight;
  auto logWeight = [&](float x) { return double(x) / prm.temperature - top; };

  // 2. Every weight's sum; counts and weights above each rung; the min-p
  //    set's weight; the tokens that are numbers.
  double acc[kSampleSums];
  LLMC_UNROLL
  for (int j = 0; j < kSampleSums; ++j)
    acc[j] = 0;
  for (int i = tid; i < vocab; i += threads) {
    float x = pen(toFloat(row[i]), i);
    if (x != x)
      continue;
    double z = logWeight(x), w = exp(z);
    LLMC_UNROLL
    for (int j = 0; j < kSampleRungs; ++j)
      if (z >= sampleRung(j)) {
        acc[j] += 1;
        acc[kSampleRungs + j] += w;
      }
    acc[2 * kSampleRungs] += w;
    if (w >= minWeight) {
      acc[2 * kSampleRungs + 1] += w;
      acc[2 * kSampleRungs + 3] += 1;
    }
    acc[2 * kSampleRungs + 2] += 1;
  }
  LLMC_UNROLL
  for (int j = 0; j < kSampleSums; ++j) {
    double v = acc[j];
    LLMC_UNROLL
    for (int o = 16; o > 0; o >>= 1)
      v += __shfl_xor_sync(kFullMask, v, o);
    if (lane == 0)
      partial[warp * kSampleSums + unsigned(j)] = v;
  }
  __syncthreads();
  if (tid < kSampleSums) {
    double v = 0;
    for (unsigned w = 0; w < warps; ++w)
      v += partial[w * kSampleSums + unsigned(tid)];
    sums[tid] = v;
  }
  __syncthreads();
  const double total = sums[2 * kSampleRungs], minPMass = sums[2 * kSampleRungs + 1];
  const int valid = int(sums[2 * kSampleRungs + 2]);
  const bool topK = prm.topK > 0 && prm.topK < valid;
  // (The top token is always in the min-p set.)
  const int minCount = sums[2 * kSampleRungs + 3] > 1 ? int(sums[2 * kSampleRungs + 3]) : 1;
  if (valid == 0 || !(most > -INFINITY && most < INFINITY)) { // (block-uniform)
    // Nothing but NaN, or an infinite top (every weight NaN): the host's.
    leave();
    return;
  }
  // The rule over the whole row in order, where the candidates below do
  // not hold the cuts or the draw: top-k's place (its weight normalises
  // top-p), top-p's, the min-p set's count, then the draw's (or the last
  // kept token where rounding leaves a sliver), each found by
  // RowOrder::first. Scratch in cs: the candidates' sums are done with.
  auto byOrder = [&]() {
    const RowOrder<T> order{row, vocab, orderIdBits(vocab), pen, prm.temperature, top, cs,
                            most, least};
    const int kept = topK ? prm.topK : valid;
    double keptMass = total;
    bool placed = true;
    if (topK) {
      OrderPlace at = order.first({kept, 1.0, INFINITY, false});
      keptMass = at.weight, placed = at.token >= 0;
    }
    int cut = kept;
    double keptTotal = keptMass;
    if (prm.topP < 1) {
      OrderPlace at = order.first({kept, keptMass, double(prm.topP), false});
      if (at.count < cut)
        cut = at.count, keptTotal = at.weight;
      placed = placed && at.token >= 0;
    }
    if (prm.minP > 0 && minCount < cut)
      cut = minCount, keptTotal = minPMass;
    OrderPlace drawn = order.first({cut, 1.0, uniforms[blockIdx.x] * keptTotal, true});
    if (!placed || drawn.token < 0) // (none: never, by the counts)
      leave();
    else if (tid == 0)
      ids[blockIdx.x] = drawn.token;
  };
  // The largest rung set that fits (every token when they all fit).
  double threshold = 0;
  int rung = -1;
  if (valid <= kSampleCandidates) {
    threshold = -INFINITY, rung = kSampleRungs;
  } else {
    for (int j = kSampleRungs - 1; j >= 0 && rung < 0; --j)
      if (sums[j] <= kSampleCandidates)
        threshold = sampleRung(j), rung = j;
  }
  const int count = rung == kSampleRungs ? valid : rung >= 0 ? int(sums[rung]) : 0;
  if (rung < 0 || (topK && count < prm.topK)) {
    byOrder();
    return;
  }

  // 3. Gather the rung's tokens, then sort them (bitonic, padded to a power
  //    of two with entries that sort last).
  if (tid == 0)
    found[0] = 0;
  __syncthreads();
  for (int i = tid; i < vocab; i += threads) {
    float x = pen(toFloat(row[i]), i);
    if (x == x && logWeight(x) >= threshold) {
      int at = atomicAdd(&found[0], 1);
      cx[at] = x;
      cid[at] = i;
    }
  }
  __syncthreads();
  const int n = found[0];
  int padded = 1;
  while (padded < n)
    padded <<= 1;
  for (int i = n + tid; i < padded; i += threads)
    cx[i] = -INFINITY, cid[i] = 0x7fffffff;
  __syncthreads();
  for (int k = 2; k <= padded; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = tid; i < padded; i += threads) {
        int other = i ^ j;
        if (other <= i)
          continue;
        bool first = (i & k) == 0;
        bool swap = first ? sampledBefore(cx[other], cid[other], cx[i], cid[i])
                          : sampledBefore(cx[i], cid[i], cx[other], cid[other]);
        if (swap) {
          float tx = cx[i];
          cx[i] = cx[other], cx[other] = tx;
          int ti = cid[i];
          cid[i] = cid[other], cid[other] = ti;
        }
      }
      __syncthreads();
    }

  // 4. Running weights: each thread sums up to 4 consecutive candidates,
  //    then a scan of the threads' sums.
  const int per = (n + threads - 1) / threads, begin = tid * per, end = begin + per < n ? begin + per : n;
  double run = 0;
  for (int i = begin; i < end; ++i) {
    run += exp(logWeight(cx[i]));
    cs[i] = run;
  }
  partial[tid] = run;
  __syncthreads();
  for (int o = 1; o < threads; o <<= 1) {
    double add = tid >= o ? partial[tid - o] : 0.0;
    __syncthreads();
    partial[tid] += add;
    __syncthreads();
  }
  const double before = tid > 0 ? partial[tid - 1] : 0.0;
  for (int i = begin; i < end; ++i)
    cs[i] += before;
  if (tid == 0)
    found[1] = found[2] = found[3] = 0x7fffffff;
  __syncthreads();

  // 5. The host's cuts. kept: the top-k prefix; its weight normalises top-p.
  const int kept = topK ? prm.topK : valid;
  const double keptMass = topK ? cs[prm.topK - 1] : total;
  const int within = kept < n ? kept : n;
  for (int i = tid; i < within; i += threads) {
    if (prm.topP < 1 && cs[i] / keptMass >= double(prm.topP))
      atomicMin(&found[1], i + 1); // top-p keeps up to and with i
    if (prm.minP > 0 && i > 0 && exp(logWeight(cx[i])) < minWeight)
      atomicMin(&found[2], i); // min-p keeps the i before it
  }
  __syncthreads();
  // Past the candidates: a cut that none of them made lies beyond them.
  const int beyond = 0x7fffffff;
  int cut = kept;
  for (int c = 1; c <= 2; ++c) {
    bool on = c == 1 ? prm.topP < 1 : prm.minP > 0;
    int at = found[c] != beyond ? found[c] : within < kept ? beyond : kept;
    if (on && at < cut)
      cut = at;
  }
  double keptTotal;
  if (cut <= n)
    keptTotal = cs[cut - 1];
  else if (!topK && prm.topP >= 1) // every token, or the min-p set: summed in pass 2
    keptTotal = prm.minP > 0 ? minPMass : total;
  else
    keptTotal = -1; // the cut lies past the candidates
  const double r = uniforms[blockIdx.x] * keptTotal;
  const int drawable = cut < n ? cut : n;
  if (keptTotal >= 0)
    for (int i = tid; i < drawable; i += threads)
      if (cs[i] > r)
        atomicMin(&found[3], i);
  __syncthreads();
  const int chosen = found[3];
  if (keptTotal < 0 || (chosen == beyond && cut > n))
    byOrder(); // a cut or the draw lies past the candidates
  else if (tid == 0)
    ids[blockIdx.x] = cid[chosen != beyond ? chosen : cut - 1]; // (rounding: the last kept)
}

/// Draws a token per row (see the top of this file); ids[r] = -1 where the
/// host must sample row r instead, with that row's logits as f32 in
/// leftRows[r * vocab ..] (rows the device decides leave it as it was).
template <class T>
std::string sample(const T *logits, int32_t *ids, int rows, int vocab, size_t rowStride,
                   const SampleParams *params, const double *uniforms, float *leftRows,
                   Stream stream, const uint32_t *penalized = nullptr) {
  if (rows < 1 || vocab < 1 || rowStride < size_t(vocab) || !params || !uniforms || !leftRows)
    return "sample: invalid arguments";
  return launch(sampleKernel<T>, dim3(unsigned(rows)), dim3(kSampleThreads), 0, stream, logits,
                ids, vocab, rowStride, params, uniforms, leftRows, penalized);
}

} // namespace llmc::cuda

#endif // LLMC_RUNTIME_MODEL_CUDA_SAMPLING_H
