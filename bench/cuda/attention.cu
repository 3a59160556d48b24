// Prefill attention on a GPU (runtime/src/model/cuda/Attention.h's flashAttention): causal
// self-attention over a prompt of S tokens at position 0, half queries and caches, 32 query
// heads over 8 key-value heads (GQA), head_dim 64 and 128, batch 1; its rate in TFLOP/s
// (4 * D * heads * S(S+1)/2 FLOPs: the two products over the causal half) against the
// device's dense fp16 matrix-product rate measured in the same run (cublasGemmEx, 8192^3,
// f32 accumulation), the issue's target being >= 50% of it at head_dim 128. Medians of 10
// timed runs after a warm-up, by CUDA events, three rounds in turns. Checks 64 random
// output rows against a float64 softmax reference before timing. Random inputs.
// flashAttention takes the mma.sync form (AttentionMma.h), or with LLMC_CUDA_WGMMA=1 in
// code built for sm_90a the wgmma one (AttentionWgmma.h); in sm_90a code the last column
// times the form it does not take (wgmma, or with that setting mma.sync) on the same
// inputs, in turns with flashAttention's.
//   nvcc -std=c++17 -O3 -arch=sm_90a -I. bench/cuda/attention.cu -lcublas -o attention
//   ./attention [S ...]            (default 1024 4096 8192)
#include "runtime/src/model/cuda/AttentionTensorCore.h"

#include "bench/cuda/Timing.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using llmc::cuda::half;

/// The dense fp16 rate (FLOP/s) of cublasGemmEx at 8192^3.
static double denseRate(cublasHandle_t h) {
  const int n = 8192;
  __half *a, *b, *c;
  check(cudaMalloc(&a, size_t(n) * n * 2), "malloc");
  check(cudaMalloc(&b, size_t(n) * n * 2), "malloc");
  check(cudaMalloc(&c, size_t(n) * n * 2), "malloc");
  check(cudaMemset(a, 0x3c, size_t(n) * n * 2), "fill"); // ~1.06 in every half
  check(cudaMemset(b, 0x21, size_t(n) * n * 2), "fill"); // small values: no overflow
  float one = 1, zero = 0;
  float ms = medianMs([&] {
    if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b,
                     CUDA_R_16F, n, &zero, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
      std::fprintf(stderr, "cublasGemmEx failed\n"), std::exit(1);
  }, 10);
  cudaFree(a), cudaFree(b), cudaFree(c);
  return 2.0 * n * n * n / (ms / 1e3);
}

