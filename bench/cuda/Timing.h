// What the GPU benchmarks of bench/cuda share: a CUDA error stops the
// program with its message; medianMs times a callable with CUDA events (a
// warm-up, then `runs` timed runs, their median in milliseconds; the events on
// `stream`, where f's work goes); graphOf captures launches as a graph;
// download copies halves back as floats, maxAbsDiff compares them; fill
// writes pseudo-random halves; readAll is the streaming read the benchmarks
// compare with.
#ifndef LLMC_BENCH_CUDA_TIMING_H
#define LLMC_BENCH_CUDA_TIMING_H

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

static void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

template <class F> static float medianMs(F &&f, int runs, cudaStream_t stream = 0) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  f();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    check(cudaEventRecord(a, stream), "record");
    f();
    check(cudaEventRecord(b, stream), "record");
    check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    t.push_back(ms);
  }
  check(cudaEventDestroy(a), "event");
  check(cudaEventDestroy(b), "event");
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// `launches` calls of once(i) captured on `stream` as one graph.
template <class F> static cudaGraphExec_t graphOf(cudaStream_t stream, int launches, F &&once) {
  cudaGraph_t g;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < launches; ++i)
    once(i);
  check(cudaStreamEndCapture(stream, &g), "capture");
  check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
  check(cudaGraphDestroy(g), "graph");
  return exec;
}

/// n halves at p on the device, as floats.
static std::vector<float> download(const __half *p, size_t n) {
  std::vector<__half> h(n);
  check(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost), "copy");
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i)
    f[i] = __half2float(h[i]);
  return f;
}

/// The largest |got[i] - want[i]|; infinity where got has a NaN.
static double maxAbsDiff(const std::vector<float> &got, const std::vector<float> &want) {
  double diff = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    diff = std::isnan(got[i]) ? INFINITY : std::fmax(diff, std::fabs(got[i] - want[i]));
  return diff;
}

/// p[i] = amplitude * a hash of (i, seed) in [-1, 1).
__global__ void fill(__half *p, size_t n, unsigned seed, float amplitude) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    p[i] = __float2half(amplitude * (float(h & 0xffff) / 32768.0f - 1.0f));
  }
}

/// Reads every 16 bytes of p once (four loads in flight per thread), writes
/// nothing unless the data's XOR is a magic word (never, for random data).
__global__ void readAll(const uint4 *p, size_t n, unsigned *sink) {
  unsigned acc = 0;
  size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
           d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    uint4 a = p[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u)
    *sink = acc;
}

/// The streaming read's rate in GB/s over `bytes` at p (a multiple of 16).
static double streamingReadGbs(const void *p, size_t bytes, int multiprocessors) {
  unsigned *sink;
  check(cudaMalloc(&sink, sizeof(unsigned)), "malloc");
  float ms = medianMs([&] {
    readAll<<<multiprocessors * 8, 256>>>(static_cast<const uint4 *>(p), bytes / 16, sink);
  }, 10);
  check(cudaFree(sink), "free");
  return double(bytes) / (ms / 1e3) / 1e9;
}

#endif // LLMC_BENCH_CUDA_TIMING_H
