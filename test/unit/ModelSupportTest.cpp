//===- ModelSupportTest.cpp - the CPU artifact's in-place cache writes ----===//
//
// runtime/src/model/ModelSupport.h: tensorScatterInPlace, which a compiled
// static-cache export calls instead of TensorScatter's copy of the whole
// cache (codegen::inPlaceScatters), against ONNX TensorScatter's
// definition (linear mode: update[b, .., k, ..] at row write_indices[b] + k
// along the axis, everything else as it was), in the 4-D and the 3-D
// layouts; its refusals (a write past the cache, write_indices of the wrong
// length or type, an update that does not fit) leave the cache as it was.
// The end-to-end runs (test/e2e/fallback.test, models.test) hold the
// compiled model to onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/ModelSupport.h"

#include <gtest/gtest.h>

#include <vector>

using namespace llmc;
using namespace llmc::model;
using llmc::cpu::DType;
using llmc::cpu::Tensor;

namespace {

/// A f32 tensor of `shape` whose element i is `base + i`.
Tensor counting(const cpu::Shape &shape, float base) {
  Tensor t;
  EXPECT_TRUE(Tensor::allocate(DType::Float, shape, t).isOk());
  for (int64_t i = 0; i < t.numel(); ++i)
    t.mutableData<float>()[i] = base + float(i);
  return t;
}

Tensor indices(std::vector<int64_t> v) {
  Tensor t;
  EXPECT_TRUE(Tensor::allocate(DType::Int64, {int64_t(v.size())}, t).isOk());
  for (size_t i = 0; i < v.size(); ++i)
    t.mutableData<int64_t>()[i] = v[i];
  return t;
}

std::vector<float> values(const Tensor &t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

/// ONNX TensorScatter (linear) of `update` into a copy of `cache`:
/// [batch, mid..., len, inner...] with the axis at `axis`.
std::vector<float> scattered(const Tensor &cache, const Tensor &update,
                             const std::vector<int64_t> &starts, int64_t axis) {
  std::vector<float> out = values(cache);
  int64_t mid = 1, inner = 1, len = cache.dim(axis), n = update.dim(axis);
  for (int64_t d = 1; d < axis; ++d)
    mid *= cache.dim(d);
  for (int64_t d = axis + 1; d < cache.rank(); ++d)
    inner *= cache.dim(d);
  for (int64_t b = 0; b < cache.dim(0); ++b)
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t k = 0; k < n; ++k)
        for (int64_t e = 0; e < inner; ++e)
          out[size_t(((b * mid + m) * len + starts[size_t(b)] + k) * inner + e)] =
              update.data<float>()[((b * mid + m) * n + k) * inner + e];
  return out;
}

TEST(TensorScatterInPlace, FourDimensionalCacheAtEachSequencesIndex) {
  Tensor cache = counting({2, 3, 10, 4}, 0.0f), update = counting({2, 3, 4, 4}, 1000.0f);
  std::vector<float> want = scattered(cache, update, {1, 6}, 2);
  Tensor out;
  ASSERT_TRUE(tensorScatterInPlace(cache, update, indices({1, 6}), 2, out, "op").isOk());
  EXPECT_EQ(values(cache), want);
  EXPECT_EQ(out.raw(), cache.raw()); // the cache's own storage
}

TEST(TensorScatterInPlace, ThreeDimensionalCacheAndANegativeAxis) {
  // [B, T, H * D], the sequence axis 1 (given as -2).
  Tensor cache = counting({2, 8, 6}, 0.0f), update = counting({2, 1, 6}, 500.0f);
  std::vector<float> want = scattered(cache, update, {7, 0}, 1);
  Tensor out;
  ASSERT_TRUE(tensorScatterInPlace(cache, update, indices({7, 0}), -2, out, "op").isOk());
  EXPECT_EQ(values(cache), want);
}

TEST(TensorScatterInPlace, RefusalsLeaveTheCacheAsItWas) {
  Tensor cache = counting({2, 3, 10, 4}, 0.0f), update = counting({2, 3, 4, 4}, 1000.0f);
  std::vector<float> before = values(cache);
  Tensor out, i32;
  ASSERT_TRUE(Tensor::allocate(DType::Int32, {2}, i32).isOk());
  auto fails = [&](const Tensor &u, const Tensor &idx, int64_t axis, const char *says) {
    llmc::cpu::Status s = tensorScatterInPlace(cache, u, idx, axis, out, "/cache_0_key");
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("/cache_0_key"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
    EXPECT_EQ(values(cache), before);
  };
  // The second sequence's rows would end past the cache (the first's fit:
  // nothing is written for either).
  fails(update, indices({0, 7}), 2, "write index 7 + 4 exceeds the cache length 10");
  fails(update, indices({-1, 0}), 2, "write index -1");
  fails(update, indices({0}), 2, "write_indices must be one i64 per batch entry");
  fails(update, i32, 2, "write_indices must be one i64 per batch entry");
  fails(counting({2, 2, 4, 4}, 0.0f), indices({0, 0}), 2, "does not fit past_cache");
  fails(update, indices({0, 0}), 0, "does not fit past_cache");
}

} // namespace
