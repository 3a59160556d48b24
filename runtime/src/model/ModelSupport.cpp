//===- ModelSupport.cpp - what the C++ that llmc compile emits builds on --===//
#include "runtime/src/model/ModelSupport.h"
#include "runtime/src/model/ModelGlue.h"
#include "runtime/src/cpu/Numeric.h"
#include "runtime/src/cpu/kernels/TensorScatter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace llmc::model {

Attribute intAttr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Int;
  a.i = v;
  return a;
}

Attribute floatAttr(double v) {
  Attribute a;
  a.kind = Attribute::Float;
  a.f = v;
  return a;
}

Attribute stringAttr(const char *v) {
  Attribute a;
  a.kind = Attribute::String;
  a.s = v;
  return a;
}

Attribute intsAttr(std::initializer_list<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Ints;
  a.ints.assign(v.begin(), v.end());
  return a;
}

Attribute floatsAttr(std::initializer_list<double> v) {
  Attribute a;
  a.kind = Attribute::Floats;
  a.floats.assign(v.begin(), v.end());
  return a;
}

Attribute stringsAttr(std::initializer_list<const char *> v) {
  Attribute a;
  a.kind = Attribute::Strings;
  for (const char *s : v)
    a.strings.emplace_back(s);
  return a;
}

Attribute tensorAttr(Tensor v) {
  Attribute a;
  a.kind = Attribute::TensorValue;
  a.tensor = std::move(v);
  return a;
}

Status findKernel(const char *name, const KernelEntry *&out) {
  out = cpu::findKernel(name);
  if (!out)
    return Status::error(std::string("the kernel library has no kernel '") + name +
                         "' (libmodel.so was built against another llmc)");
  return Status::ok();
}

Context::~Context() {
  if (!profile)
    return;
  double total = 0;
  for (auto &[name, e] : *profile)
    total += e.seconds;
  std::fprintf(stderr, "llmc profile (LLMC_PROFILE): %.3f s in kernels\n", total);
  for (auto &[name, e] : *profile)
    std::fprintf(stderr, "  %-28s %9.3f ms %6.1f%% %8lld calls %8.1f us/call\n", name.c_str(),
                 e.seconds * 1e3, total > 0 ? 100 * e.seconds / total : 0.0,
                 static_cast<long long>(e.calls), e.calls ? e.seconds * 1e6 / double(e.calls) : 0);
}

Context::Timer::Timer(const Context &ctx, const char *kernel) : ctx(ctx), kernel(kernel) {
  if (ctx.profile)
    start = std::chrono::steady_clock::now();
}

Context::Timer::~Timer() {
  if (!ctx.profile)
    return;
  ProfileEntry &e = (*ctx.profile)[kernel];
  e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++e.calls;
}

Status call(const Context &ctx, const KernelEntry *kernel, const char *opName,
            std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
            std::initializer_list<Tensor *> outputs, uint64_t unwanted) {
  Context::Timer timer(ctx, kernel->name);
  static const Attributes none;
  cpu::KernelCall c;
  c.inputs.assign(inputs.begin(), inputs.end());
  c.attrs = attrs ? attrs : &none;
  // Each output starts as what the caller gives: a place in the arena, or
  // nothing.
  for (Tensor *out : outputs)
    c.outputs.push_back(*out);
  c.unwanted.resize(outputs.size());
  for (size_t r = 0; r < outputs.size() && r < 64; ++r)
    c.unwanted[r] = (unwanted >> r) & 1;
  c.pool = ctx.pool.get();
  c.label = opName;
  LLMC_TRY(kernel->fn(c));
  size_t r = 0;
  for (Tensor *out : outputs) {
    Tensor &result = c.outputs[r++];
    // A kernel that returns another tensor's storage (identity, dropout)
    // where the plan placed its result: the plan may reuse that storage
    // while the result lives, so the result moves to its place.
    if (out->room() && result.defined() && result.raw() != out->raw() &&
        result.bytes() <= out->room()) {
      Tensor placed = *out;
      LLMC_TRY(Tensor::allocateUninitialized(result.dtype(), result.shape(), placed));
      std::memcpy(placed.mutableRaw(), result.raw(), result.bytes());
      result = std::move(placed);
    }
    *out = std::move(result);
  }
  return Status::ok();
}

