//===- Status.h - the result of a fallible runtime call -------------------===//
//
// The runtime never aborts on bad input: every fallible call returns a
// Status with a message. Plain C++ (no LLVM, no MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_STATUS_H
#define LLMC_RUNTIME_CPU_STATUS_H

#include <string>
#include <utility>

namespace llmc::cpu {

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool isOk() const { return !failed; }
  explicit operator bool() const { return !failed; }
  const std::string &message() const { return text; }

private:
  Status() = default;
  explicit Status(std::string m) : failed(true), text(std::move(m)) {}
  bool failed = false;
  std::string text;
};

/// Returns from the enclosing function when `expr` fails.
#define LLMC_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::llmc::cpu::Status _status = (expr);                                      \
    if (!_status)                                                              \
      return _status;                                                          \
  } while (0)

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_STATUS_H
