//===- Artifact.h - write a model.llmc folder -----------------------------===//
//
// The artifact (docs/artifact.md): manifest.json, weights.bin, libmodel.so
// (the emitted C++ built with the host compiler; for --target cuda the
// emitted CUDA built by nvcc, and libmodel-emulated.so, the same source
// built by the host compiler against the CUDA emulation), model.h and,
// with --emit=source, src/model.cpp (or model.cu). It is written into a
// temporary folder beside the destination and renamed into place only when
// complete, so a failed compile leaves an existing artifact untouched.
// Nothing in it depends on the time or the paths it was built from: the
// same model and options give the same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_ARTIFACT_ARTIFACT_H
#define LLMC_COMPILER_ARTIFACT_ARTIFACT_H

#include "compiler/Codegen/CPU/EmitCpp.h"

#include "llvm/Support/Error.h"
#include "runtime/include/llmc/model_abi.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::llmc {

constexpr int kArtifactFormatVersion = LLMC_ARTIFACT_FORMAT_VERSION;

struct ArtifactInfo {
  std::string llmcVersion;
  std::string sourceName;   // the model's file name (no folder)
  std::string sourceSha256; // of the model file and its external data
  llvm::json::Object options;      // the compile options, as resolved
  llvm::json::Object architecture; // structure, layers, kernels per step
  llvm::json::Object memory;       // bytes: weights, kv_cache, activations per entry
  std::string cpu = "x86-64-v3";   // -march for the emitted code
  std::string cxx;                 // host compiler (empty: $CXX, else c++)
  // --target cuda: the GPU architectures libmodel.so carries SASS for (PTX
  // for the last too); empty: no GPU library, only the emulation's build.
  std::vector<std::string> cudaArchs;
  std::string nvcc;                // empty: $NVCC, nvcc on PATH, /usr/local/cuda/bin/nvcc
  bool emitSource = false;
  std::string tokenizerJson;        // tokenizer.json's bytes (empty: none)
  llvm::json::Object tokenizerInfo; // what the manifest says of it
  std::vector<int64_t> stopTokens;  // default end-of-sequence ids
  llvm::json::Object quantEval;     // the accuracy gate's report (empty: none ran)
};

/// Writes `model` as the artifact folder `outDir`. Progress lines go to
/// `log` when given.
llvm::Error writeArtifact(const CpuModel &model, const ArtifactInfo &info, llvm::StringRef outDir,
                          llvm::raw_ostream *log);

/// The sha256 (hex) of a file's bytes.
llvm::Expected<std::string> sha256File(llvm::StringRef path);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_ARTIFACT_ARTIFACT_H
