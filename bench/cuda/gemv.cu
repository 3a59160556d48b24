// Decode GEMVs on a GPU (runtime/src/model/cuda/Gemv.h) at the layer shapes of the 1B
// benchmark model (hidden 2048, 32/8 heads, MLP 8192, vocab 32000; half weights and
// activations), batch 1, 2, 4 and 8: each form's time per launch and read bandwidth,
// against two ceilings measured in the same run: a device-to-device copy (bytes read plus
// written, as bench/cuda/device_peaks.py) and a plain streaming read (every byte of a 1 GiB
// buffer read once by 16-byte loads, nothing written).
//
// A timed unit is a CUDA graph of 64 launches of one layer over distinct copies of its
// weights (a 1 GiB pool, so the 50-60 MB L2 holds none of a copy at its next use, as in a
// decode step where every layer reads its own weights), launched as the runtime launches
// them (programmatic on sm_90: each launch's ramp overlaps the tail of the one before). Per
// launch: the graph's median time (10 replays after a warm-up, CUDA events) over 64, three
// rounds with the variants in turns, the last round printed. Each variant's output is
// compared with the first variant's (the kernel tests hold them all to float64).
//   nvcc -std=c++17 -O3 -arch=sm_90 -I. bench/cuda/gemv.cu -o gemv && ./gemv [ROWS...]
// (ROWS: the batch sizes to time, 1 2 4 8 by default.)
// Variants: Gemv.h's SIMT form (one column a warp), which the runtime runs below
// kTcGemvMinRows rows, and the tensor-core form (GemvTensorCore.h), which it runs from there;
// each with the compiler's split count (gemvSplits) and with 2x and 4x as many (is its rule,
// two waves of blocks, right?). (Other SIMT tilings, 2 and 4 columns a warp and 8 loads in
// flight, lost on an H200: bench/results/2026-11-27-cuda-decode-h200-4.md.)
// Then the quantized GEMVs (QuantGemv.h's launchQgemv, as the runtime launches them) at the
// same shapes over the weights `llmc compile --quant` writes (int4 in groups of 32, int8 per
// output channel; f32 scales, no zero points), their bandwidth counting the 4- or 8-bit
// values and the scales read, and their output against the float GEMV's over the same
// weights dequantized (dequantRows): each in both forms, the tensor-core one (the
// runtime's from kQuantTcMinRows rows) and the SIMT one (LLMC_CUDA_QGEMV_TC_ROWS=9 while its
// graph is captured), timed in turns. (An older runtime without that switch: the row its
// launchQgemv picks, twice.)
// scripts/ab-kernels.sh's BENCH=here builds this file against an earlier runtime too.
#include "runtime/src/model/cuda/QuantGemv.h"

#include "bench/cuda/Timing.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace llmc::cuda;

