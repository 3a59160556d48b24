//===- ShapeInferenceTest.cpp - shared shape rules and constant reading --===//
#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/ShapeInference.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::llmc;

namespace {

class ShapeInferenceTest : public ::testing::Test {
protected:
  ShapeInferenceTest() { ctx.getOrLoadDialect<LLMDialect>(); }
  StringAttr name(const char *n) { return StringAttr::get(&ctx, n); }
  MLIRContext ctx;
};

TEST_F(ShapeInferenceTest, BroadcastKeepsNamesAndStaticSizes) {
  // [batch, 1] x [seq] -> [batch, seq]
  Shape a{Dim::dynamic(name("batch")), Dim::fixed(1)};
  Shape b{Dim::dynamic(name("seq"))};
  FailureOr<Shape> r = broadcastShapes(std::nullopt, a, b);
  ASSERT_TRUE(succeeded(r));
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], Dim::dynamic(name("batch")));
  EXPECT_EQ((*r)[1], Dim::dynamic(name("seq")));
  // A dynamic dim against a static one other than 1 must be that size.
  r = broadcastShapes(std::nullopt, Shape{Dim::dynamic(name("x"))}, Shape{Dim::fixed(8)});
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ((*r)[0], Dim::fixed(8));
  // Two different names give an unnamed dynamic dim; equal names keep it.
  r = broadcastShapes(std::nullopt, Shape{Dim::dynamic(name("p"))}, Shape{Dim::dynamic(name("q"))});
  EXPECT_EQ((*r)[0], Dim::dynamic());
  r = broadcastShapes(std::nullopt, Shape{Dim::dynamic(name("p"))}, Shape{Dim::dynamic(name("p"))});
  EXPECT_EQ((*r)[0], Dim::dynamic(name("p")));
  EXPECT_TRUE(failed(broadcastShapes(std::nullopt, Shape{Dim::fixed(3)}, Shape{Dim::fixed(4)})));
}

TEST_F(ShapeInferenceTest, TypesCarryNamesAsEncoding) {
  Shape s{Dim::dynamic(name("b")), Dim::fixed(4), Dim::dynamic()};
  Type t = makeTensorType(s, Float32Type::get(&ctx));
  auto ranked = cast<RankedTensorType>(t);
  EXPECT_TRUE(isa<DimsAttr>(ranked.getEncoding()));
  MaybeShape back = getShape(t);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, s);
  // Without names there is no encoding at all.
  Type plain = makeTensorType(Shape{Dim::fixed(2), Dim::dynamic()}, Float32Type::get(&ctx));
  EXPECT_FALSE(cast<RankedTensorType>(plain).getEncoding());
  EXPECT_FALSE(getShape(UnrankedTensorType::get(Float32Type::get(&ctx))).has_value());
}

TEST_F(ShapeInferenceTest, CompatibilityIgnoresNamesNotSizes) {
  Type f32 = Float32Type::get(&ctx);
  Type named = makeTensorType(Shape{Dim::dynamic(name("b")), Dim::fixed(4)}, f32);
  Type refined = RankedTensorType::get({2, 4}, f32);
  Type conflicting = RankedTensorType::get({2, 5}, f32);
  EXPECT_TRUE(areCompatibleReturnTypes(TypeRange{named}, TypeRange{refined}));
  EXPECT_FALSE(areCompatibleReturnTypes(TypeRange{named}, TypeRange{conflicting}));
  EXPECT_FALSE(areCompatibleReturnTypes(TypeRange{named},
                                        TypeRange{RankedTensorType::get({2, 4}, Float16Type::get(&ctx))}));
}

TEST_F(ShapeInferenceTest, ReadsDenseAndResourceElements) {
  auto i32 = RankedTensorType::get({3}, IntegerType::get(&ctx, 32));
  auto dense = DenseIntElementsAttr::get(i32, llvm::ArrayRef<int32_t>{-1, 2, 3});
  EXPECT_EQ(*readIntElements(dense), (llvm::SmallVector<int64_t>{-1, 2, 3}));
  // A resource blob holding ui8 values reads as unsigned.
  static const char bytes[] = {char(200), 1, 2};
  auto ui8 = RankedTensorType::get({3}, IntegerType::get(&ctx, 8, IntegerType::Unsigned));
  auto resource = DenseResourceElementsAttr::get(
      ui8, "u", UnmanagedAsmResourceBlob::allocateWithAlign(llvm::ArrayRef<char>(bytes, 3), 1));
  EXPECT_EQ(*readIntElements(resource), (llvm::SmallVector<int64_t>{200, 1, 2}));
  auto doubles = readDoubleElements(resource);
  ASSERT_TRUE(doubles.has_value());
  EXPECT_EQ((*doubles)[0], 200.0);
  // Floats are not integers.
  auto f = DenseElementsAttr::get(RankedTensorType::get({1}, Float32Type::get(&ctx)), 1.5f);
  EXPECT_FALSE(readIntElements(f).has_value());
  EXPECT_EQ((*readDoubleElements(f))[0], 1.5);
}

} // namespace
