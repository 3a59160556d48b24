//===- onnx_reader_fuzzer.cpp - libFuzzer target for the ONNX reader -----===//
//
// Feeds arbitrary bytes to OnnxModel (parse, validation, topological sort),
// then reads every initializer, every graph input/output type and the
// summary `llmc check` prints. Any crash, leak, hang or sanitizer report is a
// bug: bad input must only ever produce an llvm::Error.
//
//===----------------------------------------------------------------------===//
#include "python-free-frontend/ModelSummary.h"
#include "python-free-frontend/OnnxModel.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <fstream>
#include <string>

using namespace mlir::llmc;

namespace {
std::string modelDir;
}

// A folder with a small external data file, so that inputs can reach the
// external-data code with a valid location ("data.bin").
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("llmc-fuzz", dir))
    return 0;
  modelDir = std::string(dir);
  llvm::SmallString<128> data(dir);
  llvm::sys::path::append(data, "data.bin");
  std::ofstream out(std::string(data), std::ios::binary);
  for (int i = 0; i < 4096; ++i)
    out.put(char(i * 37));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  auto model = OnnxModel::loadFromBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(bytes), size), modelDir, "fuzz.onnx");
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  const OnnxModel &m = **model;
  for (const onnx::TensorProto &t : m.graph().initializer()) {
    auto data = m.tensorData(t);
    if (!data)
      llvm::consumeError(data.takeError());
  }
  for (const onnx::ValueInfoProto *in : m.realInputs()) {
    auto t = m.valueType(*in, "input");
    if (!t)
      llvm::consumeError(t.takeError());
  }
  for (const onnx::ValueInfoProto &out : m.graph().output()) {
    auto t = m.valueType(out, "output");
    if (!t)
      llvm::consumeError(t.takeError());
  }
  for (const onnx::NodeProto *node : m.sortedNodes())
    (void)m.describe(*node);
  auto summary = summarizeModel(m);
  if (!summary)
    llvm::consumeError(summary.takeError());
  return 0;
}
