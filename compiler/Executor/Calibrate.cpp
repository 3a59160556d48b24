//===- Calibrate.cpp - the statistics GPTQ quantizes with -----------------===//
//
// The float model runs, by the reference executor, over the calibration
// sequences (one prefill each); every launch of the linear kernel adds the
// sequence's rows of its input x (not the bucket's padding) to the Gram
// matrix sum x^T x of that input. Layers whose inputs are the same values in
// a run (q, k and v read one normalised x) share one matrix, summed once.
//
//===----------------------------------------------------------------------===//
#include "compiler/Executor/Error.h"
#include "compiler/Executor/Executor.h"
#include "compiler/Executor/QuantEval.h"
#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/cpu/ThreadPool.h"

#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <map>
#include <tuple>
#include <unistd.h>
#include <set>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// Half the machine's memory, or LLMC_CALIBRATION_MEMORY_MB.
uint64_t calibrationMemoryLimit() {
  if (const char *mb = std::getenv("LLMC_CALIBRATION_MEMORY_MB"))
    return uint64_t(std::strtoull(mb, nullptr, 10)) << 20;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return (pages > 0 && size > 0 ? uint64_t(pages) * uint64_t(size) : (uint64_t(16) << 30)) / 2;
}

} // namespace

llvm::Expected<CalibrationStats>
mlir::llmc::collectCalibration(llvm::StringRef modelPath, llvm::StringRef pipeline,
                               const std::vector<std::vector<int64_t>> &sequences) {
  auto exec = Executor::fromOnnxFile(modelPath, pipeline);
  if (!exec)
    return exec.takeError();
  auto bucket = prefillBucket(**exec);
  if (!bucket)
    return bucket.takeError();
  CalibrationStats stats;
  std::map<const void *, uint64_t> fingerprints; // constants stay put between runs
  // (fingerprint, N, K, element type) -> stats.layers index
  std::map<std::tuple<uint64_t, int64_t, int64_t, int>, size_t> layerOf;
  uint64_t gramBytes = 0, memoryLimit = calibrationMemoryLimit();
  const cpu::KernelEntry *linear = cpu::findKernel("linear");
  if (!linear)
    return makeError("no linear kernel");
  for (const std::vector<int64_t> &seq : sequences) {
    const int64_t n = int64_t(seq.size());
    if (n > bucket->second)
      return makeError("a calibration sequence of " + std::to_string(n) +
                       " tokens exceeds the bucket of " + std::to_string(bucket->second));
    std::map<uint64_t, int64_t> inputOfValue; // hash of x's rows -> input, this run
    std::set<std::pair<int64_t, uint64_t>> summed; // (input, x) summed in this run
    llvm::Error failure = llvm::Error::success();
    Executor::Observer observe = [&](llvm::StringRef kernel, llvm::StringRef node,
                                     llvm::ArrayRef<const cpu::Tensor *> in,
                                     llvm::ArrayRef<cpu::Tensor>) {
      if (kernel != "linear" || failure || in.size() < 2 || !in[0] || !in[1] ||
          in[1]->rank() != 2 || in[0]->rank() < 1)
        return;
      const cpu::Tensor &x = *in[0], &w = *in[1];
      const int64_t K = w.dim(1), N = w.dim(0);
      if (x.dim(x.rank() - 1) != K || !cpu::isFloat(x.dtype()))
        return;
      // The sequence's rows: x is [1, bucket, K] (or [bucket, K]).
      const int64_t total = x.numel() / K;
      const int64_t used = total == bucket->second ? n : total;
      // x^T, [K, used] in f32: the Gram matrix is x^T (x^T)^T, one call of
      // the linear kernel.
      cpu::Tensor xt;
      if (cpu::Status st = cpu::Tensor::allocate(cpu::DType::Float, {K, used}, xt); !st) {
        failure = makeError(st.message());
        return;
      }
      float *t = xt.mutableData<float>();
      for (int64_t r = 0; r < used; ++r)
        for (int64_t i = 0; i < K; ++i)
          t[i * used + r] = float(cpu::floatElement(x, r * K + i));
      uint64_t xhash = llvm::xxh3_64bits(
          llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(xt.raw()), xt.bytes()));
      auto fp = fingerprints.try_emplace(w.raw(), 0);
      if (fp.second)
        fp.first->second = weightFingerprint(storedBytes(w));
      auto [at, fresh] = layerOf.try_emplace(
          std::make_tuple(fp.first->second, N, K, int(w.dtype())), stats.layers.size());
      if (fresh) {
        auto seen = inputOfValue.find(xhash);
        int64_t input = int64_t(stats.inputs.size());
        if (seen != inputOfValue.end() && stats.inputs[size_t(seen->second)].k == K) {
          input = seen->second;
        } else {
          // Every distinct input's K x K matrix is held at once (in double):
          // refuse before the machine runs out of memory.
          gramBytes += uint64_t(K) * uint64_t(K) * sizeof(double);
          if (gramBytes > memoryLimit) {
            failure = makeError(
                "the calibration statistics would take more than " +
                std::to_string(memoryLimit >> 20) +
                " MiB (half this machine's memory, or LLMC_CALIBRATION_MEMORY_MB; K = " +
                std::to_string(K) + " at " + node.str() +
                "): llmc holds every layer input's K x K Gram matrix at once, so GPTQ does not "
                "fit this model here; quantize it to nearest (no --calibration)");
            return;
          }
          CalibrationStats::Input fresh;
          fresh.k = K;
          fresh.gram.assign(size_t(K * K), 0.0);
          stats.inputs.push_back(std::move(fresh));
        }
        stats.layers.push_back({fp.first->second, N, K, input});
      }
      const int64_t input = stats.layers[at->second].input;
      auto [known, added] = inputOfValue.try_emplace(xhash, input);
      if (!added && known->second != input) {
        failure = makeError("linear layer " + node.str() +
                            " shares its input with other layers in one calibration run and "
                            "not in another");
        return;
      }
      // Once per value: q, k and v add their shared x once; a weight used
      // twice (tied, or a loop) adds both of its inputs.
      if (!summed.insert({input, xhash}).second)
        return;
      CalibrationStats::Input &acc = stats.inputs[size_t(input)];
      acc.rows += used;
      cpu::KernelCall call;
      call.pool = &cpu::ThreadPool::global();
      cpu::Attributes none;
      call.attrs = &none;
      call.opName = node.str() + " (calibration statistics)";
      call.inputs = {&xt, &xt, nullptr};
      call.outputs.resize(1);
      if (cpu::Status st = linear->fn(call); !st) {
        failure = makeError(st.message());
        return;
      }
      const float *g = call.outputs[0].data<float>();
      for (int64_t i = 0; i < K * K; ++i)
        acc.gram[size_t(i)] += double(g[i]);
    };
    auto inputs = prefillInputs(**exec, bucket->first, bucket->second, seq);
    if (!inputs) {
      llvm::consumeError(std::move(failure));
      return inputs.takeError();
    }
    auto out = (*exec)->run(bucket->first, *inputs, observe);
    if (failure) // the observer's error first: it stopped the run's statistics
      return llvm::joinErrors(std::move(failure), out ? llvm::Error::success() : out.takeError());
    if (!out)
      return out.takeError();
  }
  if (stats.layers.empty())
    return makeError("the model ran no float linear layer to calibrate (is it quantized already?)");
  return stats;
}
