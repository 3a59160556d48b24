//===- Conformance.cpp - run ONNX node tests with the executor ------------===//
#include "compiler/Executor/Conformance.h"

#include "compiler/Executor/Error.h"
#include "compiler/Executor/Executor.h"
#include "runtime/src/cpu/Numeric.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::llmc;
namespace cpu = ::llmc::cpu;

namespace {

bool isFloatLike(cpu::DType t) {
  return cpu::isFloat(t) || t == cpu::DType::Float8E4M3FN || t == cpu::DType::Float8E4M3FNUZ ||
         t == cpu::DType::Float8E5M2 || t == cpu::DType::Float8E5M2FNUZ ||
         t == cpu::DType::Float4E2M1 || t == cpu::DType::Float8E8M0;
}

std::vector<std::string> sortedFiles(llvm::StringRef dir, llvm::StringRef prefix) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int index;
    if (name.starts_with(prefix) && name.ends_with(".pb") &&
        !name.drop_front(prefix.size()).drop_back(3).getAsInteger(10, index))
      found.push_back({index, it->path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &[i, p] : found)
    out.push_back(p);
  return out;
}

} // namespace

/// The spacing of floating-point numbers just below 1 (2^-mantissa bits).
double epsilonOf(cpu::DType t) {
  switch (t) {
  case cpu::DType::Double: return 0x1p-52;
  case cpu::DType::Float16: return 0x1p-10;
  case cpu::DType::BFloat16: return 0x1p-7;
  case cpu::DType::Float8E4M3FN:
  case cpu::DType::Float8E4M3FNUZ: return 0x1p-3;
  case cpu::DType::Float8E5M2:
  case cpu::DType::Float8E5M2FNUZ: return 0x1p-2;
  case cpu::DType::Float4E2M1: return 0x1p-1;
  case cpu::DType::Float8E8M0: return 1.0;
  default: return 0x1p-23;
  }
}

Comparison mlir::llmc::compareTensors(const cpu::Tensor &actual, const cpu::Tensor &expected,
                                      const Tolerance &tol) {
  double rtol = tol.rtol, atol = tol.atol;
  Comparison c;
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    c.ok = false;
    c.problem = "got " + actual.describe() + ", expected " + expected.describe();
    return c;
  }
  if (actual.dtype() == cpu::DType::BFloat16)
    rtol = std::max(rtol, 1.0 / 64); // two bfloat16 ulps, as the ONNX runner allows
  if (!isFloatLike(actual.dtype())) {
    if (actual.bytes() != 0 && std::memcmp(actual.raw(), expected.raw(), actual.bytes()) != 0) {
      c.ok = false;
      size_t es = cpu::storageSize(actual.dtype());
      for (int64_t i = 0; i < actual.numel(); ++i)
        if (std::memcmp(static_cast<const char *>(actual.raw()) + size_t(i) * es,
                        static_cast<const char *>(expected.raw()) + size_t(i) * es, es)) {
          c.problem = "element " + std::to_string(i) + " differs";
          break;
        }
    }
    return c;
  }
  if (tol.scaleUlps > 0 || tol.scaleRel > 0) {
    double scale = 0;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      double e = std::fabs(floatElement(expected, i));
      if (std::isfinite(e))
        scale = std::max(scale, e);
    }
    atol = std::max({atol, tol.scaleRel * scale, tol.scaleUlps * epsilonOf(actual.dtype()) * scale});
  }
  int64_t worst = -1;
  double worstExcess = 0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = floatElement(actual, i), e = floatElement(expected, i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) {
        c.ok = false;
        if (worst < 0)
          worst = i;
        worstExcess = INFINITY;
      }
      continue;
    }
    if (a == e) // also equal infinities
      continue;
    double err = std::fabs(a - e);
    c.maxAbsError = std::max(c.maxAbsError, err);
    if (e != 0)
      c.maxRelError = std::max(c.maxRelError, err / std::fabs(e));
    double excess = err - (atol + rtol * std::fabs(e));
    if (excess > 0 || std::isinf(a) || std::isinf(e)) {
      c.ok = false;
      if (excess > worstExcess || worst < 0) {
        worstExcess = excess;
        worst = i;
      }
    }
  }
  if (!c.ok)
    c.problem = "element " + std::to_string(worst) + " is " + std::to_string(floatElement(actual, worst)) +
                ", expected " + std::to_string(floatElement(expected, worst)) + " (max abs error " +
                std::to_string(c.maxAbsError) + ")";
  return c;
}

llvm::Expected<UnclaimedList> UnclaimedList::load(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return makeError(path + ": cannot read: " + buffer.getError().message());
  UnclaimedList list;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    auto [prefix, reason] = line.split(' ');
    list.entries.push_back({prefix.str(), reason.trim().str()});
  }
  return list;
}

const std::string *UnclaimedList::reasonFor(llvm::StringRef caseName) const {
  for (auto &[prefix, reason] : entries)
    if (caseName.starts_with(prefix))
      return &reason;
  return nullptr;
}

CaseResult mlir::llmc::runConformanceCase(llvm::StringRef dir, llvm::StringRef name,
                                          const Tolerance &tol, llvm::StringRef pipeline) {
  CaseResult result;
  result.name = name.str();
  auto failWith = [&](std::string message) {
    result.status = CaseResult::Failed;
    result.message = std::move(message);
    return result;
  };
  llvm::SmallString<256> modelPath(dir);
  llvm::sys::path::append(modelPath, "model.onnx");
  auto exec = Executor::fromOnnxFile(modelPath, pipeline);
  if (!exec)
    return failWith(llvm::toString(exec.takeError()));
  std::vector<std::string> sets;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (llvm::sys::path::filename(it->path()).starts_with("test_data_set_"))
      sets.push_back(it->path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty())
    return failWith("no test_data_set_* folder");
  for (const std::string &set : sets) {
    std::vector<NamedTensor> inputs;
    std::vector<std::string> inputFiles = sortedFiles(set, "input_");
    for (size_t i = 0; i < inputFiles.size(); ++i) {
      auto t = readTensorFile(inputFiles[i]);
      if (!t)
        return failWith(llvm::toString(t.takeError()));
      // Unnamed tensors bind by position.
      if (t->name.empty() && i < (*exec)->inputs().size())
        t->name = (*exec)->inputs()[i].name;
      inputs.push_back(std::move(*t));
    }
    auto outputs = (*exec)->run(inputs);
    if (!outputs)
      return failWith(llvm::toString(outputs.takeError()));
    std::vector<std::string> expectedFiles = sortedFiles(set, "output_");
    if (expectedFiles.size() > outputs->size())
      return failWith("the model computes " + std::to_string(outputs->size()) + " outputs, " +
                      std::to_string(expectedFiles.size()) + " expected");
    for (size_t i = 0; i < expectedFiles.size(); ++i) {
      auto expected = readTensorFile(expectedFiles[i]);
      if (!expected)
        return failWith(llvm::toString(expected.takeError()));
      Comparison c = compareTensors((*outputs)[i].tensor, expected->tensor, tol);
      result.maxAbsError = std::max(result.maxAbsError, c.maxAbsError);
      if (!c.ok)
        return failWith(llvm::sys::path::filename(set).str() + ", output " + std::to_string(i) +
                        " ('" + (*outputs)[i].name + "'): " + c.problem);
    }
  }
  return result;
}
