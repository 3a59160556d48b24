//===- onnx_import_fuzzer.cpp - libFuzzer target for the ONNX importer ---===//
//
// Arbitrary bytes through the whole import: reader, op table, attribute
// conversion, type inference and verification. A malformed graph must give
// an error; the importer must never crash, abort or hang on one.
//
//===----------------------------------------------------------------------===//
#include "python-free-frontend/OnnxImporter.h"
#include "python-free-frontend/OnnxModel.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>

using namespace mlir;
using namespace mlir::llmc;

// libMLIR.so is not instrumented, but LLVM's BumpPtrAllocator, inlined into
// this instrumented code, poisons the unused part of a slab that libMLIR then
// allocates from without unpoisoning it: a false report on the first
// StringAttr. Manual poisoning is therefore off; ASan still checks every
// access of ours against the real heap.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  auto model = OnnxModel::loadFromBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(bytes), size), "/nonexistent",
      "fuzz.onnx");
  if (!model) {
    llvm::consumeError(model.takeError());
    return 0;
  }
  (void)findUnsupportedNodes(**model);
  DialectRegistry registry;
  registerImportDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  // Diagnostics are collected by the importer; keep the rest quiet.
  ctx.getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
  auto module = importOnnxModel(ctx, **model);
  if (!module)
    llvm::consumeError(module.takeError());
  return 0;
}
