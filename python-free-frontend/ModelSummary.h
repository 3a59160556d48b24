//===- ModelSummary.h - facts about an ONNX model for `llmc check` --------===//
//
// What a pre-flight report needs and the importer does not: producer, opsets,
// an operator histogram, parameter counts and bytes by data type, and the
// architecture family when it can be recognised.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PYTHON_FREE_FRONTEND_MODELSUMMARY_H
#define LLMC_PYTHON_FREE_FRONTEND_MODELSUMMARY_H

#include "python-free-frontend/OnnxModel.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::llmc {

struct ModelSummary {
  struct ValueSummary {
    std::string name;
    std::string dtype;                // e.g. "f16"
    bool ranked = false;
    std::vector<std::string> dims;    // "16", "batch_size" or "?"
  };
  struct DTypeTotals {
    uint64_t elements = 0;
    uint64_t bytes = 0;
    uint64_t tensors = 0;
  };

  std::string producer;               // "onnxruntime-genai 0.0.0"
  int64_t irVersion = 0;
  std::string graphName;
  std::vector<std::pair<std::string, int64_t>> opsets;   // ("ai.onnx", 14), ...
  std::vector<std::pair<std::string, int64_t>> opHistogram; // "com.microsoft:Attention" -> n, most frequent first
  size_t numNodes = 0;
  std::vector<ValueSummary> inputs, outputs;
  std::map<std::string, DTypeTotals> parameters;          // by dtype, initializers only
  uint64_t parameterCount = 0, parameterBytes = 0, externalBytes = 0;

  // Architecture recognition.
  std::string family;        // "llama", "gpt2", ... or "" when unknown
  std::string familySource;  // "genai_config.json", "config.json" or "graph"
  int64_t numLayers = -1;    // from weight names, -1 when unknown
  std::vector<std::string> features; // "rotary", "rms_norm", "gqa", ...
};

/// Summarises `model`; reads tensor metadata only (no weight pages).
llvm::Expected<ModelSummary> summarizeModel(const OnnxModel &model);

} // namespace mlir::llmc

#endif // LLMC_PYTHON_FREE_FRONTEND_MODELSUMMARY_H