namespace {

struct Shape {
  const char *name;
  int n, k;
  GemvIn in; // what the compiler folds in (SwiGLU: where its rows fit shared memory)
  bool residual;
};
const Shape kShapes[] = {
    {"q/k/v (rms_norm folded in)", 3072, 2048, GemvIn::RmsNorm, false},
    {"o (+ residual)", 2048, 2048, GemvIn::Plain, true},
    {"gate/up (rms_norm folded in)", 16384, 2048, GemvIn::RmsNorm, false},
    {"down (SwiGLU folded in at 1-2 rows, + residual)", 2048, 8192, GemvIn::Swiglu, true},
    {"down (+ residual; the SwiGLU a kernel before it)", 2048, 8192, GemvIn::Plain, true},
    {"lm_head (rms_norm folded in)", 32000, 2048, GemvIn::RmsNorm, false},
};

/// One launch of a form: Gemv.h's SIMT form (one column a warp) or, with
/// TC, GemvTensorCore.h's (mma.sync over the rows of x); rms_norm (norm) or
/// SwiGLU (x the gate, up) folded in as IN says.
template <bool TC, GemvIn IN>
std::string launchForm(const half *x, const half *up, const half *norm, const half *w,
                       const half *res, half *y, float *partial, unsigned *counters, int m, int n,
                       int k, int splits, cudaStream_t s) {
  GemvPrologue<half, half> pro;
  if (IN == GemvIn::RmsNorm)
    pro.norm = norm, pro.eps = 1e-5f;
  if (IN == GemvIn::Swiglu)
    pro.up = up;
  const half *bias = nullptr;
  if constexpr (TC)
    return launchGemvTc<IN>(x, pro, w, bias, res, y, partial, counters, m, n, k, splits, s);
  else
    return launchGemvSimt<IN>(x, pro, w, bias, res, y, partial, counters, m, n, k, splits, s);
}

template <bool TC> auto formOf(GemvIn in) {
  return in == GemvIn::Plain     ? launchForm<TC, GemvIn::Plain>
         : in == GemvIn::RmsNorm ? launchForm<TC, GemvIn::RmsNorm>
                                 : launchForm<TC, GemvIn::Swiglu>;
}

/// One launch of launchQgemv (BITS-bit weights in groups of `group`, f32
/// scales, no zero points), folding in what IN says as launchForm does.
template <GemvIn IN, int BITS>
std::string launchQuant(const half *x, const half *up, const half *norm, const uint8_t *q,
                        const float *scales, const half *res, half *y, float *partial,
                        unsigned *counters, int m, int n, int k, int group, int splits,
                        cudaStream_t s) {
  GemvPrologue<half, half> pro;
  if (IN == GemvIn::RmsNorm)
    pro.norm = norm, pro.eps = 1e-5f;
  if (IN == GemvIn::Swiglu)
    pro.up = up;
  return launchQgemv<IN, half, half, float, half, BITS>(
      x, pro, q, scales, nullptr, nullptr, res, y, partial, counters, m, n, k, group, splits, s,
      GemvSegments{});
}

template <int BITS> auto quantFormOf(GemvIn in) {
  return in == GemvIn::Plain     ? launchQuant<GemvIn::Plain, BITS>
         : in == GemvIn::RmsNorm ? launchQuant<GemvIn::RmsNorm, BITS>
                                 : launchQuant<GemvIn::Swiglu, BITS>;
}

struct Variant {
  const char *name;
  bool tensorCores;
  int splitFactor = 1; // times the compiler's split count
};

__global__ void fillScales(float *p, size_t n, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = scale * (1.0f + float((unsigned(i) * 2654435761u) >> 29) / 8.0f);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> rowCounts; // the batch sizes to time: the arguments, else 1 2 4 8
  for (int i = 1; i < argc; ++i) {
    int m = std::atoi(argv[i]);
    if (m < 1 || m > kGemvMaxRows)
      return std::fprintf(stderr, "gemv: rows must be 1..%d: %s\n", kGemvMaxRows, argv[i]), 2;
    rowCounts.push_back(m);
  }
  if (rowCounts.empty())
    rowCounts = {1, 2, 4, 8};
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "device");
  const size_t poolBytes = size_t(1) << 30;
  half *pool, *x, *up, *norm, *res, *y;
  float *partial;
  unsigned *counters;
  check(cudaMalloc(&pool, poolBytes), "malloc");
  check(cudaMalloc(&x, size_t(8) * 8192 * 2), "malloc");
  check(cudaMalloc(&up, size_t(8) * 8192 * 2), "malloc");
  check(cudaMalloc(&norm, size_t(8192) * 2), "malloc");
  check(cudaMalloc(&res, size_t(8) * 32000 * 2), "malloc");
  check(cudaMalloc(&y, size_t(8) * 32000 * 2), "malloc");
  check(cudaMalloc(&partial, size_t(64) * 8 * 32000 * 4), "malloc");
  check(cudaMalloc(&counters, kSplitCounters * sizeof(unsigned)), "malloc");
  check(cudaMemset(counters, 0, kSplitCounters * sizeof(unsigned)), "zero");
  fill<<<1024, 256>>>(pool, poolBytes / 2, 1u, 0.05f);
  fill<<<64, 256>>>(x, size_t(8) * 8192, 2u, 1.0f);
  fill<<<64, 256>>>(up, size_t(8) * 8192, 5u, 1.0f);
  fill<<<8, 256>>>(norm, 8192, 3u, 1.0f);
  fill<<<64, 256>>>(res, size_t(8) * 32000, 4u, 1.0f);
  check(cudaDeviceSynchronize(), "fill");

