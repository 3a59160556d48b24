//===- TransformerKernelsTest.cpp - reference kernels of the llm.* ops -----===//
//
// The CPU kernels of the transformer-level ops (embedding, rms_norm,
// layer_norm, rope, attention, linear, gelu, silu, relu, swiglu) are the oracle
// for every rewrite of the transformer passes, so they are checked here
// against float64 implementations written from the op descriptions in
// dialects/LLM/IR/LLMTransformerOps.td, on random data, and for the errors
// they must report.
//
//===----------------------------------------------------------------------===//
#include "dialects/LLM/IR/LLMOps.h"
#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/cpu/Numeric.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace llmc::cpu;

namespace {

/// The inputs of one call, owned.
struct Call {
  std::vector<Tensor> owned;
  std::vector<bool> present;
  Attributes attrs;
  KernelCall call;

  Call &in(DType type, Shape shape, const void *data) {
    owned.push_back(Tensor::wrap(type, std::move(shape), data));
    present.push_back(true);
    return *this;
  }
  Call &none() {
    owned.emplace_back();
    present.push_back(false);
    return *this;
  }
  Call &attr(const char *name, int64_t v) {
    Attribute a;
    a.kind = Attribute::Int;
    a.i = v;
    attrs.set(name, a);
    return *this;
  }
  Call &attrF(const char *name, double v) {
    Attribute a;
    a.kind = Attribute::Float;
    a.f = v;
    attrs.set(name, a);
    return *this;
  }
  Call &attrFloats(const char *name, std::vector<double> v) {
    Attribute a;
    a.kind = Attribute::Floats;
    a.floats = std::move(v);
    attrs.set(name, a);
    return *this;
  }
  Status run(const char *op, size_t results = 1) {
    const KernelEntry *k = findKernel(op);
    if (!k)
      return Status::error(std::string("no kernel ") + op);
    call.inputs.clear();
    for (size_t i = 0; i < owned.size(); ++i)
      call.inputs.push_back(present[i] ? &owned[i] : nullptr);
    call.attrs = &attrs;
    call.outputs.assign(results, Tensor());
    call.pool = &ThreadPool::global();
    call.opName = op;
    return k->fn(call);
  }
  const Tensor &out() const { return call.outputs[0]; }
  std::vector<double> outF64() const {
    const Tensor &t = out();
    std::vector<double> v(size_t(t.numel()));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = t.dtype() == DType::Float16 ? halfToFloat(t.data<Half>()[i].bits)
                                         : double(t.data<float>()[i]);
    return v;
  }
};

std::vector<float> randomFloats(size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Largest |got - want| over the largest |want| (1 when the reference is 0);
/// infinite where got holds a NaN (std::max would pass over it).
double scaledError(const std::vector<double> &got, const std::vector<double> &want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    double d = std::abs(got[i] - want[i]);
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / (scale > 0 ? scale : 1);
}

void expectError(Status s, const std::string &fragment) {
  ASSERT_FALSE(s.isOk()) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

/// llmc-lower-to-exec refuses a function with an op that has no kernel; the
/// executor (and so every pass's numerical check) needs one for each op.
TEST(Tensor, SliceSharesStorageAndChecksBounds) {
  Tensor t;
  ASSERT_TRUE(Tensor::allocate(DType::Float, {2, 6}, t));
  for (int i = 0; i < 12; ++i)
    t.mutableData<float>()[i] = float(i);
  Tensor s;
  ASSERT_TRUE(t.slice(7, {1, 4}, s));
  EXPECT_EQ(s.shape(), (Shape{1, 4}));
  EXPECT_EQ(s.data<float>(), t.data<float>() + 7); // a view, no copy
  EXPECT_EQ(s.data<float>()[3], 10.f);
  Status past = t.slice(9, {4}, s);
  ASSERT_FALSE(past);
  EXPECT_NE(past.message().find("does not lie inside f32[2, 6]"), std::string::npos)
      << past.message();
  EXPECT_FALSE(t.slice(-1, {1}, s));
}

TEST(TransformerKernels, EveryLlmOpHasAKernel) {
  mlir::MLIRContext ctx;
  ctx.getOrLoadDialect<mlir::llmc::LLMDialect>();
  std::vector<std::string> missing;
  size_t seen = 0;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    llvm::StringRef name = op.getStringRef();
    if (!name.consume_front("llm.") || name == "constant" || name == "none" ||
        name == "fused" || name == "yield") // structure: the executor inlines fused regions
      continue;
    ++seen;
    if (!findKernel(name.str()))
      missing.push_back(name.str());
  }
  EXPECT_GT(seen, 100u);
  EXPECT_TRUE(missing.empty()) << "no kernel for llm." << missing.front();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

std::vector<double> normRef(const std::vector<float> &x, const std::vector<float> &w,
                            const std::vector<float> *b, int64_t hidden, double eps, bool centre,
                            double offset) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(hidden); ++r) {
    const float *row = x.data() + r * size_t(hidden);
    double mean = 0, var = 0;
    if (centre) {
      for (int64_t i = 0; i < hidden; ++i)
        mean += row[i];
      mean /= double(hidden);
    }
    for (int64_t i = 0; i < hidden; ++i)
      var += (row[i] - mean) * (row[i] - mean);
    double inv = 1 / std::sqrt(var / double(hidden) + eps);
    for (int64_t i = 0; i < hidden; ++i)
      y[r * size_t(hidden) + size_t(i)] =
          (row[i] - mean) * inv * (w[size_t(i)] + offset) + (b ? (*b)[size_t(i)] : 0.0);
  }
  return y;
}

TEST(TransformerKernels, RmsNormMatchesFloat64) {
  int64_t hidden = 48;
  auto x = randomFloats(3 * 5 * hidden, 1, -3, 3), w = randomFloats(size_t(hidden), 2);
  Call c;
  c.in(DType::Float, {3, 5, hidden}, x.data()).in(DType::Float, {hidden}, w.data());
  ASSERT_TRUE(c.run("rms_norm").isOk());
  EXPECT_EQ(c.out().shape(), (Shape{3, 5, hidden}));
  EXPECT_LT(scaledError(c.outF64(), normRef(x, w, nullptr, hidden, 1e-6, false, 0)), 1e-6);

  // Gemma's (1 + w) scaling and a large epsilon.
  Call g;
  g.in(DType::Float, {15, hidden}, x.data()).in(DType::Float, {hidden}, w.data());
  g.attrF("epsilon", 0.5).attrF("weight_offset", 1.0);
  ASSERT_TRUE(g.run("rms_norm").isOk());
  EXPECT_LT(scaledError(g.outF64(), normRef(x, w, nullptr, hidden, 0.5, false, 1.0)), 1e-6);
}

TEST(TransformerKernels, RmsNormHalf) {
  int64_t hidden = 64;
  auto x = randomFloats(4 * size_t(hidden), 3, -2, 2), w = randomFloats(size_t(hidden), 4);
  std::vector<Half> xh(x.size()), wh(w.size());
  for (size_t i = 0; i < x.size(); ++i) { // the reference sees the rounded inputs
    xh[i].bits = floatToHalf(x[i]);
    x[i] = halfToFloat(xh[i].bits);
  }
  for (size_t i = 0; i < w.size(); ++i) {
    wh[i].bits = floatToHalf(w[i]);
    w[i] = halfToFloat(wh[i].bits);
  }
  Call c;
  c.in(DType::Float16, {4, hidden}, xh.data()).in(DType::Float16, {hidden}, wh.data());
  ASSERT_TRUE(c.run("rms_norm").isOk());
  EXPECT_EQ(c.out().dtype(), DType::Float16);
  EXPECT_LT(scaledError(c.outF64(), normRef(x, w, nullptr, hidden, 1e-6, false, 0)), 1e-3);
}

TEST(TransformerKernels, LayerNormWithAndWithoutBias) {
  int64_t hidden = 40;
  auto x = randomFloats(6 * size_t(hidden), 5, 0, 4), w = randomFloats(size_t(hidden), 6),
       b = randomFloats(size_t(hidden), 7);
  Call c;
  c.in(DType::Float, {2, 3, hidden}, x.data())
      .in(DType::Float, {hidden}, w.data())
      .in(DType::Float, {hidden}, b.data());
  ASSERT_TRUE(c.run("layer_norm").isOk());
  EXPECT_LT(scaledError(c.outF64(), normRef(x, w, &b, hidden, 1e-5, true, 0)), 1e-6);
  Call n;
  n.in(DType::Float, {6, hidden}, x.data()).in(DType::Float, {hidden}, w.data()).none();
  ASSERT_TRUE(n.run("layer_norm").isOk());
  EXPECT_LT(scaledError(n.outF64(), normRef(x, w, nullptr, hidden, 1e-5, true, 0)), 1e-6);
}

TEST(TransformerKernels, NormRejectsAWrongWeight) {
  std::vector<float> x(12), w(5);
  Call c;
  c.in(DType::Float, {3, 4}, x.data()).in(DType::Float, {5}, w.data());
  expectError(c.run("rms_norm"), "weight and bias must be f32[4]");
}

//===----------------------------------------------------------------------===//
// Rope
//===----------------------------------------------------------------------===//

/// x [B, S, N, D] rotated per the op description, in float64.
std::vector<double> ropeRef(const std::vector<float> &x, int64_t b, int64_t s, int64_t n,
                            int64_t d, const std::vector<float> &cosT,
                            const std::vector<float> &sinT, const std::vector<int64_t> &pos,
                            bool interleaved, int64_t rot) {
  std::vector<double> y(x.begin(), x.end());
  int64_t half = rot / 2;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si) {
      int64_t p = pos[size_t(pos.size() == size_t(s) ? si : bi * s + si)];
      for (int64_t h = 0; h < n; ++h) {
        size_t base = size_t(((bi * s + si) * n + h) * d);
        for (int64_t i = 0; i < half; ++i) {
          size_t i1 = base + size_t(interleaved ? 2 * i : i);
          size_t i2 = base + size_t(interleaved ? 2 * i + 1 : i + half);
          double c = cosT[size_t(p * half + i)], sn = sinT[size_t(p * half + i)];
          y[i1] = double(x[i1]) * c - double(x[i2]) * sn;
          y[i2] = double(x[i2]) * c + double(x[i1]) * sn;
        }
      }
    }
  return y;
}

