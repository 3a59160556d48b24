// Prefill GEMM on a GPU (runtime/src/model/cuda/Gemm.h): C = X W^T for half X [M, K] and
// W [N, K] through llmc's tensor-core kernel (gemm), its SIMT kernel (gemmRows, what half
// used before), and cuBLAS (cublasGemmEx, f32 accumulation) as the device's reference rate,
// three rounds in turns, 20 timed runs each after a warm-up, medians by CUDA events (the
// last round's); checks llmc's result against cuBLAS's (relative L2 error). Random inputs.
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. bench/cuda/gemm_tc.cu -lcublas -o gemm_tc
//   ./gemm_tc [M N K]...
#include "runtime/src/model/cuda/Gemm.h"

#include "bench/cuda/Timing.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using llmc::cuda::half;

int main(int argc, char **argv) {
  std::vector<int> shapes = {512, 2048, 2048, 2048, 8192, 2048, 4096, 4096, 4096};
  if (argc > 1) {
    if ((argc - 1) % 3 != 0)
      return std::fprintf(stderr, "usage: gemm_tc [M N K]...\n"), 2;
    shapes.clear();
    for (int i = 1; i < argc; ++i)
      shapes.push_back(std::atoi(argv[i]));
  }
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, 0), "device");
  std::printf("%s\n| M | N | K | llmc tensor cores | llmc SIMT | cuBLAS | tc / cuBLAS | rel. error vs cuBLAS |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
              p.name);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    return std::fprintf(stderr, "cublasCreate failed\n"), 1;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (size_t s = 0; s + 2 < shapes.size(); s += 3) {
    int m = shapes[s], n = shapes[s + 1], k = shapes[s + 2];
    std::vector<__half> x(size_t(m) * k), w(size_t(n) * k);
    for (auto &v : x)
      v = __float2half(u(rng));
    for (auto &v : w)
      v = __float2half(u(rng) * 0.05f);
    __half *dx, *dw, *dc, *dr;
    check(cudaMalloc(&dx, x.size() * 2), "malloc");
    check(cudaMalloc(&dw, w.size() * 2), "malloc");
    check(cudaMalloc(&dc, size_t(m) * n * 2), "malloc");
    check(cudaMalloc(&dr, size_t(m) * n * 2), "malloc");
    check(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice), "copy");
    check(cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice), "copy");
    auto tc = [&] {
      std::string e = llmc::cuda::gemm<half, half, half>(dx, dw, nullptr, nullptr, dc, m, n, k, 0);
      if (!e.empty())
        std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
    };
    auto simt = [&] {
      std::string e = llmc::cuda::gemmRows(dx, llmc::cuda::DenseRows<half>{dw, k},
                                           static_cast<const half *>(nullptr),
                                           static_cast<const half *>(nullptr), dc, m, n, k, 0);
      if (!e.empty())
        std::fprintf(stderr, "%s\n", e.c_str()), std::exit(1);
    };
    float one = 1, zero = 0;
    // Column-major: C^T [N, M] = (W as K x N col-major)^T . (X as K x M col-major).
    auto blas = [&] {
      if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, dw, CUDA_R_16F, k, dx,
                       CUDA_R_16F, k, &zero, dr, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
        std::fprintf(stderr, "cublasGemmEx failed\n"), std::exit(1);
    };
    float ttc = 0, tsimt = 0, tblas = 0;
    for (int round = 0; round < 3; ++round) {
      ttc = medianMs(tc, 20);
      tsimt = medianMs(simt, 20);
      tblas = medianMs(blas, 20);
    }
    check(cudaMemset(dc, 0xff, size_t(m) * n * 2), "poison"); // NaNs unless all written
    tc();
    blas();
    check(cudaDeviceSynchronize(), "sync");
    std::vector<__half> c(size_t(m) * n), r(c.size());
    check(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost), "copy");
    check(cudaMemcpy(r.data(), dr, r.size() * 2, cudaMemcpyDeviceToHost), "copy");
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      double a = __half2float(c[i]), b = __half2float(r[i]);
      num += (a - b) * (a - b), den += b * b;
    }
    double flop = 2.0 * m * n * k;
    std::printf("| %d | %d | %d | %.1f TFLOP/s | %.1f TFLOP/s | %.1f TFLOP/s | %.0f%% | %.1e |\n",
                m, n, k, flop / ttc / 1e9, flop / tsimt / 1e9, flop / tblas / 1e9,
                100 * tblas / ttc, std::sqrt(num / den));
    cudaFree(dx), cudaFree(dw), cudaFree(dc), cudaFree(dr);
  }
  cublasDestroy(h);
  return 0;
}