  // The ceilings.
  half *copyDst;
  check(cudaMalloc(&copyDst, poolBytes), "malloc");
  float copyMs = medianMs(
      [&] { cudaMemcpyAsync(copyDst, pool, poolBytes, cudaMemcpyDeviceToDevice); }, 10);
  check(cudaFree(copyDst), "free");
  double copyGbs = 2.0 * poolBytes / (copyMs / 1e3) / 1e9;
  double readGbs = streamingReadGbs(pool, poolBytes, prop.multiProcessorCount);
  std::printf("%s: copy %.0f GB/s (read + written), streaming read %.0f GB/s\n\n", prop.name,
              copyGbs, readGbs);
  std::printf("| layer | rows | variant | splits | us per launch | GB/s read | share of the "
              "streaming read | share of the copy | max diff. vs the first |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");

  const std::vector<Variant> variants = {
      {"SIMT: 1 column / warp (the runtime's below kTcGemvMinRows rows)", false},
      {"SIMT, twice the splits", false, 2},
      {"SIMT, 4x the splits", false, 4},
      {"tensor cores: mma.sync, 16 columns / block of 8 warps (from kTcGemvMinRows)", true},
      {"tensor cores, twice the splits", true, 2},
  };
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const int kLaunches = 64;
  for (const Shape &sh : kShapes)
    for (int m : rowCounts) {
      size_t wBytes = size_t(sh.n) * size_t(sh.k) * 2;
      GemvIn in = sh.in == GemvIn::Swiglu &&
                          gemvSharedBytes<GemvIn::Swiglu, half>(m, sh.k) >
                              size_t(kGemvPrologueSharedBytes)
                      ? GemvIn::Plain
                      : sh.in;
      int copies = int(poolBytes / wBytes);
      std::vector<float> ms(variants.size()), first;
      std::vector<int> splitsOf(variants.size());
      std::vector<double> diff(variants.size(), 0.0);
      std::vector<cudaGraphExec_t> graphs(variants.size());
      for (size_t v = 0; v < variants.size(); ++v) {
        int splits =
            gemvSplits(sh.n, sh.k, 2, prop.multiProcessorCount) * variants[v].splitFactor;
        splitsOf[v] = splits;
        auto once = [&](int i) {
          const half *w = pool + size_t(i % copies) * wBytes / 2, *r = sh.residual ? res : nullptr;
          auto form = variants[v].tensorCores ? formOf<true>(in) : formOf<false>(in);
          std::string e =
              form(x, up, norm, w, r, y, partial, counters, m, sh.n, sh.k, splits, stream);
          if (!e.empty())
            std::fprintf(stderr, "%s: %s\n", variants[v].name, e.c_str()), std::exit(1);
        };
        once(0);
        check(cudaStreamSynchronize(stream), "gemv");
        std::vector<float> out = download(y, size_t(m) * size_t(sh.n));
        if (v == 0)
          first = out;
        diff[v] = maxAbsDiff(out, first);
        graphs[v] = graphOf(stream, kLaunches, once);
      }
      for (int round = 0; round < 3; ++round)
        for (size_t v = 0; v < variants.size(); ++v)
          ms[v] = medianMs([&] { check(cudaGraphLaunch(graphs[v], stream), "replay"); }, 10,
                           stream);
      for (size_t v = 0; v < variants.size(); ++v) {
        double us = ms[v] * 1e3 / kLaunches, gbs = wBytes / (us / 1e6) / 1e9;
        std::printf("| %s | %d | %s | %d | %.2f | %.0f | %.1f%% | %.1f%% | %.1e |\n", sh.name, m,
                    variants[v].name, splitsOf[v], us, gbs, 100 * gbs / readGbs,
                    100 * gbs / copyGbs, diff[v]);
        check(cudaGraphExecDestroy(graphs[v]), "graph");
      }
    }

