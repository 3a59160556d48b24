//===- packed_gemm.cpp - the compiled model's prefill GEMM against peak FMA -===//
//
// Times runtime/src/model/kernels/Packed.h's packedRows (what a compiled
// model's prefill linear layers run) on the shapes of the 125M Llama of
// bench/cpu/make_llama_onnx.py, on T threads that split the panels as
// packedLinear does, and prints its FLOP rate as a share of the peak f32
// FMA rate of T cores, measured by a probe in the same vector width (12
// independent FMA chains per thread). Built once per -march by
// bench/cpu/prefill_gemm.sh (x86-64-v3: AVX2 tiles, x86-64-v4: AVX-512).
//
//   [NARROW=1] packed-gemm-<isa> THREADS [M ...]
//
// NARROW=1: an AVX-512 build's 256-bit tile (Packed.h's NarrowTile), the
// one it picks where narrowTilesFaster() finds AVX-512 no faster than AVX2.
//
//===----------------------------------------------------------------------===//
#include "bench/cpu/Timing.h"
#include "runtime/src/model/kernels/Packed.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace llmc::model::kernels;
using llmc::bench::Clock;
using llmc::bench::medianSeconds;

/// Runs f(t) on threads 0 .. n - 1 (0 on the calling thread) and waits.
template <typename F> void onThreads(int n, F &&f) {
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t)
    pool.emplace_back([&, t] { f(t); });
  f(0);
  for (std::thread &t : pool)
    t.join();
}

/// The peak f32 FMA rate of `threads` cores in VecF's width: Packed.h's
/// probe on every thread at once, summed; the best of 12 passes (a shared
/// VM's other load comes and goes).
double peakFlops(int threads) {
  std::vector<double> rates(static_cast<size_t>(threads));
  double best = 0;
  for (int pass = 0; pass < 12; ++pass) {
    onThreads(threads, [&](int t) { rates[size_t(t)] = fmaChainRate<VecF>(8 << 20); });
    double sum = 0;
    for (double r : rates)
      sum += r;
    best = std::max(best, sum);
  }
  return best;
}

struct Shape {
  const char *name;
  int64_t n, k;
};

template <typename T> void fill(std::vector<T> &v, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1, 1);
  for (T &x : v)
    fromFloat(d(rng), x);
}

/// 64-byte aligned storage, as weights.bin's tensors and the arena's values
/// are (malloc's large blocks start 16 bytes past a page, which splits
/// every 64-byte load across two cache lines).
template <typename T> struct Aligned {
  T *p;
  explicit Aligned(size_t n)
      : p(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  ~Aligned() { std::free(p); }
  T *data() { return p; }
};

bool narrow = false;

template <typename T>
double rate(int threads, int64_t M, const Shape &s, std::mt19937 &rng) {
  std::vector<float> x(size_t(M * s.k)), y(size_t(M * s.n)), w32(size_t(s.n * s.k));
  fill(x, rng);
  std::vector<T> w(size_t(s.n * s.k));
  fill(w, rng);
  Aligned<T> packed(size_t(numPanels(s.n) * s.k * kPanel));
  packPanels(w.data(), s.n, s.k, sizeof(T), packed.data());
  // Units of a register tile's panels, a contiguous range per thread.
  int64_t panels = numPanels(s.n), units = (panels + kTilePanels - 1) / kTilePanels;
  int64_t per = (units + threads - 1) / threads;
  double seconds = medianSeconds(7, [&] {
    onThreads(threads, [&](int t) {
      int64_t p0 = std::min(panels, t * per * kTilePanels);
      int64_t p1 = std::min(panels, (t + 1) * per * kTilePanels);
      if (p0 < p1)
        packedRows(x.data(), M, s.k, packed.data(), s.n, nullptr, nullptr, y.data(), p0, p1,
                   narrow);
    });
  });
  // One element checked against a float64 dot product, so a fast wrong
  // kernel cannot pass for a fast one.
  int64_t i = M / 2, j = s.n / 3;
  double ref = 0;
  for (int64_t k = 0; k < s.k; ++k)
    ref += double(x[size_t(i * s.k + k)]) * double(toFloat(w[size_t(j * s.k + k)]));
  if (std::abs(ref - y[size_t(i * s.n + j)]) > 1e-3 * (1 + std::abs(ref))) {
    std::fprintf(stderr, "wrong result at (%lld, %lld): %g, expected %g\n", (long long)i,
                 (long long)j, double(y[size_t(i * s.n + j)]), ref);
    std::exit(1);
  }
  return 2.0 * double(M) * double(s.n) * double(s.k) / seconds;
}

} // namespace

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  narrow = std::getenv("NARROW") && std::string(std::getenv("NARROW")) == "1" &&
           !std::is_same_v<NarrowTile, WideTile>;
  std::vector<int64_t> rows;
  for (int i = 2; i < argc; ++i)
    rows.push_back(std::atoll(argv[i]));
  if (rows.empty())
    rows = {64, 512};
  const Shape shapes[] = {{"q/o 768x768", 768, 768},
                          {"k/v 256x768", 256, 768},
                          {"gate/up 2048x768", 2048, 768},
                          {"down 768x2048", 768, 2048}};
  double peak = peakFlops(threads);
  std::printf("isa %s, tile %d rows x %d panels of %d-lane vectors, %d thread(s): peak %.1f "
              "GFLOP/s\n",
              VecF::kLanes == 16 ? "AVX-512" : "AVX2",
              narrow ? NarrowTile::kRows : WideTile::kRows,
              narrow ? NarrowTile::kPanels : WideTile::kPanels,
              narrow ? NarrowTile::V::kLanes : WideTile::V::kLanes, threads, peak / 1e9);
  std::printf("| M | shape | f32 GFLOP/s | of peak | f16 GFLOP/s | of peak |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  std::mt19937 rng(7);
  for (int64_t M : rows) {
    double flops = 0, t32 = 0, t16 = 0;
    for (const Shape &s : shapes) {
      double r32 = rate<float>(threads, M, s, rng), r16 = rate<Half>(threads, M, s, rng);
      double f = 2.0 * double(M) * double(s.n) * double(s.k);
      flops += f, t32 += f / r32, t16 += f / r16;
      std::printf("| %lld | %s | %.1f | %.0f%% | %.1f | %.0f%% |\n", (long long)M, s.name,
                  r32 / 1e9, 100 * r32 / peak, r16 / 1e9, 100 * r16 / peak);
    }
    std::printf("| %lld | all (by FLOPs) | %.1f | %.0f%% | %.1f | %.0f%% |\n", (long long)M,
                flops / t32 / 1e9, 100 * flops / t32 / peak, flops / t16 / 1e9,
                100 * flops / t16 / peak);
  }
  return 0;
}