struct RopeCase {
  bool interleaved;
  int64_t rotaryDim; // 0: the whole head
  bool sharedPositions;
};

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesFloat64) {
  RopeCase rc = GetParam();
  int64_t b = 2, s = 3, n = 4, d = 16, maxPos = 20;
  int64_t rot = rc.rotaryDim ? rc.rotaryDim : d;
  auto x = randomFloats(size_t(b * s * n * d), 11);
  std::vector<float> cosT(size_t(maxPos * rot / 2)), sinT(cosT.size());
  for (int64_t p = 0; p < maxPos; ++p)
    for (int64_t i = 0; i < rot / 2; ++i) {
      double theta = double(p) * std::pow(10000.0, -2.0 * double(i) / double(rot));
      cosT[size_t(p * rot / 2 + i)] = float(std::cos(theta));
      sinT[size_t(p * rot / 2 + i)] = float(std::sin(theta));
    }
  std::vector<int64_t> pos = rc.sharedPositions ? std::vector<int64_t>{7, 8, 9}
                                                : std::vector<int64_t>{0, 1, 2, 17, 18, 19};
  Call c;
  c.in(DType::Float, {b, s, n, d}, x.data())
      .in(DType::Float, {maxPos, rot / 2}, cosT.data())
      .in(DType::Float, {maxPos, rot / 2}, sinT.data())
      .in(DType::Int64, {rc.sharedPositions ? 1 : b, s}, pos.data());
  c.attr("interleaved", rc.interleaved).attr("rotary_dim", rc.rotaryDim);
  ASSERT_TRUE(c.run("rope").isOk());
  std::vector<double> want = ropeRef(x, b, s, n, d, cosT, sinT, pos, rc.interleaved, rot);
  EXPECT_LT(scaledError(c.outF64(), want), 1e-6);
  // Channels past the rotary dim pass through untouched.
  std::vector<double> got = c.outF64();
  for (size_t i = 0; i < x.size(); ++i) {
    if (int64_t(i) % d >= rot) {
      ASSERT_EQ(got[i], double(x[i]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, RopeTest,
                         ::testing::Values(RopeCase{false, 0, false}, RopeCase{true, 0, false},
                                           RopeCase{false, 8, false}, RopeCase{true, 4, true}));

TEST(TransformerKernels, RopeRejectsPositionsOutsideTheTables) {
  std::vector<float> x(1 * 2 * 1 * 4), t(3 * 2);
  for (int64_t bad : {3, -1}) {
    std::vector<int64_t> pos{0, bad};
    Call c;
    c.in(DType::Float, {1, 2, 1, 4}, x.data())
        .in(DType::Float, {3, 2}, t.data())
        .in(DType::Float, {3, 2}, t.data())
        .in(DType::Int64, {1, 2}, pos.data());
    expectError(c.run("rope"), "position " + std::to_string(bad) + " is outside the tables [0, 3)");
  }
  std::vector<int64_t> pos{0, 1};
  Call wrongTable;
  wrongTable.in(DType::Float, {1, 2, 1, 4}, x.data())
      .in(DType::Float, {2, 3}, t.data())
      .in(DType::Float, {2, 3}, t.data())
      .in(DType::Int64, {1, 2}, pos.data());
  expectError(wrongTable.run("rope"), "must both be [max_pos, 2]");
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttnSpec {
  int64_t b, sq, skv, hq, hkv, d, dv;
  bool causal = false;
  int64_t window = 0;
  double scale = 0, softcap = 0;
  std::vector<double> sinks; // one per query head, or none
};

/// The op description in float64: mask (if any) is [B, 1, Sq, Skv], bool
/// (`boolMask`) or float (`floatMask`).
std::vector<double> attentionRef(const AttnSpec &a, const std::vector<float> &q,
                                 const std::vector<float> &k, const std::vector<float> &v,
                                 const std::vector<uint8_t> *boolMask,
                                 const std::vector<float> *floatMask) {
  std::vector<double> out(size_t(a.b * a.sq * a.hq * a.dv), 0.0);
  int64_t group = a.hq / a.hkv;
  for (int64_t bi = 0; bi < a.b; ++bi)
    for (int64_t h = 0; h < a.hq; ++h)
      for (int64_t i = 0; i < a.sq; ++i) {
        int64_t pos = a.skv - a.sq + i;
        std::vector<double> s(size_t(a.skv));
        std::vector<bool> keep(size_t(a.skv), true);
        for (int64_t j = 0; j < a.skv; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < a.d; ++t)
            dot += double(q[size_t(((bi * a.sq + i) * a.hq + h) * a.d + t)]) *
                   double(k[size_t(((bi * a.skv + j) * a.hkv + h / group) * a.d + t)]);
          double x = a.scale * dot;
          if (a.softcap > 0)
            x = a.softcap * std::tanh(x / a.softcap);
          size_t m = size_t((bi * a.sq + i) * a.skv + j);
          if (boolMask && !(*boolMask)[m])
            keep[size_t(j)] = false;
          if (floatMask)
            x += (*floatMask)[m];
          if (a.causal && j > pos)
            keep[size_t(j)] = false;
          if (a.window > 0 && j <= pos - a.window)
            keep[size_t(j)] = false;
          if (x == -INFINITY)
            keep[size_t(j)] = false;
          s[size_t(j)] = x;
        }
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < a.skv; ++j)
          if (keep[size_t(j)])
            mx = std::max(mx, s[size_t(j)]);
        if (mx == -INFINITY)
          continue; // no key: zeros (with or without a sink)
        if (!a.sinks.empty()) { // one more score, with no value
          mx = std::max(mx, a.sinks[size_t(h)]);
          sum += std::exp(a.sinks[size_t(h)] - mx);
        }
        for (int64_t j = 0; j < a.skv; ++j)
          if (keep[size_t(j)])
            sum += std::exp(s[size_t(j)] - mx);
        for (int64_t j = 0; j < a.skv; ++j) {
          if (!keep[size_t(j)])
            continue;
          double p = std::exp(s[size_t(j)] - mx) / sum;
          for (int64_t t = 0; t < a.dv; ++t)
            out[size_t(((bi * a.sq + i) * a.hq + h) * a.dv + t)] +=
                p * double(v[size_t(((bi * a.skv + j) * a.hkv + h / group) * a.dv + t)]);
        }
      }
  return out;
}

struct AttnRun {
  std::vector<float> q, k, v;
  Call c;
  AttnRun(const AttnSpec &a, unsigned seed) {
    q = randomFloats(size_t(a.b * a.sq * a.hq * a.d), seed, -2, 2);
    k = randomFloats(size_t(a.b * a.skv * a.hkv * a.d), seed + 1, -2, 2);
    v = randomFloats(size_t(a.b * a.skv * a.hkv * a.dv), seed + 2);
    c.in(DType::Float, {a.b, a.sq, a.hq, a.d}, q.data())
        .in(DType::Float, {a.b, a.skv, a.hkv, a.d}, k.data())
        .in(DType::Float, {a.b, a.skv, a.hkv, a.dv}, v.data());
    c.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attr("causal", a.causal);
    c.attr("window", a.window).attrF("scale", a.scale).attrF("softcap", a.softcap);
    if (!a.sinks.empty())
      c.attrFloats("sinks", a.sinks);
  }
};

TEST(TransformerKernels, AttentionGqaCausalPrefill) {
  AttnSpec a{2, 7, 7, 8, 2, 16, 16, true};
  a.scale = 0.25;
  AttnRun r(a, 21);
  ASSERT_TRUE(r.c.none().run("attention").isOk());
  EXPECT_EQ(r.c.out().shape(), (Shape{2, 7, 8, 16}));
  EXPECT_LT(scaledError(r.c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)), 1e-5);
}

TEST(TransformerKernels, AttentionDecodeReadsTheWholePast) {
  // Sq = 1 against 9 keys: the query sits at position 8 and sees all keys.
  AttnSpec a{1, 1, 9, 4, 1, 8, 12, true}; // MQA, Dv != D
  a.scale = 1 / std::sqrt(8.0);
  AttnRun r(a, 31);
  ASSERT_TRUE(r.c.none().run("attention").isOk());
  EXPECT_EQ(r.c.out().shape(), (Shape{1, 1, 4, 12}));
  EXPECT_LT(scaledError(r.c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)), 1e-5);
}

TEST(TransformerKernels, AttentionSlidingWindowAndSoftcap) {
  AttnSpec a{1, 4, 10, 4, 2, 8, 8, true, 3};
  a.scale = 0.5, a.softcap = 2.0;
  AttnRun r(a, 41);
  ASSERT_TRUE(r.c.none().run("attention").isOk());
  std::vector<double> want = attentionRef(a, r.q, r.k, r.v, nullptr, nullptr);
  EXPECT_LT(scaledError(r.c.outF64(), want), 1e-5);
  // The window matters: without it the result differs.
  AttnSpec wide = a;
  wide.window = 0;
  EXPECT_GT(scaledError(r.c.outF64(), attentionRef(wide, r.q, r.k, r.v, nullptr, nullptr)), 1e-2);
}

TEST(TransformerKernels, AttentionBoolMaskNonCausalWithAnEmptyRow) {
  AttnSpec a{2, 3, 5, 2, 2, 4, 4, false};
  a.scale = 0.5;
  AttnRun r(a, 51);
  std::vector<uint8_t> mask(size_t(a.b * a.sq * a.skv));
  std::mt19937 gen(52);
  for (uint8_t &m : mask)
    m = gen() % 3 != 0;
  for (int64_t j = 0; j < a.skv; ++j) // batch 1, query 2 sees nothing
    mask[size_t((1 * a.sq + 2) * a.skv + j)] = 0;
  r.c.in(DType::Bool, {a.b, 1, a.sq, a.skv}, mask.data());
  ASSERT_TRUE(r.c.run("attention").isOk());
  std::vector<double> got = r.c.outF64();
  EXPECT_LT(scaledError(got, attentionRef(a, r.q, r.k, r.v, &mask, nullptr)), 1e-5);
  for (int64_t h = 0; h < a.hq; ++h)
    for (int64_t t = 0; t < a.dv; ++t)
      EXPECT_EQ(got[size_t(((1 * a.sq + 2) * a.hq + h) * a.dv + t)], 0.0);
}

TEST(TransformerKernels, AttentionFloatMaskIsAdded) {
  AttnSpec a{1, 4, 6, 2, 1, 8, 8, true};
  a.scale = 0.3;
  AttnRun r(a, 61);
  std::vector<float> mask = randomFloats(size_t(a.sq * a.skv), 62, -3, 1);
  mask[2] = -INFINITY;
  r.c.in(DType::Float, {1, 1, a.sq, a.skv}, mask.data());
  ASSERT_TRUE(r.c.run("attention").isOk());
  EXPECT_LT(scaledError(r.c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, &mask)), 1e-5);
}

