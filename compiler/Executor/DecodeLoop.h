//===- DecodeLoop.h - prefill and decode through past/present IO ---------===//
//
// Drives a decoder exported with explicit KV-cache inputs and outputs (the
// form optimum, torch.onnx.export and onnxruntime-genai produce): a prefill
// over the prompt from empty caches, then one token per step, each step's
// present outputs fed back as the next step's past inputs. The attention
// mask is all ones over past and new tokens; position ids count from the
// number of tokens already cached. A model without caches is run on the
// whole sequence at every step instead (its logits cover every position).
//
// ModelFixture is a folder written by tools/fixtures/make_models.py: the
// model, fixture.json (IO roles, prompt, onnxruntime's greedy tokens,
// tolerance) and reference logits; verifyFixture replays it on the reference
// executor.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EXECUTOR_DECODELOOP_H
#define LLMC_COMPILER_EXECUTOR_DECODELOOP_H

#include "compiler/Executor/Executor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mlir::llmc {

/// Which graph inputs and outputs play which part in a decode step.
struct DecoderIO {
  std::string inputIds;
  std::string attentionMask; // empty: the model has none
  std::string positionIds;   // empty: the model has none
  // A static-cache export (ONNX opset 24: TensorScatter into past caches of
  // a fixed length, Attention with nonpad_kv_seqlen): [B] inputs holding
  // where this step's keys are written and how many keys are valid after
  // it. Empty: the model has none (its caches grow by concatenation).
  std::string writeIndices;
  std::string kvValidLength;
  // Caches that are buffers of fixed rows the model manages itself (a
  // window-sized GroupQueryAttention cache: present has the past's rows),
  // without write indices: the first past is `emptyCache`, all zeros.
  bool fixedCacheRows = false;
  std::string logits;
  struct Cache {
    std::string past, present;
  };
  std::vector<Cache> caches;
};

class DecodeLoop {
public:
  /// Checks that `io` names inputs/outputs of `exec` (and every input is
  /// covered); `emptyCache` is the shape of each past input before the first
  /// step, with 0 for the sequence dimension (its full, fixed shape for a
  /// static-cache export, whose caches start as zeros).
  static llvm::Expected<DecodeLoop> create(const Executor &exec, DecoderIO io,
                                           std::vector<int64_t> emptyCache);

  /// Runs the model on `tokens` (batch 1) after everything so far and returns
  /// the logits output. The caches advance only if the step succeeds.
  llvm::Expected<::llmc::cpu::Tensor> step(llvm::ArrayRef<int64_t> tokens);

  /// Tokens cached so far.
  int64_t length() const { return cached; }

private:
  DecodeLoop(const Executor &exec, DecoderIO io) : exec(&exec), io(std::move(io)) {}
  llvm::Expected<::llmc::cpu::Tensor> indexTensor(const std::string &input,
                                                  llvm::ArrayRef<int64_t> values,
                                                  std::vector<int64_t> shape) const;

  const Executor *exec;
  DecoderIO io;
  std::map<std::string, ::llmc::cpu::DType> inputTypes;
  std::map<std::string, ::llmc::cpu::Tensor> past; // by past input name
  std::vector<int64_t> history; // every token so far (models without caches)
  int64_t cached = 0;
};

/// A model fixture folder (see tools/fixtures/make_models.py).
struct ModelFixture {
  std::string name, dir;
  std::string model;       // path of the ONNX model
  DecoderIO io;
  std::vector<int64_t> emptyCache;
  std::vector<int64_t> prompt, tokens; // onnxruntime's greedy continuation
  std::vector<int64_t> greedy; // its free-running greedy continuation (add_greedy.py), if any
  std::vector<std::string> references; // prefill, then one per decode step
  double tolerance = 1e-4; // max abs error / max |reference logit|, per step

  /// Reads dir/fixture.json. A fixture of a model outside the repository
  /// names it by "shared_model", a path under `sharedDir`.
  static llvm::Expected<ModelFixture> load(llvm::StringRef dir, llvm::StringRef sharedDir);
};

struct StepCheck {
  std::string label;          // "prefill", "step 3"
  double maxAbsError = 0, scale = 0;
  bool withinTolerance = false;
  int64_t argmax = -1, expectedToken = -1; // -1: nothing to compare
  bool nearTie = false; // onnxruntime's top two logits are within tolerance
};

struct FixtureReport {
  std::vector<StepCheck> steps;
  std::string error; // set when the model could not be run at all
  // Free-running greedy generation (llmc verify --compiled): onnxruntime's
  // tokens, ours, and how many agree from the start.
  std::vector<int64_t> greedyExpected, greedyActual;
  size_t greedyMatched = 0;
  /// Every step within tolerance and every greedy token equal to
  /// onnxruntime's, except where its top two logits tie within tolerance;
  /// the free-running greedy tokens, when compared, all equal.
  bool passed() const;
};

/// Replays `fixture`; `pipeline` (a function pass pipeline) runs on the
/// imported graph first.
FixtureReport verifyFixture(const ModelFixture &fixture, llvm::StringRef pipeline = "");

/// Logits [1, n, vocab] for `tokens` after everything fed so far (or, for
/// a model without caches, for the whole sequence).
using FixtureStepper =
    std::function<llvm::Expected<::llmc::cpu::Tensor>(llvm::ArrayRef<int64_t>)>;

/// Replays `fixture` through `step` (teacher-forced with onnxruntime's
/// tokens): the prefill, then each decode step, against the references.
/// `newRowsOnly`: the stepper returns the new tokens' rows only.
FixtureReport verifyFixtureSteps(const ModelFixture &fixture, const FixtureStepper &step,
                                 bool newRowsOnly);

/// Runs the imported graph and its `pipeline` output side by side on the
/// fixture's prompt and `decodeSteps` greedy tokens of the imported graph
/// (prefill/decode entry points when the pipeline makes them): each step's
/// logits must agree within `atol` (f32; lower-precision logits, or any
/// when `atol` <= 0, within the fixture's relative tolerance) and give the
/// same token.
FixtureReport verifyAgainstImport(const ModelFixture &fixture, llvm::StringRef pipeline,
                                  int decodeSteps, double atol);

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_DECODELOOP_H