Status cacheUpdate(const Tensor &cache, const Tensor &rows, const Tensor &pos, Tensor &out,
                   const char *opName) {
  auto fail = [&](const std::string &m) { return Status::error(std::string(opName) + ": " + m); };
  if (cache.rank() != 4 || rows.rank() != 4 || rows.dim(0) != cache.dim(0) ||
      rows.dim(1) != cache.dim(1) || rows.dim(3) != cache.dim(3) ||
      rows.dtype() != cache.dtype())
    return fail("update " + rows.describe() + " does not fit cache " + cache.describe());
  if (pos.dtype() != DType::Int64 || pos.numel() != 1)
    return fail("pos must be one i64, got " + pos.describe());
  int64_t at = pos.data<int64_t>()[0], n = rows.dim(2), m = cache.dim(2);
  if (at < 0 || at + n > m)
    return fail("writing positions [" + std::to_string(at) + ", " + std::to_string(at + n) +
                ") past the cache capacity " + std::to_string(m));
  size_t row = size_t(cache.dim(3)) * cpu::storageSize(cache.dtype());
  char *c = static_cast<char *>(cache.mutableRaw());
  const char *p = static_cast<const char *>(rows.raw());
  for (int64_t i = 0; i < cache.dim(0) * cache.dim(1); ++i)
    std::memcpy(c + (size_t(i * m) + size_t(at)) * row, p + size_t(i * n) * row, size_t(n) * row);
  out = cache;
  return Status::ok();
}

Status tensorScatterInPlace(const Tensor &cache, const Tensor &update, const Tensor &writeIndices,
                            int64_t axis, Tensor &out, const char *opName) {
  std::string e = cpu::tensorScatterRows(cache, update, &writeIndices, axis, /*circular=*/false);
  if (!e.empty())
    return Status::error(std::string(opName) + ": " + e);
  out = cache;
  return Status::ok();
}

Status stridedMatmul(const Context &ctx, const char *opName, const Tensor &a, const Tensor &b,
                     const cpu::MatmulStrides &layout, const Shape &shape, Tensor &out) {
  Context::Timer timer(ctx, "onnx.matmul");
  LLMC_RETURN_IF_ERROR(Tensor::allocateUninitialized(a.dtype(), shape, out));
  std::string e = cpu::matmulStrided(*ctx.pool, layout, a, b, out);
  if (!e.empty())
    return Status::error(std::string(opName) + ": " + e);
  return Status::ok();
}

Status quantizedCacheUpdate(const Tensor &cache, const Tensor &scales, const Tensor &rows,
                            const Tensor &pos, Tensor &out, Tensor &outScales,
                            const char *opName) {
  auto fail = [&](const std::string &m) { return Status::error(std::string(opName) + ": " + m); };
  DType t = rows.dtype();
  if (cache.rank() != 4 || rows.rank() != 4 || cache.dtype() != DType::Int8 ||
      rows.dim(0) != cache.dim(0) || rows.dim(1) != cache.dim(1) ||
      rows.dim(3) != cache.dim(3) ||
      (t != DType::Float && t != DType::Float16 && t != DType::BFloat16))
    return fail("update " + rows.describe() + " does not fit int8 cache " + cache.describe());
  if (scales.rank() != 4 || scales.dtype() != DType::Float || scales.dim(0) != cache.dim(0) ||
      scales.dim(1) != cache.dim(1) || scales.dim(2) != cache.dim(2) || scales.dim(3) != 1)
    return fail("scales " + scales.describe() + " are not [B, H, capacity, 1] f32 for cache " +
                cache.describe());
  if (pos.dtype() != DType::Int64 || pos.numel() != 1)
    return fail("pos must be one i64, got " + pos.describe());
  int64_t at = pos.data<int64_t>()[0], n = rows.dim(2), m = cache.dim(2), d = cache.dim(3);
  if (at < 0 || at + n > m)
    return fail("writing positions [" + std::to_string(at) + ", " + std::to_string(at + n) +
                ") past the cache capacity " + std::to_string(m));
  int8_t *q = static_cast<int8_t *>(cache.mutableRaw());
  float *s = static_cast<float *>(scales.mutableRaw());
  std::vector<float> row(static_cast<size_t>(d));
  withFloatType(t, [&](auto *tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    for (int64_t i = 0; i < cache.dim(0) * cache.dim(1); ++i)
      for (int64_t r = 0; r < n; ++r) {
        kernels::toF32(rows.data<T>() + (i * n + r) * d, row.data(), d);
        s[i * m + at + r] = cpu::quantizeKvRow(row.data(), d, q + (i * m + at + r) * d);
      }
  });
  out = cache;
  outScales = scales;
  return Status::ok();
}

