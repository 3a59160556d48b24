//===- CudaOnnxTest.cpp - the fallback's ONNX kernels against float64 -----===//
//
// runtime/src/model/cuda/Onnx.h: the batched matmul (broadcast batch
// dimensions, strided operands as a folded transpose gives them, edges past
// the 16 x 16 tiles, K not a multiple of 16, K = 0) and the softmax /
// log-softmax along any axis, against float64 references computed here from
// the stored values. Tolerances as CudaKernelsTest's: f32 within 1e-5 of
// the output's scale, half and bfloat16 one unit of their rounding more.
// Built against the host emulation in CI and with nvcc on a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/cuda/Onnx.h"

#include "test/unit/CudaTestUtil.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace llmc::cuda;
using namespace llmc::cuda::test;

namespace {

/// One matmul case: batch dims of A and B (numpy broadcasting, B's own
/// rank), M, N, K, and whether B is stored transposed ([.., N, K], read with
/// bk = 1, bn = K: a transpose folded into the product).
struct MatmulCase {
  std::vector<long long> aBatch, bBatch;
  int m, n, k;
  bool bTransposed;
};

template <class T> void checkMatmul(const MatmulCase &c, unsigned seed) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" +
               std::to_string(c.k) + " batch ranks " + std::to_string(c.aBatch.size()) + "/" +
               std::to_string(c.bBatch.size()) + (c.bTransposed ? " B transposed" : ""));
  // The broadcast batch shape, and each operand's matrix index along it.
  size_t rank = std::max(c.aBatch.size(), c.bBatch.size());
  std::vector<long long> dims(rank, 1), aDims(rank, 1), bDims(rank, 1);
  for (size_t d = 0; d < c.aBatch.size(); ++d)
    aDims[rank - c.aBatch.size() + d] = c.aBatch[d];
  for (size_t d = 0; d < c.bBatch.size(); ++d)
    bDims[rank - c.bBatch.size() + d] = c.bBatch[d];
  long long aCount = 1, bCount = 1, count = 1;
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = std::max(aDims[d], bDims[d]);
    aCount *= aDims[d];
    bCount *= bDims[d];
    count *= dims[d];
  }
  size_t mk = size_t(c.m) * size_t(c.k), kn = size_t(c.k) * size_t(c.n);
  auto a = randomValues<T>(size_t(aCount) * mk, 1.0f, seed);
  auto b = randomValues<T>(size_t(bCount) * kn, 1.0f, seed + 1);
  MatmulBatch batch;
  batch.rank = int(rank);
  long long aStride = (long long)mk, bStride = (long long)kn;
  for (size_t d = rank; d-- > 0;) {
    batch.dims[d] = dims[d];
    batch.a[d] = aDims[d] == 1 ? 0 : aStride;
    batch.b[d] = bDims[d] == 1 ? 0 : bStride;
    aStride *= aDims[d];
    bStride *= bDims[d];
  }
  DeviceBuffer<T> da(a), db(b), dy(size_t(count) * size_t(c.m) * size_t(c.n));
  long long bk = c.bTransposed ? 1 : c.n, bn = c.bTransposed ? c.k : 1;
  ASSERT_EQ(matmul(da.get(), db.get(), dy.get(), c.m, c.n, c.k, c.k, 1, bk, bn, batch, nullptr),
            "");
  auto ad = widen(a), bd = widen(b);
  std::vector<double> want(dy.download().size());
  for (long long o = 0; o < count; ++o) {
    long long rest = o, ai = 0, bi = 0, aMul = 1, bMul = 1;
    for (size_t d = rank; d-- > 0;) {
      long long idx = rest % dims[d];
      rest /= dims[d];
      ai += (aDims[d] == 1 ? 0 : idx) * aMul;
      bi += (bDims[d] == 1 ? 0 : idx) * bMul;
      aMul *= aDims[d];
      bMul *= bDims[d];
    }
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double s = 0;
        for (int e = 0; e < c.k; ++e)
          s += ad[size_t(ai) * mk + size_t(i) * size_t(c.k) + size_t(e)] *
               bd[size_t(bi) * kn + size_t(e) * size_t(bk) + size_t(j) * size_t(bn)];
        want[size_t(o) * size_t(c.m) * size_t(c.n) + size_t(i) * size_t(c.n) + size_t(j)] = s;
      }
  }
  if (c.k == 0) { // an empty sum: every element 0
    for (T v : dy.download())
      EXPECT_EQ(toFloat(v), 0.0f);
    return;
  }
  EXPECT_LE(relativeError(dy.download(), want), tolerance<T>());
}

