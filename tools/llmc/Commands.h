//===- Commands.h - the llmc subcommands defined outside llmc.cpp ---------===//
#ifndef LLMC_TOOLS_LLMC_COMMANDS_H
#define LLMC_TOOLS_LLMC_COMMANDS_H

#include "compiler/Codegen/CPU/EmitCpp.h"
#include "llmc/llmc.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::llmc {

/// The category every llmc option is listed under.
llvm::cl::OptionCategory &llmcOptionCategory();

bool compileCommandGiven();
bool runCommandGiven();
bool inspectCommandGiven();
bool benchCommandGiven();
bool grammarCommandGiven();

int runCompile(MLIRContext &ctx);

/// What `llmc compile` takes.
struct CompileRequest {
  std::string input, output;
  std::string target = "cpu";
  std::string cudaArch = "sm_80,sm_86,sm_89,sm_90a"; // --target cuda: SASS targets, or "none"
  std::string nvcc;                                  // empty: found as Artifact.h says
  int64_t maxSeq = 2048;
  std::vector<int64_t> batch, buckets; // empty: the defaults
  std::vector<int64_t> verifyBuckets;  // added to the prefill buckets
  std::string dtype = "f32";
  std::string kvDtype = "auto"; // auto (the compute type) or int8
  std::string cpu = "avx2"; // avx2, avx512, native
  std::string cxx;          // empty: $CXX, else c++
  bool emitSource = false;
  std::string tokenizer; // tokenizer.json (empty: the one beside the model, if any)
  std::string quant;     // "", int8[:gN][:asym], int4[:gN][:asym]
  std::vector<std::string> quantSkip; // lm_head, or substrings of layer names
  std::string quantActivations = "int8"; // int8 or f32
  bool quantEmbeddings = false;          // also the token embedding tables
  // The accuracy gate (with quant): token ids (one sequence per line) or
  // text, cut into pieces of evalSeqLen tokens (0: 128, or maxSeq when less),
  // at most evalMaxSequences.
  std::string evalIds, evalText;
  int64_t evalSeqLen = 0, evalMaxSequences = 32;
  double maxKl = -1; // fail when the mean KL divergence exceeds it (< 0: no gate)
  // GPTQ (with quant): calibration token ids or text, cut as above into
  // pieces of calibrationSeqLen tokens, at most calibrationMaxSequences.
  std::string calibrationIds, calibrationText;
  std::string calibrationSave;  // also write the statistics here
  std::string calibrationStats; // statistics saved before, instead of collecting them
  int64_t calibrationSeqLen = 0, calibrationMaxSequences = 64;
};

/// A --quant spec: int8 (per output channel) or int4 (groups of 32) with
/// optional ":g<N>" (group size) and ":asym" (zero points).
struct QuantSpec {
  int64_t bits = 0, group = 0;
  bool asymmetric = false;
};
llvm::Expected<QuantSpec> parseQuantSpec(llvm::StringRef spec);

/// Compiles `req.input` into the artifact `req.output`; progress lines go
/// to `log` when given.
llvm::Expected<CpuModel> compileModel(MLIRContext &ctx, const CompileRequest &req,
                                      llvm::raw_ostream *log);
int runRun();
int runInspect();
int runBench();
int runGrammar();

/// Prints "llmc: error: <message>" and returns 1 (a command's exit code).
int fail(const llvm::Twine &message);

/// Token ids separated by commas; `what` names the option in the error.
llvm::Expected<std::vector<int32_t>> parseIds(llvm::StringRef text, llvm::StringRef what);

/// The token ids of `text` by the artifact's tokenizer (with its BOS).
llvm::Expected<std::vector<int32_t>> tokenizeText(llmc_model *model, llvm::StringRef text);

/// A session with `so` (after --cpus `cpus` into it); the error names the
/// problem.
llvm::Expected<llmc_session *> createSession(llmc_model *model, llmc_session_options so,
                                             llvm::StringRef cpus);

/// --cpus (comma-separated CPU numbers) into the session options; `cpus`
/// keeps the numbers.
llvm::Error takeCpus(llvm::StringRef text, std::vector<int32_t> &cpus, llmc_session_options &so);

/// The speculative decoding of `llmc run/bench --speculative`:
/// "prompt-lookup" or "draft:PATH" (a draft artifact, loaded here with
/// `device`; freed by the caller with llmc_model_free).
struct SpeculativeChoice {
  int32_t mode = 0; // LLMC_SPECULATIVE_*
  llmc_model *draft = nullptr;
};
llvm::Expected<SpeculativeChoice> parseSpeculative(llvm::StringRef spec, llvm::StringRef device);

/// What --json-schema FILE, --regex RE or --grammar FILE gave: its kind
/// (LLMC_GRAMMAR_*), the option, and the text (a file read). Kind -1 when
/// none was given; an error when several were, or a file is unreadable.
struct GrammarSource {
  int32_t kind = -1;
  std::string option, text;
};
llvm::Expected<GrammarSource> grammarSource(llvm::StringRef jsonSchemaFile, llvm::StringRef regex,
                                            llvm::StringRef grammarFile);

/// The grammar of --json-schema FILE, --regex RE or --grammar FILE (at most
/// one given; none: nullptr), for `model`; freed with llmc_grammar_free.
llvm::Expected<llmc_grammar *> makeGrammar(llmc_model *model, llvm::StringRef jsonSchemaFile,
                                           llvm::StringRef regex, llvm::StringRef grammarFile);

} // namespace mlir::llmc

#endif // LLMC_TOOLS_LLMC_COMMANDS_H
