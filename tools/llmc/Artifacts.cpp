//===- Artifacts.cpp - llmc compile, llmc inspect -------------------------===//
//
// compile: ONNX -> llmc-pipeline -> C++ -> model.llmc/ (compiler/Artifact).
// inspect: the manifest of an artifact. (run: Run.cpp; bench: Bench.cpp.)
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"
#include "tools/llmc/CompileQuant.h"

#include "compiler/Artifact/Artifact.h"
#include "compiler/Codegen/CPU/EmitCpp.h"
#include "compiler/Codegen/CUDA/EmitCuda.h"
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
    cl::init("sm_80,sm_86,sm_89,sm_90a"), cl::sub(compileCmd), cl::cat(cat()));
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
cl::opt<std::string> compileKvDtype(
    "kv-dtype",
    cl::desc("KV cache element type: auto (the compute type, the default) or int8 (one f32 "
             "scale per head and token; half the bytes of f16)"),
    cl::init("auto"), cl::sub(compileCmd), cl::cat(cat()));
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
    cl::desc("Layers --quant keeps in float: lm_head, embedding (with --quant-embeddings), or "
             "substrings of layer (ONNX node) names"),
    cl::CommaSeparated, cl::value_desc("lm_head,..."), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileQuantActs(
    "quant-activations",
    cl::desc("int8 (default): the quantized kernels round activations to int8 per block of 32 "
             "for integer dot products; f32: they dequantize the weights and keep x as it is"),
    cl::init("int8"), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<bool> compileQuantEmbeddings(
    "quant-embeddings",
    cl::desc("With --quant: also quantize the token embedding tables (to nearest, the same "
             "scheme; --quant-skip embedding keeps them float)"),
    cl::init(false), cl::sub(compileCmd), cl::cat(cat()));
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
cl::opt<std::string> compileCalibration(
    "calibration",
    cl::desc("With --quant: round the weights by GPTQ, with statistics of each layer's inputs "
             "from the float model run on these token ids (commas or spaces, one sequence per "
             "line), instead of to nearest"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCalibrationText(
    "calibration-text",
    cl::desc("As --calibration, on a text file tokenized by the model's tokenizer"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<int64_t> compileCalibrationLen(
    "calibration-seq-len",
    cl::desc("Tokens per calibration sequence (longer ones are cut; default 128, or --max-seq "
             "when that is less)"),
    cl::init(0), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<int64_t> compileCalibrationMax("calibration-max-sequences",
                                       cl::desc("Calibration sequences used at most (default 64)"),
                                       cl::init(64), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCalibrationSave(
    "calibration-save",
    cl::desc("Also write the calibration statistics (each layer input's Gram matrix; "
             "docs/quantization.md) to this file, for --calibration-stats"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCalibrationStats(
    "calibration-stats",
    cl::desc("With --quant: round by GPTQ with statistics --calibration-save wrote before "
             "(for the same model), instead of collecting them again"),
    cl::value_desc("file"), cl::init(""), cl::sub(compileCmd), cl::cat(cat()));
cl::opt<std::string> compileCxx("cxx", cl::desc("Host C++ compiler (default $CXX, else c++)"),
                                cl::init(""), cl::sub(compileCmd), cl::cat(cat()));

// --- llmc inspect ------------------------------------------------------------
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
bool mlir::llmc::inspectCommandGiven() { return bool(inspectCmd); }

std::string mlir::llmc::tokenizerPath(const CompileRequest &req) {
  if (!req.tokenizer.empty())
    return req.tokenizer;
  llvm::SmallString<256> beside(req.input);
  llvm::sys::path::remove_filename(beside);
  llvm::sys::path::append(beside, "tokenizer.json");
  return llvm::sys::fs::exists(beside) ? std::string(beside) : "";
}

int mlir::llmc::fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "llmc") << message << "\n";
  return 1;
}

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
  std::string path = tokenizerPath(req);
  bool given = !req.tokenizer.empty();
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
      // sm_<N>, or sm_<N>a: the architecture-specific features (sm_90a's
      // wgmma), SASS that runs on that architecture only.
      unsigned n = 0;
      llvm::StringRef num = a.drop_front(3);
      if (num.ends_with("a"))
        num = num.drop_back();
      if (!a.starts_with("sm_") || num.getAsInteger(10, n) || n < 75 || n > 120)
        return error("--cuda-arch takes sm_<N> or sm_<N>a (N 75 to 120) separated by commas, or "
                     "none; not '" + a.str() + "'");
      cudaArchs.push_back(a.str());
    }
    if (cudaArchs.empty())
      return error("--cuda-arch lists no architecture (use none for the emulation only)");
  }
  if (req.maxSeq <= 0 || req.maxSeq > (int64_t(1) << 24))
    return error("--max-seq must be in [1, 16777216]");
  if (req.dtype != "f32" && req.dtype != "f16" && req.dtype != "bf16")
    return error("--dtype must be f32, f16 or bf16");
  if (req.kvDtype != "auto" && req.kvDtype != "int8")
    return error("--kv-dtype must be auto (the compute type) or int8");
  std::string march = req.cpu == "avx2"     ? "x86-64-v3"
                      : req.cpu == "avx512" ? "x86-64-v4"
                      : req.cpu == "native" ? "native"
                                            : "";
  if (march.empty())
    return error("--cpu must be avx2, avx512 or native");
  std::optional<QuantPlan> quant;
  if (!req.quant.empty()) {
    auto q = parseQuantSpec(req.quant);
    if (!q)
      return q.takeError();
    quant = QuantPlan{*q};
  } else if (!req.quantSkip.empty() || req.quantEmbeddings) {
    return error(req.quantEmbeddings ? "--quant-embeddings needs --quant"
                                     : "--quant-skip needs --quant");
  }
  if (req.quantActivations != "int8" && req.quantActivations != "f32")
    return error("--quant-activations must be int8 or f32");
  bool evaluate = !req.evalIds.empty() || !req.evalText.empty();
  if (evaluate && !quant && req.kvDtype != "int8")
    return error("--eval and --eval-text need --quant or --kv-dtype int8 (they compare the "
                 "quantized model with the float one)");
  if (!req.evalIds.empty() && !req.evalText.empty())
    return error("give --eval or --eval-text, not both");
  if (req.maxKl >= 0 && !evaluate)
    return error("--max-kl needs --eval or --eval-text");
  bool calibrated = !req.calibrationIds.empty() || !req.calibrationText.empty();
  if (calibrated && !quant)
    return error("--calibration and --calibration-text need --quant (they choose how the "
                 "weights are rounded)");
  if (!req.calibrationIds.empty() && !req.calibrationText.empty())
    return error("give --calibration or --calibration-text, not both");
  if (!req.calibrationSave.empty() && !calibrated)
    return error("--calibration-save needs --calibration or --calibration-text");
  bool savedStats = !req.calibrationStats.empty();
  if (savedStats && (!quant || calibrated))
    return error("--calibration-stats needs --quant, and takes the place of --calibration and "
                 "--calibration-text");
  if (calibrated && ((req.calibrationSeqLen != 0 &&
                      (req.calibrationSeqLen < 2 || req.calibrationSeqLen > req.maxSeq)) ||
                     req.calibrationMaxSequences < 1))
    return error("--calibration-seq-len must be in [2, --max-seq] and "
                 "--calibration-max-sequences positive");
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
  // GPTQ's statistics live in a temporary file while the pipelines read them.
  auto removeCalibration = llvm::make_scope_exit([&] {
    if (quant && quant->ownsCalibrationFile)
      llvm::sys::fs::remove(quant->calibrationFile);
  });
  if (savedStats) {
    auto stats = CalibrationStats::read(req.calibrationStats);
    if (!stats)
      return error("--calibration-stats: " + llvm::toString(stats.takeError()));
    quant->calibrationFile = req.calibrationStats;
    quant->calibrationLayers = int64_t(stats->layers.size());
    if (log)
      *log << llvm::formatv("  GPTQ: the statistics of {0} linear layers in {1}\n",
                            quant->calibrationLayers, req.calibrationStats);
  }
  if (calibrated) {
    stage("calibrating: the float model on the calibration tokens (reference executor)");
    if (llvm::Error e = calibrate(req, *quant))
      return error("--calibration: " + llvm::toString(std::move(e)));
    if (!req.calibrationSave.empty())
      if (std::error_code ec = llvm::sys::fs::copy_file(quant->calibrationFile, req.calibrationSave))
        return error("--calibration-save: cannot write " + req.calibrationSave + ": " +
                     ec.message());
    if (log)
      *log << llvm::formatv("  GPTQ: the inputs of {0} linear layers over {1} sequences ({2} "
                            "tokens)\n",
                            quant->calibrationLayers, quant->calibrationSequences,
                            quant->calibrationTokens);
  }
  std::string pipeline = "llmc-pipeline{max-seq=" + std::to_string(req.maxSeq) +
                         " batch=" + joinInts(batch) + " prefill-buckets=" + joinInts(buckets) +
                         " dtype=" + req.dtype + kvOptions(req);
  // A GPU's decode attention: as many key chunks as fill the device.
  if (req.target == "cuda")
    pipeline += " decode-splits=0";
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
        << " operation(s) not recognised compile as written, through generic kernels (slower): "
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
  if (!cpuModel->hostOperations.empty()) {
    std::vector<std::string> kinds(cpuModel->hostOperations.begin(),
                                   cpuModel->hostOperations.end());
    architecture["host_operations"] = llvm::json::Array(kinds);
    if (log)
      llvm::WithColor::warning(*log, "llmc")
          << "operations of run-time shape, or with no CUDA kernel, run on the host (their "
             "inputs and results copied each step, no CUDA graph): "
          << llvm::join(kinds, ", ") << "\n";
  }

  ArtifactInfo info;
  info.llmcVersion = LLMC_VERSION;
  info.sourceName = llvm::sys::path::filename(req.input).str();
  info.sourceSha256 = *sourceSha;
  info.options = llvm::json::Object{{"target", req.target},
                                    {"max_seq", req.maxSeq},
                                    {"batch", llvm::json::Array(batch)},
                                    {"prefill_buckets", llvm::json::Array(buckets)},
                                    {"dtype", req.dtype},
                                    {"kv_dtype", req.kvDtype == "int8" ? "int8" : req.dtype},
                                    {"cpu", req.cpu}};
  if (quant) {
    llvm::json::Object q{{"scheme", req.quant},
                         {"skip", llvm::json::Array(req.quantSkip)},
                         {"activations", req.quantActivations},
                         {"method", calibrated || savedStats ? "gptq" : "round-to-nearest"}};
    if (req.quantEmbeddings)
      q["embeddings"] = true;
    if (calibrated)
      q["calibration"] = llvm::json::Object{
          {"file", llvm::sys::path::filename(req.calibrationIds.empty() ? req.calibrationText
                                                                         : req.calibrationIds)},
          {"sequences", quant->calibrationSequences},
          {"tokens", quant->calibrationTokens}};
    if (savedStats)
      q["calibration"] = llvm::json::Object{
          {"statistics", llvm::sys::path::filename(req.calibrationStats)}};
    info.options["quant"] = std::move(q);
  }
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
    auto report = evaluateQuant(req, info, quant ? *quant : QuantPlan{});
    if (!report)
      return error("--eval: " + llvm::toString(report.takeError()));
    if (log)
      printQuantEval(*log, *report, quantDescription(req));
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
  req.kvDtype = compileKvDtype;
  req.cpu = compileCpu;
  req.cxx = compileCxx;
  req.emitSource = compileEmit == "source";
  req.tokenizer = compileTokenizer;
  req.quant = compileQuant;
  req.quantSkip.assign(compileQuantSkip.begin(), compileQuantSkip.end());
  req.quantActivations = compileQuantActs;
  req.quantEmbeddings = compileQuantEmbeddings;
  req.evalIds = compileEval;
  req.evalText = compileEvalText;
  req.evalSeqLen = compileEvalLen;
  req.evalMaxSequences = compileEvalMax;
  req.maxKl = compileMaxKl;
  req.calibrationIds = compileCalibration;
  req.calibrationText = compileCalibrationText;
  req.calibrationSeqLen = compileCalibrationLen;
  req.calibrationMaxSequences = compileCalibrationMax;
  req.calibrationSave = compileCalibrationSave;
  req.calibrationStats = compileCalibrationStats;
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
      kv += c.bytes();
    os << "KV cache:  " << kv << " bytes per sequence (" << cpuModel->caches.size()
       << " caches, capacity " << compileMaxSeq << ")\n";
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
  if (const llvm::json::Array *host = arch ? arch->getArray("host_operations") : nullptr) {
    std::vector<std::string> kinds;
    for (const llvm::json::Value &k : *host)
      if (auto s = k.getAsString())
        kinds.push_back(s->str());
    os << "host steps:   " << llvm::join(kinds, ", ")
       << " (run on the host: copies each step, no CUDA graph)\n";
  }
  os << "vocab:        " << num(m, "vocab") << "\n";
  os << "weights:      " << num(w, "bytes") << " bytes, " << num(w, "tensors") << " tensors\n";
  const llvm::json::Object *quant = m->getObject("quantization");
  if (quant && !quant->empty()) { // an unquantized model's is {}
    // One line per scheme, then the total against float weights.
    std::map<std::string, int64_t> schemes;
    int64_t layers = 0, embeddings = 0;
    if (const llvm::json::Array *ls = quant->getArray("layers"))
      for (const llvm::json::Value &v : *ls) {
        const llvm::json::Object *l = v.getAsObject();
        if (!l)
          continue;
        if (str(l, "kind") == "embedding") {
          ++schemes[llvm::formatv("int{0} groups of {1}{2}, embedding table", num(l, "bits"),
                                  num(l, "group_size"),
                                  l->getBoolean("zero_points").value_or(false)
                                      ? " with zero points" : " symmetric")
                        .str()];
          ++embeddings;
          continue;
        }
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
    os << llvm::formatv("quantized:    {0} linear layers{1}, {2:f2} MiB instead of {3:f2} MiB "
                        "as float (saves {4:f2} MiB, {5:f0}%)\n",
                        layers,
                        embeddings ? llvm::formatv(" and {0} embedding table{1}", embeddings,
                                                   embeddings > 1 ? "s" : "")
                                         .str()
                                   : std::string(),
                        stored / mib, asFloat / mib, (asFloat - stored) / mib,
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
     << (str(mem, "kv_cache_dtype") == "int8" ? ", int8 with an f32 scale per head and token"
                                               : "")
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
