//===- KvCache.cpp - caches and the flash attention forms -----------------===//
//
// ONNX TensorScatter (opset 24), llmc's static KV cache (llm.cache_update,
// llm.quantized_cache_update, llm.cache_read, llm.cached_attention) and the
// flash forms the transformer passes lower attention to
// (llm.flash_attention, llm.decode_attention_partial,
// llm.attention_combine).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/AttentionCore.h"
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"
#include "runtime/src/cpu/kernels/TensorScatter.h"

#include <algorithm>

namespace llmc::cpu {

std::string tensorScatterRows(const Tensor &dst, const Tensor &update,
                              const Tensor *writeIndices, int64_t axis, bool circular) {
  int64_t rank = dst.rank();
  if (axis < 0)
    axis += rank;
  bool fits = axis >= 1 && axis < rank && update.rank() == rank && update.dtype() == dst.dtype();
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || update.dim(d) == dst.dim(d);
  if (!fits)
    return "update " + update.describe() + " does not fit past_cache " + dst.describe();
  int64_t batch = dst.dim(0), len = dst.dim(axis), n = update.dim(axis);
  if (writeIndices && (writeIndices->dtype() != DType::Int64 || writeIndices->numel() != batch))
    return "write_indices must be one i64 per batch entry, got " + writeIndices->describe();
  auto start = [&](int64_t b) { return writeIndices ? writeIndices->data<int64_t>()[b] : 0; };
  for (int64_t b = 0; b < batch; ++b)
    if (start(b) < 0 || (!circular && start(b) > len - n) || (circular && len == 0 && n > 0))
      return "write index " + std::to_string(start(b)) + " + " + std::to_string(n) +
             " exceeds the cache length " + std::to_string(len);
  int64_t mid = 1, inner = 1; // dims between batch and axis, after axis
  for (int64_t d = 1; d < axis; ++d)
    mid *= dst.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= dst.dim(d);
  size_t row = size_t(inner) * storageSize(dst.dtype());
  char *to = static_cast<char *>(dst.mutableRaw());
  const char *from = static_cast<const char *>(update.raw());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < mid; ++m) {
      if (!circular) { // (one run of rows)
        std::memcpy(to + size_t((b * mid + m) * len + start(b)) * row,
                    from + size_t((b * mid + m) * n) * row, size_t(n) * row);
        continue;
      }
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(to + size_t((b * mid + m) * len + (start(b) + i) % len) * row,
                    from + size_t((b * mid + m) * n + i) * row, row);
    }
  return {};
}

namespace {

using namespace core;

//===----------------------------------------------------------------------===//
// ONNX TensorScatter (opset 24)
//===----------------------------------------------------------------------===//

Status tensorScatterKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &update = *call.input(1);
  int64_t axis = call.attrs->getInt("axis", -2);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, cache.rank()));
  bool circular = call.attrs->getString("mode", "linear") == "circular";
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  if (std::string e = tensorScatterRows(out, update, call.input(2), axis, circular); !e.empty())
    return call.fail(e);
  return Status::ok();
}
//===----------------------------------------------------------------------===//
// The static KV cache (llm.cache_update, llm.cache_read, llm.cached_attention)
//===----------------------------------------------------------------------===//

/// The i64 scalar operand `t` (one element).
Status scalarI64(const KernelCall &call, const Tensor &t, const char *what, int64_t &out) {
  if (t.dtype() != DType::Int64 || t.numel() != 1)
    return call.fail(std::string(what) + " must be one i64, got " + t.describe());
  out = t.data<int64_t>()[0];
  return Status::ok();
}

Status checkCache(const KernelCall &call, const Tensor &cache, const char *what) {
  if (cache.rank() != 4)
    return call.fail(std::string(what) + " must be [B, H, capacity, D], got " + cache.describe());
  return Status::ok();
}

/// Copies rows [0, rows) of every (batch, head) of a [B, H, M, D] cache into
/// a [B, H, rows, D] tensor or back: `toCache` writes `part` at row `at`.
void copyRows(const Tensor &cache, const Tensor &part, int64_t at, bool toCache) {
  int64_t bh = cache.dim(0) * cache.dim(1), m = cache.dim(2), rows = part.dim(2);
  size_t row = size_t(cache.dim(3)) * storageSize(cache.dtype());
  char *c = static_cast<char *>(cache.mutableRaw());
  char *p = static_cast<char *>(part.mutableRaw());
  for (int64_t i = 0; i < bh; ++i) {
    char *cacheRows = c + (size_t(i * m) + size_t(at)) * row;
    char *partRows = p + size_t(i * rows) * row;
    if (toCache)
      std::memcpy(cacheRows, partRows, size_t(rows) * row);
    else
      std::memcpy(partRows, cacheRows, size_t(rows) * row);
  }
}