TEST(CudaOnnxMatmul, TilesEdgesAndBroadcastBatches) {
  // Scores of a decode step (one query row) and of a prefill, values, and
  // shapes past the tiles' edges.
  checkMatmul<float>({{2, 4}, {2, 4}, 1, 48, 8, true}, 1);
  checkMatmul<float>({{1, 4}, {1, 4}, 9, 48, 8, true}, 2);
  checkMatmul<float>({{1, 4}, {1, 4}, 9, 8, 48, false}, 3);
  checkMatmul<float>({{}, {}, 33, 17, 40, false}, 4);
  // B broadcast over A's leading dims (rank 3 against rank 1), and A
  // broadcast over B's.
  checkMatmul<float>({{2, 3, 2}, {2}, 5, 7, 19, false}, 5);
  checkMatmul<float>({{3, 1}, {3, 4}, 4, 6, 5, true}, 6);
  checkMatmul<float>({{1, 2, 1, 3}, {2, 1, 2, 1}, 3, 5, 16, false}, 7);
}

TEST(CudaOnnxMatmul, HalfAndBfloat16) {
  checkMatmul<half>({{1, 4}, {1, 4}, 9, 48, 64, true}, 11);
  checkMatmul<bfloat16>({{1, 4}, {1, 4}, 9, 64, 48, false}, 12);
}

TEST(CudaOnnxMatmul, EmptyContraction) { checkMatmul<float>({{2}, {2}, 3, 5, 0, false}, 21); }

TEST(CudaOnnxMatmul, RejectsBadArguments) {
  MatmulBatch batch;
  EXPECT_NE(matmul<float>(nullptr, nullptr, nullptr, 0, 4, 4, 4, 1, 4, 1, batch, nullptr), "");
  batch.rank = kMatmulBatchDims + 1;
  EXPECT_NE(matmul<float>(nullptr, nullptr, nullptr, 4, 4, 4, 4, 1, 4, 1, batch, nullptr), "");
  batch.rank = 1;
  batch.dims[0] = 70000; // past a grid's y dimension
  EXPECT_NE(matmul<float>(nullptr, nullptr, nullptr, 4, 4, 4, 4, 1, 4, 1, batch, nullptr), "");
}

template <class T>
void checkSoftmax(long long outer, int axis, int inner, bool log, unsigned seed,
                  bool maskedLine = false) {
  SCOPED_TRACE("outer=" + std::to_string(outer) + " axis=" + std::to_string(axis) + " inner=" +
               std::to_string(inner) + (log ? " log" : ""));
  auto x = randomValues<T>(size_t(outer) * size_t(axis) * size_t(inner), 8.0f, seed);
  if (maskedLine) // a masked score (-inf) in every line but one element
    for (long long o = 0; o < outer; ++o)
      for (int i = 0; i < inner; ++i)
        for (int e = 1; e < axis; e += 2)
          x[size_t((o * axis + e) * inner + i)] =
              fromFloat<T>(-std::numeric_limits<float>::infinity());
  DeviceBuffer<T> dx(x), dy(x.size());
  ASSERT_EQ(softmax(dx.get(), dy.get(), outer, axis, inner, log, nullptr), "");
  auto xd = widen(x);
  std::vector<double> want(x.size());
  for (long long o = 0; o < outer; ++o)
    for (int i = 0; i < inner; ++i) {
      auto at = [&](int e) { return size_t((o * axis + e) * inner + i); };
      double mx = -INFINITY, sum = 0;
      for (int e = 0; e < axis; ++e)
        mx = std::max(mx, xd[at(e)]);
      for (int e = 0; e < axis; ++e)
        sum += std::exp(xd[at(e)] - mx);
      for (int e = 0; e < axis; ++e)
        want[at(e)] = log ? xd[at(e)] - mx - std::log(sum) : std::exp(xd[at(e)] - mx) / sum;
    }
  auto got = dy.download();
  if (log && maskedLine) { // -inf stays -inf; the rest compared
    for (size_t i = 0; i < got.size(); ++i)
      if (std::isinf(want[i])) {
        EXPECT_TRUE(std::isinf(toFloat(got[i])) && toFloat(got[i]) < 0) << i;
        want[i] = 0;
        got[i] = fromFloat<T>(0.0f);
      }
  }
  EXPECT_LE(relativeError(got, want), tolerance<T>());
}

TEST(CudaOnnxSoftmax, LastAxisAndInnerAxes) {
  checkSoftmax<float>(32, 49, 1, false, 31);   // a step's scores and a sink column
  checkSoftmax<float>(3, 1000, 1, false, 32);  // longer than the block
  checkSoftmax<float>(2, 7, 5, false, 33);     // an axis before the last
  checkSoftmax<float>(4, 300, 3, true, 34);    // log-softmax
  checkSoftmax<half>(8, 64, 1, false, 35);
  checkSoftmax<bfloat16>(2, 33, 2, true, 36);
}

TEST(CudaOnnxSoftmax, MaskedScores) {
  checkSoftmax<float>(6, 40, 1, false, 41, true);
  checkSoftmax<float>(2, 9, 3, true, 42, true);
}

TEST(CudaOnnxSoftmax, RejectsBadArguments) {
  EXPECT_NE((softmax<float, float>(nullptr, nullptr, 1, 0, 1, false, nullptr)), "");
  EXPECT_NE((softmax<float, float>(nullptr, nullptr, 0, 4, 1, false, nullptr)), "");
}

} // namespace
