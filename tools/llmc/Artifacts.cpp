//===- Artifacts.cpp - llmc compile, llmc run, llmc inspect ---------------===//
//
// compile: ONNX -> llmc-pipeline -> C++ -> model.llmc/ (compiler/Artifact).
// run: generates tokens from an artifact through the runtime (llmc.h), as an
// application would. inspect: the manifest of an artifact.
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"

#include "compiler/Artifact/Artifact.h"
#include "compiler/Codegen/CPU/EmitCpp.h"
#include "compiler/Codegen/CUDA/EmitCuda.h"
#include "compiler/Executor/QuantEval.h"
#include "llmc/llmc.h"
#include "runtime/src/Tokenizer.h"
#include "runtime/src/support/Json.h"
#include "runtime/src/support/WeightTable.h"
#include "passes/Passes.h"
#include "passes/TransformerStructure.h"
#include "python-free-frontend/OnnxImporter.h"
#include "python-free-frontend/OnnxModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <chrono>
#include <thread>

#include <immintrin.h>
#include <vector>

using namespace mlir;
using namespace mlir::llmc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory &cat() { return llmcOptionCategory(); }

// --- llmc compile ------------------------------------------------------------
cl::SubCommand compileCmd("compile", "Compile an ONNX decoder into a model.llmc artifact");
cl::opt<std::string> compileInput(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                                  cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileOutput("o", cl::desc("The artifact folder to write"),
                                   cl::value_desc("out.llmc"), cl::Required, cl::sub(compileCmd),
                                   cl::cat(cat()));
cl::opt<std::string> compileTarget(
    "target",
    cl::desc("cpu (the default), or cuda: libmodel.so built by nvcc for NVIDIA GPUs, and "
             "libmodel-emulated.so for the host emulation (llmc run --device emulated)"),
    cl::init("cpu"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCudaArch(
    "cuda-arch",
    cl::desc("--target cuda: GPU architectures to build SASS for (PTX for the last), or none "
             "(only the emulation's build; no nvcc needed)"),
    cl::init("sm_80,sm_86,sm_89,sm_90"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileNvcc("nvcc",
                                 cl::desc("--target cuda: the CUDA compiler (default: $NVCC, "
                                          "nvcc on PATH, /usr/local/cuda/bin/nvcc)"),
                                 cl::sub(compileCmd), cl::cat(cat()));
cl::opt<int64_t> compileMaxSeq("max-seq",
                               cl::desc("KV cache capacity: prompt plus generated tokens"),
                               cl::init(2048), cl::sub(compileCmd), cl::cat(cat()));
cl::list<int64_t> compileBatch("batch", cl::desc("Batch sizes to compile (default 1)"),
                               cl::CommaSeparated, cl::sub(compileCmd), cl::cat(cat()));
cl::list<int64_t> compileBuckets(
    "prefill-buckets",
    cl::desc("Prompt lengths to compile prefill for (default 16,64,256,1024 up to --max-seq)"),
    cl::CommaSeparated, cl::sub(compileCmd), cl::cat(cat()));
cl::list<int64_t> compileVerifyBuckets(
    "verify-buckets",
    cl::desc("Short prefill buckets for speculative decoding's verification passes (the new "
             "token and its draft, e.g. 2,4,8), added to the prefill buckets"),
    cl::CommaSeparated, cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileDtype("dtype", cl::desc("f32 (default), f16 or bf16 compute"),
                                  cl::init("f32"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCpu("cpu",
                                cl::desc("x86-64 level of the emitted code: avx2 (x86-64-v3, the "
                                         "default), avx512 (x86-64-v4) or native"),
                                cl::init("avx2"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileEmit("emit",
                                 cl::desc("source: also keep the emitted C++ in src/"),
                                 cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<bool> compileStats("stats", cl::desc("Print kernels per step and memory"),
                           cl::init(false), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileTokenizer(
    "tokenizer",
    cl::desc("tokenizer.json to put in the artifact (default: the one beside the model)"),
    cl::value_desc("file"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileQuant(
    "quant",
    cl::desc("Weight-only quantization of the linear layers: int8 (per output channel) or "
             "int4 (groups of 32), each with :g<N> for groups of N values along K and :asym for "
             "zero points, e.g. int4:g128:asym"),
    cl::value_desc("scheme"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::list<std::string> compileQuantSkip(
    "quant-skip",
    cl::desc("Layers --quant keeps in float: lm_head, or substrings of layer (ONNX node) names"),
    cl::CommaSeparated, cl::value_desc("lm_head,..."), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileQuantActs(
    "quant-activations",
    cl::desc("int8 (default): the quantized kernels round activations to int8 per block of 32 "
             "for integer dot products; f32: they dequantize the weights and keep x as it is"),
    cl::init("int8"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileEval(
    "eval",
    cl::desc("With --quant: run the quantized and the float model on these token ids (commas "
             "or spaces, one sequence per line) and report top-1 agreement, KL divergence, "
             "perplexity and each layer's error (also in the manifest)"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileEvalText(
    "eval-text", cl::desc("As --eval, on a text file tokenized by the model's tokenizer"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<int64_t> compileEvalLen("eval-seq-len",
                                cl::desc("Tokens per evaluated sequence (longer ones are cut; "
                                         "default 128, or --max-seq when that is less)"),
                                cl::init(0), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<int64_t> compileEvalMax("eval-max-sequences",
                                cl::desc("Sequences evaluated at most (default 32)"),
                                cl::init(32), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<double> compileMaxKl(
    "max-kl",
    cl::desc("With --eval/--eval-text: fail (no artifact) when the mean KL divergence of the "
             "quantized model's next-token distributions from the float model's exceeds this "
             "(nats)"),
    cl::init(-1), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCxx("cxx", cl::desc("Host C++ compiler (default $CXX, else c++)"),
                                cl::init(""), cl::sub(compileCmd), cl::cat(cat()));

// --- llmc run ----------------------------------------------------------------
cl::SubCommand runCmd("run", "Generate tokens from a compiled artifact");
cl::opt<std::string> runArtifact(cl::Positional, cl::desc("<model.llmc>"), cl::Required,
                                 cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runIds("ids", cl::desc("The prompt as token ids, comma-separated"),
                            cl::value_desc("1,2,3"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runPrompt("prompt", cl::desc("The prompt as text (needs a tokenizer)"),
                               cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runMaxNew("max-new-tokens", cl::desc("Tokens to generate (default 32)"),
                       cl::init(32), cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runTemperature("temperature", cl::desc("0: greedy (the default)"), cl::init(0),
                              cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runTopK("top-k", cl::desc("Keep the k most likely tokens (0: off)"), cl::init(0),
                     cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runTopP("top-p", cl::desc("Nucleus sampling (1: off)"), cl::init(1),
                       cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runMinP("min-p", cl::desc("Drop tokens below min-p x the top probability"),
                       cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runRepPenalty("repetition-penalty", cl::desc("1: off"), cl::init(1),
                             cl::sub(runCmd), cl::cat(cat()));
cl::opt<uint64_t> runSeed("seed", cl::desc("Sampling seed"), cl::init(0), cl::sub(runCmd),
                          cl::cat(cat()));
cl::opt<std::string> runStop("stop-ids", cl::desc("Stop after any of these token ids"),
                             cl::value_desc("2,3"), cl::sub(runCmd), cl::cat(cat()));
cl::list<std::string> runStopText(
    "stop", cl::desc("Stop once the generated text contains this string (repeatable); the text "
                     "printed ends before it (needs the artifact's tokenizer)"),
    cl::value_desc("text"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runFormat("format",
                               cl::desc("ids: the generated ids on one line, comma-separated; "
                                        "text: their text (default: text for --prompt, ids for "
                                        "--ids)"),
                               cl::init(""), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runIgnoreEos("ignore-eos",
                           cl::desc("Do not stop at the model's end-of-sequence tokens"),
                           cl::init(false), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runStream("stream", cl::desc("Print each token as it is generated"),
                        cl::init(false), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runThreads("threads", cl::desc("Threads (0: one per hardware thread)"),
                        cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runCpus("cpus",
                            cl::desc("Pin the worker threads to these CPUs (comma-separated; "
                                     "worker i to the i-th, modulo)"),
                            cl::sub(runCmd), cl::cat(cat()));
cl::opt<int64_t> runCapacity(
    "capacity",
    cl::desc("KV-cache positions per sequence (prompt + generated; 0: the compiled --max-seq)"),
    cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runSpeculative(
    "speculative",
    cl::desc("prompt-lookup: propose the tokens that followed the latest earlier occurrence of "
             "the text's last n tokens and verify them in one pass (greedy output unchanged)"),
    cl::init(""), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runDraftTokens("draft-tokens",
                            cl::desc("--speculative: tokens proposed per step (default 4)"),
                            cl::init(4), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runNgram("ngram", cl::desc("--speculative prompt-lookup: the longest n-gram matched "
                                        "(default 3; down to 1)"),
                      cl::init(3), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runVerbose("v", cl::desc("Print timing to stderr"), cl::init(false),
                         cl::sub(runCmd), cl::cat(cat()));

// --- llmc inspect ------------------------------------------------------------
cl::opt<std::string> runDevice("device",
                               cl::desc("What runs a --target cuda artifact: its GPU (the "
                                        "default), or 'emulated' (the host emulation of CUDA)"),
                               cl::sub(runCmd), cl::cat(cat()));
cl::SubCommand inspectCmd("inspect", "Describe a compiled artifact (its manifest)");
cl::opt<std::string> inspectArtifact(cl::Positional, cl::desc("<model.llmc>"), cl::Required,
                                     cl::sub(inspectCmd), cl::cat(cat()));
cl::opt<bool> inspectJson("json", cl::desc("Print manifest.json as it is"), cl::init(false),
                          cl::sub(inspectCmd), cl::cat(cat()));
cl::opt<bool> inspectVerify(
    "verify",
    cl::desc("Check every file against the manifest: weights.bin tensor by tensor (their "
             "checksums), libmodel.so and tokenizer.json (sha256); exit 1 naming what differs"),
    cl::init(false), cl::sub(inspectCmd), cl::cat(cat()));

// --- llmc bench --------------------------------------------------------------
cl::SubCommand benchCmd("bench",
                        "Measure time to first token, time per output token, tokens/s and "
                        "the decode's share of this machine's memory bandwidth");
cl::opt<std::string> benchArtifact(cl::Positional, cl::desc("<model.llmc>"), cl::Required,
                                   cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchDevice("device",
                                 cl::desc("What runs a --target cuda artifact: its GPU (the "
                                          "default), or 'emulated'"),
                                 cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchPrompt("prompt-len", cl::desc("Prompt tokens (default 64)"), cl::init(64),
                         cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchGen("gen", cl::desc("Generated tokens (default 64)"), cl::init(64),
                      cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchRuns("runs", cl::desc("Runs; the median is reported (default 3)"),
                       cl::init(3), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchThreads("threads", cl::desc("Threads (0: one per hardware thread)"),
                          cl::init(0), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchCpus("cpus",
                              cl::desc("Pin the worker threads to these CPUs (comma-separated; "
                                       "worker i to the i-th, modulo)"),
                              cl::sub(benchCmd), cl::cat(cat()));
cl::opt<bool> benchJson("json", cl::desc("Print the results as JSON"), cl::init(false),
                        cl::sub(benchCmd), cl::cat(cat()));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "llmc") << message << "\n";
  return 1;
}

std::string joinInts(llvm::ArrayRef<int64_t> v) {
  return llvm::join(llvm::map_range(v, [](int64_t x) { return std::to_string(x); }), ",");
}

/// Runs `pipeline` (nested under the module, without builtin.module(...))
/// on `module`; the first error diagnostic becomes the message.
llvm::Error runPipeline(MLIRContext &ctx, ModuleOp module, llvm::StringRef pipeline) {
  std::string error;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && error.empty()) {
      std::string where;
      if (auto loc = dyn_cast<NameLoc>(d.getLocation()))
        where = loc.getName().str() + ": ";
      error = where + d.str();
    }
    return success();
  });
  PassManager pm(&ctx);
  std::string parseError;
  llvm::raw_string_ostream os(parseError);
  if (failed(parsePassPipeline(pipeline, pm, os)))
    return llvm::createStringError(parseError);
  if (failed(pm.run(module)))
    return llvm::createStringError(error.empty() ? "the pipeline failed" : error);
  return llvm::Error::success();
}

} // namespace

bool mlir::llmc::compileCommandGiven() { return bool(compileCmd); }
bool mlir::llmc::runCommandGiven() { return bool(runCmd); }
bool mlir::llmc::inspectCommandGiven() { return bool(inspectCmd); }
bool mlir::llmc::benchCommandGiven() { return bool(benchCmd); }

namespace {

/// The tokenizer (given, or tokenizer.json beside the model) checked by the
/// runtime's own reader, and the model's end-of-sequence ids from its
/// generation_config.json, genai_config.json or config.json.
llvm::Error findTokenizer(const CompileRequest &req, const CpuModel &model, ArtifactInfo &info,
                          llvm::raw_ostream *log) {
  llvm::SmallString<256> dir(req.input);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  std::string path = req.tokenizer;
  bool given = !path.empty();
  if (!given) {
    llvm::SmallString<256> beside(dir);
    llvm::sys::path::append(beside, "tokenizer.json");
    if (llvm::sys::fs::exists(beside))
      path = std::string(beside);
  }
  if (!path.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return llvm::createStringError("cannot read " + path + ": " + buf.getError().message());
    ::llmc::Tokenizer tok;
    std::string error;
    if (!tok.load((*buf)->getBuffer(), error)) {
      if (given)
        return llvm::createStringError(path + ": " + error);
      if (log)
        *log << "  warning: " << path << " left out: " << error << "\n";
    } else if (tok.vocabSize() > model.vocab) {
      std::string m = path + ": the tokenizer has " + std::to_string(tok.vocabSize()) +
                      " tokens, the model's vocabulary " + std::to_string(model.vocab);
      if (given)
        return llvm::createStringError(m);
      if (log)
        *log << "  warning: " << m << "; left out\n";
    } else {
      info.tokenizerJson = (*buf)->getBuffer().str();
      info.tokenizerInfo = llvm::json::Object{{"vocab_size", tok.vocabSize()}};
      if (log)
        *log << "  tokenizer: " << path << " (" << tok.vocabSize() << " tokens)\n";
    }
  }
  for (const char *name : {"generation_config.json", "genai_config.json", "config.json"}) {
    llvm::SmallString<256> file(dir);
    llvm::sys::path::append(file, name);
    auto buf = llvm::MemoryBuffer::getFile(file);
    if (!buf)
      continue;
    auto json = llvm::json::parse((*buf)->getBuffer());
    if (!json) {
      llvm::consumeError(json.takeError());
      continue;
    }
    const llvm::json::Object *o = json->getAsObject();
    if (o && o->getObject("model")) // genai_config.json
      o = o->getObject("model");
    const llvm::json::Value *eos = o ? o->get("eos_token_id") : nullptr;
    if (!eos)
      continue;
    if (auto id = eos->getAsInteger())
      info.stopTokens.push_back(*id);
    else if (const llvm::json::Array *ids = eos->getAsArray())
      for (const llvm::json::Value &v : *ids)
        if (auto id = v.getAsInteger())
          info.stopTokens.push_back(*id);
    break;
  }
  return llvm::Error::success();
}

} // namespace

namespace {

/// llmc-pipeline's options for --quant, --quant-skip and
/// --quant-activations (" quant-bits=4 ...").
std::string quantOptions(const CompileRequest &req, const QuantSpec &quant) {
  std::string o = " quant-bits=" + std::to_string(quant.bits) +
                  " quant-group=" + std::to_string(quant.group) +
                  " quant-asym=" + (quant.asymmetric ? "1" : "0") +
                  " quant-int8-activations=" + (req.quantActivations == "int8" ? "1" : "0");
  if (!req.quantSkip.empty())
    o += " quant-skip=" + llvm::join(req.quantSkip, ",");
  return o;
}

/// The accuracy gate: the float and the quantized pipeline (one prefill
/// bucket of --eval-seq-len) run by the reference executor on the
/// evaluation sequences.
llvm::Expected<QuantEvalReport> evaluateQuant(const CompileRequest &req, const ArtifactInfo &info,
                                              const QuantSpec &quant) {
  std::vector<std::vector<int64_t>> sequences;
  std::string file = req.evalIds.empty() ? req.evalText : req.evalIds;
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return llvm::createStringError("cannot read " + file + ": " + buf.getError().message());
  if (!req.evalIds.empty()) {
    auto ids = parseEvalIds((*buf)->getBuffer());
    if (!ids)
      return llvm::createStringError(file + ": " + llvm::toString(ids.takeError()));
    sequences = std::move(*ids);
  } else {
    if (info.tokenizerJson.empty())
      return llvm::createStringError("--eval-text needs the model's tokenizer.json (beside the "
                                     "model, or --tokenizer)");
    ::llmc::Tokenizer tok;
    std::string error;
    if (!tok.load(info.tokenizerJson, error))
      return llvm::createStringError(error);
    std::vector<int32_t> ids = tok.encode((*buf)->getBuffer().str(), /*addSpecial=*/false);
    sequences.emplace_back(ids.begin(), ids.end());
  }
  const int64_t length = req.evalSeqLen ? req.evalSeqLen : std::min<int64_t>(128, req.maxSeq);
  sequences = cutSequences(sequences, length, req.evalMaxSequences);
  if (sequences.empty())
    return llvm::createStringError(file + " holds no sequence of 2 or more tokens");
  std::string base = "llmc-pipeline{max-seq=" + std::to_string(req.maxSeq) +
                     " batch=1 prefill-buckets=" + std::to_string(length) +
                     " dtype=" + req.dtype;
  return evaluateQuantization(req.input, base + "}", base + quantOptions(req, quant) + "}",
                              sequences);
}

void printQuantEval(llvm::raw_ostream &os, const QuantEvalReport &r, llvm::StringRef scheme) {
  os << llvm::formatv("  accuracy of --quant {0} against the float model ({1} sequences, {2} "
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
  os << "    relative error each layer adds (worst first; all in the manifest):\n";
  for (size_t i = 0; i < std::min<size_t>(5, worst.size()); ++i)
    os << llvm::formatv("      {0:e2}  {1}\n", worst[i].relativeError, worst[i].name);
}

} // namespace

llvm::Expected<CpuModel> mlir::llmc::compileModel(MLIRContext &ctx, const CompileRequest &req,
                                                   llvm::raw_ostream *log) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  // On a terminal one status line is rewritten in place; otherwise each
  // stage is a log line.
  bool tty = log == &llvm::errs() && llvm::sys::Process::StandardErrIsDisplayed();
  auto stage = [&](llvm::StringRef what) {
    if (!log)
      return;
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (tty)
      *log << "\r\x1b[K" << llvm::formatv("[{0,6:f1}s] ", s) << what
           << (what == "done" ? "\n" : "");
    else
      *log << llvm::formatv("[{0,6:f1}s] ", s) << what << "\n";
    log->flush();
  };
  auto error = [](const llvm::Twine &m) { return llvm::createStringError(m.str()); };
  if (req.target != "cpu" && req.target != "cuda")
    return error("--target must be cpu or cuda, not '" + req.target + "'");
  std::vector<std::string> cudaArchs;
  if (req.target == "cuda" && req.cudaArch != "none") {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(req.cudaArch).split(parts, ',', -1, false);
    for (llvm::StringRef a : parts) {
      unsigned n = 0;
      if (!a.starts_with("sm_") || a.drop_front(3).getAsInteger(10, n) || n < 75 || n > 120)
        return error("--cuda-arch takes sm_<N> (75 to 120) separated by commas, or none; not '" +
                     a.str() + "'");
      cudaArchs.push_back(a.str());
    }
    if (cudaArchs.empty())
      return error("--cuda-arch lists no architecture (use none for the emulation only)");
  }
  if (req.maxSeq <= 0 || req.maxSeq > (int64_t(1) << 24))
    return error("--max-seq must be in [1, 16777216]");
  if (req.dtype != "f32" && req.dtype != "f16" && req.dtype != "bf16")
    return error("--dtype must be f32, f16 or bf16");
  std::string march = req.cpu == "avx2"     ? "x86-64-v3"
                      : req.cpu == "avx512" ? "x86-64-v4"
                      : req.cpu == "native" ? "native"
                                            : "";
  if (march.empty())
    return error("--cpu must be avx2, avx512 or native");
  std::optional<QuantSpec> quant;
  if (!req.quant.empty()) {
    auto q = parseQuantSpec(req.quant);
    if (!q)
      return q.takeError();
    quant = *q;
  } else if (!req.quantSkip.empty()) {
    return error("--quant-skip needs --quant");
  }
  if (req.quantActivations != "int8" && req.quantActivations != "f32")
    return error("--quant-activations must be int8 or f32");
  bool evaluate = !req.evalIds.empty() || !req.evalText.empty();
  if (evaluate && !quant)
    return error("--eval and --eval-text need --quant (they compare the quantized model with "
                 "the float one)");
  if (!req.evalIds.empty() && !req.evalText.empty())
    return error("give --eval or --eval-text, not both");
  if (req.maxKl >= 0 && !evaluate)
    return error("--max-kl needs --eval or --eval-text");
  if (evaluate && ((req.evalSeqLen != 0 && (req.evalSeqLen < 2 || req.evalSeqLen > req.maxSeq)) ||
                   req.evalMaxSequences < 1))
    return error("--eval-seq-len must be in [2, --max-seq] and --eval-max-sequences positive");
  for (const std::string &s : req.quantSkip)
    if (s.empty() || s.find_first_of("{} ,'\"") != std::string::npos)
      return error("--quant-skip names must be non-empty, without spaces, commas, braces or "
                   "quotes: '" + s + "'");
  std::vector<int64_t> batch = req.batch, buckets = req.buckets;
  if (batch.empty())
    batch = {1};
  if (!llvm::is_contained(batch, 1))
    return error("--batch must include 1 (sessions run one sequence)");
  if (buckets.empty())
    for (int64_t b : {16, 64, 256, 1024})
      if (b <= req.maxSeq)
        buckets.push_back(b);
  buckets.insert(buckets.end(), req.verifyBuckets.begin(), req.verifyBuckets.end());
  for (int64_t b : llvm::concat<int64_t>(batch, buckets))
    if (b <= 0)
      return error("--batch, --prefill-buckets and --verify-buckets take positive sizes");
  llvm::sort(buckets);
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  for (int64_t b : buckets)
    if (b > req.maxSeq)
      return error("prefill bucket " + std::to_string(b) + " exceeds --max-seq " +
                   std::to_string(req.maxSeq));

  stage("reading " + req.input);
  auto model = OnnxModel::loadFile(req.input);
  if (!model)
    return model.takeError();
  auto sourceSha = sha256File(req.input);
  if (!sourceSha)
    return sourceSha.takeError();
  stage("importing");
  auto module = importOnnxModel(ctx, **model);
  if (!module)
    return module.takeError();
  registerLLMCPasses();
  registerLLMCPipeline();
  stage("raising the transformer structure");
  if (llvm::Error e = runPipeline(ctx, **module,
                                  "func.func(llmc-canonicalize,llmc-raise-transformer)"))
    return error("compiling " + req.input + ": " + llvm::toString(std::move(e)));
  llvm::json::Object architecture;
  std::vector<std::string> unrecognized;
  if (auto main = (*module)->lookupSymbol<func::FuncOp>("main")) {
    TransformerStructure s = describeTransformer(main);
    for (const auto &u : s.unrecognized)
      unrecognized.push_back(u.op + (u.node.empty() ? "" : " (" + u.node + ")"));
    architecture["structure"] = s.summary();
    architecture["layers"] = int64_t(s.layers.size());
    llvm::json::Array unrec;
    for (const auto &u : s.unrecognized)
      unrec.push_back(u.op);
    architecture["unrecognized"] = std::move(unrec);
  }
  std::string pipeline = "llmc-pipeline{max-seq=" + std::to_string(req.maxSeq) +
                         " batch=" + joinInts(batch) + " prefill-buckets=" + joinInts(buckets) +
                         " dtype=" + req.dtype;
  if (quant)
    pipeline += quantOptions(req, *quant);
  pipeline += "}";
  stage("KV cache, buckets, flash attention, fusion, memory plan");
  if (llvm::Error e = runPipeline(ctx, **module, pipeline))
    return error("compiling " + req.input + ": " + llvm::toString(std::move(e)));
  // What did not take the fast path, said once, whatever the log level.
  std::vector<std::string> own = ownCacheInputs(**module);
  architecture["own_cache_io"] = llvm::json::Array(own);
  bool history = keepsTokenHistory(**module);
  architecture["token_history"] = history;
  if (log && !unrecognized.empty())
    llvm::WithColor::warning(*log, "llmc")
        << unrecognized.size()
        << " operation(s) not recognised compile through the reference kernels (slower): "
        << llvm::join(unrecognized, ", ") << "\n";
  if (log && !own.empty())
    llvm::WithColor::warning(*log, "llmc")
        << "no recognised attention reads " << llvm::join(own, ", ")
        << ": the model keeps its own past/present IO for them\n";
  if (log && history)
    llvm::WithColor::warning(*log, "llmc")
        << "no recognised attention and no cache inputs/outputs of the model's own: every "
           "step runs the model over all the tokens so far\n";
  llvm::json::Object memory, perEntry;
  for (auto f : (*module)->getOps<func::FuncOp>()) {
    auto plan = f->getAttrOfType<DictionaryAttr>("llm.memory_plan");
    if (!plan)
      continue;
    auto get = [&](llvm::StringRef key) {
      auto a = plan.getAs<IntegerAttr>(key);
      return a ? a.getInt() : int64_t(-1);
    };
    perEntry[f.getSymName()] = llvm::json::Object{{"arena_bytes", get("arena")},
                                                  {"activation_bytes", get("activations")}};
    if (auto k = f->getAttrOfType<IntegerAttr>("llm.kernels"); k && f.getSymName() == "decode_b1")
      architecture["decode_kernels_per_step"] = k.getInt();
  }
  memory["entries"] = std::move(perEntry);
  stage(req.target == "cuda" ? "emitting CUDA C++" : "emitting C++");
  auto cpuModel = req.target == "cuda" ? emitCudaModel(**module, LLMC_VERSION)
                                       : emitCpuModel(**module, LLMC_VERSION);
  if (!cpuModel)
    return error("compiling " + req.input + ": " + llvm::toString(cpuModel.takeError()));

  ArtifactInfo info;
  info.llmcVersion = LLMC_VERSION;
  info.sourceName = llvm::sys::path::filename(req.input).str();
  info.sourceSha256 = *sourceSha;
  info.options = llvm::json::Object{{"target", req.target},
                                    {"max_seq", req.maxSeq},
                                    {"batch", llvm::json::Array(batch)},
                                    {"prefill_buckets", llvm::json::Array(buckets)},
                                    {"dtype", req.dtype},
                                    {"cpu", req.cpu}};
  if (quant)
    info.options["quant"] = llvm::json::Object{{"scheme", req.quant},
                                               {"skip", llvm::json::Array(req.quantSkip)},
                                               {"activations", req.quantActivations}};
  info.architecture = std::move(architecture);
  info.memory = std::move(memory);
  info.cpu = march;
  info.cxx = req.cxx;
  info.cudaArchs = cudaArchs;
  info.nvcc = req.nvcc;
  if (req.target == "cuda")
    info.options["cuda_arch"] = req.cudaArch;
  info.emitSource = req.emitSource;
  if (llvm::Error e = findTokenizer(req, *cpuModel, info, log))
    return std::move(e);
  if (evaluate) {
    stage("evaluating the quantization (float and quantized model, reference executor)");
    auto report = evaluateQuant(req, info, *quant);
    if (!report)
      return error("--eval: " + llvm::toString(report.takeError()));
    if (log)
      printQuantEval(*log, *report, req.quant);
    info.quantEval = report->toJson();
    if (req.maxKl >= 0 && report->meanKl > req.maxKl)
      return error(llvm::formatv("the quantized model's mean KL divergence {0:e2} exceeds "
                                 "--max-kl {1:e2}: no artifact written",
                                 report->meanKl, req.maxKl)
                       .str());
  }
  stage("building " + req.output +
        (req.target == "cuda" ? " (the CUDA libraries)" : " (libmodel.so with the host C++ compiler)"));
  if (llvm::Error e = writeArtifact(*cpuModel, info, req.output, tty ? nullptr : log)) {
    if (tty)
      *log << "\n";
    return std::move(e);
  }
  stage("done");
  return cpuModel;
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

int mlir::llmc::runCompile(MLIRContext &ctx) {
  if (!compileEmit.empty() && compileEmit != "source")
    return fail("--emit takes 'source'");
  CompileRequest req;
  req.input = compileInput;
  req.output = compileOutput;
  req.target = compileTarget;
  req.cudaArch = compileCudaArch;
  req.nvcc = compileNvcc;
  req.maxSeq = compileMaxSeq;
  req.batch.assign(compileBatch.begin(), compileBatch.end());
  req.buckets.assign(compileBuckets.begin(), compileBuckets.end());
  req.verifyBuckets.assign(compileVerifyBuckets.begin(), compileVerifyBuckets.end());
  req.dtype = compileDtype;
  req.cpu = compileCpu;
  req.cxx = compileCxx;
  req.emitSource = compileEmit == "source";
  req.tokenizer = compileTokenizer;
  req.quant = compileQuant;
  req.quantSkip.assign(compileQuantSkip.begin(), compileQuantSkip.end());
  req.quantActivations = compileQuantActs;
  req.evalIds = compileEval;
  req.evalText = compileEvalText;
  req.evalSeqLen = compileEvalLen;
  req.evalMaxSequences = compileEvalMax;
  req.maxKl = compileMaxKl;
  auto cpuModel = compileModel(ctx, req, &llvm::errs());
  if (!cpuModel)
    return fail(llvm::toString(cpuModel.takeError()));
  if (compileStats) {
    llvm::raw_ostream &os = llvm::outs();
    os << "entry points:\n";
    for (const CpuModel::Entry &e : cpuModel->entries)
      os << llvm::formatv("  {0,-18} {1} kernels ({2} fused regions, {3} other kernel calls, "
                          "{4} cache updates; {5} views)\n",
                          e.name, e.fusedRegions + e.kernelCalls + e.cacheUpdates,
                          e.fusedRegions, e.kernelCalls, e.cacheUpdates, e.views);
    os << "weights:   " << cpuModel->weights.size() << " bytes in " << cpuModel->numWeights
       << " tensors\n";
    int64_t kv = 0;
    for (const CpuModel::Cache &c : cpuModel->caches)
      kv += c.heads * c.capacity * c.headDim * (c.dtype == 1 ? 4 : 2);
    os << "KV cache:  " << kv << " bytes per sequence (" << cpuModel->caches.size()
       << " caches, capacity " << compileMaxSeq << ")\n";
  }
  return 0;
}

namespace {

llvm::Expected<std::vector<int32_t>> parseIds(llvm::StringRef text, llvm::StringRef what) {
  std::vector<int32_t> ids;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v < INT32_MIN || v > INT32_MAX)
      return llvm::createStringError(what.str() + ": '" + p.str() + "' is not a token id");
    ids.push_back(int32_t(v));
  }
  return ids;
}

/// --cpus into the session options (`cpus` keeps the numbers).
llvm::Error takeCpus(llvm::StringRef text, std::vector<int32_t> &cpus, llmc_session_options &so) {
  if (text.empty())
    return llvm::Error::success();
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int32_t v;
    if (p.trim().getAsInteger(10, v) || v < 0)
      return llvm::createStringError("--cpus: '" + p.str() + "' is not a CPU number");
    cpus.push_back(v);
  }
  if (cpus.empty())
    return llvm::createStringError("--cpus lists no CPU");
  so.cpus = cpus.data();
  so.num_cpus = int32_t(cpus.size());
  return llvm::Error::success();
}

/// What --stream prints as tokens come: ids, or the text they add (held
/// back while it ends inside a UTF-8 sequence).
struct Stream {
  llmc_model *model = nullptr;
  bool text = false;
  std::vector<int32_t> ids;
  size_t printed = 0; // bytes of text already out
  size_t holdBack = 0; // bytes a stop string could still claim (its length - 1)
};

/// `text` up to the first occurrence of any --stop string.
llvm::StringRef beforeStop(llvm::StringRef text) {
  size_t cut = text.size();
  for (const std::string &s : runStopText)
    cut = std::min(cut, text.find(s));
  return text.take_front(cut);
}

int streamToken(int32_t token, void *user) {
  auto *st = static_cast<Stream *>(user);
  st->ids.push_back(token);
  if (!st->text) {
    llvm::outs() << (st->ids.size() > 1 ? "," : "") << token;
    llvm::outs().flush();
    return 0;
  }
  size_t len = 0;
  std::string buf(256, '\0');
  while (llmc_detokenize(st->model, st->ids.data(), st->ids.size(), buf.data(), buf.size(),
                         &len) != LLMC_OK &&
         len + 1 > buf.size())
    buf.resize(len + 1);
  buf.resize(len);
  // Hold back a trailing replacement character: the next token may
  // complete the sequence; and what a stop string may yet turn out to hold.
  size_t upto = beforeStop(buf).size();
  if (upto == buf.size())
    upto = buf.size() > st->holdBack ? buf.size() - st->holdBack : 0;
  if (upto >= 3 && buf.compare(upto - 3, 3, "\xef\xbf\xbd") == 0)
    upto -= 3;
  if (upto > st->printed) {
    llvm::outs() << llvm::StringRef(buf).slice(st->printed, upto);
    llvm::outs().flush();
    st->printed = upto;
  }
  return 0;
}

std::string detokenize(llmc_model *model, const std::vector<int32_t> &ids) {
  size_t len = 0;
  std::string buf(1024, '\0');
  while (llmc_detokenize(model, ids.data(), ids.size(), buf.data(), buf.size(), &len) !=
             LLMC_OK &&
         len + 1 > buf.size())
    buf.resize(len + 1);
  buf.resize(len);
  return buf;
}

/// The sampling and stop parameters `llmc run` was given.
/// The --stop strings as the C API takes them.
std::vector<const char *> stopStrings() {
  std::vector<const char *> out;
  for (const std::string &s : runStopText)
    out.push_back(s.c_str());
  return out;
}

llmc_generate_params generateParams(const std::vector<int32_t> &stop,
                                    const std::vector<const char *> &stopText) {
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = runMaxNew;
  p.temperature = runTemperature;
  p.top_k = runTopK;
  p.top_p = runTopP;
  p.min_p = runMinP;
  p.repetition_penalty = runRepPenalty;
  p.seed = runSeed;
  p.stop_tokens = stop.data();
  p.num_stop_tokens = stop.size();
  p.stop_strings = stopText.data();
  p.num_stop_strings = stopText.size();
  if (runSpeculative == "prompt-lookup")
    p.speculative = LLMC_SPECULATIVE_PROMPT_LOOKUP;
  p.draft_tokens = runDraftTokens;
  p.ngram_max = runNgram;
  return p;
}

} // namespace

/// llmc run --ids "A;B;...": the sequences side by side in one batched
/// session (equal lengths, a compiled batch size); one line of ids each.
static int runBatch(llmc_model *model, const std::vector<int32_t> &stop) {
  llvm::SmallVector<llvm::StringRef> rows;
  llvm::StringRef(runIds).split(rows, ';', -1, false);
  std::vector<int32_t> prompts;
  size_t length = 0;
  for (llvm::StringRef row : rows) {
    auto ids = parseIds(row, "--ids");
    if (!ids)
      return fail(llvm::toString(ids.takeError()));
    if (length && ids->size() != length)
      return fail("--ids: the sequences of a batch must have one length (" +
                  std::to_string(length) + " and " + std::to_string(ids->size()) + ")");
    length = ids->size();
    prompts.insert(prompts.end(), ids->begin(), ids->end());
  }
  if (length == 0)
    return fail("--ids is empty");
  if (runStream || (!runFormat.empty() && runFormat != "ids"))
    return fail("a batch (--ids with ';') prints ids, without --stream");
  llmc_session_options so{runThreads, int32_t(rows.size()), runCapacity, nullptr, 0};
  std::vector<int32_t> cpus;
  if (llvm::Error e = takeCpus(runCpus, cpus, so))
    return fail(llvm::toString(std::move(e)));
  llmc_session *session = nullptr;
  if (llmc_session_create(model, &so, &session) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  std::vector<const char *> stopText = stopStrings();
  llmc_generate_params p = generateParams(stop, stopText);
  size_t capacity = size_t(std::max(runMaxNew.getValue(), 1));
  std::vector<int32_t> out(rows.size() * capacity);
  std::vector<size_t> counts(rows.size());
  llmc_generate_stats stats;
  if (llmc_generate_batch(session, prompts.data(), length, &p, out.data(), capacity,
                          counts.data(), &stats) != LLMC_OK)
    return fail(llmc_last_error());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < counts[r]; ++i)
      llvm::outs() << (i ? "," : "") << out[r * capacity + i];
    llvm::outs() << "\n";
  }
  llvm::outs().flush();
  if (runVerbose)
    llvm::errs() << llvm::formatv("batch {0}: time to first token {1:f2} ms, {2:f2} ms per step, "
                                  "{3:f1} tokens/s\n",
                                  rows.size(), stats.time_to_first_token_ms,
                                  stats.time_per_output_token_ms, stats.tokens_per_second);
  return 0;
}

int mlir::llmc::runRun() {
  if (runIds.empty() == runPrompt.empty())
    return fail("give the prompt with exactly one of --ids and --prompt");
  std::string format = runFormat;
  if (format.empty())
    format = runPrompt.empty() ? "ids" : "text";
  if (format != "ids" && format != "text")
    return fail("--format must be ids or text");
  std::vector<int32_t> stop;
  bool stopGiven = !runStop.empty();
  if (stopGiven) {
    auto s = parseIds(runStop, "--stop-ids");
    if (!s)
      return fail(llvm::toString(s.takeError()));
    stop = *s;
  }
  if (runMaxNew < 0)
    return fail("--max-new-tokens must be >= 0");
  if (!runSpeculative.empty() && runSpeculative != "prompt-lookup")
    return fail("--speculative takes prompt-lookup, not '" + runSpeculative + "'");
  llmc_model *model = nullptr;
  llmc_load_options loadOptions{};
  loadOptions.device = runDevice.c_str();
  if (llmc_model_load(runArtifact.c_str(), &loadOptions, &model) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeModel = llvm::make_scope_exit([&] { llmc_model_free(model); });
  if ((format == "text" || !runPrompt.empty()) && !llmc_model_has_tokenizer(model))
    return fail(runArtifact + " has no tokenizer: compile with --tokenizer, or use --ids and "
                              "--format ids");
  // Several sequences ("1,2,3;4,5,6"): one batched session.
  if (llvm::StringRef(runIds).contains(';'))
    return runBatch(model, stop);
  std::vector<int32_t> prompt;
  if (!runPrompt.empty()) {
    size_t count = 0;
    (void)llmc_tokenize(model, runPrompt.data(), runPrompt.size(), 1, nullptr, 0, &count);
    prompt.resize(count);
    if (llmc_tokenize(model, runPrompt.data(), runPrompt.size(), 1, prompt.data(), prompt.size(),
                      &count) != LLMC_OK)
      return fail(llmc_last_error());
  } else {
    auto ids = parseIds(runIds, "--ids");
    if (!ids)
      return fail(llvm::toString(ids.takeError()));
    prompt = *ids;
  }
  if (prompt.empty())
    return fail("the prompt has no tokens");
  if (!stopGiven && !runIgnoreEos) {
    size_t count = 0;
    (void)llmc_model_stop_tokens(model, nullptr, 0, &count);
    stop.resize(count);
    (void)llmc_model_stop_tokens(model, stop.data(), stop.size(), &count);
  }
  llmc_session_options so{runThreads, 1, runCapacity, nullptr, 0};
  std::vector<int32_t> cpus;
  if (llvm::Error e = takeCpus(runCpus, cpus, so))
    return fail(llvm::toString(std::move(e)));
  llmc_session *session = nullptr;
  if (llmc_session_create(model, &so, &session) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  std::vector<const char *> stopText = stopStrings();
  llmc_generate_params p = generateParams(stop, stopText);
  std::vector<int32_t> out(size_t(std::max(runMaxNew.getValue(), 1)));
  size_t count = 0;
  llmc_generate_stats stats;
  Stream st;
  st.model = model;
  st.text = format == "text";
  for (const std::string &s : runStopText)
    st.holdBack = std::max(st.holdBack, s.size() - 1);
  if (llmc_generate(session, prompt.data(), prompt.size(), &p, runStream ? streamToken : nullptr,
                    &st, out.data(), out.size(), &count, &stats) != LLMC_OK)
    return fail(llmc_last_error());
  out.resize(count);
  if (!runStream) {
    if (format == "text")
      llvm::outs() << beforeStop(detokenize(model, out));
    else
      for (size_t i = 0; i < out.size(); ++i)
        llvm::outs() << (i ? "," : "") << out[i];
  } else if (st.text) {
    std::string all = detokenize(model, out);
    llvm::StringRef shown = beforeStop(all);
    if (shown.size() > st.printed)
      llvm::outs() << shown.drop_front(st.printed);
  }
  llvm::outs() << "\n";
  llvm::outs().flush();
  // Fewer tokens than asked without a stop token: the KV cache filled up.
  if (count < size_t(runMaxNew) && llmc_session_length(session) >= llmc_session_capacity(session))
    llvm::errs() << llvm::formatv("llmc: note: generation stopped after {0} tokens: the KV cache "
                                  "holds {1} positions (llmc run --capacity, llmc compile "
                                  "--max-seq)\n",
                                  count, llmc_session_capacity(session));
  if (runVerbose) {
    llvm::errs() << llvm::formatv("prompt {0} tokens, generated {1}; time to first token {2:f2} "
                                  "ms, {3:f2} ms per token, {4:f1} tokens/s\n",
                                  stats.prompt_tokens, stats.generated_tokens,
                                  stats.time_to_first_token_ms, stats.time_per_output_token_ms,
                                  stats.tokens_per_second);
    if (stats.verify_steps)
      llvm::errs() << llvm::formatv(
          "speculative: {0} verification passes, {1} of {2} proposed tokens accepted ({3:f1}%), "
          "{4:f2} tokens per pass\n",
          stats.verify_steps, stats.accepted_tokens, stats.draft_tokens,
          100.0 * double(stats.accepted_tokens) / double(std::max<int64_t>(stats.draft_tokens, 1)),
          double(stats.accepted_tokens + stats.verify_steps) / double(stats.verify_steps));
  }
  return 0;
}

namespace {

/// llmc inspect --verify: every file of the artifact against manifest.json,
/// with the runtime's own checks of weights.bin.
int verifyArtifact(llvm::StringRef dir, llvm::StringRef manifestText) {
  ::llmc::json::Value manifest;
  std::string error;
  if (!::llmc::json::parse(std::string_view(manifestText.data(), manifestText.size()), manifest,
                           error))
    return fail(dir + "/manifest.json: " + error);
  auto file = [&](llvm::StringRef name) { return (dir + "/" + name).str(); };
  auto shaOf = [&](const char *key) {
    const ::llmc::json::Value *o = manifest.get(key);
    return o && o->get("sha256") ? o->get("sha256")->asString() : std::string();
  };
  // The libraries and tokenizer.json (those there are): their sha256. A
  // cuda artifact built without nvcc has only the emulation's library.
  const ::llmc::json::Value *lib = manifest.get("library"),
                            *emu = manifest.get("emulated_library");
  auto isObject = [](const ::llmc::json::Value *o) {
    return o && o->kind == ::llmc::json::Value::Object;
  };
  if (!isObject(lib) && !isObject(emu))
    return fail(dir + "/manifest.json: no library");
  for (auto [key, name] : {std::pair{"library", "libmodel.so"},
                           {"emulated_library", "libmodel-emulated.so"},
                           {"tokenizer", "tokenizer.json"}}) {
    const ::llmc::json::Value *o = manifest.get(key);
    if (!isObject(o))
      continue;
    auto sha = sha256File(file(name));
    if (!sha)
      return fail(llvm::toString(sha.takeError()));
    if (*sha != shaOf(key))
      return fail(file(name) + " does not match manifest.json (sha256 " + *sha + ", expected " +
                  shaOf(key) + ")");
    llvm::outs() << llvm::formatv("{0,-15} sha256 matches\n", name);
  }
  const ::llmc::json::Value *weights = manifest.get("weights");
  if (!weights || weights->kind != ::llmc::json::Value::Object)
    return fail(dir + "/manifest.json: no weights");
  auto buf = llvm::MemoryBuffer::getFile(file("weights.bin"), /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read " + file("weights.bin") + ": " + buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  std::vector<::llmc::WeightRange> table;
  if (!::llmc::readWeightTable(*weights, bytes.size(), table, error) ||
      !::llmc::checkWeights(table, bytes.data(), error))
    return fail(dir + "/" + error);
  llvm::outs() << llvm::formatv("{0,-15} {1} bytes in {2} checksummed ranges, all match\n",
                                "weights.bin", bytes.size(), table.size());
  return 0;
}

} // namespace

int mlir::llmc::runInspect() {
  llvm::SmallString<256> path(inspectArtifact);
  llvm::sys::path::append(path, "manifest.json");
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail("cannot read " + path.str() + ": " + buf.getError().message());
  if (inspectJson) {
    llvm::outs() << (*buf)->getBuffer();
    return 0;
  }
  if (inspectVerify)
    return verifyArtifact(inspectArtifact, (*buf)->getBuffer());
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json)
    return fail(path.str() + ": " + llvm::toString(json.takeError()));
  const llvm::json::Object *m = json->getAsObject();
  if (!m)
    return fail(path.str() + ": not a JSON object");
  llvm::raw_ostream &os = llvm::outs();
  auto str = [](const llvm::json::Object *o, llvm::StringRef k) {
    return o ? o->getString(k).value_or("").str() : std::string();
  };
  auto num = [](const llvm::json::Object *o, llvm::StringRef k) {
    return o ? o->getInteger(k).value_or(-1) : int64_t(-1);
  };
  const llvm::json::Object *src = m->getObject("source"), *arch = m->getObject("architecture"),
                           *w = m->getObject("weights"), *mem = m->getObject("memory"),
                           *target = m->getObject("target");
  os << "artifact:     " << inspectArtifact << " (format " << num(m, "format_version")
     << ", llmc " << str(m, "llmc_version") << ")\n";
  os << "source:       " << str(src, "file") << " (sha256 " << str(src, "sha256") << ")\n";
  os << "target:       " << str(target, "kind") << " -march=" << str(target, "march") << "\n";
  os << "structure:    " << str(arch, "structure") << "\n";
  if (num(arch, "decode_kernels_per_step") >= 0)
    os << "decode step:  " << num(arch, "decode_kernels_per_step") << " kernels (fusion plan)\n";
  os << "vocab:        " << num(m, "vocab") << "\n";
  os << "weights:      " << num(w, "bytes") << " bytes, " << num(w, "tensors") << " tensors\n";
  const llvm::json::Object *quant = m->getObject("quantization");
  if (quant && !quant->empty()) { // an unquantized model's is {}
    // One line per scheme, then the total against float weights.
    std::map<std::string, int64_t> schemes;
    int64_t layers = 0;
    if (const llvm::json::Array *ls = quant->getArray("layers"))
      for (const llvm::json::Value &v : *ls) {
        const llvm::json::Object *l = v.getAsObject();
        if (!l)
          continue;
        std::string scheme = llvm::formatv("int{0} {1}{2}, {3} activations", num(l, "bits"),
                                           llvm::formatv("groups of {0}", num(l, "group_size")).str(),
                                           l->getBoolean("zero_points").value_or(false)
                                               ? " with zero points" : " symmetric",
                                           l->getBoolean("int8_activations").value_or(false)
                                               ? "int8" : "f32")
                                 .str();
        ++schemes[scheme], ++layers;
      }
    double mib = 1024.0 * 1024.0, stored = double(num(quant, "bytes")),
           asFloat = double(num(quant, "float_bytes"));
    os << llvm::formatv("quantized:    {0} linear layers, {1:f2} MiB instead of {2:f2} MiB as "
                        "float (saves {3:f2} MiB, {4:f0}%)\n",
                        layers, stored / mib, asFloat / mib, (asFloat - stored) / mib,
                        asFloat > 0 ? 100.0 * (asFloat - stored) / asFloat : 0.0);
    for (const auto &[scheme, count] : schemes)
      os << "              " << count << " x " << scheme << "\n";
  }
  bool flexible = mem && mem->getBoolean("kv_cache_capacity_flexible").value_or(false);
  os << "activations:  " << num(mem, "arena_bytes")
     << " bytes per session (one arena, allocated with the session: the largest entry's; no "
        "allocation while generating)\n";
  os << "KV cache:     " << num(mem, "kv_cache_bytes_per_sequence")
     << " bytes per sequence at the compiled capacity"
     << (flexible ? " (a session may choose fewer positions)\n"
                  : " (fixed: the code reads the caches with that shape)\n");
  os << "entries:\n";
  if (const llvm::json::Array *entries = m->getArray("entries"))
    for (const llvm::json::Value &v : *entries) {
      const llvm::json::Object *e = v.getAsObject();
      const llvm::json::Object *entryMem =
          mem && mem->getObject("entries") ? mem->getObject("entries")->getObject(str(e, "name"))
                                           : nullptr;
      const llvm::json::Object *code = e ? e->getObject("code") : nullptr;
      int64_t calls = num(code, "kernel_calls") + num(code, "fused_regions") +
                      num(code, "cache_updates");
      os << llvm::formatv("  {0,-18} batch {1}, seq {2}, {3} kernel calls, arena {4} bytes\n",
                          str(e, "name"), num(e, "batch"), num(e, "seq"), calls,
                          num(entryMem, "arena_bytes"));
    }
  return 0;
}

namespace {

/// A way of reading memory for the bandwidth probe: `streams` interleaved
/// sequential streams per thread (blocks of streams x `chunk` bytes, read
/// in lockstep a line at a time, as the packed GEMV reads its panels), with
/// a software prefetch `prefetch` bytes ahead (0: none).
struct ReadPattern {
  int streams;
  size_t chunk;
  int prefetch;
};
constexpr ReadPattern kReadPatterns[] = {{1, 65536, 0}, {1, 65536, 4096}, {2, 49152, 4096},
                                         {4, 8192, 4096}, {2, 49152, 0}};

/// Sums the 64-bit words of bytes [b, e) of `p` (a multiple of 64 bytes is
/// read; the pattern's leftover tail is summed plainly) with AVX2 loads.
__attribute__((target("avx2"))) uint64_t sumAvx2(const char *p, size_t b, size_t e,
                                                 const ReadPattern &r) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  size_t block = size_t(r.streams) * r.chunk, at = b;
  for (; at + block <= e; at += block)
    for (size_t o = 0; o < r.chunk; o += 64)
      for (int s = 0; s < r.streams; ++s) {
        const char *q = p + at + size_t(s) * r.chunk + o;
        if (r.prefetch)
          _mm_prefetch(q + r.prefetch, _MM_HINT_T0);
        a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)));
        a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q + 32)));
      }
  uint64_t lanes[4], total = 0;
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(lanes), _mm256_add_epi64(a0, a1));
  for (; at + 8 <= e; at += 8) {
    uint64_t w;
    std::memcpy(&w, p + at, sizeof w);
    total += w;
  }
  return total + lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

/// The same with AVX-512 loads (a little faster on some machines). (GCC 12
/// warns of its own headers' undefined-value idiom in the reduction.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) uint64_t sumAvx512(const char *p, size_t b, size_t e,
                                                      const ReadPattern &r) {
  __m512i a0 = _mm512_setzero_si512();
  size_t block = size_t(r.streams) * r.chunk, at = b;
  for (; at + block <= e; at += block)
    for (size_t o = 0; o < r.chunk; o += 64)
      for (int s = 0; s < r.streams; ++s) {
        const char *q = p + at + size_t(s) * r.chunk + o;
        if (r.prefetch)
          _mm_prefetch(q + r.prefetch, _MM_HINT_T0);
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(q));
      }
  uint64_t total = uint64_t(_mm512_reduce_add_epi64(a0));
  for (; at + 8 <= e; at += 8) {
    uint64_t w;
    std::memcpy(&w, p + at, sizeof w);
    total += w;
  }
  return total;
}

#pragma GCC diagnostic pop

uint64_t sumScalar(const uint64_t *p, size_t b, size_t e) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = b; i + 4 <= e; i += 4)
    a0 += p[i], a1 += p[i + 1], a2 += p[i + 2], a3 += p[i + 3];
  return a0 + a1 + a2 + a3;
}

/// Fused multiply-adds on 12 independent vectors (enough in flight for two
/// FMA units of 4-cycle latency), `iterations` times: 12 x 8 x 2 FLOPs each
/// with AVX2, 12 x 16 x 2 with AVX-512. Returns a value that depends on
/// every result, so nothing is optimised away.
__attribute__((target("avx2,fma"))) float fmaAvx2(int64_t iterations, float seed) {
  __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm256_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm256_fmadd_ps(a[i], m, c);
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, a[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[7];
}
__attribute__((target("avx512f"))) float fmaAvx512(int64_t iterations, float seed) {
  __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm512_add_ps(s, a[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  return lanes[0] + lanes[15];
}

/// This machine's peak f32 FMA rate (FLOP/s) with `threads` threads, in
/// the widest vectors of the artifact's code (`avx512` for x86-64-v4): the
/// best of three timed passes of every thread running fmaAvx2/fmaAvx512.
/// 0 without AVX2 and FMA.
double measurePeakFlops(unsigned threads, bool avx512) {
  avx512 = avx512 && __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return 0;
  const int64_t iterations = 4 << 20;
  const double perThread = double(iterations) * 12 * (avx512 ? 16 : 8) * 2;
  std::vector<float> sinks(threads);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        sinks[t] = avx512 ? fmaAvx512(iterations, float(t)) : fmaAvx2(iterations, float(t));
      });
    for (std::thread &t : pool)
      t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, perThread * threads / s);
  }
  volatile float sink = 0;
  for (float v : sinks)
    sink = sink + v;
  return best;
}

/// Read bandwidth of this machine (bytes/s) with `threads` threads over a
/// buffer of `bytes` (the decode step's working set, so caches help both
/// alike): the best of two passes of each read pattern (with AVX2 loads, and
/// AVX-512 ones where the CPU has them), each thread summing its own part.
/// (Which pattern reads fastest differs between machines; on the
/// development VM one sequential stream without prefetch is 20-25% short of
/// four streams with it.)
double measureReadBandwidth(unsigned threads, size_t bytes) {
  const size_t words = bytes / sizeof(uint64_t);
  std::vector<uint64_t> buffer(words);
  for (size_t i = 0; i < words; i += 512)
    buffer[i] = i; // touch every page
  bool avx2 = __builtin_cpu_supports("avx2"), avx512 = __builtin_cpu_supports("avx512f");
  double best = 0;
  std::vector<uint64_t> sinks(threads);
  const char *base = reinterpret_cast<const char *>(buffer.data());
  for (int pass = 0; pass < (avx512 ? 4 : 2); ++pass)
    for (const ReadPattern &r : kReadPatterns) {
      bool wide = avx512 && pass % 2 == 1;
      auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          size_t b = words * t / threads, e = words * (t + 1) / threads;
          sinks[t] = wide   ? sumAvx512(base, b * 8, e * 8, r)
                     : avx2 ? sumAvx2(base, b * 8, e * 8, r)
                            : sumScalar(buffer.data(), b, e);
        });
      for (std::thread &th : pool)
        th.join();
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, double(words * sizeof(uint64_t)) / seconds);
    }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int mlir::llmc::runBench() {
  if (benchPrompt < 1 || benchGen < 2 || benchRuns < 1)
    return fail("--prompt-len must be >= 1, --gen >= 2 and --runs >= 1");
  llvm::SmallString<256> manifestPath(benchArtifact);
  llvm::sys::path::append(manifestPath, "manifest.json");
  auto buf = llvm::MemoryBuffer::getFile(manifestPath);
  if (!buf)
    return fail("cannot read " + manifestPath.str() + ": " + buf.getError().message());
  auto manifest = llvm::json::parse((*buf)->getBuffer());
  if (!manifest || !manifest->getAsObject())
    return fail(manifestPath.str() + ": not a JSON object");
  const llvm::json::Object &m = *manifest->getAsObject();
  int64_t decodeWeightBytes = -1;
  // The prefill bucket the prompt runs through (the smallest of batch 1
  // that takes it whole) and its linear layers' FLOPs, for the prefill's
  // share of the peak FMA rate (CPU artifacts).
  int64_t prefillSeq = 0, prefillFlops = 0;
  if (const llvm::json::Array *entries = m.getArray("entries"))
    for (const llvm::json::Value &v : *entries) {
      const llvm::json::Object *e = v.getAsObject();
      if (!e)
        continue;
      if (e->getString("name") == llvm::StringRef("decode_b1"))
        decodeWeightBytes = e->getInteger("weight_bytes_read").value_or(-1);
      int64_t seq = e->getInteger("seq").value_or(0);
      if (e->getString("kind") == llvm::StringRef("prefill") &&
          e->getInteger("batch").value_or(0) == 1 && seq >= benchPrompt &&
          (!prefillSeq || seq < prefillSeq) && e->getInteger("linear_flops"))
        prefillSeq = seq,
        prefillFlops = *e->getInteger("linear_flops") +
                       e->getInteger("logits_flops_per_row").value_or(0);
    }
  const llvm::json::Object *target = m.getObject("target");
  bool cpuTarget = target && target->getString("kind") == llvm::StringRef("cpu");
  bool wide = target && (target->getString("march") == llvm::StringRef("x86-64-v4") ||
                         target->getString("march") == llvm::StringRef("native"));
  if (decodeWeightBytes < 0)
    return fail(manifestPath.str() + " has no decode_b1 entry with weight_bytes_read");

  llmc_model *model = nullptr;
  llmc_load_options loadOptions{};
  loadOptions.device = benchDevice.c_str();
  if (llmc_model_load(benchArtifact.c_str(), &loadOptions, &model) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeModel = llvm::make_scope_exit([&] { llmc_model_free(model); });
  llmc_model_info info;
  (void)llmc_model_get_info(model, &info);
  if (benchPrompt + benchGen > info.capacity)
    return fail("--prompt-len + --gen exceed the artifact's capacity " +
                std::to_string(info.capacity));
  llmc_session_options so{benchThreads, 0, 0, nullptr, 0};
  std::vector<int32_t> cpus;
  if (llvm::Error e = takeCpus(benchCpus, cpus, so))
    return fail(llvm::toString(std::move(e)));
  llmc_session *session = nullptr;
  if (llmc_session_create(model, &so, &session) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  unsigned threads = benchThreads > 0 ? unsigned(benchThreads)
                                      : std::max(1u, std::thread::hardware_concurrency());

  // A fixed pseudo-random prompt inside the vocabulary.
  std::vector<int32_t> prompt(size_t(benchPrompt.getValue()));
  uint64_t x = 88172645463325252ull;
  for (int32_t &t : prompt) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t = int32_t(x % uint64_t(info.vocab));
  }
  std::vector<int32_t> out(size_t(benchGen.getValue()));
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = benchGen;
  std::vector<double> ttft, tpot, total;
  // Bytes a decode step reads: its weights, and the cache rows of the
  // context (on average halfway through the generation). The machine's
  // bandwidth is measured before and after the runs (shared machines
  // vary); the larger counts.
  double context = double(benchPrompt) + double(benchGen) / 2;
  double kvBytes = double(info.kv_cache_bytes) / double(info.capacity) * context;
  double bytesPerToken = double(decodeWeightBytes) + kvBytes;
  size_t probe = std::max<size_t>(size_t(256) << 20, size_t(bytesPerToken));
  double bandwidth = measureReadBandwidth(threads, probe);
  // One warm-up run (page in the weights), then the measured runs.
  for (int run = 0; run <= benchRuns; ++run) {
    size_t count = 0;
    llmc_generate_stats st;
    if (llmc_generate(session, prompt.data(), prompt.size(), &p, nullptr, nullptr, out.data(),
                      out.size(), &count, &st) != LLMC_OK)
      return fail(llmc_last_error());
    if (run == 0)
      continue;
    ttft.push_back(st.time_to_first_token_ms);
    tpot.push_back(st.time_per_output_token_ms);
    total.push_back(st.total_ms);
  }
  bandwidth = std::max(bandwidth, measureReadBandwidth(threads, probe));
  double tpotMs = median(tpot);
  double achieved = bytesPerToken / (tpotMs / 1e3);
  double peak = cpuTarget && prefillFlops ? measurePeakFlops(threads, wide) : 0;
  double prefillRate = prefillFlops / (median(ttft) / 1e3);
  if (benchJson) {
    llvm::json::Object o{{"artifact", benchArtifact.getValue()},
                         {"threads", int64_t(threads)},
                         {"prompt_tokens", int64_t(benchPrompt)},
                         {"generated_tokens", int64_t(benchGen)},
                         {"runs", int64_t(benchRuns)},
                         {"time_to_first_token_ms", median(ttft)},
                         {"time_per_output_token_ms", tpotMs},
                         {"decode_tokens_per_s", 1e3 / tpotMs},
                         {"prefill_tokens_per_s", double(benchPrompt) / (median(ttft) / 1e3)},
                         {"decode_bytes_per_token", bytesPerToken},
                         {"decode_bandwidth_gbs", achieved / 1e9},
                         {"machine_read_bandwidth_gbs", bandwidth / 1e9},
                         {"bandwidth_fraction", achieved / bandwidth}};
    if (peak > 0) {
      o["prefill_linear_gflop"] = double(prefillFlops) / 1e9;
      o["prefill_gflops"] = prefillRate / 1e9;
      o["machine_peak_fma_gflops"] = peak / 1e9;
      o["prefill_fma_fraction"] = prefillRate / peak;
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
    return 0;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("model:              {0} ({1} threads)\n", benchArtifact, threads);
  os << llvm::formatv("prompt / generated: {0} / {1} tokens, median of {2} runs\n", benchPrompt,
                      benchGen, benchRuns);
  os << llvm::formatv("time to first token {0:f2} ms ({1:f1} prompt tokens/s)\n", median(ttft),
                      double(benchPrompt) / (median(ttft) / 1e3));
  os << llvm::formatv("time per token      {0:f2} ms ({1:f1} tokens/s)\n", tpotMs, 1e3 / tpotMs);
  os << llvm::formatv("decode reads        {0:f1} MB/token: {1:f1} GB/s, {3:f0}% of the {2:f1} "
                      "GB/s this machine reads a buffer of that size at\n",
                      bytesPerToken / 1e6, achieved / 1e9, bandwidth / 1e9,
                      100 * achieved / bandwidth);
  if (peak > 0)
    os << llvm::formatv("prefill computes    {0:f2} GFLOP in its linear layers (bucket {1}): "
                        "{2:f1} GFLOP/s over the whole step, {4:f0}% of the {3:f1} GFLOP/s this "
                        "machine's f32 FMAs peak at ({5})\n",
                        double(prefillFlops) / 1e9, prefillSeq, prefillRate / 1e9, peak / 1e9,
                        100 * prefillRate / peak, wide ? "AVX-512" : "AVX2");
  return 0;
}
