// The decode attention on a GPU (runtime/src/model/cuda/AttentionDecode.h's
// decodeAttentionRope, as the compiled 1B benchmark model launches it: half queries and
// caches, 32 query heads over 8 key-value heads, head_dim 64, the step's ropes and the new
// row's cache writes in the launch, a cache of 4224 rows) at batch 1 and 8 and contexts 128,
// 1024 and 4096: the time per launch and the cache bytes it reads (rows 0 .. pos of every
// sequence's keys and values) over that time, against a streaming read measured in the same
// run. On the fifth H200 run a decode step grew by 0.165 ms from context 128 to 4096 at batch
// 1 and by 0.626 ms at batch 8, whose 1.04 GB of extra cache would take 0.25 ms at the copy
// bandwidth (bench/results/2026-11-30-cuda-decode-h200-5.md): this says how much of a step
// the attention is at each shape and which of its settings matter.
//
// Variants, in turns: the split count the compiler gives (passes/GpuDecodeSplits.h, the
// rule llmc-attention-to-flash applies for the CUDA target), half and twice it, one split
// and chunks of 4 tiles; and at the compiler's count the kernel's run-time settings
// (LLMC_CUDA_DECODE_STAGES=2: one tile ahead; LLMC_CUDA_DECODE_MMA=0: the SIMT tiles;
// LLMC_CUDA_DECODE_PATCH=0: the new rows into their tile through the cache). A
// timed unit is a CUDA graph of 16 launches over 16 layers' own caches, queries and new rows
// (so L2 holds none of a layer's cache at its next use, as in a decode step), launched as the
// runtime launches them (programmatic on sm_90); per launch the graph's median (10 replays)
// over 16, three rounds with the variants in turns, the last printed. Every variant's output
// is compared with the first's (CudaAttentionTest holds the kernel to float64).
//   nvcc -std=c++17 -O3 -arch=sm_90a -I. bench/cuda/decode_attention.cu -o decode_attention
//   ./decode_attention
#include "runtime/src/model/cuda/AttentionDecode.h"

#include "passes/GpuDecodeSplits.h"

#include "bench/cuda/Timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace llmc::cuda;

namespace {

constexpr int kHq = 32, kHkv = 8, kD = 64, kCapacity = 4224, kLayers = 16;

/// The splits a launch keeps busy at context `n` keys (the kernel's rule).
int busySplits(int splits, int n) {
  int chunk = ((n + splits - 1) / splits + kAttnKeys - 1) / kAttnKeys * kAttnKeys;
  return (n + chunk - 1) / chunk;
}

struct Variant {
  std::string name;
  int splits;
  const char *env = nullptr, *value = nullptr; // a setting while the graph is captured
};

} // namespace