Status sliceCopy(const Tensor &x, int64_t base, int64_t count, int64_t stride, int64_t len,
                 Shape shape, Tensor &out) {
  if (base < 0 || count < 1 || len < 0 || stride < len ||
      base + (count - 1) * stride + len > x.numel() || cpu::numElements(shape) != count * len)
    return Status::error("a slice of " + std::to_string(count) + " x " + std::to_string(len) +
                         " elements from " + std::to_string(base) + " (stride " +
                         std::to_string(stride) + ") does not fit " + x.describe() + " or " +
                         cpu::shapeString(shape));
  LLMC_TRY(Tensor::allocate(x.dtype(), std::move(shape), out));
  size_t elem = cpu::storageSize(x.dtype());
  const char *src = static_cast<const char *>(x.raw());
  char *dst = static_cast<char *>(out.mutableRaw());
  for (int64_t c = 0; c < count; ++c)
    std::memcpy(dst + size_t(c * len) * elem, src + size_t(base + c * stride) * elem,
                size_t(len) * elem);
  return Status::ok();
}

Status narrowTokens(const Context &ctx, const Tensor &tokens, Tensor &out) {
  out = Tensor::place(ctx.tokenIds.get(), ctx.tokenIdsBytes);
  LLMC_TRY(Tensor::allocateUninitialized(DType::Int32, tokens.shape(), out));
  const int64_t *src = tokens.data<int64_t>();
  int32_t *dst = out.mutableData<int32_t>();
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    if (src[i] < INT32_MIN || src[i] > INT32_MAX)
      return Status::error("token id " + std::to_string(src[i]) + " does not fit the model's i32 ids");
    dst[i] = int32_t(src[i]);
  }
  return Status::ok();
}

Status addInPlace(Tensor &out, const Tensor &addend, const char *opName) {
  DType t = out.dtype();
  if (out.shape() != addend.shape() || t != addend.dtype() ||
      (t != DType::Float && t != DType::Float16 && t != DType::BFloat16))
    return Status::error(std::string(opName) + ": cannot add " + addend.describe() + " to " +
                         out.describe());
  if (t == DType::Float) {
    float *y = out.mutableData<float>();
    const float *a = addend.data<float>();
    for (int64_t i = 0; i < out.numel(); ++i)
      y[i] += a[i];
    return Status::ok();
  }
  uint16_t *y = out.mutableData<uint16_t>();
  const uint16_t *a = addend.data<uint16_t>();
  for (int64_t i = 0; i < out.numel(); ++i)
    y[i] = t == DType::Float16 ? cpu::floatToHalf(cpu::halfToFloat(y[i]) + cpu::halfToFloat(a[i]))
                               : cpu::floatToBf16(cpu::bf16ToFloat(y[i]) + cpu::bf16ToFloat(a[i]));
  return Status::ok();
}

