//===- Error.h - one way to make an llvm::Error from a message ------------===//
#ifndef LLMC_COMPILER_EXECUTOR_ERROR_H
#define LLMC_COMPILER_EXECUTOR_ERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace mlir::llmc {

/// An error carrying `message` (shown to the user as is).
inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace mlir::llmc

#endif // LLMC_COMPILER_EXECUTOR_ERROR_H
