//===- Conformance.h - run ONNX node tests with the executor --------------===//
//
// A node-test folder holds model.onnx and test_data_set_N/{input,output}_K.pb.
// Each case is imported, lowered and run on every data set; outputs must have
// the expected element type and shape and match within the ONNX backend
// test runner's tolerances (|out - ref| <= atol + rtol |ref| with rtol = 1e-3,
// atol = 1e-7; rtol >= 2^-6 for bfloat16; NaN matches NaN; integers and
// bools exactly), optionally loosened by a floor relative to the output's
// scale (see Tolerance).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_COMPILER_EXECUTOR_CONFORMANCE_H
#define LLMC_COMPILER_EXECUTOR_CONFORMANCE_H

#include "compiler/Executor/TensorIO.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::llmc {

/// How closely two tensors agree.
struct Comparison {
  bool ok = true;
  std::string problem;     // type/shape mismatch, or the worst element
  double maxAbsError = 0;  // over all elements
  double maxRelError = 0;
};

/// When two floating-point tensors agree: every element within
/// atol + rtol |ref|, where atol is raised to `scaleUlps` units in the last
/// place of the tensor's scale (its largest finite |ref|) and to `scaleRel`
/// times that scale. The defaults are the ONNX backend runner's; the
/// scale-based floors accept rounding differences that any other summation
/// order produces (for references from onnxruntime, not from float64), and
/// model logits are compared with `scaleRel` alone.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
  double scaleUlps = 0;
  double scaleRel = 0;
};

/// (floatElement, once here, is ::llmc::cpu::floatElement: runtime/src/cpu/Tensor.h.)
using ::llmc::cpu::floatElement;

/// Compares `actual` with `expected` under `tol`.
Comparison compareTensors(const ::llmc::cpu::Tensor &actual, const ::llmc::cpu::Tensor &expected,
                          const Tolerance &tol = {});

/// The unclaimed cases: lines "<case-name prefix> <reason>", '#' comments.
struct UnclaimedList {
  std::vector<std::pair<std::string, std::string>> entries;
  static llvm::Expected<UnclaimedList> load(llvm::StringRef path);
  /// The reason a case is unclaimed, or nullptr.
  const std::string *reasonFor(llvm::StringRef caseName) const;
};

struct CaseResult {
  std::string name;
  enum Status { Passed, Failed, Skipped } status = Passed;
  std::string message; // why it failed or was skipped
  double maxAbsError = 0;
};

/// Runs one node-test case folder.
CaseResult runConformanceCase(llvm::StringRef dir, llvm::StringRef name,
                              const Tolerance &tol = {}, llvm::StringRef pipeline = "");

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_CONFORMANCE_H