Status storeLogits(const Tensor &value, const Args &args) {
  // The asked rows (an entry that selected them), or all of the entry's.
  const Shape &want = args.logitsShape;
  bool selected = value.shape() == want;
  bool all = value.rank() == 3 && value.dim(0) == want[0] && value.dim(1) == args.seq &&
             value.dim(2) == want[2];
  if (!selected && !all)
    return Status::error("the logits are " + value.describe() + ", the entry promises " +
                         Tensor::wrap(DType::Float, want, nullptr).describe());
  if (value.dtype() != DType::Float && value.dtype() != DType::Float16 &&
      value.dtype() != DType::BFloat16)
    return Status::error("the logits are " + value.describe() + ", not a float type");
  int64_t vocab = want[2], n = args.rows * vocab;
  for (int64_t b = 0; b < want[0]; ++b) {
    int64_t from = (b * value.dim(1) + (selected ? 0 : args.row0)) * vocab;
    float *dst = args.logits + b * n;
    if (value.dtype() == DType::Float) {
      std::memcpy(dst, value.data<float>() + from, size_t(n) * sizeof(float));
      continue;
    }
    const uint16_t *src = value.data<uint16_t>() + from;
    for (int64_t i = 0; i < n; ++i)
      dst[i] = value.dtype() == DType::Float16 ? cpu::halfToFloat(src[i])
                                               : cpu::bf16ToFloat(src[i]);
  }
  return Status::ok();
}

Status selectRows(const Context &ctx, const Args &args, const Tensor &h, Tensor &out) {
  if (h.rank() != 3 || h.dim(1) != args.seq)
    return Status::error("the hidden state " + h.describe() + " is not [batch, " +
                         std::to_string(args.seq) + ", hidden]");
  int64_t b = h.dim(0), width = h.dim(2);
  if (args.row0 == 0 && args.rows == args.seq) {
    out = h;
    return Status::ok();
  }
  if (b == 1)
    return h.slice(args.row0 * width, {1, args.rows, width}, out);
  out = Tensor::place(ctx.rowsBuffer.get(), ctx.rowsBufferBytes);
  LLMC_TRY(Tensor::allocateUninitialized(h.dtype(), {b, args.rows, width}, out));
  size_t row = size_t(args.rows * width) * cpu::storageSize(h.dtype());
  for (int64_t s = 0; s < b; ++s)
    std::memcpy(static_cast<char *>(out.mutableRaw()) + size_t(s) * row,
                static_cast<const char *>(h.raw()) +
                    size_t((s * args.seq + args.row0) * width) * cpu::storageSize(h.dtype()),
                row);
  return Status::ok();
}