TEST(TransformerKernels, AttentionRejectsMismatchedHeadsAndMasks) {
  AttnSpec a{1, 2, 2, 4, 2, 4, 4};
  a.scale = 1;
  AttnRun heads(a, 71);
  heads.c.attrs = Attributes();
  heads.c.attr("num_heads", 4).attr("num_kv_heads", 4).attrF("scale", 1.0); // k has 2 heads
  expectError(heads.c.none().run("attention"), "num_heads/num_kv_heads do not match");
  AttnRun shortMask(a, 72);
  std::vector<uint8_t> mask(2, 1);
  shortMask.c.in(DType::Bool, {1, 1, 2, 1}, mask.data());
  expectError(shortMask.c.run("attention"), "must have 2 key columns");
  AttnSpec more{1, 3, 2, 2, 2, 4, 4, true};
  more.scale = 1;
  AttnRun tooMany(more, 73);
  expectError(tooMany.c.none().run("attention"), "more queries (3) than keys (2) for causal");
}

TEST(TransformerKernels, CrossAttentionMayHaveMoreQueriesThanKeys) {
  AttnSpec a{1, 5, 3, 2, 1, 4, 6};
  a.scale = 0.5;
  AttnRun r(a, 74);
  ASSERT_TRUE(r.c.none().run("attention").isOk());
  EXPECT_LT(scaledError(r.c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)), 1e-5);
}

