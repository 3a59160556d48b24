//===- gemm_bench.cpp - the reference CPU MatMul kernel's speed ------------===//
//
// Times llmc's reference f32 GEMM (runtime/src/cpu, gemmF32: packed B
// panels, 4x16 register tiles, the thread pool) on LLM-shaped problems and
// prints GFLOP/s with a ratio to a naive single-thread triple loop.
// bench/cpu/run.sh adds onnxruntime's MatMul on the same shapes.
//
//   llmc-bench-gemm [M,N,K ...]
//
//===----------------------------------------------------------------------===//
#include "bench/cpu/Timing.h"
#include "runtime/src/cpu/ThreadPool.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using llmc::bench::Clock;
using llmc::bench::medianSeconds;

void naive(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s += a[i * k + kk] * b[kk * n + j];
      c[i * n + j] = s;
    }
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::array<int64_t, 3>> shapes;
  for (int i = 1; i < argc; ++i) {
    std::array<int64_t, 3> s{};
    if (std::sscanf(argv[i], "%ld,%ld,%ld", &s[0], &s[1], &s[2]) != 3 || s[0] <= 0 || s[1] <= 0 ||
        s[2] <= 0) {
      std::fprintf(stderr, "llmc-bench-gemm: '%s' is not M,N,K\n", argv[i]);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) // decode GEMV, a small prefill, square
    shapes = {{1, 4096, 4096}, {1, 11008, 4096}, {64, 4096, 4096}, {512, 512, 512}};
  llmc::cpu::ThreadPool &pool = llmc::cpu::ThreadPool::global();
  std::printf("threads: %d\n", int(pool.size()));
  std::printf("%-18s %10s %10s %12s %14s\n", "M,N,K", "ms", "GFLOP/s", "naive GF/s", "llmc / naive");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto [m, n, k] : shapes) {
    std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n)), ref(c.size());
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    double flops = 2.0 * double(m) * double(n) * double(k);
    int reps = std::clamp(int(2e9 / flops), 3, 50);
    double t = medianSeconds(reps, [&] {
      llmc::cpu::gemmF32(pool, m, n, k, a.data(), k, 1, b.data(), n, 1, c.data(), n);
    });
    // The naive loop on a sample of rows, scaled (it is slow).
    int64_t rows = std::min<int64_t>(m, std::max<int64_t>(1, int64_t(2e8 / (2.0 * n * k))));
    double tn = medianSeconds(3, [&] { naive(rows, n, k, a.data(), b.data(), ref.data()); }) *
                double(m) / double(rows);
    double worst = 0;
    for (int64_t i = 0; i < rows * n; ++i)
      worst = std::max(worst, double(std::abs(ref[size_t(i)] - c[size_t(i)])));
    if (worst > 1e-2) {
      std::fprintf(stderr, "llmc-bench-gemm: results differ from the naive loop by %g\n", worst);
      return 1;
    }
    char label[64];
    std::snprintf(label, sizeof label, "%ld,%ld,%ld", long(m), long(n), long(k));
    std::printf("%-18s %10.3f %10.2f %12.2f %14.1f\n", label, t * 1e3, flops / t * 1e-9,
                flops / tn * 1e-9, tn / t);
  }
  return 0;
}
