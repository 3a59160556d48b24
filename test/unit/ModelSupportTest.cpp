//===- ModelSupportTest.cpp - the CPU artifact's in-place cache writes ----===//
//
// runtime/src/model/ModelSupport.h: tensorScatterInPlace, which a compiled
// static-cache export calls instead of TensorScatter's copy of the whole
// cache (codegen::inPlaceScatters), against ONNX TensorScatter's
// definition (linear mode: update[b, .., k, ..] at row write_indices[b] + k
// along the axis, everything else as it was), in the 4-D and the 3-D
// layouts; its refusals (a write past the cache, write_indices of the wrong
// length or type, an update that does not fit) leave the cache as it was.
// stridedMatmul, the compiled onnx.matmul (cpu::matmulStrided), against
// float64 products: a transposed key cache read in place for one query row
// (the decode GEMV, batch entries shared among threads) and for many (the
// packed GEMM), a transposed A, broadcast batch dimensions (GQA's shared
// keys), vectors, K = 0, f16 and bf16; its refusals (a layout reading past
// an operand, mixed types, a result of the wrong size) name the node.
// softmax / logSoftmax, the compiled onnx.softmax: rows along the last axis
// in f32 within 2e-6 of the reference kernel (itself checked by the ONNX
// node tests), the rows the template declines (all -inf, an infinity, a
// NaN) and other axes bit for bit the reference kernel's.
// pointwise (GeneratedLoops.h), what the CPU target's generated
// element-wise loops run through: the ranges cover the result once whatever
// the pool; an operand of another type or size than the loop was generated
// for is refused, naming the node, with nothing written.
// The end-to-end runs (test/e2e/fallback.test, models.test) hold the
// compiled model to onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/model/GeneratedLoops.h"
#include "runtime/src/model/ModelSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
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

/// A tensor of `type` whose element i is ((i * 37 + seed) % 17 - 8) / 8:
/// exact in f16 and bf16, with products and short sums exact in f32.
Tensor patterned(DType type, const cpu::Shape &shape, int64_t seed) {
  Tensor t;
  EXPECT_TRUE(Tensor::allocate(type, shape, t).isOk());
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = float((i * 37 + seed) % 17 - 8) / 8.0f;
    if (type == DType::Float)
      t.mutableData<float>()[i] = v;
    else if (type == DType::Float16)
      t.mutableData<cpu::Half>()[i] = cpu::Half{cpu::floatToHalf(v)};
    else
      t.mutableData<cpu::BFloat16>()[i] = cpu::BFloat16{cpu::floatToBf16(v)};
  }
  return t;
}

double element(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::Float)
    return t.data<float>()[i];
  if (t.dtype() == DType::Float16)
    return cpu::halfToFloat(t.data<cpu::Half>()[i].bits);
  return cpu::bf16ToFloat(t.data<cpu::BFloat16>()[i].bits);
}

/// The float64 products of `layout` (MatmulStrides' definition, element
/// by element), batch entries in row-major order.
std::vector<double> product(const MatmulStrides &s, const Tensor &a, const Tensor &b) {
  int64_t batches = 1;
  for (int64_t d = 0; d < s.rank; ++d)
    batches *= s.dims[d];
  std::vector<double> y;
  for (int64_t i = 0; i < batches; ++i) {
    int64_t offA = 0, offB = 0, rest = i;
    for (int64_t d = s.rank - 1; d >= 0; --d) {
      offA += rest % s.dims[d] * s.aBatch[d];
      offB += rest % s.dims[d] * s.bBatch[d];
      rest /= s.dims[d];
    }
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t c = 0; c < s.n; ++c) {
        double sum = 0;
        for (int64_t k = 0; k < s.k; ++k)
          sum += element(a, offA + r * s.aRow + k * s.aCol) *
                 element(b, offB + k * s.bRow + c * s.bCol);
        y.push_back(sum);
      }
  }
  return y;
}

