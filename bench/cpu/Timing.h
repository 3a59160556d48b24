//===- Timing.h - what the C++ micro-benchmarks time with ------------------===//
#ifndef LLMC_BENCH_CPU_TIMING_H
#define LLMC_BENCH_CPU_TIMING_H

#include <algorithm>
#include <chrono>
#include <vector>

namespace llmc::bench {

using Clock = std::chrono::steady_clock;

/// Median seconds of `reps` runs of `f` after one warm-up run.
template <typename F> double medianSeconds(int reps, F &&f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace llmc::bench

#endif // LLMC_BENCH_CPU_TIMING_H