Status cacheUpdateKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &update = *call.input(1);
  int64_t pos;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(2), "pos", pos));
  if (update.rank() != 4 || update.dim(0) != cache.dim(0) || update.dim(1) != cache.dim(1) ||
      update.dim(3) != cache.dim(3) || update.dtype() != cache.dtype())
    return call.fail("update " + update.describe() + " does not fit cache " + cache.describe());
  if (pos < 0 || pos + update.dim(2) > cache.dim(2))
    return call.fail("writing positions [" + std::to_string(pos) + ", " +
                     std::to_string(pos + update.dim(2)) + ") past the cache capacity " +
                     std::to_string(cache.dim(2)));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  copyRows(out, update, pos, /*toCache=*/true);
  return Status::ok();
}

/// The [B, H, M, 1] f32 scales of an int8 [B, H, M, D] cache.
Status checkScales(const KernelCall &call, const Tensor &cache, const Tensor &scales,
                   const char *what) {
  if (cache.dtype() != DType::Int8 || scales.dtype() != DType::Float || scales.rank() != 4 ||
      scales.dim(0) != cache.dim(0) || scales.dim(1) != cache.dim(1) ||
      scales.dim(2) != cache.dim(2) || scales.dim(3) != 1)
    return call.fail(std::string(what) + " " + scales.describe() +
                     " are not the f32 [B, H, M, 1] scales of an int8 cache " + cache.describe());
  return Status::ok();
}

Status quantizedCacheUpdateKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0), &scales = *call.input(1), &update = *call.input(2);
  int64_t pos;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(checkScales(call, cache, scales, "scales"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(3), "pos", pos));
  if (update.rank() != 4 || update.dim(0) != cache.dim(0) || update.dim(1) != cache.dim(1) ||
      update.dim(3) != cache.dim(3))
    return call.fail("update " + update.describe() + " does not fit cache " + cache.describe());
  if (pos < 0 || pos + update.dim(2) > cache.dim(2))
    return call.fail("writing positions [" + std::to_string(pos) + ", " +
                     std::to_string(pos + update.dim(2)) + ") past the cache capacity " +
                     std::to_string(cache.dim(2)));
  std::vector<float> rows;
  LLMC_RETURN_IF_ERROR(toF32(call, update, rows));
  Tensor &out = call.outputs[0], &outScales = call.outputs[1];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(cache.dtype(), cache.shape(), out));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(scales.dtype(), scales.shape(), outScales));
  std::memcpy(out.mutableRaw(), cache.raw(), cache.bytes());
  std::memcpy(outScales.mutableRaw(), scales.raw(), scales.bytes());
  int64_t bh = cache.dim(0) * cache.dim(1), m = cache.dim(2), n = update.dim(2), d = cache.dim(3);
  int8_t *q = out.mutableData<int8_t>();
  float *sc = outScales.mutableData<float>();
  for (int64_t i = 0; i < bh; ++i)
    for (int64_t t = 0; t < n; ++t)
      sc[i * m + pos + t] = quantizeKvRow(rows.data() + (i * n + t) * d, d, q + (i * m + pos + t) * d);
  return Status::ok();
}