/// A context with a pool of `threads`.
struct PoolContext : Context {
  explicit PoolContext(unsigned threads) { pool = std::make_unique<cpu::ThreadPool>(threads); }
};

void expectProduct(const Tensor &y, const std::vector<double> &want, double tolerance) {
  ASSERT_EQ(y.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(element(y, int64_t(i)), want[i], tolerance * (1 + std::fabs(want[i]))) << i;
}

TEST(StridedMatmul, TransposedKeysForOneQueryRow) {
  // Scores of 4 heads, one query row each, against a key cache [4, 37, 8]
  // read as K^T: B[k, t] = keys[h, t, k]. Checked against the scores
  // written out from the tensors' own indices, not from the layout.
  Tensor q = patterned(DType::Float, {1, 4, 1, 8}, 1), keys = patterned(DType::Float, {1, 4, 37, 8}, 2);
  MatmulStrides s{1, 37, 8, 8, 1, 1, 8, 1, {4, 1, 1, 1}, {8, 0, 0, 0}, {37 * 8, 0, 0, 0}};
  for (unsigned threads : {1u, 2u, 3u}) {
    PoolContext ctx(threads);
    Tensor y;
    ASSERT_TRUE(stridedMatmul(ctx, "op", q, keys, s, {1, 4, 1, 37}, y).isOk());
    std::vector<double> want;
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t t = 0; t < 37; ++t) {
        double sum = 0;
        for (int64_t d = 0; d < 8; ++d)
          sum += double(q.data<float>()[h * 8 + d]) * keys.data<float>()[(h * 37 + t) * 8 + d];
        want.push_back(sum);
      }
    expectProduct(y, want, 0);
  }
}

TEST(StridedMatmul, ManyRowsTransposedKeysSharedAmongHeads) {
  // A prefill's scores: 20 query rows (past the GEMV's few, so B is
  // packed) of 2 x 3 heads, keys [2, 1, 33, 16] shared by each group of 3
  // heads (stride 0) and read transposed.
  Tensor q = patterned(DType::Float, {2, 3, 20, 16}, 3), keys = patterned(DType::Float, {2, 1, 33, 16}, 4);
  MatmulStrides s{20, 33, 16, 16, 1, 1, 16, 2, {2, 3, 1, 1}, {3 * 320, 320, 0, 0}, {33 * 16, 0, 0, 0}};
  PoolContext ctx(2);
  Tensor y;
  ASSERT_TRUE(stridedMatmul(ctx, "op", q, keys, s, {2, 3, 20, 33}, y).isOk());
  expectProduct(y, product(s, q, keys), 0);
}

TEST(StridedMatmul, TransposedAVectorBAndRowMajorValues) {
  PoolContext ctx(2);
  // A^T of a [5, 7] matrix times a vector B of 5 (N = 1, B's column
  // stride 0).
  Tensor a = patterned(DType::Float, {5, 7}, 5), v = patterned(DType::Float, {5}, 6);
  MatmulStrides s1{7, 1, 5, 1, 7, 1, 0, 0};
  Tensor y1;
  ASSERT_TRUE(stridedMatmul(ctx, "op", a, v, s1, {7}, y1).isOk());
  expectProduct(y1, product(s1, a, v), 0);
  // A decode step's sum of the values: weights [8 heads, 1, 40] times
  // values [8, 40, 24] row-major (the GEMV over batch entries).
  Tensor p = patterned(DType::Float, {8, 1, 40}, 7), vals = patterned(DType::Float, {8, 40, 24}, 8);
  MatmulStrides s2{1, 24, 40, 40, 1, 24, 1, 1, {8, 1, 1, 1}, {40, 0, 0, 0}, {960, 0, 0, 0}};
  Tensor y2;
  ASSERT_TRUE(stridedMatmul(ctx, "op", p, vals, s2, {8, 1, 24}, y2).isOk());
  expectProduct(y2, product(s2, p, vals), 0);
  // K = 0: zeros.
  Tensor e0 = patterned(DType::Float, {3, 0}, 0), e1 = patterned(DType::Float, {0, 4}, 0);
  MatmulStrides s3{3, 4, 0, 0, 1, 4, 1, 0};
  Tensor y3;
  ASSERT_TRUE(stridedMatmul(ctx, "op", e0, e1, s3, {3, 4}, y3).isOk());
  expectProduct(y3, std::vector<double>(12, 0.0), 0);
}

