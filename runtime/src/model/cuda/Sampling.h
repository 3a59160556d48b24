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
//          rounding of a boundary. One block per row, without sorting the
//          whole vocabulary: a pass finds the largest logit; a second sums
//          every weight and counts the tokens (and their weight) above 8
//          rungs of log-weight (-1 .. -18.5 below the largest); the largest
//          rung set of at most kSampleCandidates tokens (a prefix of the
//          order, since weights follow the logits) is gathered into shared
//          memory and sorted (bitonic), and the rule runs on that prefix
//          with a prefix sum. Where the kept tokens or the draw reach past
//          the prefix (a distribution so flat that more than
//          kSampleCandidates tokens lie within e^-1 of the top, or top-k
//          larger than the prefix) the row's id is -1 and the block writes
//          its logits as f32 to leftRows: the caller then samples that row
//          on the host (nothing extra runs for rows the device decides).
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
constexpr int kSampleSums = 2 * kSampleRungs + 3; // rung counts, rung weights, total, min-p, valid

/// Rung j's log-weight threshold below the top token: -1, -2, -3.5, -5.5,
/// -8, -11, -14.5, -18.5.
LLMC_HOST_DEVICE double sampleRung(int j) { return -double(j * j + 3 * j + 4) / 4.0; }

/// Whether candidate (xa, a) comes before (xb, b): the larger logit, ties
/// by the smaller id (the host sampler's order).
LLMC_DEVICE bool sampledBefore(float xa, int a, float xb, int b) {
  return xa > xb || (xa == xb && a < b);
}

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
  LLMC_SHARED(float[32], scratch);
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

  // 1. The largest logit (NaN never counts).
  float most = -INFINITY;
  for (int i = tid; i < vocab; i += threads) {
    float x = pen(toFloat(row[i]), i);
    if (x > most)
      most = x;
  }
  most = warpMax(most);
  if (lane == 0)
    scratch[warp] = most;
  __syncthreads();
  most = scratch[0];
  for (unsigned w = 1; w < warps; ++w)
    most = fmaxf(most, scratch[w]);
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
    if (w >= minWeight)
      acc[2 * kSampleRungs + 1] += w;
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
  const bool topK = prm.topK > 0 && prm.topK < valid;
  const int count = rung == kSampleRungs ? valid : rung >= 0 ? int(sums[rung]) : 0;
  if (rung < 0 || valid == 0 || (topK && count < prm.topK)) {
    leave();
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
    leave(); // the draw lies past the candidates: the host's
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
