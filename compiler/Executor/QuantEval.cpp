//===- QuantEval.cpp - what weight quantization costs a model -------------===//
#include "compiler/Executor/QuantEval.h"

#include "compiler/Executor/Error.h"
#include "compiler/Executor/Executor.h"
#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/cpu/ThreadPool.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

/// A float tensor's elements as doubles.
std::vector<double> valuesOf(const cpu::Tensor &t) {
  std::vector<double> out(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    out[size_t(i)] = cpu::floatElement(t, i);
  return out;
}

/// log-softmax of one row.
void logSoftmax(const double *row, int64_t n, std::vector<double> &out) {
  out.resize(size_t(n));
  double peak = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    peak = std::max(peak, double(row[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(row[i]) - peak);
  double lse = peak + std::log(sum);
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = double(row[i]) - lse;
}

} // namespace

llvm::Expected<std::pair<std::string, int64_t>> mlir::llmc::prefillBucket(const Executor &exec) {
  for (const std::string &name : exec.functionNames()) {
    llvm::StringRef rest(name);
    int64_t s;
    if (rest.consume_front("prefill_b1_s") && !rest.getAsInteger(10, s))
      return std::make_pair(name, s);
  }
  return makeError("the program has no batch-1 prefill bucket");
}

llvm::Expected<std::vector<NamedTensor>>
mlir::llmc::prefillInputs(const Executor &exec, const std::string &function, int64_t width,
                          llvm::ArrayRef<int64_t> tokens) {
  const std::vector<ValueSignature> *ins = exec.inputsOf(function);
  if (!ins || ins->size() < 2 || (*ins)[1].name != "start_pos")
    return makeError(function + " is not prefill(tokens, start_pos, caches...)");
  std::vector<NamedTensor> inputs;
  cpu::Tensor ids, start;
  cpu::DType tokenType = (*ins)[0].dtype;
  if (cpu::Status st = cpu::Tensor::allocate(tokenType, {1, width}, ids); !st)
    return makeError(st.message());
  std::memset(ids.mutableRaw(), 0, ids.bytes());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokenType == cpu::DType::Int64)
      ids.mutableData<int64_t>()[i] = tokens[i];
    else
      ids.mutableData<int32_t>()[i] = int32_t(tokens[i]);
  }
  if (cpu::Status st = cpu::Tensor::allocate(cpu::DType::Int64, {}, start); !st)
    return makeError(st.message());
  start.mutableData<int64_t>()[0] = 0;
  inputs.push_back({(*ins)[0].name, ids});
  inputs.push_back({"start_pos", start});
  for (size_t i = 2; i < ins->size(); ++i) {
    const ValueSignature &c = (*ins)[i];
    if (!c.ranked || std::any_of(c.dims.begin(), c.dims.end(), [](int64_t d) { return d < 0; }))
      return makeError("input '" + c.name + "' has no static shape: " + c.describe());
    cpu::Tensor t;
    if (cpu::Status st = cpu::Tensor::allocate(c.dtype, c.dims, t); !st)
      return makeError(st.message());
    std::memset(t.mutableRaw(), 0, t.bytes());
    inputs.push_back({c.name, std::move(t)});
  }
  return inputs;
}

llvm::json::Object QuantEvalReport::toJson() const {
  llvm::json::Array perLayer;
  for (const Layer &l : layers)
    perLayer.push_back(llvm::json::Object{{"name", l.name}, {"relative_error", l.relativeError}});
  return llvm::json::Object{{"sequences", sequences},
                            {"positions", positions},
                            {"top1_agreement", top1Agreement},
                            {"mean_kl", meanKl},
                            {"max_kl", maxKl},
                            {"float_perplexity", floatPerplexity},
                            {"quantized_perplexity", quantPerplexity},
                            {"layers", std::move(perLayer)}};
}