//===----------------------------------------------------------------------===//
// Linear, activations, embedding
//===----------------------------------------------------------------------===//

std::vector<double> linearRef(const std::vector<float> &x, const std::vector<float> &w,
                              const std::vector<float> *b, int64_t m, int64_t n, int64_t k) {
  std::vector<double> y(size_t(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = b ? (*b)[size_t(j)] : 0.0;
      for (int64_t t = 0; t < k; ++t)
        acc += double(x[size_t(r * k + t)]) * double(w[size_t(j * k + t)]);
      y[size_t(r * n + j)] = acc;
    }
  return y;
}

class LinearTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(LinearTest, MatchesFloat64WithAndWithoutBias) {
  // M = 1 and 5 take the unpacked decode path, 37 the packed GEMM; K = 67
  // leaves a tail after the 8-wide vectors.
  int64_t m = GetParam(), n = 29, k = 67;
  auto x = randomFloats(size_t(m * k), 81), w = randomFloats(size_t(n * k), 82),
       b = randomFloats(size_t(n), 83);
  Call c;
  c.in(DType::Float, {1, m, k}, x.data())
      .in(DType::Float, {n, k}, w.data())
      .in(DType::Float, {n}, b.data());
  ASSERT_TRUE(c.run("linear").isOk());
  EXPECT_EQ(c.out().shape(), (Shape{1, m, n}));
  EXPECT_LT(scaledError(c.outF64(), linearRef(x, w, &b, m, n, k)), 1e-5);
  Call nb;
  nb.in(DType::Float, {m, k}, x.data()).in(DType::Float, {n, k}, w.data()).none();
  ASSERT_TRUE(nb.run("linear").isOk());
  EXPECT_LT(scaledError(nb.outF64(), linearRef(x, w, nullptr, m, n, k)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Rows, LinearTest, ::testing::Values(1, 5, 37));

TEST(TransformerKernels, LinearHalfAndShapeErrors) {
  int64_t m = 3, n = 9, k = 16;
  auto x = randomFloats(size_t(m * k), 91), w = randomFloats(size_t(n * k), 92);
  std::vector<Half> xh(x.size()), wh(w.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xh[i].bits = floatToHalf(x[i]);
    x[i] = halfToFloat(xh[i].bits);
  }
  for (size_t i = 0; i < w.size(); ++i) {
    wh[i].bits = floatToHalf(w[i]);
    w[i] = halfToFloat(wh[i].bits);
  }
  Call c;
  c.in(DType::Float16, {m, k}, xh.data()).in(DType::Float16, {n, k}, wh.data()).none();
  ASSERT_TRUE(c.run("linear").isOk());
  EXPECT_EQ(c.out().dtype(), DType::Float16);
  EXPECT_LT(scaledError(c.outF64(), linearRef(x, w, nullptr, m, n, k)), 1e-3);
  Call bad;
  bad.in(DType::Float, {m, k}, x.data()).in(DType::Float, {k, n}, w.data()).none();
  expectError(bad.run("linear"), "do not make x W^T");
}

TEST(TransformerKernels, Activations) {
  auto x = randomFloats(257, 101, -6, 6), u = randomFloats(257, 102, -2, 2);
  auto check = [&](const char *op, bool flag, auto ref) {
    Call c;
    c.in(DType::Float, {257}, x.data());
    if (flag) // gelu's tanh approximation; relu squared
      c.attr(std::string(op) == "relu" ? "squared" : "approximate_tanh", 1);
    ASSERT_TRUE(c.run(op).isOk());
    std::vector<double> want;
    for (float v : x)
      want.push_back(ref(double(v)));
    EXPECT_LT(scaledError(c.outF64(), want), 1e-6) << op;
  };
  check("gelu", false, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check("gelu", true, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  });
  check("silu", false, [](double v) { return v / (1 + std::exp(-v)); });
  check("relu", false, [](double v) { return std::max(v, 0.0); });
  check("relu", true, [](double v) { return v > 0 ? v * v : 0.0; });

  Call s;
  s.in(DType::Float, {257}, x.data()).in(DType::Float, {257}, u.data());
  ASSERT_TRUE(s.run("swiglu").isOk());
  std::vector<double> want;
  for (size_t i = 0; i < x.size(); ++i)
    want.push_back(double(x[i]) / (1 + std::exp(-double(x[i]))) * double(u[i]));
  EXPECT_LT(scaledError(s.outF64(), want), 1e-6);
  Call bad;
  bad.in(DType::Float, {257}, x.data()).in(DType::Float, {1, 257}, u.data());
  expectError(bad.run("swiglu"), "must have one type and shape");
}

TEST(TransformerKernels, EmbeddingRowsAndBadIds) {
  int64_t vocab = 11, hidden = 6;
  auto table = randomFloats(size_t(vocab * hidden), 111);
  std::vector<int64_t> ids{3, 0, 10, 3};
  Call c;
  c.in(DType::Float, {vocab, hidden}, table.data()).in(DType::Int64, {2, 2}, ids.data());
  ASSERT_TRUE(c.run("embedding").isOk());
  EXPECT_EQ(c.out().shape(), (Shape{2, 2, hidden}));
  for (size_t t = 0; t < ids.size(); ++t)
    for (int64_t j = 0; j < hidden; ++j)
      ASSERT_EQ(c.out().data<float>()[t * size_t(hidden) + size_t(j)],
                table[size_t(ids[t] * hidden + j)]);
  for (int64_t bad : {11, -1}) {
    std::vector<int64_t> badIds{1, bad};
    Call e;
    e.in(DType::Float, {vocab, hidden}, table.data()).in(DType::Int64, {2}, badIds.data());
    expectError(e.run("embedding"),
                "token id " + std::to_string(bad) + " is outside the vocabulary [0, 11)");
  }
}

/// [B, S, H, D] -> [B, H, S, D]
std::vector<float> toBhsd(const std::vector<float> &x, int64_t b, int64_t s, int64_t h,
                          int64_t d, int64_t s0, int64_t s1) {
  std::vector<float> out;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t si = s0; si < s1; ++si)
        for (int64_t t = 0; t < d; ++t)
          out.push_back(x[size_t(((bi * s + si) * h + hi) * d + t)]);
  return out;
}

TEST(TransformerKernels, CachedAttentionEqualsAttentionOverTheSequence) {
  // 9 tokens: 6 written by a prefill, 3 by the step under test; capacity 12.
  AttnSpec a{2, 3, 9, 4, 2, 8, 8, true, 4};
  a.scale = 0.4;
  int64_t m = 12, p = a.skv - a.sq;
  AttnRun r(a, 81);
  std::vector<float> cache(size_t(a.b * a.hkv * m * a.d), 0.0f);
  auto write = [&](std::vector<float> &c, const std::vector<float> &src, int64_t s0,
                   int64_t s1, std::vector<float> &out) {
    std::vector<float> rows = toBhsd(src, a.b, a.skv, a.hkv, a.d, s0, s1);
    int64_t pos = s0;
    Call u;
    u.in(DType::Float, {a.b, a.hkv, m, a.d}, c.data())
        .in(DType::Float, {a.b, a.hkv, s1 - s0, a.d}, rows.data())
        .in(DType::Int64, {}, &pos);
    ASSERT_TRUE(u.run("cache_update").isOk());
    out.assign(u.out().data<float>(), u.out().data<float>() + c.size());
  };
  std::vector<float> k1, k2, v1, v2;
  write(cache, r.k, 0, p, k1);
  write(k1, r.k, p, a.skv, k2);
  write(cache, r.v, 0, p, v1);
  write(v1, r.v, p, a.skv, v2);
  Call c;
  c.in(DType::Float, {a.b, a.sq, a.hq, a.d}, r.q.data())
      .in(DType::Float, {a.b, a.hkv, m, a.d}, k2.data())
      .in(DType::Float, {a.b, a.hkv, m, a.dv}, v2.data())
      .in(DType::Int64, {}, &p);
  c.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attr("causal", 1).attr("window", 4);
  c.attrF("scale", a.scale);
  ASSERT_TRUE(c.run("cached_attention").isOk());
  EXPECT_LT(scaledError(c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)), 1e-5);

  // cache_read gives the rows written; writing or reading past the
  // capacity is an error naming it.
  int64_t len = a.skv;
  Call rd;
  rd.in(DType::Float, {a.b, a.hkv, m, a.d}, k2.data()).in(DType::Int64, {}, &len);
  ASSERT_TRUE(rd.run("cache_read").isOk());
  std::vector<float> want = toBhsd(r.k, a.b, a.skv, a.hkv, a.d, 0, a.skv);
  ASSERT_EQ(rd.out().numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(rd.out().data<float>()[i], want[i]);
  int64_t late = m - 2;
  std::vector<float> three(size_t(a.b * a.hkv * 3 * a.d));
  Call over;
  over.in(DType::Float, {a.b, a.hkv, m, a.d}, k2.data())
      .in(DType::Float, {a.b, a.hkv, 3, a.d}, three.data())
      .in(DType::Int64, {}, &late);
  expectError(over.run("cache_update"), "writing positions [10, 13) past the cache capacity 12");
  int64_t far = m - 1;
  Call attnOver;
  attnOver.in(DType::Float, {a.b, a.sq, a.hq, a.d}, r.q.data())
      .in(DType::Float, {a.b, a.hkv, m, a.d}, k2.data())
      .in(DType::Float, {a.b, a.hkv, m, a.dv}, v2.data())
      .in(DType::Int64, {}, &far);
  attnOver.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attrF("scale", 1.0);
  expectError(attnOver.run("cached_attention"), "positions [11, 14) do not fit the cache capacity 12");
}

/// A [B, Hkv, capacity, D] cache holding `x` ([B, T, Hkv, D]) in rows 0..T.
std::vector<float> cacheOf(const std::vector<float> &x, int64_t b, int64_t t, int64_t h,
                           int64_t d, int64_t capacity) {
  std::vector<float> c(size_t(b * h * capacity * d), 0.0f);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t s = 0; s < t; ++s)
        for (int64_t k = 0; k < d; ++k)
          c[size_t(((bi * h + hi) * capacity + s) * d + k)] =
              x[size_t(((bi * t + s) * h + hi) * d + k)];
  return c;
}

TEST(TransformerKernels, FlashAttentionTilesEqualTheReference) {
  // 11 queries after 6 cached tokens, tiles of 3 queries x 4 keys: partial
  // tiles, skipped future blocks, a window of 5, GQA, softcap.
  AttnSpec a{2, 11, 17, 4, 2, 8, 8, true, 5};
  a.scale = 0.35, a.softcap = 3.0;
  AttnRun r(a, 91);
  int64_t m = 20, p = a.skv - a.sq;
  std::vector<float> kc = cacheOf(r.k, a.b, a.skv, a.hkv, a.d, m),
                     vc = cacheOf(r.v, a.b, a.skv, a.hkv, a.dv, m);
  for (bool windowed : {true, false}) {
    AttnSpec spec = a;
    spec.window = windowed ? 5 : 0;
    Call c;
    c.in(DType::Float, {a.b, a.sq, a.hq, a.d}, r.q.data())
        .in(DType::Float, {a.b, a.hkv, m, a.d}, kc.data())
        .in(DType::Float, {a.b, a.hkv, m, a.dv}, vc.data())
        .in(DType::Int64, {}, &p);
    c.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attr("window", spec.window);
    c.attr("block_q", 3).attr("block_k", 4).attrF("scale", a.scale).attrF("softcap", a.softcap);
    ASSERT_TRUE(c.run("flash_attention").isOk());
    EXPECT_LT(scaledError(c.outF64(), attentionRef(spec, r.q, r.k, r.v, nullptr, nullptr)), 1e-5)
        << "window " << spec.window;
  }
}

/// One token per sequence (q [B, 1, Hq, D]) at position `pos` over the
/// caches (rows of `capacity`) through decode_attention_partial in `splits`
/// and attention_combine (with a's sinks, if any): the combined result.
std::vector<double> splitKvDecode(const AttnSpec &a, const float *q, const std::vector<float> &kc,
                                  const std::vector<float> &vc, int64_t capacity, int64_t pos,
                                  int64_t splits) {
  Call part;
  part.in(DType::Float, {a.b, 1, a.hq, a.d}, q)
      .in(DType::Float, {a.b, a.hkv, capacity, a.d}, kc.data())
      .in(DType::Float, {a.b, a.hkv, capacity, a.dv}, vc.data())
      .in(DType::Int64, {}, &pos);
  part.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attr("num_splits", splits);
  part.attrF("scale", a.scale);
  EXPECT_TRUE(part.run("decode_attention_partial", 2).isOk());
  EXPECT_EQ(part.call.outputs[1].shape(), (Shape{a.b, splits, a.hq}));
  Call comb;
  comb.in(DType::Float, part.call.outputs[0].shape(), part.call.outputs[0].raw())
      .in(DType::Float, part.call.outputs[1].shape(), part.call.outputs[1].raw());
  if (!a.sinks.empty())
    comb.attrFloats("sinks", a.sinks);
  EXPECT_TRUE(comb.run("attention_combine").isOk());
  return comb.outF64();
}

TEST(TransformerKernels, SplitKvDecodeCombinesToTheReference) {
  // One token at position 6 (7 keys) in 3 and in 10 splits (some empty).
  AttnSpec a{2, 1, 7, 4, 2, 8, 8, true};
  a.scale = 0.5;
  AttnRun r(a, 92);
  int64_t m = 12, p = a.skv - 1;
  std::vector<float> kc = cacheOf(r.k, a.b, a.skv, a.hkv, a.d, m),
                     vc = cacheOf(r.v, a.b, a.skv, a.hkv, a.dv, m);
  for (int64_t splits : {3, 10})
    EXPECT_LT(scaledError(splitKvDecode(a, r.q.data(), kc, vc, m, p, splits),
                          attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)),
              1e-5)
        << splits << " splits";
}

