//===- QuantEval.h - what weight quantization costs a model ---------------===//
//
// The accuracy gate of `llmc compile --quant ... --eval FILE`: the model
// compiled twice by llmc-pipeline, without and with quantization, both run
// by the reference executor over the same token sequences (one prefill per
// sequence, logits at every position), compared position by position.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EXECUTOR_QUANTEVAL_H
#define LLMC_COMPILER_EXECUTOR_QUANTEVAL_H

#include "compiler/Executor/TensorIO.h"
#include "passes/Calibration.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::llmc {

class Executor;

/// The one batch-1 prefill bucket of a compiled program, and its length.
llvm::Expected<std::pair<std::string, int64_t>> prefillBucket(const Executor &exec);

/// The inputs of a prefill from position 0: tokens right-padded with 0 to
/// `width`, start_pos 0, caches of zeros.
llvm::Expected<std::vector<NamedTensor>> prefillInputs(const Executor &exec,
                                                       const std::string &function,
                                                       int64_t width,
                                                       llvm::ArrayRef<int64_t> tokens);

struct QuantEvalReport {
  int64_t sequences = 0, positions = 0;
  double top1Agreement = 0;       // share of positions whose argmax agrees
  double meanKl = 0, maxKl = 0;   // KL(float || quantized) of the next-token distributions, nats
  double floatPerplexity = 0;     // exp(mean -log p(next token)) over the positions with one
  double quantPerplexity = 0;
  /// Per quantized layer: ||x Wq^T - x W^T|| / ||x W^T|| over every row it
  /// saw in the quantized model's run (x: its own input there), in order.
  struct Layer {
    std::string name;
    double relativeError = 0;
  };
  std::vector<Layer> layers;

  llvm::json::Object toJson() const;
};

/// Splits token-id text (ids separated by commas or whitespace, one sequence
/// per line) into sequences; an error names the bad line.
llvm::Expected<std::vector<std::vector<int64_t>>> parseEvalIds(llvm::StringRef text);

/// Cuts sequences into pieces of at most `length` tokens (the tail of each
/// kept when it has 2 or more), at most `maxPieces` of them.
std::vector<std::vector<int64_t>> cutSequences(const std::vector<std::vector<int64_t>> &seqs,
                                               int64_t length, int64_t maxPieces);

/// Runs the model at `modelPath` through `floatPipeline` and `quantPipeline`
/// (both llmc-pipeline strings with one batch-1 prefill bucket that holds
/// the longest sequence) on `sequences` (ids below `vocab` checked) and
/// compares them. With `roundActivations` (the CPU kernels' numerics),
/// layers that allow int8 activations round x as those kernels do.
llvm::Expected<QuantEvalReport>
evaluateQuantization(llvm::StringRef modelPath, llvm::StringRef floatPipeline,
                     llvm::StringRef quantPipeline,
                     const std::vector<std::vector<int64_t>> &sequences,
                     bool roundActivations = true);

/// Runs the float model at `modelPath` through `pipeline` (llmc-pipeline
/// with `until-quantization`, one batch-1 prefill bucket that holds the
/// longest sequence) on `sequences` and sums x^T x over the input rows x of
/// every linear layer: the statistics GPTQ quantizes with
/// (passes/Calibration.h).
llvm::Expected<CalibrationStats>
collectCalibration(llvm::StringRef modelPath, llvm::StringRef pipeline,
                   const std::vector<std::vector<int64_t>> &sequences);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_QUANTEVAL_H
