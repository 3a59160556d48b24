//===- CompileQuant.cpp - llmc compile's quantization options -------------===//
#include "tools/llmc/CompileQuant.h"

#include "runtime/src/Tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// Token sequences from `file`: ids (one sequence per line) or, with
/// `text`, the file's text encoded by `tokenizerJson`; cut into pieces of
/// `length` tokens, at most `maxPieces`. `flag` names the option in errors.
llvm::Expected<std::vector<std::vector<int64_t>>>
readSequences(const std::string &file, bool text, llvm::StringRef tokenizerJson,
              llvm::StringRef flag, int64_t length, int64_t maxPieces) {
  std::vector<std::vector<int64_t>> sequences;
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return llvm::createStringError("cannot read " + file + ": " + buf.getError().message());
  if (!text) {
    auto ids = parseEvalIds((*buf)->getBuffer());
    if (!ids)
      return llvm::createStringError(file + ": " + llvm::toString(ids.takeError()));
    sequences = std::move(*ids);
  } else {
    if (tokenizerJson.empty())
      return llvm::createStringError(flag + " needs the model's tokenizer.json (beside the "
                                     "model, or --tokenizer)");
    ::llmc::Tokenizer tok;
    std::string error;
    if (!tok.load(tokenizerJson.str(), error))
      return llvm::createStringError(error);
    std::vector<int32_t> ids = tok.encode((*buf)->getBuffer().str(), /*addSpecial=*/false);
    sequences.emplace_back(ids.begin(), ids.end());
  }
  sequences = cutSequences(sequences, length, maxPieces);
  if (sequences.empty())
    return llvm::createStringError(file + " holds no sequence of 2 or more tokens");
  return sequences;
}

} // namespace

std::string mlir::llmc::kvOptions(const CompileRequest &req) {
  return req.kvDtype == "int8" ? " kv-dtype=int8" : "";
}

std::string mlir::llmc::quantDescription(const CompileRequest &req) {
  std::string kv = req.kvDtype == "int8" ? "int8 KV cache" : "";
  if (req.quant.empty())
    return kv;
  return "--quant " + req.quant + (kv.empty() ? "" : " + " + kv);
}

std::string mlir::llmc::quantOptions(const CompileRequest &req, const QuantPlan &plan) {
  const QuantSpec &quant = plan.spec;
  if (quant.bits == 0)
    return "";
  std::string o = " quant-bits=" + std::to_string(quant.bits) +
                  " quant-group=" + std::to_string(quant.group) +
                  " quant-asym=" + (quant.asymmetric ? "1" : "0") +
                  " quant-int8-activations=" + (req.quantActivations == "int8" ? "1" : "0");
  if (!req.quantSkip.empty())
    o += " quant-skip=" + llvm::join(req.quantSkip, ",");
  if (req.quantEmbeddings)
    o += " quant-embeddings=1";
  if (!plan.calibrationFile.empty())
    o += " quant-calibration='" + plan.calibrationFile + "'"; // (a TMPDIR may hold spaces)
  return o;
}

llvm::Expected<QuantEvalReport> mlir::llmc::evaluateQuant(const CompileRequest &req,
                                                          const ArtifactInfo &info,
                                                          const QuantPlan &plan) {
  const int64_t length = req.evalSeqLen ? req.evalSeqLen : std::min<int64_t>(128, req.maxSeq);
  auto sequences =
      readSequences(req.evalIds.empty() ? req.evalText : req.evalIds, req.evalIds.empty(),
                    info.tokenizerJson, "--eval-text", length, req.evalMaxSequences);
  if (!sequences)
    return sequences.takeError();
  std::string base = "llmc-pipeline{max-seq=" + std::to_string(req.maxSeq) +
                     " batch=1 prefill-buckets=" + std::to_string(length) +
                     " dtype=" + req.dtype;
  // The CUDA kernels keep activations in f32 even where int8 is allowed.
  return evaluateQuantization(req.input, base + "}",
                              base + quantOptions(req, plan) + kvOptions(req) + "}",
                              *sequences, /*roundActivations=*/req.target != "cuda");
}