Status cacheReadKernel(KernelCall &call) {
  const Tensor &cache = *call.input(0);
  int64_t length;
  LLMC_RETURN_IF_ERROR(checkCache(call, cache, "cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(1), "length", length));
  if (length < 0 || length > cache.dim(2))
    return call.fail("reading " + std::to_string(length) + " rows of a cache of capacity " +
                     std::to_string(cache.dim(2)));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(
      Tensor::allocate(cache.dtype(), {cache.dim(0), cache.dim(1), length, cache.dim(3)}, out));
  copyRows(cache, out, 0, /*toCache=*/false);
  return Status::ok();
}


//===----------------------------------------------------------------------===//
// Flash forms (llm.flash_attention, llm.decode_attention_partial,
// llm.attention_combine): the tiled algorithms themselves, in double
//===----------------------------------------------------------------------===//

/// The operands of an attention over a static cache, as f32 [B, H, S, D]
/// queries and the cache rows 0 .. pos + S.
struct CacheAttention {
  int64_t b, sq, hq, d, hkv, dv, pos, skv, window;
  float scale, softcap;
  bool causal;
  std::vector<float> q, k, v; // q [B, Hq, Sq, D]; k, v [B, Hkv, Skv, D|Dv]
  std::vector<float> sinks;   // one per query head, or none
};

Status readCacheAttention(KernelCall &call, CacheAttention &c) {
  const Tensor &Q = *call.input(0), &K = *call.input(1), &V = *call.input(2);
  const Attributes &at = *call.attrs;
  LLMC_RETURN_IF_ERROR(checkCache(call, K, "k_cache"));
  LLMC_RETURN_IF_ERROR(checkCache(call, V, "v_cache"));
  LLMC_RETURN_IF_ERROR(scalarI64(call, *call.input(3), "pos", c.pos));
  if (Q.rank() != 4)
    return call.fail("q must be [B, S, H, D], got " + Q.describe());
  c.b = Q.dim(0), c.sq = Q.dim(1), c.hq = Q.dim(2), c.d = Q.dim(3);
  c.hkv = K.dim(1), c.dv = V.dim(3), c.skv = c.pos + c.sq;
  if (K.dim(0) != c.b || V.dim(0) != c.b || K.dim(3) != c.d || V.dim(1) != c.hkv ||
      V.dim(2) != K.dim(2))
    return call.fail("q " + Q.describe() + " and caches " + K.describe() + ", " + V.describe() +
                     " disagree");
  if (at.getInt("num_heads", -1) != c.hq || at.getInt("num_kv_heads", -1) != c.hkv ||
      c.hkv == 0 || c.hq % c.hkv)
    return call.fail("num_heads/num_kv_heads do not match q and the caches");
  if (c.pos < 0 || c.skv > K.dim(2))
    return call.fail("positions [" + std::to_string(c.pos) + ", " + std::to_string(c.skv) +
                     ") do not fit the cache capacity " + std::to_string(K.dim(2)));
  std::optional<double> scale = at.optFloat("scale");
  if (!scale)
    return call.fail("the scale attribute is missing");
  c.scale = float(*scale);
  c.softcap = float(at.getFloat("softcap", 0.0));
  c.causal = at.getInt("causal", 1) != 0;
  c.window = at.getInt("window", 0);
  LLMC_RETURN_IF_ERROR(readSinks(call, c.hq, c.sinks));
  Tensor keys, values;
  LLMC_RETURN_IF_ERROR(Tensor::allocate(K.dtype(), {c.b, c.hkv, c.skv, c.d}, keys));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(V.dtype(), {c.b, c.hkv, c.skv, c.dv}, values));
  copyRows(K, keys, 0, false);
  copyRows(V, values, 0, false);
  LLMC_RETURN_IF_ERROR(toF32(call, Q, c.q));
  c.q = swapHeadSeq(c.q, c.b, c.sq, c.hq, c.d);
  // int8 caches: each row times its scale.
  auto dequantize = [&](const Tensor &rows, const Tensor &cache, const Tensor *scales,
                        const char *what, std::vector<float> &out) -> Status {
    if (!scales && cache.dtype() == DType::Int8)
      return call.fail(std::string("an int8 ") + what + " needs its kv_scales");
    if (!scales)
      return toF32(call, rows, out);
    LLMC_RETURN_IF_ERROR(checkScales(call, cache, *scales, "kv_scales"));
    int64_t width = rows.dim(3), m = cache.dim(2);
    const int8_t *q = rows.data<int8_t>();
    const float *s = scales->data<float>();
    out.resize(size_t(rows.numel()));
    for (int64_t i = 0; i < rows.dim(0) * rows.dim(1); ++i)
      for (int64_t j = 0; j < c.skv; ++j)
        for (int64_t t = 0; t < width; ++t)
          out[size_t((i * c.skv + j) * width + t)] =
              float(q[(i * c.skv + j) * width + t]) * s[i * m + j];
    return Status::ok();
  };
  if (call.inputs.size() != 4 && call.inputs.size() != 6)
    return call.fail("takes q, k_cache, v_cache, pos and, for int8 caches, their two scales");
  bool scaled = call.inputs.size() == 6;
  LLMC_RETURN_IF_ERROR(dequantize(keys, K, scaled ? call.input(4) : nullptr, "k_cache", c.k));
  LLMC_RETURN_IF_ERROR(dequantize(values, V, scaled ? call.input(5) : nullptr, "v_cache", c.v));
  return Status::ok();
}

Status cachedAttentionKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  Attention a;
  a.b = c.b, a.hq = c.hq, a.hkv = c.hkv, a.sq = c.sq, a.skv = c.skv, a.d = c.d, a.dv = c.dv;
  a.scale = c.scale, a.softcap = c.softcap, a.causal = c.causal;
  a.offset.assign(size_t(c.b), c.pos);
  if (c.window > 0) // keys at or before position - window are out
    a.leftWindow = c.window - 1;
  a.onnxSemantics = true;
  if (!c.sinks.empty())
    a.sink = c.sinks.data();
  std::vector<float> out;
  runAttention(*call.pool, a, c.q, c.k, c.v, out);
  return fromF32(call.input(0)->dtype(), {c.b, c.sq, c.hq, c.dv},
                 swapHeadSeq(out, c.b, c.hq, c.sq, c.dv), call.outputs[0]);
}

