//===- CompileQuant.h - llmc compile's quantization options ---------------===//
//
// What `llmc compile --quant` adds to a compile: the pipeline options, the
// GPTQ calibration (--calibration / --calibration-text) and the accuracy
// gate (--eval / --eval-text, --max-kl).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TOOLS_LLMC_COMPILEQUANT_H
#define LLMC_TOOLS_LLMC_COMPILEQUANT_H

#include "tools/llmc/Commands.h"

#include "compiler/Artifact/Artifact.h"
#include "compiler/Executor/QuantEval.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::llmc {

struct QuantPlan {
  QuantSpec spec;
  // GPTQ's statistics (a temporary file the caller removes when
  // ownsCalibrationFile, else --calibration-stats'), or empty: round to
  // nearest.
  std::string calibrationFile;
  bool ownsCalibrationFile = false;
  int64_t calibrationSequences = 0, calibrationTokens = 0, calibrationLayers = 0;
};

/// llmc-pipeline's options for the plan (" quant-bits=4 ..."; with
/// --kv-dtype int8 also its option; nothing for a plan of no bits).
std::string quantOptions(const CompileRequest &req, const QuantPlan &plan);

/// llmc-pipeline's option for --kv-dtype (" kv-dtype=int8", or nothing).
std::string kvOptions(const CompileRequest &req);

/// What --eval compares with the float model: "int4:g128", "int8 KV
/// cache", or both.
std::string quantDescription(const CompileRequest &req);

/// Runs the float model on the calibration sequences and writes the
/// statistics to a temporary file named in `plan`.
llvm::Error calibrate(const CompileRequest &req, QuantPlan &plan);

/// The accuracy gate: the float and the quantized pipeline (one prefill
/// bucket of --eval-seq-len) run by the reference executor on the
/// evaluation sequences.
llvm::Expected<QuantEvalReport> evaluateQuant(const CompileRequest &req, const ArtifactInfo &info,
                                              const QuantPlan &plan);

void printQuantEval(llvm::raw_ostream &os, const QuantEvalReport &r, llvm::StringRef scheme);

/// The tokenizer.json a compile uses: --tokenizer, or the one beside the
/// model; empty when there is none.
std::string tokenizerPath(const CompileRequest &req);

} // namespace mlir::llmc

#endif // LLMC_TOOLS_LLMC_COMPILEQUANT_H
