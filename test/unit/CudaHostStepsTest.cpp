//===- CudaHostStepsTest.cpp - a CUDA model's operations on the host ------===//
//
// runtime/src/model/cuda/HostSteps.h on the emulation: the cache rows a
// host step reads and writes (only those, for every sequence and head, at
// any capacity), the checks that refuse a bad length, position or shape
// with a message and leave the cache as it was, the upload's check against
// the shape the device code reads, and a reference kernel called with its
// attributes. The end-to-end runs (test/models/cuda-emulated-fallback.test)
// hold whole models with host steps to onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/HostSteps.h"

#include <gtest/gtest.h>

#include <vector>

using namespace llmc::cuda;
using namespace llmc::cuda::model;

namespace {

/// A device cache [b, h, capacity, d] of f32 whose element (i, j, r, k)
/// is 1000 i + 100 j + r + k / 10.
struct DeviceCache {
  int64_t b, h, capacity, d;
  float *p = nullptr;
  Stream s = nullptr;

  DeviceCache(int64_t b, int64_t h, int64_t capacity, int64_t d)
      : b(b), h(h), capacity(capacity), d(d) {
    EXPECT_EQ(deviceAlloc(reinterpret_cast<void **>(&p), bytes()), "");
    std::vector<float> host = expected();
    EXPECT_EQ(copyToDevice(p, host.data(), bytes()), "");
    EXPECT_EQ(streamCreate(&s), "");
  }
  ~DeviceCache() {
    (void)deviceFree(p);
    (void)streamDestroy(s);
  }
  size_t count() const { return size_t(b * h * capacity * d); }
  size_t bytes() const { return count() * sizeof(float); }
  static float value(int64_t i, int64_t j, int64_t r, int64_t k) {
    return float(1000 * i + 100 * j + r) + float(k) / 10;
  }
  std::vector<float> expected() const {
    std::vector<float> v(count());
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < h; ++j)
        for (int64_t r = 0; r < capacity; ++r)
          for (int64_t k = 0; k < d; ++k)
            v[size_t(((i * h + j) * capacity + r) * d + k)] = value(i, j, r, k);
    return v;
  }
  std::vector<float> read() const {
    std::vector<float> v(count());
    EXPECT_EQ(copyToHost(v.data(), p, bytes()), "");
    return v;
  }
};

HostTensor scalar(int64_t v) {
  HostTensor t;
  EXPECT_TRUE(HostTensor::allocate(DType::Int64, {}, t).isOk());
  *t.mutableData<int64_t>() = v;
  return t;
}

TEST(CudaHostSteps, CacheRowsReadsTheRowsBeforeTheLength) {
  DeviceCache c(2, 3, 7, 4);
  for (int64_t rows : {0, 1, 5, 7}) {
    HostTensor out;
    ASSERT_EQ(host::cacheRows(out, DType::Float, 2, 3, 4, 7, scalar(rows), c.p, "read", c.s), "");
    ASSERT_EQ(out.describe(), "f32" + ::llmc::cpu::shapeString({2, 3, rows, 4}));
    const float *o = out.data<float>();
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < 4; ++k)
            ASSERT_EQ(o[((i * 3 + j) * rows + r) * 4 + k], DeviceCache::value(i, j, r, k))
                << "rows " << rows << " at " << i << ", " << j << ", " << r << ", " << k;
  }
}

TEST(CudaHostSteps, CacheRowsRefusesALengthOutsideTheCapacity) {
  DeviceCache c(1, 2, 5, 4);
  HostTensor out;
  EXPECT_EQ(host::cacheRows(out, DType::Float, 1, 2, 4, 5, scalar(6), c.p, "/Read", c.s),
            "/Read: reading 6 rows of a cache of capacity 5");
  EXPECT_EQ(host::cacheRows(out, DType::Float, 1, 2, 4, 5, scalar(-1), c.p, "/Read", c.s),
            "/Read: reading -1 rows of a cache of capacity 5");
  HostTensor notScalar;
  ASSERT_TRUE(HostTensor::allocate(DType::Int64, {2}, notScalar).isOk());
  EXPECT_EQ(host::cacheRows(out, DType::Float, 1, 2, 4, 5, notScalar, c.p, "/Read", c.s),
            "/Read must be one i64, got i64[2]");
}

TEST(CudaHostSteps, WriteCacheRowsWritesOnlyItsRows) {
  DeviceCache c(2, 3, 6, 4);
  HostTensor rows;
  ASSERT_TRUE(HostTensor::allocate(DType::Float, {2, 3, 2, 4}, rows).isOk());
  float *w = rows.mutableData<float>();
  for (int64_t e = 0; e < rows.numel(); ++e)
    w[e] = -1.0f - float(e);
  ASSERT_EQ(host::writeCacheRows(c.p, DType::Float, 2, 3, 4, 6, rows, scalar(3), "write", c.s),
            "");
  std::vector<float> want = c.expected(), got = c.read();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 3; r < 5; ++r)
        for (int64_t k = 0; k < 4; ++k)
          want[size_t(((i * 3 + j) * 6 + r) * 4 + k)] = w[((i * 3 + j) * 2 + (r - 3)) * 4 + k];
  EXPECT_EQ(got, want);
}

