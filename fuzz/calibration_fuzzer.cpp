//===- calibration_fuzzer.cpp - libFuzzer target for calibration files ----===//
//
// The reader of GPTQ's statistics files (passes/Calibration.h), which
// llmc-quantize-weights opens from a path it is given: any bytes must give
// statistics or an error, never a crash or an allocation the bytes do not
// pay for; statistics that parse must write back to the same bytes.
//
//===----------------------------------------------------------------------===//
#include "passes/Calibration.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto stats = mlir::llmc::CalibrationStats::parse(bytes, "input");
  if (!stats) {
    llvm::consumeError(stats.takeError());
    return 0;
  }
  for (const auto &l : stats->layers)
    if (l.input < 0 || size_t(l.input) >= stats->inputs.size() ||
        stats->inputs[size_t(l.input)].k != l.k) {
      std::fprintf(stderr, "a layer names an input it does not fit\n");
      std::abort();
    }
  if (stats->serialize() != bytes.str()) {
    std::fprintf(stderr, "statistics that parse do not write back to their bytes\n");
    std::abort();
  }
  return 0;
}