llvm::Error mlir::llmc::calibrate(const CompileRequest &req, QuantPlan &plan) {
  const int64_t length =
      req.calibrationSeqLen ? req.calibrationSeqLen : std::min<int64_t>(128, req.maxSeq);
  bool text = req.calibrationIds.empty();
  std::string tokenizerJson;
  if (text) {
    std::string path = tokenizerPath(req);
    if (!path.empty()) {
      auto buf = llvm::MemoryBuffer::getFile(path);
      if (!buf)
        return llvm::createStringError("cannot read " + path + ": " + buf.getError().message());
      tokenizerJson = (*buf)->getBuffer().str();
    }
  }
  auto sequences =
      readSequences(text ? req.calibrationText : req.calibrationIds, text, tokenizerJson,
                    "--calibration-text", length, req.calibrationMaxSequences);
  if (!sequences)
    return sequences.takeError();
  // The float model as the quantization pass would see it, one bucket.
  std::string pipeline = "llmc-pipeline{max-seq=" + std::to_string(req.maxSeq) +
                         " batch=1 prefill-buckets=" + std::to_string(length) +
                         " dtype=" + req.dtype + " until-quantization=1}";
  auto stats = collectCalibration(req.input, pipeline, *sequences);
  if (!stats)
    return stats.takeError();
  llvm::SmallString<128> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("llmc-calibration", "bin", path))
    return llvm::createStringError("cannot create a temporary file: " + ec.message());
  plan.calibrationFile = std::string(path);
  plan.ownsCalibrationFile = true;
  plan.calibrationSequences = int64_t(sequences->size());
  plan.calibrationTokens = 0;
  plan.calibrationLayers = int64_t(stats->layers.size());
  for (const auto &s : *sequences)
    plan.calibrationTokens += int64_t(s.size());
  return stats->write(path);
}

void mlir::llmc::printQuantEval(llvm::raw_ostream &os, const QuantEvalReport &r, llvm::StringRef scheme) {
  os << llvm::formatv("  accuracy of {0} against the float model ({1} sequences, {2} "
                      "positions):\n",
                      scheme, r.sequences, r.positions);
  os << llvm::formatv("    top-1 agreement {0:f2}%, KL divergence mean {1:e2} max {2:e2} nats\n",
                      100 * r.top1Agreement, r.meanKl, r.maxKl);
  os << llvm::formatv("    perplexity {0:f3} (float) -> {1:f3} (quantized), {2:+f2}%\n",
                      r.floatPerplexity, r.quantPerplexity,
                      r.floatPerplexity > 0
                          ? 100 * (r.quantPerplexity / r.floatPerplexity - 1)
                          : 0.0);
  std::vector<QuantEvalReport::Layer> worst = r.layers;
  std::stable_sort(worst.begin(), worst.end(), [](const auto &a, const auto &b) {
    return a.relativeError > b.relativeError;
  });
  if (worst.empty()) // an int8 KV cache alone: no quantized layer
    return;
  os << "    relative error each layer adds (worst first; all in the manifest):\n";
  for (size_t i = 0; i < std::min<size_t>(5, worst.size()); ++i)
    os << llvm::formatv("      {0:e2}  {1}\n", worst[i].relativeError, worst[i].name);
}

llvm::Expected<QuantSpec> mlir::llmc::parseQuantSpec(llvm::StringRef spec) {
  auto error = [&](const llvm::Twine &why) {
    return llvm::createStringError("--quant " + spec.str() + ": " + why.str() +
                                   " (expected int8 or int4, then :g<N> and/or :asym)");
  };
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, ':');
  QuantSpec q;
  if (parts[0] == "int8")
    q.bits = 8, q.group = 0;
  else if (parts[0] == "int4")
    q.bits = 4, q.group = 32;
  else
    return error("unknown scheme '" + parts[0] + "'");
  for (llvm::StringRef p : llvm::ArrayRef(parts).drop_front()) {
    if (p == "asym") {
      q.asymmetric = true;
    } else if (p.consume_front("g")) {
      int64_t g = 0;
      if (p.getAsInteger(10, g) || g < 2 || g > (int64_t(1) << 20) || g % 2 != 0)
        return error("the group size must be an even number in [2, 1048576]");
      q.group = g;
    } else {
      return error("unknown modifier '" + p + "'");
    }
  }
  return q;
}