TEST(CudaHostSteps, WriteCacheRowsRefusesAndLeavesTheCache) {
  DeviceCache c(1, 2, 5, 4);
  HostTensor rows, wrongType, wrongHeads;
  ASSERT_TRUE(HostTensor::allocate(DType::Float, {1, 2, 2, 4}, rows).isOk());
  ASSERT_TRUE(HostTensor::allocate(DType::Float16, {1, 2, 2, 4}, wrongType).isOk());
  ASSERT_TRUE(HostTensor::allocate(DType::Float, {1, 3, 2, 4}, wrongHeads).isOk());
  EXPECT_EQ(host::writeCacheRows(c.p, DType::Float, 1, 2, 4, 5, rows, scalar(4), "/W", c.s),
            "/W: rows 4 .. 5 do not fit a cache of capacity 5");
  EXPECT_EQ(host::writeCacheRows(c.p, DType::Float, 1, 2, 4, 5, rows, scalar(-1), "/W", c.s),
            "/W: rows -1 .. 0 do not fit a cache of capacity 5");
  EXPECT_EQ(host::writeCacheRows(c.p, DType::Float, 1, 2, 4, 5, wrongType, scalar(0), "/W", c.s),
            "/W: update f16[1, 2, 2, 4] does not fit a cache of [1, 2, 5, 4] f32");
  EXPECT_EQ(host::writeCacheRows(c.p, DType::Float, 1, 2, 4, 5, wrongHeads, scalar(0), "/W", c.s),
            "/W: update f32[1, 3, 2, 4] does not fit a cache of [1, 2, 5, 4] f32");
  EXPECT_EQ(c.read(), c.expected());
}

TEST(CudaHostSteps, UploadChecksTheShapeTheDeviceReads) {
  float *d = nullptr;
  Stream s = nullptr;
  ASSERT_EQ(deviceAlloc(reinterpret_cast<void **>(&d), 6 * sizeof(float)), "");
  ASSERT_EQ(streamCreate(&s), "");
  HostTensor t;
  ASSERT_TRUE(HostTensor::allocate(DType::Float, {2, 3}, t).isOk());
  for (int64_t e = 0; e < 6; ++e)
    t.mutableData<float>()[e] = float(e) + 0.5f;
  EXPECT_EQ(host::upload(t, DType::Float, {3, 2}, d, "/Node", s),
            "/Node: computed on the host as f32[2, 3], where the device code reads f32[3, 2]");
  EXPECT_EQ(host::upload(t, DType::Float16, {2, 3}, d, "/Node", s),
            "/Node: computed on the host as f32[2, 3], where the device code reads f16[2, 3]");
  ASSERT_EQ(host::upload(t, DType::Float, {2, 3}, d, "/Node", s), "");
  std::vector<float> back(6);
  ASSERT_EQ(copyToHost(back.data(), d, sizeof(float) * 6), "");
  for (int64_t e = 0; e < 6; ++e)
    EXPECT_EQ(back[size_t(e)], float(e) + 0.5f);
  HostTensor down;
  ASSERT_EQ(host::download(down, DType::Float, {3, 2}, d, s), "");
  EXPECT_EQ(down.describe(), "f32[3, 2]");
  EXPECT_EQ(down.data<float>()[5], 5.5f);
  (void)deviceFree(d);
  (void)streamDestroy(s);
}

TEST(CudaHostSteps, ACallRunsTheReferenceKernelWithItsAttributes) {
  HostTensor x, y;
  ASSERT_TRUE(HostTensor::allocate(DType::Float, {2, 3}, x).isOk());
  for (int64_t e = 0; e < 6; ++e)
    x.mutableData<float>()[e] = float(e);
  ::llmc::cpu::Attributes at;
  at.set("perm", intsAttr({1, 0}));
  ASSERT_EQ(host::call("onnx.transpose", "/T", {&x}, &at, {&y}), "");
  ASSERT_EQ(y.describe(), "f32[3, 2]");
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(y.data<float>()[i * 2 + j], float(j * 3 + i));
  EXPECT_EQ(host::call("no.such", "/T", {&x}, nullptr, {&y}),
            "the kernel library has no kernel 'no.such' (libmodel.so was built against another "
            "llmc)");
  // A kernel's own refusal comes back naming the node.
  at = ::llmc::cpu::Attributes();
  at.set("perm", intsAttr({0, 0}));
  EXPECT_EQ(host::call("onnx.transpose", "/T", {&x}, &at, {&y}),
            "/T: invalid perm: not a permutation of 0 .. 1");
}

} // namespace