llvm::Expected<std::vector<std::vector<int64_t>>> mlir::llmc::parseEvalIds(llvm::StringRef text) {
  std::vector<std::vector<int64_t>> out;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (size_t l = 0; l < lines.size(); ++l) {
    std::vector<int64_t> seq;
    llvm::SmallVector<llvm::StringRef> words;
    llvm::SplitString(lines[l], words, ", \t\r");
    for (llvm::StringRef w : words) {
      int64_t id;
      if (w.getAsInteger(10, id) || id < 0)
        return makeError("line " + std::to_string(l + 1) + ": '" + w.str() +
                         "' is not a token id (ids are non-negative integers separated by "
                         "commas or spaces, one sequence per line)");
      seq.push_back(id);
    }
    if (!seq.empty())
      out.push_back(std::move(seq));
  }
  if (out.empty())
    return makeError("no token ids");
  return out;
}

std::vector<std::vector<int64_t>>
mlir::llmc::cutSequences(const std::vector<std::vector<int64_t>> &seqs, int64_t length,
                         int64_t maxPieces) {
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<int64_t> &s : seqs)
    for (size_t at = 0; at < s.size() && int64_t(out.size()) < maxPieces; at += size_t(length)) {
      size_t end = std::min(s.size(), at + size_t(length));
      if (end - at >= 2)
        out.emplace_back(s.begin() + long(at), s.begin() + long(end));
    }
  return out;
}