/// Sinks of every size against the scores: far below them (no effect),
/// among them, far above (the row's weights near zero).
std::vector<double> someSinks(int64_t heads) {
  std::vector<double> s;
  for (int64_t h = 0; h < heads; ++h)
    s.push_back(h % 4 == 0 ? -30.0 : h % 4 == 1 ? 0.5 : h % 4 == 2 ? -1.25 : 6.0);
  return s;
}

TEST(TransformerKernels, AttentionSinksJoinEachRowsSoftmax) {
  // llm.attention with sinks (GQA, causal, a window, softcap) against
  // float64.
  AttnSpec a{2, 5, 9, 8, 2, 8, 8, true, 4};
  a.scale = 0.4, a.softcap = 3.0;
  a.sinks = someSinks(a.hq);
  AttnRun r(a, 51);
  ASSERT_TRUE(r.c.none().run("attention").isOk());
  std::vector<double> want = attentionRef(a, r.q, r.k, r.v, nullptr, nullptr);
  EXPECT_LT(scaledError(r.c.outF64(), want), 1e-5);
  AttnSpec plain = a;
  plain.sinks.clear();
  EXPECT_GT(scaledError(r.c.outF64(), attentionRef(plain, r.q, r.k, r.v, nullptr, nullptr)),
            1e-2); // the sinks matter
  // Not one per head: an error naming the count.
  AttnSpec wrong = a;
  wrong.sinks.pop_back();
  AttnRun bad(wrong, 51);
  expectError(bad.c.none().run("attention"), "sinks has 7 logits for 8 query heads");
}

