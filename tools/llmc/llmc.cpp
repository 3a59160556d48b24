//===- llmc.cpp - the llmc command-line driver ----------------------------===//
//
//   llmc import model.onnx [-o out.mlir]   print the imported llm dialect IR
//   llmc check model.onnx [--json]         pre-flight report of a model
//   llmc exec model.onnx|module.mlir --inputs D --outputs D [--function F]
//                                                run on the CPU (reference)
//   llmc conformance DIR [--filter RE]     run ONNX node tests
//   llmc verify DIR... [--shared D]        replay model fixtures (prefill +
//                                          decode) against their references
//   llmc ops [--markdown]                  the ONNX operators llmc imports
//   llmc grammar --json-schema F|--regex R|--grammar F [--match]
//                                          check a grammar, or match texts
//
// Every command takes --help. Errors go to stderr as one line per problem
// ("llmc: <file>: <what>"), and the exit status is non-zero.
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"
#include "compiler/Executor/Conformance.h"
#include "compiler/Executor/DecodeLoop.h"
#include "compiler/Executor/Executor.h"
#include "dialects/LLM/IR/LLMOps.h"
#include "passes/Passes.h"
#include "passes/TransformerStructure.h"
#include "python-free-frontend/ModelSummary.h"
#include "python-free-frontend/OnnxImporter.h"
#include "python-free-frontend/OnnxModel.h"
#include "python-free-frontend/OpTable.h"

#include "llmc/llmc.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

using namespace mlir;
using namespace mlir::llmc;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &mlir::llmc::llmcOptionCategory() {
  static llvm::cl::OptionCategory category("llmc options");
  return category;
}

#ifndef LLMC_VERSION
#define LLMC_VERSION "0.0.0"
#endif