llvm::Expected<QuantEvalReport>
mlir::llmc::evaluateQuantization(llvm::StringRef modelPath, llvm::StringRef floatPipeline,
                                 llvm::StringRef quantPipeline,
                                 const std::vector<std::vector<int64_t>> &sequences,
                                 bool roundActivations) {
  auto floatExec = Executor::fromOnnxFile(modelPath, floatPipeline);
  if (!floatExec)
    return floatExec.takeError();
  auto quantExec = Executor::fromOnnxFile(modelPath, quantPipeline);
  if (!quantExec)
    return quantExec.takeError();
  // Where the compiled kernels may round activations to int8 (the default)
  // and do (CPU kernels: `roundActivations`; the CUDA ones keep them f32),
  // the reference rounds them the same way: the report is then of what the
  // artifact computes, not of the weights' rounding alone.
  if (roundActivations)
    (*quantExec)->setKernelParam("quantized_linear", "emulate_int8_activations", 1,
                                 "int8_activations");
  auto fb = prefillBucket(**floatExec), qb = prefillBucket(**quantExec);
  if (!fb)
    return fb.takeError();
  if (!qb)
    return qb.takeError();
  const cpu::KernelEntry *linear = cpu::findKernel("linear");
  if (!linear)
    return makeError("no linear kernel");

  QuantEvalReport report;
  struct Weights {
    cpu::Tensor w, bias;
    bool hasBias = false;
  };
  std::map<std::string, Weights> floatWeights; // "<node>#<occurrence>"
  std::map<std::string, std::pair<double, double>> layerErrors; // error^2, reference^2
  std::vector<std::string> layerOrder;
  double klSum = 0, nllFloat = 0, nllQuant = 0;
  int64_t agree = 0, predicted = 0;
  std::vector<double> lpF, lpQ;
  for (const std::vector<int64_t> &seq : sequences) {
    int64_t n = int64_t(seq.size());
    if (n > fb->second)
      return makeError("an evaluation sequence of " + std::to_string(n) +
                       " tokens exceeds the bucket of " + std::to_string(fb->second));
    std::map<std::string, int> seen;
    auto key = [&](llvm::StringRef node) {
      return node.str() + "#" + std::to_string(seen[node.str()]++);
    };
    Executor::Observer captureWeights = [&](llvm::StringRef kernel, llvm::StringRef node,
                                            llvm::ArrayRef<const cpu::Tensor *> in,
                                            llvm::ArrayRef<cpu::Tensor>) {
      if (kernel != "linear" || in.size() < 2 || !in[1])
        return;
      Weights w;
      w.w = *in[1];
      if (in.size() > 2 && in[2])
        w.bias = *in[2], w.hasBias = true;
      floatWeights[key(node)] = w;
    };
    auto fin = prefillInputs(**floatExec, fb->first, fb->second, seq);
    if (!fin)
      return fin.takeError();
    auto fout = (*floatExec)->run(fb->first, *fin, captureWeights);
    if (!fout)
      return fout.takeError();
    seen.clear();
    llvm::Error layerError = llvm::Error::success();
    Executor::Observer compareLayers = [&](llvm::StringRef kernel, llvm::StringRef node,
                                           llvm::ArrayRef<const cpu::Tensor *> in,
                                           llvm::ArrayRef<cpu::Tensor> out) {
      if (kernel != "linear" && kernel != "quantized_linear")
        return;
      std::string k = key(node);
      if (kernel != "quantized_linear" || layerError)
        return;
      auto it = floatWeights.find(k);
      if (it == floatWeights.end() || in.empty() || !in[0] || out.empty())
        return;
      // The float layer on this layer's own input.
      cpu::KernelCall call;
      call.pool = &cpu::ThreadPool::global();
      cpu::Attributes none;
      call.attrs = &none;
      call.opName = node.str() + " (float reference)";
      call.inputs = {in[0], &it->second.w, it->second.hasBias ? &it->second.bias : nullptr};
      call.outputs.resize(1);
      if (cpu::Status st = linear->fn(call); !st) {
        layerError = makeError(st.message());
        return;
      }
      std::vector<double> ref = valuesOf(call.outputs[0]), got = valuesOf(out[0]);
      if (ref.size() != got.size())
        return;
      // Only the sequence's rows (the bucket's padding rows are not data).
      size_t perRow = ref.size() / size_t(fb->second), rows = size_t(n) * perRow;
      auto &acc = layerErrors[node.str()];
      if (acc.second == 0 && acc.first == 0)
        layerOrder.push_back(node.str());
      for (size_t i = 0; i < std::min(rows, ref.size()); ++i) {
        double d = got[i] - ref[i];
        acc.first += d * d, acc.second += ref[i] * ref[i];
      }
    };
    auto qin = prefillInputs(**quantExec, qb->first, qb->second, seq);
    if (!qin)
      return qin.takeError();
    auto qout = (*quantExec)->run(qb->first, *qin, compareLayers);
    if (!qout)
      return qout.takeError();
    if (layerError)
      return std::move(layerError);
    const cpu::Tensor &lf = (*fout)[0].tensor, &lq = (*qout)[0].tensor;
    if (lf.rank() != 3 || lq.rank() != 3 || !cpu::isFloat(lf.dtype()) ||
        !cpu::isFloat(lq.dtype()) || lf.dim(2) != lq.dim(2))
      return makeError("unexpected logits " + lf.describe() + " and " + lq.describe());
    const std::vector<double> logitsF = valuesOf(lf), logitsQ = valuesOf(lq); // any float type
    int64_t vocab = lf.dim(2);
    for (int64_t t : seq)
      if (t >= vocab)
        return makeError("token id " + std::to_string(t) + " is not below the vocabulary size " +
                         std::to_string(vocab));
    for (int64_t i = 0; i < n; ++i) {
      logSoftmax(logitsF.data() + i * vocab, vocab, lpF);
      logSoftmax(logitsQ.data() + i * vocab, vocab, lpQ);
      double kl = 0;
      int64_t topF = 0, topQ = 0;
      for (int64_t v = 0; v < vocab; ++v) {
        kl += std::exp(lpF[size_t(v)]) * (lpF[size_t(v)] - lpQ[size_t(v)]);
        if (lpF[size_t(v)] > lpF[size_t(topF)])
          topF = v;
        if (lpQ[size_t(v)] > lpQ[size_t(topQ)])
          topQ = v;
      }
      kl = std::max(kl, 0.0);
      klSum += kl;
      report.maxKl = std::max(report.maxKl, kl);
      agree += topF == topQ;
      ++report.positions;
      if (i + 1 < n) {
        nllFloat -= lpF[size_t(seq[size_t(i + 1)])];
        nllQuant -= lpQ[size_t(seq[size_t(i + 1)])];
        ++predicted;
      }
    }
    ++report.sequences;
  }
  if (report.positions == 0)
    return makeError("nothing to evaluate");
  report.meanKl = klSum / double(report.positions);
  report.top1Agreement = double(agree) / double(report.positions);
  report.floatPerplexity = predicted ? std::exp(nllFloat / double(predicted)) : 0;
  report.quantPerplexity = predicted ? std::exp(nllQuant / double(predicted)) : 0;
  for (const std::string &name : layerOrder) {
    auto [err, ref] = layerErrors[name];
    report.layers.push_back({name, ref > 0 ? std::sqrt(err / ref) : 0.0});
  }
  return report;
}