TEST(TransformerKernels, FlashAndSplitKvAttentionTakeTheSinks) {
  // The flash forms with sinks (the prefill's tiles; the decode's splits,
  // the sinks joining at the merge) equal llm.attention's meaning.
  AttnSpec a{2, 11, 17, 4, 2, 8, 8, true, 5};
  a.scale = 0.35;
  a.sinks = someSinks(a.hq);
  AttnRun r(a, 93);
  int64_t m = 20, p = a.skv - a.sq;
  std::vector<float> kc = cacheOf(r.k, a.b, a.skv, a.hkv, a.d, m),
                     vc = cacheOf(r.v, a.b, a.skv, a.hkv, a.dv, m);
  for (const char *op : {"flash_attention", "cached_attention"}) {
    Call c;
    c.in(DType::Float, {a.b, a.sq, a.hq, a.d}, r.q.data())
        .in(DType::Float, {a.b, a.hkv, m, a.d}, kc.data())
        .in(DType::Float, {a.b, a.hkv, m, a.dv}, vc.data())
        .in(DType::Int64, {}, &p);
    c.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attr("window", a.window);
    c.attr("block_q", 3).attr("block_k", 4).attrF("scale", a.scale).attrFloats("sinks", a.sinks);
    ASSERT_TRUE(c.run(op).isOk());
    EXPECT_LT(scaledError(c.outF64(), attentionRef(a, r.q, r.k, r.v, nullptr, nullptr)), 1e-5)
        << op;
  }
  // Decode: the last query alone, at position 16, in 3 and 10 splits.
  AttnSpec d{2, 1, 17, 4, 2, 8, 8, true};
  d.scale = 0.35, d.sinks = a.sinks;
  std::vector<float> last;
  for (int64_t bi = 0; bi < a.b; ++bi)
    last.insert(last.end(), r.q.begin() + ((bi * a.sq + a.sq - 1) * a.hq) * a.d,
                r.q.begin() + ((bi * a.sq + a.sq) * a.hq) * a.d);
  for (int64_t splits : {3, 10})
    EXPECT_LT(scaledError(splitKvDecode(d, last.data(), kc, vc, m, a.skv - 1, splits),
                          attentionRef(d, last, r.k, r.v, nullptr, nullptr)),
              1e-5)
        << splits << " splits";
}

