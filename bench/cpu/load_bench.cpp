//===- load_bench.cpp - what the per-tensor checksums add to a model load ---===//
//
//   llmc-bench-load ARTIFACT [ROUNDS]
//
// Loads ARTIFACT with llmc_model_load, alternating checked loads (the
// default: every tensor of weights.bin hashed, XXH64 on all cores) and
// unchecked ones (skip_weight_checksums), ROUNDS times each after one
// warm-up of each (weights.bin in the page cache: the hot-load case), and
// prints the medians, the difference and the checksum's throughput.
//
//===----------------------------------------------------------------------===//
#include "llmc/llmc.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double loadMs(const char *path, bool check) {
  llmc_load_options options{};
  options.skip_weight_checksums = check ? 0 : 1;
  llmc_model *model = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  if (llmc_model_load(path, &options, &model) != LLMC_OK) {
    std::fprintf(stderr, "llmc-bench-load: %s\n", llmc_last_error());
    std::exit(1);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  llmc_model_free(model);
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: llmc-bench-load ARTIFACT [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  loadMs(argv[1], true), loadMs(argv[1], false);
  std::vector<double> checked, unchecked;
  for (int r = 0; r < rounds; ++r) {
    checked.push_back(loadMs(argv[1], true));
    unchecked.push_back(loadMs(argv[1], false));
  }
  llmc_model *model = nullptr;
  llmc_model_load(argv[1], nullptr, &model);
  llmc_model_info info{};
  llmc_model_get_info(model, &info);
  llmc_model_free(model);
  double c = median(checked), u = median(unchecked), bytes = double(info.weights_bytes);
  std::printf("| weights.bin | load, checked (ms) | load, unchecked (ms) | checksums add (ms) | "
              "checksum GB/s |\n| --- | --- | --- | --- | --- |\n");
  std::printf("| %.2f GB | %.1f | %.1f | %.1f | %.1f |\n", bytes / 1e9, c, u, c - u,
              bytes / 1e9 / ((c - u) / 1e3));
  return 0;
}
