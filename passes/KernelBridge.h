//===- KernelBridge.h - llm IR values <-> reference CPU kernel values -----===//
//
// The reference CPU kernels (runtime/src/cpu) are plain C++; these functions
// carry constants and attributes across, for the executor and for passes that
// evaluate operations at compile time (constant folding runs an op's own
// kernel, so a folded constant is exactly what execution would compute).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_KERNELBRIDGE_H
#define LLMC_PASSES_KERNELBRIDGE_H

#include "runtime/src/cpu/Kernel.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::llmc {

/// A runtime tensor viewing (or, for splats and i1, holding) a constant.
llvm::Expected<::llmc::cpu::Tensor> constantTensor(ElementsAttr attr);

/// The tensor of a value defined by llm.constant (a view, as
/// constantTensor), or nothing for any other value or an unreadable one.
std::optional<::llmc::cpu::Tensor> constantOf(Value v);

/// Kernel parameters from an op's attributes.
llvm::Expected<::llmc::cpu::Attributes> kernelParams(DictionaryAttr dict);

/// The kernel of an llm operation (its name without `llm.`), or nullptr.
const ::llmc::cpu::KernelEntry *kernelFor(Operation *op);

/// Runs `op`'s kernel on `inputs` (one per operand, null for a none
/// operand) and returns its results; the error is the kernel's message.
llvm::Expected<std::vector<::llmc::cpu::Tensor>>
evaluateOp(Operation *op, llvm::ArrayRef<const ::llmc::cpu::Tensor *> inputs);

/// A dense attribute of `type` holding `t`'s elements, or a null attribute
/// where `type` is not a builtin integer/float type of at least 8 bits (or
/// i1) with the tensor's static shape.
ElementsAttr denseFromTensor(const ::llmc::cpu::Tensor &t, RankedTensorType type);

} // namespace mlir::llmc

#endif // LLMC_PASSES_KERNELBRIDGE_H
