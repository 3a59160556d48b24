// What the GPU benchmarks of bench/cuda share: a CUDA error stops the
// program with its message; medianMs times a callable with CUDA events (a
// warm-up, then `runs` timed runs, their median in milliseconds; the events on
// `stream`, where f's work goes).
#ifndef LLMC_BENCH_CUDA_TIMING_H
#define LLMC_BENCH_CUDA_TIMING_H

#include <cuda_runtime.h>

#include <algorithm>
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

#endif // LLMC_BENCH_CUDA_TIMING_H
