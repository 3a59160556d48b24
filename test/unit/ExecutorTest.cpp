//===- ExecutorTest.cpp - the executor's C++ API ---------------------------===//
//
// The reference executor as a library: load a fixture model, inspect its
// signature, run a prefill and decode steps through DecodeLoop, and compare
// with onnxruntime's logits committed beside it (test/models/llama-optimum).
//
//===----------------------------------------------------------------------===//
#include "compiler/Executor/Conformance.h"
#include "compiler/Executor/DecodeLoop.h"
#include "compiler/Executor/Executor.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace mlir::llmc;
using llmc::cpu::DType;
using llmc::cpu::Tensor;

namespace {

std::string fixturePath(llvm::StringRef file) {
  llvm::SmallString<256> p(LLMC_SOURCE_DIR);
  llvm::sys::path::append(p, "test/models/llama-optimum", file);
  return p.str().str();
}

TEST(Executor, SignatureComesFromTheGraph) {
  auto exec = Executor::fromOnnxFile(fixturePath("model.onnx"));
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  const std::vector<ValueSignature> &ins = (*exec)->inputs();
  ASSERT_EQ(ins.size(), 7u);
  EXPECT_EQ(ins[0].name, "input_ids");
  EXPECT_EQ(ins[0].dtype, DType::Int64);
  EXPECT_EQ(ins[0].describe(), "i64[batch_size, sequence_length]");
  EXPECT_EQ((*exec)->outputs()[0].name, "logits");
  EXPECT_GT((*exec)->numKernels(), 50u);
}

TEST(Executor, MissingAndMistypedInputsNameTheInput) {
  auto exec = Executor::fromOnnxFile(fixturePath("model.onnx"));
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  auto none = (*exec)->run({});
  ASSERT_FALSE(bool(none));
  EXPECT_NE(llvm::toString(none.takeError()).find("missing input 'input_ids'"), std::string::npos);
  float f = 1;
  auto wrong = (*exec)->run({{"input_ids", Tensor::wrap(DType::Float, {1, 1}, &f)}});
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(llvm::toString(wrong.takeError()).find("input 'input_ids' is f32[1, 1]"),
            std::string::npos);
  auto unknown = (*exec)->run({{"tokens", Tensor::wrap(DType::Float, {1, 1}, &f)}});
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("the model has no input 'tokens'"),
            std::string::npos);
}

TEST(Executor, DecodeLoopMatchesOnnxruntime) {
  auto fixture = ModelFixture::load(fixturePath(""), "");
  ASSERT_TRUE(bool(fixture)) << llvm::toString(fixture.takeError());
  auto exec = Executor::fromOnnxFile(fixture->model);
  ASSERT_TRUE(bool(exec)) << llvm::toString(exec.takeError());
  auto loop = DecodeLoop::create(**exec, fixture->io, fixture->emptyCache);
  ASSERT_TRUE(bool(loop)) << llvm::toString(loop.takeError());
  Tolerance tol;
  tol.rtol = 0, tol.atol = 0, tol.scaleRel = fixture->tolerance;
  for (size_t i = 0; i < fixture->references.size(); ++i) {
    auto logits = i == 0 ? loop->step(fixture->prompt) : loop->step({fixture->tokens[i - 1]});
    ASSERT_TRUE(bool(logits)) << llvm::toString(logits.takeError());
    auto ref = readTensorFile(fixture->references[i]);
    ASSERT_TRUE(bool(ref)) << llvm::toString(ref.takeError());
    Comparison c = compareTensors(*logits, ref->tensor, tol);
    EXPECT_TRUE(c.ok) << "step " << i << ": " << c.problem;
  }
  EXPECT_EQ(loop->length(), int64_t(fixture->prompt.size() + fixture->tokens.size()));
  // A failed step leaves the caches as they were.
  EXPECT_FALSE(bool(loop->step({100000})));
  EXPECT_EQ(loop->length(), int64_t(fixture->prompt.size() + fixture->tokens.size()));
}

} // namespace