/// Online-softmax state of one query row.
struct OnlineRow {
  double m = -INFINITY, l = 0;
  std::vector<double> acc;
};

/// Folds keys [j0, j1) into `row` for query `i` (absolute position p) of
/// head `h` of batch `bi`.
void foldKeys(const CacheAttention &c, int64_t bi, int64_t h, int64_t i, int64_t p, int64_t j0,
              int64_t j1, OnlineRow &row, std::vector<double> &scores) {
  int64_t hk = h / (c.hq / c.hkv);
  const float *qi = c.q.data() + ((bi * c.hq + h) * c.sq + i) * c.d;
  double blockMax = -INFINITY;
  scores.assign(size_t(j1 - j0), -INFINITY);
  for (int64_t j = j0; j < j1; ++j) {
    if ((c.causal && j > p) || (c.window > 0 && j <= p - c.window))
      continue;
    const float *kj = c.k.data() + ((bi * c.hkv + hk) * c.skv + j) * c.d;
    float dot = 0;
    for (int64_t t = 0; t < c.d; ++t)
      dot += qi[t] * kj[t];
    float s = dot * c.scale;
    if (c.softcap > 0)
      s = c.softcap * std::tanh(s / c.softcap);
    scores[size_t(j - j0)] = s;
    blockMax = std::max(blockMax, double(s));
  }
  if (blockMax == -INFINITY)
    return;
  double m = std::max(row.m, blockMax), alpha = std::exp(row.m - m);
  row.l *= alpha;
  for (double &a : row.acc)
    a *= alpha;
  for (int64_t j = j0; j < j1; ++j) {
    double s = scores[size_t(j - j0)];
    if (s == -INFINITY)
      continue;
    double w = std::exp(s - m);
    row.l += w;
    const float *vj = c.v.data() + ((bi * c.hkv + hk) * c.skv + j) * c.dv;
    for (int64_t t = 0; t < c.dv; ++t)
      row.acc[size_t(t)] += w * vj[t];
  }
  row.m = m;
}

Status flashAttentionKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  int64_t bq = call.attrs->getInt("block_q", 64), bk = call.attrs->getInt("block_k", 64);
  if (bq <= 0 || bk <= 0)
    return call.fail("block_q and block_k must be positive");
  std::vector<float> out(size_t(c.b * c.hq * c.sq * c.dv), 0.0f);
  call.pool->parallelFor(c.b * c.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> scores;
    std::vector<OnlineRow> rows;
    for (int64_t bh = r0; bh < r1; ++bh) {
      int64_t bi = bh / c.hq, h = bh % c.hq;
      for (int64_t q0 = 0; q0 < c.sq; q0 += bq) {
        int64_t q1 = std::min(c.sq, q0 + bq);
        rows.assign(size_t(q1 - q0), OnlineRow());
        for (OnlineRow &r : rows)
          r.acc.assign(size_t(c.dv), 0.0);
        int64_t lastPos = c.pos + q1 - 1, firstPos = c.pos + q0;
        for (int64_t k0 = 0; k0 < c.skv; k0 += bk) {
          int64_t k1 = std::min(c.skv, k0 + bk);
          if (c.causal && k0 > lastPos)
            break; // every later block is in the future of every row
          if (c.window > 0 && k1 - 1 <= firstPos - c.window)
            continue; // wholly before every row's window
          for (int64_t i = q0; i < q1; ++i)
            foldKeys(c, bi, h, i, c.pos + i, k0, k1, rows[size_t(i - q0)], scores);
        }
        for (int64_t i = q0; i < q1; ++i) {
          const OnlineRow &r = rows[size_t(i - q0)];
          float *o = out.data() + ((bi * c.hq + h) * c.sq + i) * c.dv;
          // A sink adds its exp to the denominator only.
          double l = r.l + (c.sinks.empty() || r.l == 0
                                ? 0.0
                                : std::exp(double(c.sinks[size_t(h)]) - r.m));
          if (r.l > 0)
            for (int64_t t = 0; t < c.dv; ++t)
              o[t] = float(r.acc[size_t(t)] / l);
        }
      }
    }
  });
  const Tensor &Q = *call.input(0);
  return fromF32(Q.dtype(), {c.b, c.sq, c.hq, c.dv}, swapHeadSeq(out, c.b, c.hq, c.sq, c.dv),
                 call.outputs[0]);
}