int fail(const std::string &message, char *err, size_t errlen) {
  if (err && errlen > 0) {
    size_t n = std::min(message.size(), errlen - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
  }
  return 1;
}

Status initContext(Context &ctx, const void *weights, uint64_t bytes, uint64_t expectedBytes,
                   int32_t threads, uint64_t arenaBytes, int64_t maxTokens, uint64_t rowsBytes) {
  if (bytes != expectedBytes)
    return Status::error("create: the weights are " + std::to_string(bytes) +
                         " bytes; this model needs " + std::to_string(expectedBytes));
  if (!weights && bytes > 0)
    return Status::error("create: the weights pointer is null");
  if (reinterpret_cast<uintptr_t>(weights) % 64 != 0)
    return Status::error("create: the weights must be 64-byte aligned");
  if (threads < 0)
    return Status::error("create: threads must be >= 0, got " + std::to_string(threads));
  ctx.weights = static_cast<const uint8_t *>(weights);
  ctx.weightsBytes = bytes;
  ctx.pool = std::make_unique<cpu::ThreadPool>(unsigned(threads));
  // One zeroed allocation each, 64-byte aligned (at least 64 bytes, so
  // their addresses are never null).
  auto alloc = [](uint64_t n, std::unique_ptr<uint8_t, Context::Free> &out) {
    uint64_t rounded = std::max<uint64_t>(64, (n + 63) / 64 * 64);
    out.reset(static_cast<uint8_t *>(std::aligned_alloc(64, size_t(rounded))));
    if (out)
      std::memset(out.get(), 0, size_t(rounded));
    return bool(out);
  };
  if (!alloc(arenaBytes, ctx.arena))
    return Status::error("create: out of memory allocating the activation arena (" +
                         std::to_string(arenaBytes) + " bytes)");
  ctx.arenaBytes = arenaBytes;
  ctx.tokenIdsBytes = uint64_t(std::max<int64_t>(maxTokens, 1)) * 4;
  if (!alloc(ctx.tokenIdsBytes, ctx.tokenIds))
    return Status::error("create: out of memory");
  ctx.rowsBufferBytes = rowsBytes;
  if (!alloc(rowsBytes, ctx.rowsBuffer))
    return Status::error("create: out of memory");
  if (const char *p = std::getenv("LLMC_PROFILE"); p && *p && std::string(p) != "0")
    ctx.profile = std::make_unique<std::map<std::string, Context::ProfileEntry>>();
  if (const char *p = std::getenv("LLMC_SPLIT_KV_MIN_KEYS")) {
    char *end = nullptr;
    long long keys = std::strtoll(p, &end, 10);
    if (end == p || *end || keys < 1)
      return Status::error(std::string("create: LLMC_SPLIT_KV_MIN_KEYS must be a positive "
                                       "integer, got '") +
                           p + "'");
    ctx.splitKvMinKeys = keys;
  }
  return Status::ok();
}

Status makeArgs(const llmc_model_entry &entry, const llmc_model_cache *caches,
                uint32_t numCaches, int64_t vocab, const int64_t *tokens, int64_t start,
                int64_t capacity, bool anyCapacity, void *const *cacheBuffers, int64_t row0,
                int64_t rows, float *logits, Args &args) {
  if (!tokens)
    return Status::error("tokens is null");
  if (!logits)
    return Status::error("logits is null");
  if (numCaches > 0 && !cacheBuffers)
    return Status::error("caches is null");
  if (start < 0)
    return Status::error("start_pos " + std::to_string(start) + " is negative");
  args.tokens = Tensor::wrap(DType::Int64, {entry.batch, entry.seq}, tokens);
  args.startValue = start;
  args.start = Tensor::wrap(DType::Int64, {}, &args.startValue);
  args.caches.clear(); // (keeps its capacity: no allocation after the first call)
  for (uint32_t i = 0; i < numCaches; ++i) {
    const llmc_model_cache &c = caches[i];
    if (!cacheBuffers[i])
      return Status::error(std::string("cache '") + c.name + "' is null");
    if (capacity != c.capacity && (!anyCapacity || capacity < 1 || capacity > c.capacity))
      return Status::error(
          "a cache capacity of " + std::to_string(capacity) + " positions: this model takes " +
          (anyCapacity ? "1 to " + std::to_string(c.capacity)
                       : "only its compiled " + std::to_string(c.capacity)));
    if (start + entry.seq > capacity)
      return Status::error("start_pos " + std::to_string(start) + " + " +
                           std::to_string(entry.seq) + " tokens exceeds the cache capacity " +
                           std::to_string(capacity));
    args.caches.push_back(Tensor::wrap(DType(c.dtype), {entry.batch, c.heads, capacity, c.head_dim},
                                       cacheBuffers[i]));
  }
  if (rows < 0)
    row0 = 0, rows = entry.seq;
  if (row0 < 0 || rows < 1 || row0 > entry.seq - rows)
    return Status::error("the rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) +
                         ") of logits asked for do not lie in the entry's " +
                         std::to_string(entry.seq) + " positions");
  args.seq = entry.seq, args.row0 = row0, args.rows = rows;
  args.logits = logits;
  args.logitsShape = {entry.batch, rows, vocab};
  return Status::ok();
}

} // namespace llmc::model
