//===- Executor.h - run an imported graph on the CPU ----------------------===//
//
// The reference executor: imports an ONNX model, lowers it to exec.kernel
// launches (llmc-lower-to-exec) and runs them with the reference CPU kernels,
// resolving every shape at run time. It is exactly ONNX's semantics, and the
// oracle that optimised and device code is compared against.
//
// Thread safety: one run at a time per Executor.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EXECUTOR_EXECUTOR_H
#define LLMC_COMPILER_EXECUTOR_EXECUTOR_H

#include "compiler/Executor/TensorIO.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir::llmc {

class OnnxModel;

/// The declared type of a graph input or output: element type, and per
/// dimension a static size or -1 with an optional symbolic name.
struct ValueSignature {
  std::string name;
  ::llmc::cpu::DType dtype;
  bool ranked = true;
  std::vector<int64_t> dims;
  std::vector<std::string> dimNames;
  std::string describe() const; // "i64[batch, seq]"
};

class Executor {
public:
  ~Executor();

  /// Loads, imports and lowers an ONNX model file. `pipeline`, when given,
  /// is a pass pipeline (e.g. "llmc-canonicalize,llmc-raise-transformer")
  /// run on the imported module first: executing its output checks the
  /// passes.
  static llvm::Expected<std::unique_ptr<Executor>> fromOnnxFile(llvm::StringRef path,
                                                                llvm::StringRef pipeline = "");

  /// Parses an .mlir module of llm (or exec) operations, runs `pipeline` on
  /// it and lowers it: runs what the passes produce, every function of it.
  /// Weights must be in the file (`llmc import --keep-weights`).
  static llvm::Expected<std::unique_ptr<Executor>> fromMlirFile(llvm::StringRef path,
                                                                llvm::StringRef pipeline = "");

  /// Whether `pipeline` parses as a pass pipeline of registered passes
  /// (module passes, function passes nested implicitly); one line saying
  /// why not.
  static llvm::Error checkPipeline(llvm::StringRef pipeline);

  /// The signature of the primary function ("main", or the only one).
  const std::vector<ValueSignature> &inputs() const;
  const std::vector<ValueSignature> &outputs() const;

  /// Every function, the primary one first (llmc-insert-kv-cache makes
  /// "prefill" and "decode").
  std::vector<std::string> functionNames() const;
  /// A function's signature, or null when there is no such function.
  const std::vector<ValueSignature> *inputsOf(llvm::StringRef function) const;
  const std::vector<ValueSignature> *outputsOf(llvm::StringRef function) const;

  /// Runs the graph. Inputs are matched by name; each is checked against its
  /// declared type (element type, rank, static sizes, and equal sizes for
  /// equal dimension names) before anything runs. Outputs come back in the
  /// graph's order, each checked against the type the compiler inferred.
  llvm::Expected<std::vector<NamedTensor>> run(llvm::ArrayRef<NamedTensor> inputs) const;
  /// Runs the named function.
  llvm::Expected<std::vector<NamedTensor>> run(llvm::StringRef function,
                                               llvm::ArrayRef<NamedTensor> inputs) const;

  /// Sees every kernel launch of a run after it ran: the kernel ("linear",
  /// "quantized_linear", ...), the operation's node name, its inputs (null
  /// for an absent operand; constants included) and its results. The
  /// tensors are valid during the call only.
  using Observer = std::function<void(llvm::StringRef kernel, llvm::StringRef node,
                                      llvm::ArrayRef<const ::llmc::cpu::Tensor *> inputs,
                                      llvm::ArrayRef<::llmc::cpu::Tensor> results)>;
  /// Runs the named function, telling `observer` of each launch.
  llvm::Expected<std::vector<NamedTensor>> run(llvm::StringRef function,
                                               llvm::ArrayRef<NamedTensor> inputs,
                                               const Observer &observer) const;

  /// Number of kernel launches per run.
  size_t numKernels() const;

  /// Sets the integer parameter `name` to `value` on every launch of
  /// `kernel` (every function) whose parameter `when` is nonzero (empty:
  /// every launch); returns how many launches it set.
  size_t setKernelParam(llvm::StringRef kernel, llvm::StringRef name, int64_t value,
                        llvm::StringRef when = "");

private:
  struct Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_EXECUTOR_H