  // The quantized GEMVs. q comes from the pool (random bytes), the scales
  // from a pool of their own, a copy per launch as for the float weights.
  const size_t scalePoolBytes = size_t(256) << 20;
  float *scalePool;
  half *dequantized;
  check(cudaMalloc(&scalePool, scalePoolBytes), "malloc");
  check(cudaMalloc(&dequantized, size_t(32000) * 2048 * 2), "malloc");
  fillScales<<<256, 256>>>(scalePool, scalePoolBytes / 4, 1e-3f);
  check(cudaDeviceSynchronize(), "fill");
  std::printf("\n| layer | rows | weights | form | splits | us per launch | GB/s read | share "
              "of the streaming read | share of the copy | max diff. vs the float GEMV over "
              "them dequantized |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
              "|\n");
  struct QuantWeights {
    const char *name;
    int bits, group; // group 0: per output channel (K)
  };
  const QuantWeights kQuant[] = {{"int4, groups of 32", 4, 32}, {"int8, per channel", 8, 0}};
  for (const Shape &sh : kShapes)
    for (int m : rowCounts)
      for (const QuantWeights &qw : kQuant) {
        int group = qw.group ? qw.group : sh.k, groups = sh.k / group;
        size_t qBytes = size_t(sh.n) * size_t(sh.k) * qw.bits / 8;
        size_t sCount = size_t(sh.n) * size_t(groups);
        int copies = int(std::min(poolBytes / qBytes, scalePoolBytes / (sCount * 4)));
        GemvIn in = sh.in == GemvIn::Swiglu &&
                            gemvSharedBytes<GemvIn::Swiglu, half>(m, sh.k) >
                                size_t(kGemvPrologueSharedBytes)
                        ? GemvIn::Plain
                        : sh.in;
        int splits = qgemvSplits(sh.n, sh.k, qw.bits, group, prop.multiProcessorCount);
        const half *r = sh.residual ? res : nullptr;
        auto form = qw.bits == 4 ? quantFormOf<4>(in) : quantFormOf<8>(in);
        auto once = [&](int i) {
          const uint8_t *q = reinterpret_cast<const uint8_t *>(pool) + size_t(i % copies) * qBytes;
          std::string e = form(x, up, norm, q, scalePool + size_t(i % copies) * sCount, r, y,
                               partial, counters, m, sh.n, sh.k, group, splits, stream);
          if (!e.empty())
            std::fprintf(stderr, "%s: %s\n", qw.name, e.c_str()), std::exit(1);
        };
        // The reference: copy 0 dequantized, through the float form.
        std::string e =
            qw.bits == 4
                ? dequantRows<float, half, 4>(reinterpret_cast<const uint8_t *>(pool), scalePool,
                                              nullptr, dequantized, sh.n, sh.k, group, stream)
                : dequantRows<float, half, 8>(reinterpret_cast<const uint8_t *>(pool), scalePool,
                                              nullptr, dequantized, sh.n, sh.k, group, stream);
        int floatSplits = gemvSplits(sh.n, sh.k, 2, prop.multiProcessorCount);
        auto floatForm = m >= kTcGemvMinRows ? formOf<true>(in) : formOf<false>(in);
        if (e.empty())
          e = floatForm(x, up, norm, dequantized, r, y, partial, counters, m, sh.n, sh.k,
                        floatSplits, stream);
        if (!e.empty())
          return std::fprintf(stderr, "reference: %s\n", e.c_str()), 1;
        check(cudaStreamSynchronize(stream), "reference");
        std::vector<float> want = download(y, size_t(m) * size_t(sh.n));
        // Each form's output and graph: the switch is read at each launch,
        // so also while a graph is captured.
        const char *kForms[] = {"tensor cores", "SIMT"};
        double diff[2] = {0.0, 0.0};
        float ms[2] = {0.0f, 0.0f};
        cudaGraphExec_t graphs[2];
        for (int f = 0; f < 2; ++f) {
          if (f == 1)
            setenv("LLMC_CUDA_QGEMV_TC_ROWS", "9", 1);
          once(0);
          check(cudaStreamSynchronize(stream), "qgemv");
          std::vector<float> got = download(y, size_t(m) * size_t(sh.n));
          diff[f] = maxAbsDiff(got, want);
          graphs[f] = graphOf(stream, kLaunches, once);
          unsetenv("LLMC_CUDA_QGEMV_TC_ROWS");
        }
        for (int round = 0; round < 3; ++round)
          for (int f = 0; f < 2; ++f)
            ms[f] = medianMs([&] { check(cudaGraphLaunch(graphs[f], stream), "replay"); }, 10,
                             stream);
        for (int f = 0; f < 2; ++f) {
          check(cudaGraphExecDestroy(graphs[f]), "graph");
          double us = ms[f] * 1e3 / kLaunches, gbs = (qBytes + sCount * 4) / (us / 1e6) / 1e9;
          std::printf("| %s | %d | %s | %s | %d | %.2f | %.0f | %.1f%% | %.1f%% | %.1e |\n",
                      sh.name, m, qw.name, kForms[f], splits, us, gbs, 100 * gbs / readGbs,
                      100 * gbs / copyGbs, diff[f]);
        }
      }
  return 0;
}