TEST(TransformerKernels, QuantizedCacheUpdateRoundsEachRowAsDocumented) {
  // [1, 2, 4, 6] int8 cache with sentinels; rows 1 and 2 of both heads
  // written: scale max|x| / 127, values rounded to nearest even.
  std::vector<int8_t> cache(48, 7);
  std::vector<float> scales(8, 9.f);
  std::vector<float> rows = {
      0.5f, 1.5f, 2.5f, -2.5f, 127.f, -0.49f, // head 0, pos 1: s = 1
      0.f,  0.f,  0.f,  0.f,   0.f,   0.f,    // head 0, pos 2: zeros, s = 0
      -3.5f, 1.f, 0.f,  0.f,   0.f,   0.f,    // head 1, pos 1: s = 3.5 / 127
      0.f, 0.f, 0.f, 0.f, 63.5f, -63.5f};     // head 1, pos 2: s = 0.5
  int64_t pos = 1;
  Call u;
  u.in(DType::Int8, {1, 2, 4, 6}, cache.data())
      .in(DType::Float, {1, 2, 4, 1}, scales.data())
      .in(DType::Float, {1, 2, 2, 6}, rows.data())
      .in(DType::Int64, {}, &pos);
  u.call.outputs.resize(2);
  ASSERT_TRUE(u.run("quantized_cache_update").isOk());
  const int8_t *q = u.call.outputs[0].data<int8_t>();
  const float *sc = u.call.outputs[1].data<float>();
  std::vector<int8_t> want(48, 7);
  std::vector<int8_t> h0p1 = {0, 2, 2, -2, 127, 0}, h1p1 = {-127, 36, 0, 0, 0, 0},
                      h1p2 = {0, 0, 0, 0, 127, -127};
  std::copy(h0p1.begin(), h0p1.end(), want.begin() + 6);
  std::fill(want.begin() + 12, want.begin() + 18, 0);
  std::copy(h1p1.begin(), h1p1.end(), want.begin() + 30);
  std::copy(h1p2.begin(), h1p2.end(), want.begin() + 36);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(int(q[i]), int(want[i])) << i;
  std::vector<float> wantScales = {9.f, 1.f, 0.f, 9.f, 9.f, 3.5f / 127.f, 0.5f, 9.f};
  for (size_t i = 0; i < wantScales.size(); ++i)
    EXPECT_EQ(sc[i], wantScales[i]) << i;
  // f16 rows, and the errors: past the capacity, scales of another shape.
  std::vector<uint16_t> half(24);
  for (size_t i = 0; i < half.size(); ++i)
    half[i] = floatToHalf(rows[i]);
  Call h;
  h.in(DType::Int8, {1, 2, 4, 6}, cache.data())
      .in(DType::Float, {1, 2, 4, 1}, scales.data())
      .in(DType::Float16, {1, 2, 2, 6}, half.data())
      .in(DType::Int64, {}, &pos);
  h.call.outputs.resize(2);
  ASSERT_TRUE(h.run("quantized_cache_update").isOk());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(int(h.call.outputs[0].data<int8_t>()[i]), int(want[i])) << i;
  int64_t late = 3;
  Call over;
  over.in(DType::Int8, {1, 2, 4, 6}, cache.data())
      .in(DType::Float, {1, 2, 4, 1}, scales.data())
      .in(DType::Float, {1, 2, 2, 6}, rows.data())
      .in(DType::Int64, {}, &late);
  expectError(over.run("quantized_cache_update"), "writing positions [3, 5) past the cache capacity 4");
  Call bad;
  bad.in(DType::Int8, {1, 2, 4, 6}, cache.data())
      .in(DType::Float, {1, 2, 2, 1}, scales.data())
      .in(DType::Float, {1, 2, 2, 6}, rows.data())
      .in(DType::Int64, {}, &pos);
  expectError(bad.run("quantized_cache_update"), "are not the f32 [B, H, M, 1] scales");
}