Status decodeAttentionPartialKernel(KernelCall &call) {
  CacheAttention c;
  LLMC_RETURN_IF_ERROR(readCacheAttention(call, c));
  int64_t splits = call.attrs->getInt("num_splits", 0);
  if (splits <= 0)
    return call.fail("num_splits must be positive");
  if (c.sq != 1)
    return call.fail("split-KV attention takes one query token, got " + std::to_string(c.sq));
  c.causal = true;
  int64_t chunk = (c.skv + splits - 1) / splits;
  Tensor &partial = call.outputs[0], &lse = call.outputs[1];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {c.b, splits, c.hq, c.dv}, partial));
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {c.b, splits, c.hq}, lse));
  float *po = partial.mutableData<float>(), *lo = lse.mutableData<float>();
  call.pool->parallelFor(c.b * c.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> scores;
    for (int64_t bh = r0; bh < r1; ++bh) {
      int64_t bi = bh / c.hq, h = bh % c.hq;
      for (int64_t sp = 0; sp < splits; ++sp) {
        OnlineRow row;
        row.acc.assign(size_t(c.dv), 0.0);
        int64_t j0 = std::min(c.skv, sp * chunk), j1 = std::min(c.skv, j0 + chunk);
        if (j0 < j1)
          foldKeys(c, bi, h, 0, c.pos, j0, j1, row, scores);
        float *o = po + ((bi * splits + sp) * c.hq + h) * c.dv;
        for (int64_t t = 0; t < c.dv; ++t)
          o[t] = row.l > 0 ? float(row.acc[size_t(t)] / row.l) : 0.0f;
        lo[(bi * splits + sp) * c.hq + h] = row.l > 0 ? float(row.m + std::log(row.l)) : -INFINITY;
      }
    }
  });
  return Status::ok();
}

Status attentionCombineKernel(KernelCall &call) {
  const Tensor &partial = *call.input(0), &lse = *call.input(1);
  if (partial.rank() != 4 || lse.rank() != 3 || partial.dtype() != DType::Float ||
      lse.dtype() != DType::Float || lse.dim(0) != partial.dim(0) ||
      lse.dim(1) != partial.dim(1) || lse.dim(2) != partial.dim(2))
    return call.fail("partial " + partial.describe() + " and lse " + lse.describe() +
                     " do not go together");
  int64_t b = partial.dim(0), splits = partial.dim(1), h = partial.dim(2), dv = partial.dim(3);
  std::vector<float> sinks;
  LLMC_RETURN_IF_ERROR(readSinks(call, h, sinks));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, {b, 1, h, dv}, out));
  const float *p = partial.data<float>(), *l = lse.data<float>();
  float *o = out.mutableData<float>();
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      double m = -INFINITY;
      for (int64_t s = 0; s < splits; ++s)
        m = std::max(m, double(l[(bi * splits + s) * h + hi]));
      std::vector<double> acc(size_t(dv), 0.0);
      double total = 0;
      if (m != -INFINITY)
        for (int64_t s = 0; s < splits; ++s) {
          double w = std::exp(double(l[(bi * splits + s) * h + hi]) - m);
          total += w;
          for (int64_t t = 0; t < dv; ++t)
            acc[size_t(t)] += w * p[((bi * splits + s) * h + hi) * dv + t];
        }
      if (total > 0 && !sinks.empty()) // (no key: zeros, with or without a sink)
        total += std::exp(double(sinks[size_t(hi)]) - m);
      for (int64_t t = 0; t < dv; ++t)
        o[(bi * h + hi) * dv + t] = total > 0 ? float(acc[size_t(t)] / total) : 0.0f;
    }
  return Status::ok();
}

} // namespace

void addKvCacheKernels(KernelTable &table) {
  table.add("onnx.tensor_scatter", tensorScatterKernel);
  table.add("cache_update", cacheUpdateKernel);
  table.add("quantized_cache_update", quantizedCacheUpdateKernel);
  table.add("cache_read", cacheReadKernel);
  table.add("cached_attention", cachedAttentionKernel);
  table.add("flash_attention", flashAttentionKernel);
  table.add("decode_attention_partial", decodeAttentionPartialKernel);
  table.add("attention_combine", attentionCombineKernel);
}

} // namespace llmc::cpu