int main() {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "device");
  const int kMaxBatch = 8;
  // Per layer: the caches [B, Hkv, C, D], the queries and the new key and
  // value rows (q/k/v as the projection writes them), for the largest batch.
  const size_t cacheElems = size_t(kMaxBatch) * kHkv * kCapacity * kD;
  const size_t qkvElems = size_t(kMaxBatch) * (kHq + 2 * kHkv) * kD;
  half *kCache, *vCache, *qkv, *cosT, *sinT, *out;
  check(cudaMalloc(&kCache, cacheElems * kLayers * 2), "malloc");
  check(cudaMalloc(&vCache, cacheElems * kLayers * 2), "malloc");
  check(cudaMalloc(&qkv, qkvElems * kLayers * 2), "malloc");
  check(cudaMalloc(&cosT, size_t(kCapacity) * kD / 2 * 2), "malloc");
  check(cudaMalloc(&sinT, size_t(kCapacity) * kD / 2 * 2), "malloc");
  check(cudaMalloc(&out, size_t(kMaxBatch) * kHq * kD * 2), "malloc");
  fill<<<1024, 256>>>(reinterpret_cast<__half *>(kCache), cacheElems * kLayers, 1u, 1.0f);
  fill<<<1024, 256>>>(reinterpret_cast<__half *>(vCache), cacheElems * kLayers, 2u, 1.0f);
  fill<<<256, 256>>>(reinterpret_cast<__half *>(qkv), qkvElems * kLayers, 3u, 1.0f);
  fill<<<64, 256>>>(reinterpret_cast<__half *>(cosT), size_t(kCapacity) * kD / 2, 4u, 1.0f);
  fill<<<64, 256>>>(reinterpret_cast<__half *>(sinT), size_t(kCapacity) * kD / 2, 5u, 1.0f);
  const int kMaxSplits = kCapacity / kAttnKeys;
  float *partial, *lse;
  check(cudaMalloc(&partial, size_t(kMaxBatch) * kMaxSplits * kHq * kD * 4), "malloc");
  check(cudaMalloc(&lse, size_t(kMaxBatch) * kMaxSplits * kHq * 4), "malloc");
  unsigned *counters;
  unsigned long long *error;
  int64_t *positions;
  check(cudaMalloc(&counters, kSplitCounters * sizeof(unsigned)), "malloc");
  check(cudaMemset(counters, 0, kSplitCounters * sizeof(unsigned)), "zero");
  check(cudaMalloc(&error, sizeof(unsigned long long)), "malloc");
  check(cudaMemset(error, 0, sizeof(unsigned long long)), "zero");
  check(cudaMalloc(&positions, sizeof(int64_t)), "malloc");
  check(cudaDeviceSynchronize(), "fill");

  double readGbs = streamingReadGbs(kCache, cacheElems * kLayers * 2, prop.multiProcessorCount);
  std::printf("%s: streaming read %.0f GB/s\n\n", prop.name, readGbs);
  std::printf("| batch | context | variant | splits (busy) | us per launch | cache GB/s | share of "
              "the streaming read | max diff. vs the first |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const float scale = 1.0f / std::sqrt(float(kD));
  for (int b : {1, kMaxBatch})
    for (int ctx : {128, 1024, 4096}) {
      // The new row goes to row ctx; keys 0 .. ctx are read.
      int64_t pos = ctx;
      check(cudaMemcpy(positions, &pos, sizeof pos, cudaMemcpyHostToDevice), "position");
      int rule = int(::llmc::gpuDecodeSplits(b * kHkv, kCapacity));
      std::vector<Variant> variants = {{"the compiler's split count", rule}};
      for (int s : {rule / 2, rule * 2, kCapacity / (4 * kAttnKeys), 1})
        if (s >= 1 && s <= kMaxSplits &&
            std::none_of(variants.begin(), variants.end(), [&](const Variant &v) {
              return v.splits == s && !v.env;
            }))
          variants.push_back({"splits " + std::to_string(s), s});
      variants.push_back({"LLMC_CUDA_DECODE_STAGES=2", rule, "LLMC_CUDA_DECODE_STAGES", "2"});
      variants.push_back({"LLMC_CUDA_DECODE_MMA=0", rule, "LLMC_CUDA_DECODE_MMA", "0"});
      variants.push_back({"LLMC_CUDA_DECODE_PATCH=0", rule, "LLMC_CUDA_DECODE_PATCH", "0"});
      std::vector<cudaGraphExec_t> graphs(variants.size());
      std::vector<double> diff(variants.size(), 0.0);
      std::vector<float> first, ms(variants.size());
      for (size_t v = 0; v < variants.size(); ++v) {
        if (variants[v].env)
          setenv(variants[v].env, variants[v].value, 1);
        auto layer = [&](int l) {
          const half *q = qkv + size_t(l) * qkvElems;
          const half *k = q + size_t(b) * kHq * kD, *val = k + size_t(b) * kHkv * kD;
          std::string e = decodeAttentionRope<half, half, kD, kD, half>(
              q, k, val, int64_t(kHkv) * kD, kD, kCache + size_t(l) * cacheElems,
              vCache + size_t(l) * cacheElems, nullptr, nullptr, cosT, sinT, positions, false, 0,
              kCapacity, false, positions, partial, lse, out, counters, b, kHq, kHkv, kCapacity,
              variants[v].splits, 0, scale, 0.0f, error, stream);
          if (!e.empty())
            std::fprintf(stderr, "%s: %s\n", variants[v].name.c_str(), e.c_str()), std::exit(1);
        };
        layer(0);
        check(cudaStreamSynchronize(stream), "attention");
        std::vector<float> got = download(out, size_t(b) * kHq * kD);
        if (v == 0)
          first = got;
        diff[v] = maxAbsDiff(got, first);
        graphs[v] = graphOf(stream, kLayers, layer);
        if (variants[v].env)
          unsetenv(variants[v].env);
      }
      unsigned long long recorded = 0;
      check(cudaMemcpy(&recorded, error, sizeof recorded, cudaMemcpyDeviceToHost), "error");
      if (recorded)
        return std::fprintf(stderr, "the kernel recorded an error (%llx)\n", recorded), 1;
      for (int round = 0; round < 3; ++round)
        for (size_t v = 0; v < variants.size(); ++v)
          ms[v] = medianMs([&] { check(cudaGraphLaunch(graphs[v], stream), "replay"); }, 10,
                           stream);
      // Keys and values of rows 0 .. ctx, every sequence and kv head.
      double bytes = double(b) * kHkv * (ctx + 1) * kD * 2 * 2;
      for (size_t v = 0; v < variants.size(); ++v) {
        double us = ms[v] * 1e3 / kLayers, gbs = bytes / (us / 1e6) / 1e9;
        std::printf("| %d | %d | %s | %d (%d) | %.2f | %.0f | %.1f%% | %.1e |\n", b, ctx,
                    variants[v].name.c_str(), variants[v].splits,
                    busySplits(variants[v].splits, ctx + 1), us, gbs, 100 * gbs / readGbs,
                    diff[v]);
        check(cudaGraphExecDestroy(graphs[v]), "graph");
      }
    }
  return 0;
}