TEST(TransformerKernels, AttentionOverInt8CachesEqualsFloat64OverTheirValues) {
  // 9 tokens quantized into the caches by quantized_cache_update (6, then
  // 3); cached, flash and split-KV attention read the int8 rows with their
  // scales and equal float64 attention over the values q * s.
  AttnSpec a{2, 3, 9, 4, 2, 8, 8, true, 0};
  a.scale = 0.4;
  int64_t m = 12, p = a.skv - a.sq;
  AttnRun r(a, 83);
  auto quantize = [&](const std::vector<float> &x, std::vector<int8_t> &q,
                      std::vector<float> &s, std::vector<float> &values) {
    q.assign(size_t(a.b * a.hkv * m * a.d), 0);
    s.assign(size_t(a.b * a.hkv * m), 0.f);
    for (auto [s0, s1] : {std::pair<int64_t, int64_t>{0, p}, {p, a.skv}}) {
      std::vector<float> rows = toBhsd(x, a.b, a.skv, a.hkv, a.d, s0, s1);
      Call u;
      u.in(DType::Int8, {a.b, a.hkv, m, a.d}, q.data())
          .in(DType::Float, {a.b, a.hkv, m, 1}, s.data())
          .in(DType::Float, {a.b, a.hkv, s1 - s0, a.d}, rows.data())
          .in(DType::Int64, {}, &s0);
      u.call.outputs.resize(2);
      ASSERT_TRUE(u.run("quantized_cache_update").isOk());
      std::copy_n(u.call.outputs[0].data<int8_t>(), q.size(), q.begin());
      std::copy_n(u.call.outputs[1].data<float>(), s.size(), s.begin());
    }
    // The values the cache holds, [B, T, Hkv, D] like x.
    values.assign(x.size(), 0.f);
    for (int64_t bi = 0; bi < a.b; ++bi)
      for (int64_t t = 0; t < a.skv; ++t)
        for (int64_t h = 0; h < a.hkv; ++h)
          for (int64_t i = 0; i < a.d; ++i) {
            int64_t row = (bi * a.hkv + h) * m + t;
            values[size_t(((bi * a.skv + t) * a.hkv + h) * a.d + i)] =
                float(q[size_t(row * a.d + i)]) * s[size_t(row)];
          }
    // Each held value within half a step of x.
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::abs(values[i] - x[i]), 2.0 / 127 / 2 * 1.0001) << i;
  };
  std::vector<int8_t> kq, vq;
  std::vector<float> ks, vs, kx, vx;
  quantize(r.k, kq, ks, kx);
  quantize(r.v, vq, vs, vx);
  std::vector<double> want = attentionRef(a, r.q, kx, vx, nullptr, nullptr);
  auto operands = [&](Call &c, int64_t sq, const float *qp, const int64_t *at) {
    c.in(DType::Float, {a.b, sq, a.hq, a.d}, qp)
        .in(DType::Int8, {a.b, a.hkv, m, a.d}, kq.data())
        .in(DType::Int8, {a.b, a.hkv, m, a.dv}, vq.data())
        .in(DType::Int64, {}, at)
        .in(DType::Float, {a.b, a.hkv, m, 1}, ks.data())
        .in(DType::Float, {a.b, a.hkv, m, 1}, vs.data());
    c.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attrF("scale", a.scale);
  };
  Call cached;
  operands(cached, a.sq, r.q.data(), &p);
  ASSERT_TRUE(cached.run("cached_attention").isOk());
  EXPECT_LT(scaledError(cached.outF64(), want), 1e-5);
  Call flash;
  operands(flash, a.sq, r.q.data(), &p);
  flash.attr("block_q", 2).attr("block_k", 4);
  ASSERT_TRUE(flash.run("flash_attention").isOk());
  EXPECT_LT(scaledError(flash.outF64(), want), 1e-5);
  // The int8 caches without their scales: an error, not a float read.
  Call noScales;
  noScales.in(DType::Float, {a.b, a.sq, a.hq, a.d}, r.q.data())
      .in(DType::Int8, {a.b, a.hkv, m, a.d}, kq.data())
      .in(DType::Int8, {a.b, a.hkv, m, a.dv}, vq.data())
      .in(DType::Int64, {}, &p);
  noScales.attr("num_heads", a.hq).attr("num_kv_heads", a.hkv).attrF("scale", a.scale);
  expectError(noScales.run("cached_attention"), "an int8 k_cache needs its kv_scales");
}

TEST(TransformerKernels, AssertEqualPassesTheValueOrNamesTheMismatch) {
  float value[3] = {1, 2, 3};
  std::vector<int64_t> lhs{4, 4}, same{4};
  std::vector<int32_t> other{4, 5};
  Call ok;
  ok.in(DType::Float, {3}, value).in(DType::Int64, {2}, lhs.data()).in(DType::Int64, {}, same.data());
  Attribute message;
  message.kind = Attribute::String;
  message.s = "lengths must agree";
  ok.attrs.set("message", message);
  ASSERT_TRUE(ok.run("assert_equal").isOk());
  EXPECT_EQ(ok.out().data<float>(), value); // passed through, not copied
  Call bad;
  bad.in(DType::Float, {3}, value).in(DType::Int64, {2}, lhs.data()).in(DType::Int32, {2}, other.data());
  bad.attrs.set("message", message);
  expectError(bad.run("assert_equal"), "lengths must agree (4 != 5 at element 1)");
}

TEST(QuantizedLinear, EmulatedInt8ActivationsRoundXAsDocumented) {
  // 4-bit weights [N=3, K=70] in groups of 16 (K not a multiple of the
  // activations' blocks of 32), symmetric; x [2, 70] spanning magnitudes.
  // Plain: dequant(W) x. With int8_activations and emulate_int8_activations:
  // dequant(W) x', x' each block of 32 of a row rounded to int8 at scale
  // max |x| / 127 (nearest even) and back; both against float64. Either flag
  // alone leaves x as it is.
  const int64_t N = 3, K = 70, gs = 16, G = (K + gs - 1) / gs, M = 2;
  std::vector<float> x = randomFloats(size_t(M * K), 7, -3, 3);
  for (int64_t k = 0; k < K; k += 9)
    x[size_t(k)] *= 0.01f; // small values next to large ones in a block
  std::vector<uint8_t> q(size_t(N * G * gs / 2));
  std::mt19937 gen(5);
  for (uint8_t &b : q)
    b = uint8_t(gen() & 0xff);
  std::vector<float> scales = randomFloats(size_t(N * G), 9, 0.01f, 0.1f);
  auto weight = [&](int64_t n, int64_t k) {
    int64_t g = k / gs, j = k % gs;
    uint8_t byte = q[size_t((n * G + g) * (gs / 2) + j / 2)];
    int v = (j % 2 == 0 ? byte & 0xf : byte >> 4) - 8;
    return double(v) * double(scales[size_t(n * G + g)]);
  };
  auto reference = [&](bool roundX) {
    std::vector<double> y(size_t(M * N), 0.0);
    for (int64_t m = 0; m < M; ++m) {
      std::vector<double> xr(static_cast<size_t>(K));
      for (int64_t k0 = 0; k0 < K; k0 += 32) {
        int64_t k1 = std::min(K, k0 + 32);
        float amax = 0;
        for (int64_t k = k0; k < k1; ++k)
          amax = std::max(amax, std::fabs(x[size_t(m * K + k)]));
        float d = amax / 127.f;
        for (int64_t k = k0; k < k1; ++k) {
          float v = x[size_t(m * K + k)];
          xr[size_t(k)] = roundX ? double(std::nearbyint(v / d)) * double(d) : double(v);
        }
      }
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          y[size_t(m * N + n)] += weight(n, k) * xr[size_t(k)];
    }
    return y;
  };
  auto run = [&](int64_t allowed, int64_t emulate) {
    Call c;
    c.in(DType::Float, {M, K}, x.data())
        .in(DType::UInt8, {N, G, gs / 2}, q.data())
        .in(DType::Float, {N, G}, scales.data())
        .none()
        .none()
        .attr("bits", 4)
        .attr("group_size", gs)
        .attr("int8_activations", allowed)
        .attr("emulate_int8_activations", emulate);
    EXPECT_TRUE(c.run("quantized_linear").isOk());
    return c.outF64();
  };
  std::vector<double> exact = reference(false), rounded = reference(true);
  EXPECT_LT(scaledError(run(1, 1), rounded), 1e-5);
  EXPECT_LT(scaledError(run(0, 0), exact), 1e-5);
  EXPECT_LT(scaledError(run(1, 0), exact), 1e-5);
  EXPECT_LT(scaledError(run(0, 1), exact), 1e-5);
  // The rounding is visible at this tolerance (the test can fail).
  EXPECT_GT(scaledError(rounded, exact), 1e-4);
}

} // namespace