template <int D> static void run(int s, double dense) {
  const int hq = 32, hkv = 8;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<__half> q(size_t(s) * hq * D), k(size_t(hkv) * s * D), v(k.size());
  for (auto *x : {&q, &k, &v})
    for (auto &e : *x)
      e = __float2half(u(rng));
  __half *dq, *dk, *dv, *dout;
  int64_t *dpos;
  check(cudaMalloc(&dq, q.size() * 2), "malloc");
  check(cudaMalloc(&dk, k.size() * 2), "malloc");
  check(cudaMalloc(&dv, v.size() * 2), "malloc");
  check(cudaMalloc(&dout, q.size() * 2), "malloc");
  check(cudaMalloc(&dpos, sizeof(int64_t)), "malloc");
  check(cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(dk, k.data(), k.size() * 2, cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(dv, v.data(), v.size() * 2, cudaMemcpyHostToDevice), "copy");
  check(cudaMemset(dpos, 0, sizeof(int64_t)), "pos");
  check(cudaMemset(dout, 0xff, q.size() * 2), "poison"); // NaNs unless written
  const float scale = 1.0f / std::sqrt(float(D));
  auto attend = [&] {
    std::string e = llmc::cuda::flashAttention<half, half, D, D, half>(
        dq, dk, dv, nullptr, nullptr, dpos, dout, 1, s, hq, hkv, s, true, 0, scale, 0.0f, 0);
    if (!e.empty())
      std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
  };
  // The form flashAttention does not take (wgmma, unless LLMC_CUDA_WGMMA=1),
  // measured beside it in sm_90a code; its output is not checked here, the
  // kernel tests do that.
  const bool other = llmc::cuda::wg::wgmmaBuilt();
  auto attendOther = [&] {
    std::string e = llmc::cuda::wg::wgmmaEnabled()
                        ? llmc::cuda::flashAttentionMma<half, D, half>(
                              dq, dk, dv, dpos, dout, 1, s, hq, hkv, s, true, 0, scale, 0.0f, 0)
                        : llmc::cuda::flashAttentionWgmma<half, D, half>(
                              dq, dk, dv, dpos, dout, 1, s, hq, hkv, s, true, 0, scale, 0.0f, 0);
    if (!e.empty())
      std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
  };
  attend();
  check(cudaDeviceSynchronize(), "attention");
  std::vector<__half> out(q.size());
  check(cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost), "copy");
  // 64 random (query, head) rows against float64.
  double worst = 0;
  for (int r = 0; r < 64; ++r) {
    int i = int(rng() % unsigned(s)), h = int(rng() % unsigned(hq)), g = h / (hq / hkv);
    std::vector<double> w(size_t(i) + 1);
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j <= i; ++j) {
      double d = 0;
      for (int c = 0; c < D; ++c)
        d += double(__half2float(q[(size_t(i) * hq + h) * D + c])) *
             double(__half2float(k[(size_t(g) * s + j) * D + c]));
      w[size_t(j)] = d * scale, mx = std::max(mx, w[size_t(j)]);
    }
    for (double &x : w)
      sum += (x = std::exp(x - mx));
    for (int c = 0; c < D; ++c) {
      double want = 0;
      for (int j = 0; j <= i; ++j)
        want += w[size_t(j)] / sum * double(__half2float(v[(size_t(g) * s + j) * D + c]));
      double got = __half2float(out[(size_t(i) * hq + h) * D + c]);
      worst = std::isnan(got) ? INFINITY : std::max(worst, std::fabs(got - want));
    }
  }
  float ms = 0, otherMs = 0;
  for (int round = 0; round < 3; ++round) {
    ms = medianMs(attend, 10);
    if (other)
      otherMs = medianMs(attendOther, 10);
  }
  double flop = 4.0 * D * hq * (double(s) * (s + 1) / 2);
  char otherRate[32] = "-";
  if (other)
    std::snprintf(otherRate, sizeof otherRate, "%.1f TFLOP/s", flop / (otherMs / 1e3) / 1e12);
  std::printf("| %d | %d | %.3f | %.1f TFLOP/s | %.1f%% | %.1e | %s |\n", D, s, ms,
              flop / (ms / 1e3) / 1e12, 100 * flop / (ms / 1e3) / dense, worst, otherRate);
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dpos);
}

int main(int argc, char **argv) {
  std::vector<int> lengths = {1024, 4096, 8192};
  if (argc > 1) {
    lengths.clear();
    for (int i = 1; i < argc; ++i)
      if (std::atoi(argv[i]) < 1)
        return std::fprintf(stderr, "usage: attention [S ...] (positive lengths)\n"), 2;
      else
        lengths.push_back(std::atoi(argv[i]));
  }
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, 0), "device");
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    return std::fprintf(stderr, "cublasCreate failed\n"), 1;
  double dense = denseRate(h);
  cublasDestroy(h);
  std::printf("%s: dense fp16 matrix product (cuBLAS, 8192^3) %.1f TFLOP/s\n"
              "causal prefill attention, 32 query / 8 key-value heads, batch 1, half; "
              "flashAttention by %s:\n\n"
              "| head_dim | S | ms | llmc flash attention | share of the dense rate | max abs. "
              "error (64 rows vs float64) | the %s form |\n"
              "| --- | --- | --- | --- | --- | --- | --- |\n",
              p.name, dense / 1e12, llmc::cuda::wg::wgmmaEnabled() ? "wgmma" : "mma.sync",
              llmc::cuda::wg::wgmmaEnabled() ? "mma.sync" : "wgmma (LLMC_CUDA_WGMMA=1)");
  for (int s : lengths) {
    run<64>(s, dense);
    run<128>(s, dense);
  }
  return 0;
}