TEST(StridedMatmul, HalfAndBFloat16RoundOnce) {
  // Sums of 48 products in f32, rounded once to the result's type.
  for (DType type : {DType::Float16, DType::BFloat16}) {
    Tensor q = patterned(type, {2, 20, 48}, 9), keys = patterned(type, {2, 30, 48}, 10);
    MatmulStrides s{20, 30, 48, 48, 1, 1, 48, 1, {2, 1, 1, 1}, {960, 0, 0, 0}, {1440, 0, 0, 0}};
    PoolContext ctx(2);
    Tensor y;
    ASSERT_TRUE(stridedMatmul(ctx, "op", q, keys, s, {2, 20, 30}, y).isOk());
    ASSERT_EQ(y.dtype(), type);
    expectProduct(y, product(s, q, keys), type == DType::Float16 ? 1.0 / 1024 : 1.0 / 128);
  }
}

TEST(StridedMatmul, RefusalsNameTheNode) {
  PoolContext ctx(2);
  Tensor q = patterned(DType::Float, {4, 8}, 1), keys = patterned(DType::Float, {4, 37, 8}, 2);
  auto fails = [&](const Tensor &a, const Tensor &b, const MatmulStrides &s,
                   const cpu::Shape &shape, const char *says) {
    Tensor y;
    llmc::cpu::Status st = stridedMatmul(ctx, "/MatMul_7", a, b, s, shape, y);
    ASSERT_FALSE(st.isOk());
    EXPECT_NE(st.message().find("/MatMul_7"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  MatmulStrides good{1, 37, 8, 8, 1, 1, 8, 1, {4, 1, 1, 1}, {8, 0, 0, 0}, {37 * 8, 0, 0, 0}};
  MatmulStrides past = good;
  past.dims[0] = 5; // a fifth head past both operands
  fails(q, keys, past, {5, 1, 37}, "reads outside its operands");
  // Keys one element short: the last head's last key row ends past them.
  fails(q, patterned(DType::Float, {4 * 37 * 8 - 1}, 2), good, {4, 1, 37},
        "reads outside its operands");
  MatmulStrides negative = good;
  negative.bCol = -8;
  fails(q, keys, negative, {4, 1, 37}, "reads outside its operands");
  fails(q, keys, good, {4, 1, 36}, "does not hold 4 products of 1 x 37");
  fails(q, patterned(DType::Float16, {4, 37, 8}, 2), good, {4, 1, 37}, "one type");
  Tensor i64;
  ASSERT_TRUE(Tensor::allocate(DType::Int64, {4, 8}, i64).isOk());
  fails(i64, keys, good, {4, 1, 37}, "f32, f16 or bf16");
}

/// The reference kernel `name` run on `x` with `attrs`.
Tensor referenceRun(const char *name, const Tensor &x, const Attributes *attrs) {
  const KernelEntry *k = nullptr;
  EXPECT_TRUE(findKernel(name, k).isOk());
  Context ctx;
  ctx.pool = std::make_unique<cpu::ThreadPool>(1);
  Tensor y;
  EXPECT_TRUE(call(ctx, k, "ref", {&x}, attrs, {&y}).isOk());
  return y;
}

TEST(Softmax, RowsInF32DeclinedRowsAndOtherAxesAsTheReference) {
  const float inf = std::numeric_limits<float>::infinity();
  for (bool log : {false, true}) {
    const char *name = log ? "onnx.log_softmax" : "onnx.softmax";
    const KernelEntry *ref = nullptr;
    ASSERT_TRUE(findKernel(name, ref).isOk());
    // 6 rows of 37: rows 1, 3 and 4 declined (all -inf, +inf, NaN).
    Tensor x = patterned(DType::Float, {2, 3, 37}, 5);
    float *px = x.mutableData<float>();
    for (int64_t j = 0; j < 37; ++j)
      px[37 + j] = -inf;
    px[3 * 37 + 10] = inf;
    px[4 * 37 + 36] = std::numeric_limits<float>::quiet_NaN();
    px[5 * 37 + 2] = -inf; // masked, not declined
    Tensor want = referenceRun(name, x, nullptr);
    for (unsigned threads : {1u, 2u}) {
      PoolContext ctx(threads);
      Tensor y;
      ASSERT_TRUE((log ? logSoftmax : softmax)(ctx, ref, "op", {&x}, nullptr, {&y}, 0).isOk());
      ASSERT_EQ(y.describe(), "f32[2, 3, 37]");
      for (int64_t r = 0; r < 6; ++r)
        for (int64_t j = 0; j < 37; ++j) {
          float got = y.data<float>()[r * 37 + j], w = want.data<float>()[r * 37 + j];
          if (r == 1 || r == 3 || r == 4) // declined: the reference's bits (NaN included)
            EXPECT_EQ(std::memcmp(&got, &w, sizeof got), 0) << r << "," << j << ": " << got;
          else if (std::isinf(w))
            EXPECT_EQ(got, w) << r << "," << j;
          else
            EXPECT_NEAR(got, w, 2e-6 * (1 + std::fabs(w))) << r << "," << j;
        }
    }
    // Along axis 1: the reference kernel's result, exactly.
    Attributes axis1;
    Attribute a;
    a.i = 1;
    axis1.set("axis", a);
    Tensor finite = patterned(DType::Float, {2, 3, 37}, 6), y;
    Tensor wantAxis = referenceRun(name, finite, &axis1);
    PoolContext ctx(2);
    ASSERT_TRUE((log ? logSoftmax : softmax)(ctx, ref, "op", {&finite}, &axis1, {&y}, 0).isOk());
    EXPECT_EQ(values(y), values(wantAxis));
  }
}

/// A f32 tensor of `n` elements 0, 1, 2, ...
Tensor iota(int64_t n) { return counting({n}, 0); }

TEST(Pointwise, EveryElementOnceWhateverThePool) {
  // The loop's ranges cover the result once, split among the pool only
  // above 2 x kLoopGrain elements, each but the last at least kLoopGrain
  // long.
  for (unsigned threads : {1u, 2u, 3u})
    for (int64_t n : {int64_t(1), int64_t(100), 2 * kLoopGrain - 1, 2 * kLoopGrain + 7,
                      int64_t(100000)}) {
      PoolContext ctx(threads);
      Tensor x = iota(n), y;
      std::mutex m;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      ASSERT_TRUE(pointwise(ctx, "loop test", "/Add_1 (onnx.add)", {{&x, DType::Float, n}},
                            DType::Float, {n}, y, [&](int64_t b, int64_t e) {
                              for (int64_t i = b; i < e; ++i)
                                y.mutableData<float>()[i] = x.data<float>()[i] + 1;
                              std::lock_guard<std::mutex> lock(m);
                              ranges.push_back({b, e});
                            })
                      .isOk());
      ASSERT_EQ(y.numel(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(y.data<float>()[i], float(i) + 1) << n << " " << i;
      std::sort(ranges.begin(), ranges.end());
      int64_t at = 0;
      for (auto [b, e] : ranges) {
        EXPECT_EQ(b, at);
        EXPECT_GT(e, b);
        EXPECT_TRUE(e == n || e - b >= kLoopGrain) << e - b;
        at = e;
      }
      EXPECT_EQ(at, n);
      EXPECT_TRUE(n >= 2 * kLoopGrain || ranges.size() == 1) << ranges.size();
    }
}

TEST(Pointwise, ConcatPartsCutTheRangesAtTheirEnds) {
  // A concat's parts (an input each, over its own elements) inside one
  // pointwise call: each element of each part is written once, from the
  // part's own index, whatever chunks the pool cuts, including chunks
  // that span a part's end. Parts of 5, 2 x kLoopGrain + 3 and 1 element.
  int64_t sizes[] = {5, 2 * kLoopGrain + 3, 1};
  int64_t n = sizes[0] + sizes[1] + sizes[2];
  for (unsigned threads : {1u, 2u, 3u}) {
    PoolContext ctx(threads);
    Tensor x = iota(n), y;
    std::vector<int> seen(size_t(n), 0);
    std::mutex m;
    ASSERT_TRUE(pointwise(ctx, "loop onnx.concat", "/Concat_1 (onnx.concat)",
                          {{&x, DType::Float, n}}, DType::Float, {n}, y,
                          [&](int64_t b, int64_t e) {
                            int64_t from = 0;
                            for (int64_t size : sizes) {
                              partOf(b, e, from, from + size, [&](int64_t pb, int64_t pe) {
                                ASSERT_LE(0, pb);
                                ASSERT_LE(pe, size);
                                std::lock_guard<std::mutex> lock(m);
                                for (int64_t i = pb; i < pe; ++i) {
                                  ++seen[size_t(from + i)];
                                  y.mutableData<float>()[from + i] = x.data<float>()[from + i];
                                }
                              });
                              from += size;
                            }
                          })
                    .isOk());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(seen[size_t(i)], 1) << threads << " " << i;
      ASSERT_EQ(y.data<float>()[i], float(i));
    }
  }
}

TEST(Pointwise, RefusalsNameTheNodeAndWriteNothing) {
  // An operand of another type or size than the loop was generated for (or
  // none): an error naming the node; the loop does not run and the
  // result's place keeps what it held.
  PoolContext ctx(2);
  Tensor x = iota(8), mask;
  ASSERT_TRUE(Tensor::allocate(DType::Bool, {8}, mask).isOk());
  auto fails = [&](std::initializer_list<LoopInput> inputs) {
    std::vector<float> place(8, -7.0f);
    Tensor y = Tensor::place(place.data(), place.size() * sizeof(float));
    bool ran = false;
    llmc::cpu::Status st = pointwise(ctx, "loop test", "/Where_9 (onnx.where)", inputs,
                                     DType::Float, {8}, y,
                                     [&](int64_t, int64_t) { ran = true; });
    ASSERT_FALSE(st.isOk());
    EXPECT_NE(st.message().find("/Where_9 (onnx.where)"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("generated loop"), std::string::npos) << st.message();
    EXPECT_FALSE(ran);
    EXPECT_FALSE(y.defined());
    for (float v : place)
      EXPECT_EQ(v, -7.0f);
  };
  fails({{&mask, DType::Bool, 8}, {&x, DType::Float, 9}});   // one element short
  fails({{&mask, DType::Float, 8}, {&x, DType::Float, 8}});  // booleans read as floats
  fails({{&mask, DType::Bool, 8}, {nullptr, DType::Float, 8}});
}

/// The conversions the generated loops spell as the CUDA kernels do.
TEST(Pointwise, HalfAndBFloat16RoundAsTheirStorage) {
  for (float v : {0.0f, 1.0f, -2.5f, 1.0f / 3, 65504.0f, 1e-8f}) {
    EXPECT_EQ(fromFloat<half>(v).bits, cpu::floatToHalf(v)) << v;
    EXPECT_EQ(fromFloat<bfloat16>(v).bits, cpu::floatToBf16(v)) << v;
    EXPECT_EQ(toFloat(fromFloat<half>(v)), cpu::halfToFloat(cpu::floatToHalf(v))) << v;
    EXPECT_EQ(toFloat(fromFloat<bfloat16>(v)), cpu::bf16ToFloat(cpu::floatToBf16(v))) << v;
    EXPECT_EQ(toFloat(fromFloat<float>(v)), v);
  }
}

} // namespace
