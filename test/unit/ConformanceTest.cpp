//===- ConformanceTest.cpp - tensor comparison tolerances -----------------===//
#include "compiler/Executor/Conformance.h"
#include "runtime/src/cpu/Numeric.h"

#include <gtest/gtest.h>

using mlir::llmc::compareTensors;
using mlir::llmc::Tolerance;
using llmc::cpu::DType;
using llmc::cpu::Tensor;

namespace {

TEST(CompareTensors, OnnxRunnerToleranceIsAbsolutePlusRelative) {
  float ref[] = {1000.0f, 1e-3f};
  float close[] = {1000.9f, 1e-3f + 5e-7f}; // within 1e-7 + 1e-3 |ref|
  float far[] = {1000.0f, 1e-3f + 2e-6f};   // 2e-6 > 1e-7 + 1e-6
  Tensor r = Tensor::wrap(DType::Float, {2}, ref);
  EXPECT_TRUE(compareTensors(Tensor::wrap(DType::Float, {2}, close), r).ok);
  auto c = compareTensors(Tensor::wrap(DType::Float, {2}, far), r);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.problem.find("element 1"), std::string::npos) << c.problem;
}

TEST(CompareTensors, ScaleFloorsAreRelativeToTheLargestReference) {
  float ref[] = {16.0f, 1e-4f};
  float got[] = {16.0f, 1e-4f + 2e-6f};
  Tensor r = Tensor::wrap(DType::Float, {2}, ref), g = Tensor::wrap(DType::Float, {2}, got);
  EXPECT_FALSE(compareTensors(g, r).ok);
  Tolerance ulps;
  ulps.scaleUlps = 2; // 2 * 2^-23 * 16 = 3.8e-6
  EXPECT_TRUE(compareTensors(g, r, ulps).ok);
  ulps.scaleUlps = 0.5; // 9.5e-7
  EXPECT_FALSE(compareTensors(g, r, ulps).ok);
  Tolerance rel;
  rel.rtol = 0, rel.atol = 0, rel.scaleRel = 1e-6; // 1.6e-5
  EXPECT_TRUE(compareTensors(g, r, rel).ok);
  rel.scaleRel = 1e-7;
  EXPECT_FALSE(compareTensors(g, r, rel).ok);
}

TEST(CompareTensors, UlpsFollowTheElementType) {
  uint16_t ref[] = {llmc::cpu::floatToHalf(2.0f), llmc::cpu::floatToHalf(0.01f)};
  uint16_t got[] = {ref[0], uint16_t(ref[1] + 4)}; // 4 f16 ulps at 0.01: 3e-5
  Tensor r = Tensor::wrap(DType::Float16, {2}, ref), g = Tensor::wrap(DType::Float16, {2}, got);
  EXPECT_FALSE(compareTensors(g, r).ok);
  Tolerance tol;
  tol.scaleUlps = 1; // 2^-10 * 2 = 2e-3
  EXPECT_TRUE(compareTensors(g, r, tol).ok);
}

TEST(CompareTensors, TypeShapeAndNaN) {
  float a[] = {1, NAN}, b[] = {1, NAN}, c[] = {1, 2};
  EXPECT_TRUE(compareTensors(Tensor::wrap(DType::Float, {2}, a), Tensor::wrap(DType::Float, {2}, b)).ok);
  EXPECT_FALSE(compareTensors(Tensor::wrap(DType::Float, {2}, c), Tensor::wrap(DType::Float, {2}, b)).ok);
  EXPECT_FALSE(compareTensors(Tensor::wrap(DType::Float, {1, 2}, a), Tensor::wrap(DType::Float, {2}, b)).ok);
  int32_t i[] = {1, 2};
  EXPECT_FALSE(compareTensors(Tensor::wrap(DType::Int32, {2}, i), Tensor::wrap(DType::Float, {2}, c)).ok);
}

} // namespace