namespace {

cl::OptionCategory &llmcCategory = mlir::llmc::llmcOptionCategory();

// --- llmc import -------------------------------------------------------------
cl::SubCommand importCmd("import", "Import an ONNX model and print its llm dialect IR");
cl::opt<std::string> importInput(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                                 cl::sub(importCmd), cl::cat(llmcCategory));
cl::opt<std::string> importOutput("o", cl::desc("Write the IR to <file> (default: stdout)"),
                                  cl::value_desc("file"), cl::init("-"), cl::sub(importCmd),
                                  cl::cat(llmcCategory));
cl::opt<bool> importKeepWeights(
    "keep-weights",
    cl::desc("Print weight blobs in full (the output can then be parsed back); "
             "by default blobs over 64 bytes are elided"),
    cl::init(false), cl::sub(importCmd), cl::cat(llmcCategory));
cl::opt<bool> importDebugInfo("debug-info",
                              cl::desc("Print locations (the ONNX node of every operation)"),
                              cl::init(false), cl::sub(importCmd), cl::cat(llmcCategory));

// --- llmc check --------------------------------------------------------------
cl::SubCommand checkCmd("check",
                        "Pre-flight report: producer, opsets, operators, inputs and outputs, "
                        "parameters, architecture, and every unsupported operator");
cl::opt<std::string> checkInput(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                                cl::sub(checkCmd), cl::cat(llmcCategory));
cl::opt<bool> checkJson("json", cl::desc("Print the report as JSON"), cl::init(false),
                        cl::sub(checkCmd), cl::cat(llmcCategory));

// --- llmc exec ---------------------------------------------------------------
cl::SubCommand execCmd("exec", "Run a model on the CPU with the reference executor");
cl::opt<std::string> execInput(cl::Positional, cl::desc("<model.onnx | module.mlir>"),
                               cl::Required, cl::sub(execCmd), cl::cat(llmcCategory));
cl::opt<std::string> execFunction("function",
                                  cl::desc("The function to run (default: main, or the only "
                                           "one); prefill or decode after llmc-insert-kv-cache"),
                                  cl::value_desc("name"), cl::sub(execCmd), cl::cat(llmcCategory));
cl::opt<std::string> execInputs("inputs",
                                cl::desc("Folder of input_N.pb TensorProto files (bound by "
                                         "their names, or by position when unnamed)"),
                                cl::value_desc("dir"), cl::Required, cl::sub(execCmd),
                                cl::cat(llmcCategory));
cl::opt<std::string> execOutputs("outputs",
                                 cl::desc("Folder to write output_N.pb files to (created)"),
                                 cl::value_desc("dir"), cl::Required, cl::sub(execCmd),
                                 cl::cat(llmcCategory));

// --- llmc conformance --------------------------------------------------------
cl::SubCommand conformanceCmd("conformance",
                              "Run ONNX node tests (model.onnx + test_data_set_*) and "
                              "compare with their expected outputs");
cl::opt<std::string> confDir(cl::Positional, cl::desc("<node-tests dir>"), cl::Required,
                             cl::sub(conformanceCmd), cl::cat(llmcCategory));
cl::opt<std::string> confFilter("filter", cl::desc("Only cases whose name matches <regex>"),
                                cl::value_desc("regex"), cl::sub(conformanceCmd),
                                cl::cat(llmcCategory));
cl::opt<std::string> confUnclaimed(
    "unclaimed",
    cl::desc("File listing cases llmc does not claim (\"<name prefix> <reason>\" lines); "
             "they are skipped"),
    cl::value_desc("file"), cl::sub(conformanceCmd), cl::cat(llmcCategory));
cl::opt<double> confScaleUlps(
    "scale-ulps",
    cl::desc("Also accept differences up to N units in the last place of each output's "
             "largest magnitude (for references from another runtime's kernels, which round "
             "differently; 0, the default, keeps the ONNX runner's tolerance)"),
    cl::value_desc("N"), cl::init(0), cl::sub(conformanceCmd), cl::cat(llmcCategory));
cl::opt<bool> confVerbose("v", cl::desc("Also list passed and skipped cases"), cl::init(false),
                          cl::sub(conformanceCmd), cl::cat(llmcCategory));

// --- llmc verify -------------------------------------------------------------
cl::SubCommand verifyCmd("verify",
                         "Replay model fixtures (tools/fixtures/make_models.py): prefill and "
                         "decode steps through the past/present IO, logits compared with "
                         "onnxruntime's");
cl::list<std::string> verifyDirs(cl::Positional,
                                 cl::desc("<fixture dir, or a folder of fixture dirs>..."),
                                 cl::OneOrMore, cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyShared("shared",
                                  cl::desc("The shared folder that \"shared_model\" paths are "
                                           "relative to (../shared)"),
                                  cl::value_desc("dir"), cl::sub(verifyCmd),
                                  cl::cat(llmcCategory));
cl::opt<bool> verifyVerbose("v", cl::desc("Print every step"), cl::init(false),
                            cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<bool> verifyAgainstImported(
    "against-import",
    cl::desc("Compare the --passes output with the imported graph itself (prefill and "
             "--steps greedy decode steps of the imported graph, f32 logits within --atol) "
             "instead of with onnxruntime's references"),
    cl::init(false), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<int> verifySteps("steps", cl::desc("Decode steps for --against-import"), cl::init(16),
                         cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<double> verifyAtol("atol", cl::desc("Max abs logit error for --against-import (f32)"),
                           cl::init(1e-4), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<double> verifyTolerance(
    "tolerance",
    cl::desc("Max logit error as a fraction of the logit scale, instead of each fixture's own "
             "(for a pipeline that changes precision: dtype=f16)"),
    cl::init(-1), cl::sub(verifyCmd), cl::cat(llmcCategory));

cl::opt<bool> verifyCompiled(
    "compiled",
    cl::desc("Compile each fixture with llmc compile (into a temporary folder) and replay it "
             "through the runtime instead of the reference executor; also compares the "
             "fixture's free-running greedy tokens (f32 only)"),
    cl::init(false), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<int64_t> verifyMaxSeq("max-seq", cl::desc("KV cache capacity for --compiled"),
                              cl::init(64), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::list<int64_t> verifyBuckets("prefill-buckets",
                                cl::desc("Prefill buckets for --compiled (default 16)"),
                                cl::CommaSeparated, cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyDtype("dtype", cl::desc("Compute type for --compiled"),
                                 cl::init("f32"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyKvDtype("kv-dtype",
                                   cl::desc("--kv-dtype of llmc compile, for --compiled"),
                                   cl::init("auto"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyQuant("quant",
                                 cl::desc("--quant of llmc compile, for --compiled"),
                                 cl::init(""), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyQuantActs(
    "quant-activations", cl::desc("--quant-activations of llmc compile, for --compiled"),
    cl::init("int8"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<bool> verifyQuantEmbeddings(
    "quant-embeddings", cl::desc("--quant-embeddings of llmc compile, for --compiled"),
    cl::init(false), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyCpu("cpu", cl::desc("--cpu of llmc compile, for --compiled"),
                               cl::init("avx2"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyTarget("target", cl::desc("--target of llmc compile, for --compiled"),
                                  cl::init("cpu"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyCudaArch(
    "cuda-arch", cl::desc("--cuda-arch of llmc compile, for --compiled --target cuda"),
    cl::init("sm_80,sm_86,sm_89,sm_90a"), cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyDevice(
    "device",
    cl::desc("With --compiled: what runs a cuda artifact (its GPU, or 'emulated': the host "
             "emulation of CUDA)"),
    cl::sub(verifyCmd), cl::cat(llmcCategory));
cl::opt<std::string> verifyArtifacts(
    "artifacts",
    cl::desc("With --compiled: keep each fixture's artifact as DIR/<fixture>.llmc (else a "
             "temporary folder)"),
    cl::value_desc("dir"), cl::sub(verifyCmd), cl::cat(llmcCategory));

// Shared by exec, conformance and verify: passes to run before executing.
cl::opt<std::string> runPasses(
    "passes",
    cl::desc("Run this function pass pipeline (e.g. \"llmc-canonicalize\") on the imported "
             "graph before executing it"),
    cl::value_desc("pipeline"), cl::sub(execCmd), cl::sub(conformanceCmd), cl::sub(verifyCmd),
    cl::cat(llmcCategory));

// --- llmc ops ----------------------------------------------------------------
cl::SubCommand opsCmd("ops", "List the ONNX operators llmc imports (the op table)");
cl::opt<bool> opsMarkdown("markdown", cl::desc("Print a Markdown table (docs/onnx-operators.md)"),
                          cl::init(false), cl::sub(opsCmd), cl::cat(llmcCategory));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "llmc") << message << "\n";
  return 1;
}

int fail(llvm::Error error) { return fail(llvm::toString(std::move(error))); }

std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  registerImportDialects(registry);
  auto ctx = std::make_unique<MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

int runImport() {
  auto model = OnnxModel::loadFile(importInput);
  if (!model)
    return fail(model.takeError());
  auto ctx = makeContext();
  auto module = importOnnxModel(*ctx, **model);
  if (!module)
    return fail(module.takeError());
  std::string error;
  auto out = mlir::openOutputFile(importOutput, &error);
  if (!out)
    return fail(error);
  OpPrintingFlags flags;
  if (!importKeepWeights)
    flags.elideLargeResourceString(64);
  if (importDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  (*module)->print(out->os(), flags);
  out->os() << "\n";
  out->keep();
  return 0;
}

int runExec() {
  if (!runPasses.empty())
    if (llvm::Error e = Executor::checkPipeline(runPasses))
      return fail(std::move(e));
  // An .mlir module (weights kept: llmc import --keep-weights) or an ONNX
  // model.
  auto exec = llvm::StringRef(execInput).ends_with(".mlir")
                  ? Executor::fromMlirFile(execInput, runPasses)
                  : Executor::fromOnnxFile(execInput, runPasses);
  if (!exec)
    return fail(exec.takeError());
  std::string function = execFunction.empty() ? (*exec)->functionNames()[0] : execFunction;
  const std::vector<ValueSignature> *signature = (*exec)->inputsOf(function);
  if (!signature) {
    std::string names;
    for (const std::string &n : (*exec)->functionNames())
      names += (names.empty() ? "" : ", ") + n;
    return fail(execInput + ": no function '" + function + "' (it has " + names + ")");
  }
  if (!llvm::sys::fs::is_directory(execInputs))
    return fail(execInputs + ": not a folder (--inputs takes a folder of input_N.pb files)");
  std::vector<NamedTensor> inputs;
  for (size_t i = 0;; ++i) {
    llvm::SmallString<256> path(execInputs);
    llvm::sys::path::append(path, "input_" + std::to_string(i) + ".pb");
    if (!llvm::sys::fs::exists(path))
      break;
    auto t = readTensorFile(path);
    if (!t)
      return fail(t.takeError());
    if (t->name.empty() && i < signature->size())
      t->name = (*signature)[i].name;
    inputs.push_back(std::move(*t));
  }
  if (inputs.empty() && !signature->empty())
    return fail(execInputs + ": no input_0.pb");
  auto outputs = (*exec)->run(function, inputs);
  if (!outputs)
    return fail(outputs.takeError());
  if (std::error_code ec = llvm::sys::fs::create_directories(execOutputs))
    return fail(execOutputs + ": cannot create: " + ec.message());
  for (size_t i = 0; i < outputs->size(); ++i) {
    llvm::SmallString<256> path(execOutputs);
    llvm::sys::path::append(path, "output_" + std::to_string(i) + ".pb");
    if (llvm::Error e = writeTensorFile(path, (*outputs)[i]))
      return fail(std::move(e));
    llvm::outs() << path << ": " << (*outputs)[i].name << " "
                 << (*outputs)[i].tensor.describe() << "\n";
  }
  return 0;
}

/// The folders directly under `dir` that hold a file `name`, sorted.
std::error_code foldersHolding(llvm::StringRef dir, llvm::StringRef name,
                               std::vector<std::string> &out) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::SmallString<256> file(it->path());
    llvm::sys::path::append(file, name);
    if (llvm::sys::fs::exists(file))
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return ec;
}

int runConformance() {
  if (!runPasses.empty())
    if (llvm::Error e = Executor::checkPipeline(runPasses))
      return fail(std::move(e));
  std::optional<UnclaimedList> unclaimed;
  if (!confUnclaimed.empty()) {
    auto list = UnclaimedList::load(confUnclaimed);
    if (!list)
      return fail(list.takeError());
    unclaimed = std::move(*list);
  }
  if (!(confScaleUlps >= 0))
    return fail("--scale-ulps must be a non-negative number");
  llvm::Regex filter(confFilter.empty() ? ".*" : confFilter.getValue());
  std::string regexError;
  if (!filter.isValid(regexError))
    return fail("--filter: " + regexError);
  std::vector<std::string> cases;
  if (std::error_code ec = foldersHolding(confDir, "model.onnx", cases))
    return fail(confDir + ": " + ec.message());
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string &dir : cases) {
    std::string name = llvm::sys::path::filename(dir).str();
    if (!filter.match(name))
      continue;
    if (const std::string *reason = unclaimed ? unclaimed->reasonFor(name) : nullptr) {
      ++skipped;
      if (confVerbose)
        llvm::outs() << "SKIP " << name << ": " << *reason << "\n";
      continue;
    }
    Tolerance tol;
    tol.scaleUlps = confScaleUlps;
    CaseResult r = runConformanceCase(dir, name, tol, runPasses);
    if (r.status == CaseResult::Passed) {
      ++passed;
      if (confVerbose)
        llvm::outs() << "PASS " << name << " (max abs error " << r.maxAbsError << ")\n";
    } else {
      ++failed;
      llvm::outs() << "FAIL " << name << ": " << r.message << "\n";
    }
    llvm::outs().flush();
  }
  llvm::outs() << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed ? 1 : 0;
}

/// The fixture compiled (llmc compile into a temporary folder) and driven
/// through the runtime: teacher-forced steps against the references, then
/// free-running greedy generation against onnxruntime's.
FixtureReport verifyCompiledFixture(const ModelFixture &f) {
  FixtureReport report;
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("llmc-verify", dir)) {
    report.error = "cannot create a temporary folder: " + ec.message();
    return report;
  }
  auto cleanup = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(dir); });
  CompileRequest req;
  req.input = f.model;
  req.output = (dir + "/model.llmc").str();
  if (!verifyArtifacts.empty())
    req.output = verifyArtifacts + "/" + f.name + ".llmc";
  req.maxSeq = verifyMaxSeq;
  req.buckets.assign(verifyBuckets.begin(), verifyBuckets.end());
  if (req.buckets.empty())
    req.buckets = {std::min<int64_t>(16, verifyMaxSeq)};
  req.dtype = verifyDtype;
  req.kvDtype = verifyKvDtype;
  req.quant = verifyQuant;
  req.quantActivations = verifyQuantActs;
  req.quantEmbeddings = verifyQuantEmbeddings;
  req.target = verifyTarget;
  req.cpu = verifyCpu;
  req.cudaArch = verifyCudaArch;
  auto ctx = makeContext();
  auto compiled = compileModel(*ctx, req, nullptr);
  if (!compiled) {
    report.error = llvm::toString(compiled.takeError());
    return report;
  }
  llmc_model *model = nullptr;
  llmc_session *session = nullptr;
  auto release = llvm::make_scope_exit([&] {
    llmc_session_free(session);
    llmc_model_free(model);
  });
  llmc_session_options so{0};
  llmc_load_options lo{};
  lo.device = verifyDevice.c_str();
  if (llmc_model_load(req.output.c_str(), &lo, &model) != LLMC_OK ||
      llmc_session_create(model, &so, &session) != LLMC_OK) {
    report.error = llmc_last_error();
    return report;
  }
  int64_t vocab = compiled->vocab;
  FixtureStepper step = [&](llvm::ArrayRef<int64_t> tokens) -> llvm::Expected<::llmc::cpu::Tensor> {
    std::vector<int32_t> ids(tokens.begin(), tokens.end());
    ::llmc::cpu::Tensor out;
    if (::llmc::cpu::Status s = ::llmc::cpu::Tensor::allocate(
            ::llmc::cpu::DType::Float, {1, int64_t(ids.size()), vocab}, out);
        !s)
      return llvm::createStringError(s.message());
    if (llmc_session_append_all(session, ids.data(), ids.size(), out.mutableData<float>()) !=
        LLMC_OK)
      return llvm::createStringError(llmc_last_error());
    return out;
  };
  report = verifyFixtureSteps(f, step, /*newRowsOnly=*/true);
  if (!report.error.empty() || !report.passed())
    return report;
  // The replay again from a reset, but with three other tokens appended
  // after the prompt and rolled back (llmc_session_rollback): their cache
  // rows are then overwritten, and every step must still give onnxruntime's
  // logits.
  bool rolled = false;
  FixtureStepper afterRollback =
      [&](llvm::ArrayRef<int64_t> tokens) -> llvm::Expected<::llmc::cpu::Tensor> {
    if (!rolled)
      llmc_session_reset(session);
    auto logits = step(tokens);
    if (!rolled && logits) {
      rolled = true;
      int64_t keep = llmc_session_length(session);
      std::vector<int32_t> other(3, int32_t((tokens[0] + 1) % vocab));
      std::vector<float> scratch(static_cast<size_t>(vocab));
      if (llmc_session_append(session, other.data(), other.size(), scratch.data()) != LLMC_OK ||
          llmc_session_rollback(session, keep) != LLMC_OK)
        return llvm::createStringError(llmc_last_error());
    }
    return logits;
  };
  FixtureReport again = verifyFixtureSteps(f, afterRollback, /*newRowsOnly=*/true);
  // Moving forward, or below zero, is the caller's mistake: a status, no change.
  int64_t held = llmc_session_length(session);
  if (again.error.empty() &&
      (llmc_session_rollback(session, held + 1) != LLMC_ERROR_INVALID_ARGUMENT ||
       llmc_session_rollback(session, -1) != LLMC_ERROR_INVALID_ARGUMENT ||
       llmc_session_length(session) != held))
    again.error = "llmc_session_rollback took a length outside 0 .. the session's";
  if (!again.error.empty() || !again.passed()) {
    report.error = "after a rollback: " + (again.error.empty()
                                               ? std::string("the logits differ from onnxruntime's")
                                               : again.error);
    return report;
  }
  // Free-running greedy tokens are onnxruntime's exactly only in f32: at
  // lower precision (f16/bf16, or int8-rounded activations of quantized
  // layers, which the CUDA kernels never round, or an int8 KV cache) a near
  // tie may go the other way and the runs part.
  bool approximate = verifyDtype != "f32" || verifyKvDtype == "int8" ||
                     (!verifyQuant.empty() && verifyQuantActs == "int8" && verifyTarget != "cuda");
  if (!report.error.empty() || f.greedy.empty() || approximate)
    return report;
  // Free-running greedy generation, as `llmc run --ids` does it.
  std::vector<int32_t> prompt(f.prompt.begin(), f.prompt.end());
  std::vector<int32_t> out(f.greedy.size());
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = int32_t(f.greedy.size());
  size_t count = 0;
  if (llmc_generate(session, prompt.data(), prompt.size(), &p, nullptr, nullptr, out.data(),
                    out.size(), &count, nullptr) != LLMC_OK) {
    report.error = std::string("generate: ") + llmc_last_error();
    return report;
  }
  report.greedyExpected = f.greedy;
  report.greedyActual.assign(out.begin(), out.begin() + long(count));
  for (size_t i = 0; i < count && i < f.greedy.size() && out[i] == f.greedy[i]; ++i)
    ++report.greedyMatched;
  return report;
}

int runVerify() {
  if (!runPasses.empty())
    if (llvm::Error e = Executor::checkPipeline(runPasses))
      return fail(std::move(e));
  std::vector<std::string> fixtures;
  for (const std::string &dir : verifyDirs) {
    llvm::SmallString<256> manifest(dir);
    llvm::sys::path::append(manifest, "fixture.json");
    if (llvm::sys::fs::exists(manifest)) {
      fixtures.push_back(dir);
      continue;
    }
    std::vector<std::string> found;
    if (std::error_code ec = foldersHolding(dir, "fixture.json", found))
      return fail(dir + ": " + ec.message());
    if (found.empty())
      return fail(dir + ": no fixture.json here or in its folders");
    fixtures.insert(fixtures.end(), found.begin(), found.end());
  }
  int passed = 0, failed = 0;
  llvm::raw_ostream &os = llvm::outs();
  for (const std::string &dir : fixtures) {
    auto fixture = ModelFixture::load(dir, verifyShared);
    if (!fixture) {
      ++failed;
      os << "FAIL " << llvm::sys::path::filename(dir) << ": "
         << llvm::toString(fixture.takeError()) << "\n";
      continue;
    }
    if (verifyTolerance > 0)
      fixture->tolerance = verifyTolerance;
    FixtureReport report = verifyCompiled ? verifyCompiledFixture(*fixture)
                           : verifyAgainstImported
                               ? verifyAgainstImport(*fixture, runPasses, verifySteps,
                                                     verifyTolerance > 0 ? -1.0 : verifyAtol)
                               : verifyFixture(*fixture, runPasses);
    double worst = 0, worstRatio = 0; // the step with the largest error / scale
    int tokensMatched = 0, tokensCompared = 0, ties = 0;
    for (const StepCheck &s : report.steps) {
      double ratio = s.scale > 0 ? s.maxAbsError / s.scale : 0;
      if (ratio >= worstRatio)
        worst = s.maxAbsError, worstRatio = ratio;
      if (s.expectedToken >= 0) {
        ++tokensCompared;
        tokensMatched += s.argmax == s.expectedToken;
        ties += s.argmax != s.expectedToken && s.nearTie;
      }
      if (verifyVerbose) {
        os << "  " << fixture->name << " " << s.label << ": max abs error "
           << llvm::format("%.3g", s.maxAbsError) << " (logit scale "
           << llvm::format("%.3g", s.scale) << ")";
        if (s.expectedToken >= 0)
          os << ", argmax " << s.argmax << " ("
             << (verifyAgainstImported ? "imported graph " : "onnxruntime ") << s.expectedToken
             << (s.nearTie ? ", near tie" : "") << ")";
        os << (s.withinTolerance ? "" : "  OUT OF TOLERANCE") << "\n";
      }
    }
    bool ok = report.passed();
    (ok ? passed : failed)++;
    os << (ok ? "PASS " : "FAIL ") << fixture->name << ": ";
    if (!report.error.empty()) {
      os << report.error << "\n";
      continue;
    }
    os << report.steps.size() << " steps, worst max abs error "
       << llvm::format("%.2e", worst) << " = " << llvm::format("%.2e", worstRatio)
       << " of the logit scale (tolerance ";
    if (verifyAgainstImported)
      os << llvm::format("%.0e", verifyAtol.getValue())
         << " abs for f32 logits, else " << llvm::format("%.0e", fixture->tolerance)
         << " of the scale; against the imported graph";
    else
      os << llvm::format("%.0e", fixture->tolerance);
    os << "), greedy tokens " << tokensMatched << "/" << tokensCompared << " equal";
    if (!report.greedyExpected.empty())
      os << ", generated " << report.greedyMatched << "/" << report.greedyExpected.size()
         << " of onnxruntime's greedy tokens";
    if (ties)
      os << " (" << ties << " near ties)";
    os << "\n";
    os.flush();
  }
  os << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

int runOps() {
  llvm::raw_ostream &os = llvm::outs();
  auto opsets = [](const OpTableEntry &e) {
    std::string r = std::to_string(e.firstOpset) + "-";
    if (e.lastOpset != kNewestKnownOpset || e.domain != "")
      r += std::to_string(e.lastOpset);
    return r;
  };
  if (opsMarkdown) {
    os << "<!-- Generated by `llmc ops --markdown`; test/Tools/docs.test keeps it current. -->\n"
       << "# ONNX operators llmc imports\n\n"
       << "One row per entry of the op table (python-free-frontend/OpTable.cpp). Opsets\n"
       << "are the range of the domain's opset version the entry covers; an open range\n"
       << "ends at opset " << kNewestKnownOpset
       << ", the newest whose semantics llmc knows. \"checked\" marks entries\n"
       << "whose nodes `llmc check` also inspects for features llmc cannot compile.\n\n"
       << "| domain | operator | opsets | llm operation | checked |\n"
       << "| --- | --- | --- | --- | --- |\n";
    for (const OpTableEntry &e : onnxOpTable())
      os << "| " << (e.domain.empty() ? "ai.onnx" : e.domain) << " | " << e.opType << " | "
         << opsets(e) << " | `" << e.llmOp << "` | " << (e.check ? "yes" : "") << " |\n";
    return 0;
  }
  for (const OpTableEntry &e : onnxOpTable())
    os << llvm::left_justify(e.domain.empty() ? "ai.onnx" : e.domain, 14)
       << llvm::left_justify(e.opType, 34) << llvm::left_justify(opsets(e), 8) << e.llmOp
       << "\n";
  return 0;
}

std::string joinDims(const ModelSummary::ValueSummary &v) {
  if (!v.ranked)
    return v.dtype + "[unranked]";
  std::string s = v.dtype + "[";
  for (size_t i = 0; i < v.dims.size(); ++i)
    s += (i ? ", " : "") + v.dims[i];
  return s + "]";
}

std::string humanBytes(uint64_t bytes) {
  char buf[64];
  if (bytes >= (uint64_t(1) << 30))
    snprintf(buf, sizeof(buf), "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
  else if (bytes >= (uint64_t(1) << 20))
    snprintf(buf, sizeof(buf), "%.2f MiB", double(bytes) / double(uint64_t(1) << 20));
  else if (bytes >= 1024)
    snprintf(buf, sizeof(buf), "%.2f KiB", double(bytes) / 1024.0);
  else
    snprintf(buf, sizeof(buf), "%llu B", (unsigned long long)bytes);
  return buf;
}

llvm::json::Value valueJson(const ModelSummary::ValueSummary &v) {
  // Static dims as numbers, symbolic ones by name, unknown ones as null.
  llvm::json::Array dims;
  for (const std::string &d : v.dims) {
    int64_t size;
    if (d == "?")
      dims.push_back(nullptr);
    else if (!llvm::StringRef(d).getAsInteger(10, size))
      dims.push_back(size);
    else
      dims.push_back(d);
  }
  llvm::json::Object o{{"name", v.name}, {"dtype", v.dtype}};
  if (v.ranked)
    o["shape"] = std::move(dims);
  else
    o["shape"] = nullptr;
  return o;
}

/// The cache capacity `llmc check` compiles a decode step for.
constexpr int64_t kCheckCapacity = 4096;

int runCheck() {
  auto model = OnnxModel::loadFile(checkInput);
  if (!model)
    return fail(model.takeError());
  auto summary = summarizeModel(**model);
  if (!summary)
    return fail(summary.takeError());
  std::vector<UnsupportedNode> unsupported = findUnsupportedNodes(**model);
  bool blocking = llvm::any_of(unsupported, [](const UnsupportedNode &u) {
    return u.kind != UnsupportedNode::UnsupportedFeature;
  });
  // With every operator known, import the whole graph: that checks every
  // tensor, attribute and shape the compiler will rely on.
  std::string importError, raiseError;
  std::optional<TransformerStructure> structure;
  std::map<std::string, int64_t> quantizedSchemes;
  if (!blocking) {
    auto ctx = makeContext();
    auto module = importOnnxModel(*ctx, **model);
    if (!module) {
      importError = llvm::toString(module.takeError());
    } else {
      // What the transformer passes recognise.
      ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
        if (d.getSeverity() == DiagnosticSeverity::Error && raiseError.empty())
          raiseError = d.str();
        return success();
      });
      PassManager pm(ctx.get());
      OpPassManager &fpm = pm.nest<func::FuncOp>();
      fpm.addPass(createCanonicalizePass());
      fpm.addPass(createRaiseTransformerPass());
      if (failed(pm.run(**module))) {
        if (raiseError.empty())
          raiseError = "the transformer passes failed";
      } else if (auto main = (*module)->lookupSymbol<func::FuncOp>("main")) {
        structure = describeTransformer(main);
        // Pre-quantized layers (MatMulNBits) the raise kept quantized.
        main.walk([&](QuantizedLinearOp q) {
          ++quantizedSchemes[llvm::formatv("int{0}, groups of {1}, {2}", q.getBits(),
                                           q.getGroupSize(),
                                           isNone(q.getZeroPoints()) ? "symmetric"
                                                                     : "zero points")
                                 .str()];
        });
      }
    }
  }
  // What the whole pipeline makes of a decode step (batch 1, the default
  // capacity): kernels and memory.
  struct DecodeStats {
    int64_t kernels = -1, arena = -1, kvCache = -1, weights = -1;
    std::string error;
    std::vector<std::string> ownCaches; // the fallback's (llmc-insert-kv-cache)
    bool tokenHistory = false;          // the stateless fallback's
  } decode;
  if (structure && raiseError.empty()) {
    auto ctx = makeContext();
    auto module = importOnnxModel(*ctx, **model);
    ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && decode.error.empty())
        decode.error = d.str();
      return success();
    });
    registerLLMCPasses();
    registerLLMCPipeline();
    PassManager pm(ctx.get());
    std::string parseError;
    llvm::raw_string_ostream parseErrors(parseError);
    if (!module) {
      decode.error = llvm::toString(module.takeError());
    } else if (failed(parsePassPipeline("llmc-pipeline{max-seq=" + std::to_string(kCheckCapacity) +
                                            " batch=1 prefill-buckets=16}",
                                        pm, parseErrors))) {
      decode.error = parseError;
    } else if (failed(pm.run(**module))) {
      if (decode.error.empty())
        decode.error = "the pipeline failed";
    } else if (auto step = (*module)->lookupSymbol<func::FuncOp>("decode_b1")) {
      decode.ownCaches = ownCacheInputs(**module);
      decode.tokenHistory = keepsTokenHistory(**module);
      if (auto k = step->getAttrOfType<IntegerAttr>("llm.kernels"))
        decode.kernels = k.getInt();
      if (auto plan = step->getAttrOfType<DictionaryAttr>("llm.memory_plan")) {
        auto get = [&](StringRef key) {
          auto a = plan.getAs<IntegerAttr>(key);
          return a ? a.getInt() : int64_t(-1);
        };
        decode.arena = get("arena"), decode.kvCache = get("kv_cache"),
        decode.weights = get("weights");
      }
    }
  }
  bool ok = unsupported.empty() && importError.empty();
  const ModelSummary &s = *summary;

  if (checkJson) {
    llvm::json::Object root;
    root["model"] = std::string((*model)->path());
    root["producer"] = s.producer;
    root["ir_version"] = s.irVersion;
    root["graph_name"] = s.graphName;
    llvm::json::Object opsets;
    for (auto &[d, v] : s.opsets)
      opsets[d] = v;
    root["opsets"] = std::move(opsets);
    root["num_nodes"] = int64_t(s.numNodes);
    llvm::json::Object ops;
    for (auto &[op, n] : s.opHistogram)
      ops[op] = n;
    root["op_histogram"] = std::move(ops);
    llvm::json::Array inputs, outputs;
    for (auto &v : s.inputs)
      inputs.push_back(valueJson(v));
    for (auto &v : s.outputs)
      outputs.push_back(valueJson(v));
    root["inputs"] = std::move(inputs);
    root["outputs"] = std::move(outputs);
    llvm::json::Object params{{"count", int64_t(s.parameterCount)},
                              {"bytes", int64_t(s.parameterBytes)},
                              {"external_bytes", int64_t(s.externalBytes)}};
    llvm::json::Object byType;
    for (auto &[t, totals] : s.parameters)
      byType[t] = llvm::json::Object{{"count", int64_t(totals.elements)},
                                     {"bytes", int64_t(totals.bytes)},
                                     {"tensors", int64_t(totals.tensors)}};
    params["by_dtype"] = std::move(byType);
    root["parameters"] = std::move(params);
    llvm::json::Object arch;
    arch["family"] = s.family.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(s.family);
    arch["source"] = s.familySource.empty() ? llvm::json::Value(nullptr)
                                            : llvm::json::Value(s.familySource);
    arch["num_layers"] = s.numLayers >= 0 ? llvm::json::Value(s.numLayers)
                                          : llvm::json::Value(nullptr);
    llvm::json::Array features;
    for (auto &f : s.features)
      features.push_back(f);
    arch["features"] = std::move(features);
    root["architecture"] = std::move(arch);
    llvm::json::Array unsup;
    for (const UnsupportedNode &u : unsupported) {
      const char *kind = u.kind == UnsupportedNode::UnknownOp          ? "unknown_op"
                         : u.kind == UnsupportedNode::UnsupportedOpset ? "unsupported_opset"
                                                                       : "unsupported_feature";
      unsup.push_back(llvm::json::Object{{"kind", kind},
                                         {"domain", u.domain.empty() ? "ai.onnx" : u.domain},
                                         {"op_type", u.opType},
                                         {"opset", u.opset},
                                         {"node", u.node},
                                         {"reason", u.reason}});
    }
    root["unsupported"] = std::move(unsup);
    root["import_error"] =
        importError.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(importError);
    root["raise_error"] =
        raiseError.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(raiseError);
    if (structure) {
      auto strings = [](const std::vector<std::string> &v) {
        llvm::json::Array a;
        for (const std::string &s : v)
          a.push_back(s);
        return a;
      };
      root["structure"] = structure->summary();
      llvm::json::Object quantized;
      for (const auto &[scheme, count] : quantizedSchemes)
        quantized[scheme] = count;
      root["quantized_layers"] = std::move(quantized);
      root["prologue"] = strings(structure->prologue);
      llvm::json::Array layers;
      for (const auto &layer : structure->layers)
        layers.push_back(strings(layer));
      root["layers"] = std::move(layers);
      root["epilogue"] = strings(structure->epilogue);
      llvm::json::Array unrecognized;
      for (const auto &u : structure->unrecognized)
        unrecognized.push_back(llvm::json::Object{{"op", u.op}, {"node", u.node}});
      root["unrecognized"] = std::move(unrecognized);
      if (decode.error.empty() && decode.kernels >= 0)
        root["decode_step"] = llvm::json::Object{{"kernels", decode.kernels},
                                                 {"arena_bytes", decode.arena},
                                                 {"kv_cache_bytes", decode.kvCache},
                                                 {"weights_bytes", decode.weights},
                                                 {"capacity", kCheckCapacity}};
      else
        root["decode_step"] = llvm::json::Object{{"error", decode.error}};
      llvm::json::Array own;
      for (const std::string &n : decode.ownCaches)
        own.push_back(n);
      root["own_cache_io"] = std::move(own);
      root["token_history"] = decode.tokenHistory;
    } else {
      root["structure"] = nullptr;
      root["layers"] = nullptr;
      root["unrecognized"] = nullptr;
    }
    root["ok"] = ok;
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    return ok ? 0 : 1;
  }

  llvm::raw_ostream &os = llvm::outs();
  os << "model:        " << (*model)->path() << "\n";
  os << "producer:     " << (s.producer.empty() ? "(none)" : s.producer) << "\n";
  os << "ir version:   " << s.irVersion << "\n";
  os << "opsets:       ";
  for (size_t i = 0; i < s.opsets.size(); ++i)
    os << (i ? ", " : "") << s.opsets[i].first << " " << s.opsets[i].second;
  os << "\n";
  os << "architecture: " << (s.family.empty() ? "unknown" : s.family);
  if (!s.familySource.empty())
    os << " (from " << s.familySource << ")";
  if (s.numLayers >= 0)
    os << ", " << s.numLayers << " layers";
  if (!s.features.empty()) {
    os << "; ";
    for (size_t i = 0; i < s.features.size(); ++i)
      os << (i ? ", " : "") << s.features[i];
  }
  os << "\n";
  os << "inputs:\n";
  for (auto &v : s.inputs)
    os << "  " << v.name << ": " << joinDims(v) << "\n";
  os << "outputs:\n";
  for (auto &v : s.outputs)
    os << "  " << v.name << ": " << joinDims(v) << "\n";
  os << "parameters:   " << s.parameterCount << " (" << humanBytes(s.parameterBytes);
  if (s.externalBytes)
    os << ", " << humanBytes(s.externalBytes) << " external";
  os << ")\n";
  for (auto &[t, totals] : s.parameters)
    os << "  " << t << ": " << totals.elements << " in " << totals.tensors << " tensors ("
       << humanBytes(totals.bytes) << ")\n";
  os << "operators:    " << s.numNodes << " nodes\n";
  for (auto &[op, n] : s.opHistogram)
    os << "  " << op << " x" << n << "\n";
  if (!unsupported.empty())
    os << "unsupported:  " << unsupported.size() << " node(s)\n"
       << formatUnsupported(unsupported) << "\n";
  if (!importError.empty())
    os << "import:       failed: " << importError << "\n";
  if (!raiseError.empty())
    os << "raise:        failed: " << raiseError << "\n";
  if (structure) {
    os << "structure:    " << structure->summary() << "\n";
    os << "layers:       " << structure->layers.size() << "\n";
    if (structure->unrecognized.empty()) {
      os << "unrecognized: none\n";
    } else {
      os << "unrecognized: " << structure->unrecognized.size() << " op(s)\n";
      for (const auto &u : structure->unrecognized)
        os << "  " << u.op << (u.node.empty() ? "" : " (" + u.node + ")") << "\n";
    }
    for (const auto &[scheme, count] : quantizedSchemes)
      os << "quantized:    " << count << " linear layers " << scheme
         << " (weights kept as stored)\n";
    if (decode.error.empty() && decode.kernels >= 0)
      os << "decode step:  " << decode.kernels << " kernels, arena " << humanBytes(decode.arena)
         << ", KV cache " << humanBytes(decode.kvCache) << " (batch 1, " << kCheckCapacity
         << " tokens), weights " << humanBytes(decode.weights) << "\n";
    else
      os << "decode step:  not compiled: " << decode.error << "\n";
    if (!decode.ownCaches.empty())
      os << "fallback:     no recognised attention reads " << decode.ownCaches.size()
         << " past input(s), so the compiled model keeps their own past/present IO (on "
            "buffers like llmc's cache) and runs the unrecognised operations above through "
            "the reference kernels: "
         << llvm::join(decode.ownCaches, ", ") << "\n";
    if (decode.tokenHistory)
      os << "fallback:     no recognised attention and no cache inputs/outputs of the model's "
            "own, so the compiled model keeps the token ids and runs the model over all of "
            "them at every step (the unrecognised operations above through the reference "
            "kernels)\n";
  }
  os << "status:       " << (ok ? "ok" : "NOT SUPPORTED") << "\n";
  return ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "llmc " LLMC_VERSION "\n"; });
  cl::HideUnrelatedOptions(llmcCategory, cl::SubCommand::getTopLevel());
  cl::HideUnrelatedOptions(llmcCategory, importCmd);
  cl::HideUnrelatedOptions(llmcCategory, checkCmd);
  cl::HideUnrelatedOptions(llmcCategory, opsCmd);
  cl::HideUnrelatedOptions(llmcCategory, execCmd);
  cl::HideUnrelatedOptions(llmcCategory, conformanceCmd);
  cl::HideUnrelatedOptions(llmcCategory, verifyCmd);
  for (cl::SubCommand *sub : cl::getRegisteredSubcommands())
    cl::HideUnrelatedOptions(llmcCategory, *sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "llmc: ahead-of-time compiler for transformer language models\n\n"
                              "  llmc import model.onnx [-o out.mlir]\n"
                              "  llmc check model.onnx [--json]\n"
                              "  llmc exec model.onnx|module.mlir --inputs DIR --outputs DIR [--function NAME]\n"
                              "  llmc conformance DIR [--filter REGEX] [--unclaimed FILE]\n"
                              "  llmc verify FIXTURE_DIR... [--shared DIR]\n"
                              "  llmc ops [--markdown]\n"
                              "  llmc compile model.onnx -o out.llmc [--max-seq N] [--batch ...] "
                              "[--prefill-buckets ...] [--emit=source] [--stats]\n"
                              "  llmc run out.llmc --ids 1,2,3 [--max-new-tokens N] [sampling flags] "
                              "[--speculative prompt-lookup|draft:PATH]\n"
                              "  llmc inspect out.llmc [--json]\n"
                              "  llmc bench out.llmc [--prompt-len P] [--gen G] [--json] "
                              "[--speculative prompt-lookup|draft:PATH --prompt TEXT]\n\n"
                              "Run `llmc <command> --help` for a command's options.\n");
  if (importCmd)
    return runImport();
  if (checkCmd)
    return runCheck();
  if (opsCmd)
    return runOps();
  if (execCmd)
    return runExec();
  if (conformanceCmd)
    return runConformance();
  if (verifyCmd)
    return runVerify();
  if (compileCommandGiven()) {
    auto ctx = makeContext();
    return runCompile(*ctx);
  }
  if (runCommandGiven())
    return runRun();
  if (inspectCommandGiven())
    return runInspect();
  if (benchCommandGiven())
    return runBench();
  if (grammarCommandGiven())
    return runGrammar();
  llvm::errs() << "llmc: no command given; run `llmc --help`\n";
  return 1;
}
