//===- ModelSupport.h - what the C++ that llmc compile emits builds on ----===//
//
// The emitted model source (compiler/Codegen/CPU) includes this header and
// is linked with LLMCModelSupport into libmodel.so. It holds the pieces every
// model shares: the context (weights, thread pool), calls into the
// reference kernels for operations without a specialised template, the
// in-place cache update; the llmc_model_abi glue (model_abi.h) is
// ModelGlue.h's.
//
// Values are llmc::cpu::Tensor: weights wrap weights.bin, views share
// storage, kernel results own theirs. Plain C++17, no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_MODELSUPPORT_H
#define LLMC_RUNTIME_MODEL_MODELSUPPORT_H

#include "llmc/model_abi.h"
#include "runtime/src/model/Attributes.h"
#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/cpu/Scratch.h"
#include "runtime/src/cpu/SoftmaxLine.h"
#include "runtime/src/cpu/StridedMatmul.h"
#include "runtime/src/model/kernels/Decode.h"
#include "runtime/src/model/kernels/Gemv.h"
#include "runtime/src/model/kernels/Packed.h"
#include "runtime/src/model/kernels/Quant.h"
#include "runtime/src/model/kernels/QuantPanels.h"
#include "runtime/src/model/kernels/Pointwise.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace llmc::model {

using cpu::Attribute;
using cpu::Attributes;
using cpu::DType;
using cpu::KernelEntry;
using cpu::MatmulStrides;
using cpu::Shape;
using cpu::Status;
using cpu::Tensor;
using cpu::threadScratch;
using cpu::ScratchSlot;
using cpu::kScratchX;
using cpu::kScratchBias;
using cpu::kScratchResidual;
using cpu::kScratchOut;
using cpu::kScratchAcc;
using cpu::kScratchMax;
using cpu::kScratchSum;
using cpu::kScratchIndex;
using cpu::kScratchChunk;
using cpu::kScratchChunk2;

/// Returns from the enclosing function when `expr` fails.
#define LLMC_TRY(expr) LLMC_RETURN_IF_ERROR(expr)

// The operation dispatchers below (linear ... flashAttention) and the
// kernels they instantiate are most of what compiling a model costs (about
// 6 of a small model's 7.5 s), and they are the same in every model. llmc
// compile therefore builds them once per compiler, flags and header text into
// an object it keeps (compiler/Artifact/HostBuild.h) and compiles
// model.cpp with LLMC_MODEL_SUPPORT_SPLIT: the dispatchers are then only
// declared here, and that object (this header compiled with
// LLMC_MODEL_SUPPORT_DEFINITIONS too) defines them, at the same -march.
// Without the macro (a model.cpp built on its own, the tests) they are
// inline, as before.
#if defined(LLMC_MODEL_SUPPORT_SPLIT)
#define LLMC_SUPPORT_FN
#else
#define LLMC_SUPPORT_FN inline
#endif

/// The arguments of one entry-point call, as tensors over the caller's
/// buffers (kept in the context between calls, so a call allocates
/// nothing).
struct Args {
  Tensor tokens;              // i64 [B, S]
  Tensor start;               // i64 [] over startValue
  int64_t startValue = 0;
  std::vector<Tensor> caches; // [B, H, capacity, D]
  float *logits = nullptr;    // [B, rows, vocab]
  Shape logitsShape;
  // The positions whose logits the caller asks for: [row0, row0 + rows) of
  // the entry's seq.
  int64_t seq = 0, row0 = 0, rows = 0;
};

/// One model instance: the weights it reads and the pool its kernels use.
/// The emitted `Model` derives from it and adds its weight tensors,
/// attributes and kernel table, filled by its init().
class Context {
public:
  virtual ~Context();
  const uint8_t *weights = nullptr;
  uint64_t weightsBytes = 0;
  std::unique_ptr<cpu::ThreadPool> pool;
  /// Decode attention splits the keys of a row (split-KV) only into ranges
  /// of at least this many; LLMC_SPLIT_KV_MIN_KEYS overrides it (tests use
  /// a small value to run the split path on short contexts).
  int64_t splitKvMinKeys = 256;

  /// With LLMC_PROFILE set in the environment: seconds and calls per
  /// kernel, printed to stderr when the context goes.
  struct ProfileEntry {
    double seconds = 0;
    int64_t calls = 0;
  };
  std::unique_ptr<std::map<std::string, ProfileEntry>> profile;
  /// Times a scope into `profile` (no-op when profiling is off).
  class Timer {
  public:
    Timer(const Context &ctx, const char *kernel);
    ~Timer();

  private:
    const Context &ctx;
    const char *kernel;
    std::chrono::steady_clock::time_point start;
  };

  /// The weight at `offset` of weights.bin.
  Tensor weight(DType type, Shape shape, uint64_t offset) const {
    return Tensor::wrap(type, std::move(shape), weights + offset);
  }

  /// The activations of every entry point: the memory plan's arena
  /// (llmc-plan-memory), allocated once when the context is made; entries
  /// run one at a time, so they share it. Each planned value is placed at
  /// its offset (place), and the kernels write their results there.
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> arena;
  uint64_t arenaBytes = 0;
  /// Where a model that takes i32 token ids gets them (room for the
  /// largest entry's batch x seq).
  std::unique_ptr<uint8_t, Free> tokenIds;
  uint64_t tokenIdsBytes = 0;
  /// Where selectRows gathers the rows of a batch > 1 (the largest hidden
  /// state an entry's logits tail reads).
  std::unique_ptr<uint8_t, Free> rowsBuffer;
  uint64_t rowsBufferBytes = 0;
  /// The arguments of the running call (one call at a time per context).
  Args args;

  Tensor place(uint64_t offset, uint64_t bytes) const {
    return Tensor::place(arena.get() + offset, bytes);
  }
};

/// The reference kernel `name`; an error status when the library lacks it.
Status findKernel(const char *name, const KernelEntry *&out);

/// Runs `kernel` (the op `opName`) on `inputs` (null for an absent operand);
/// results go to `outputs`. Bit r of `unwanted` marks a result nothing
/// reads.
Status call(const Context &ctx, const KernelEntry *kernel, const char *opName,
            std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
            std::initializer_list<Tensor *> outputs, uint64_t unwanted = 0);

/// llm.cache_update in place: writes `rows` ([B, H, S, D]) at row `pos` of
/// `cache` ([B, H, capacity, D]); `out` then shares the cache's storage.
Status cacheUpdate(const Tensor &cache, const Tensor &rows, const Tensor &pos, Tensor &out,
                   const char *opName);

/// ONNX TensorScatter (linear mode) in place: writes `update` into `cache`
/// along `axis` at each batch entry's `writeIndices` (one i64 each), as
/// the reference kernel would write a copy; `out` then shares the cache's
/// storage (the session's cache, which the export's present output goes
/// back to: codegen::inPlaceScatters).
Status tensorScatterInPlace(const Tensor &cache, const Tensor &update, const Tensor &writeIndices,
                            int64_t axis, Tensor &out, const char *opName);

/// onnx.matmul of f32/f16/bf16 with static shapes (passes/StorageFacts.h's
/// StridedMatmul): the operands read through the strides llmc compile
/// derived, a transpose that only the product reads read from its input in
/// place (cpu::matmulStrided); `out` is `shape`.
Status stridedMatmul(const Context &ctx, const char *opName, const Tensor &a, const Tensor &b,
                     const cpu::MatmulStrides &layout, const Shape &shape, Tensor &out);

/// llm.quantized_cache_update in place: each row of `rows` ([B, H, S, D],
/// f32/f16/bf16) as int8 values into `cache` ([B, H, capacity, D]) and its
/// scale into `scales` ([B, H, capacity, 1] f32) at row `pos`
/// (cpu::quantizeKvRow); `out` and `outScales` then share their storage.
Status quantizedCacheUpdate(const Tensor &cache, const Tensor &scales, const Tensor &rows,
                            const Tensor &pos, Tensor &out, Tensor &outScales,
                            const char *opName);

/// llm.linear: y = x W^T (+ bias) (+ residual, the residual add the fusion
/// pass put in the same kernel), for a weight llmc compile did not pack (one
/// computed at run time): f32/f16/bf16 run the row-layout GEMV (a few rows
/// of x) or GEMM templates of kernels/Gemv.h over the context's pool; other
/// types the reference kernel.
LLMC_SUPPORT_FN Status linear(const Context &ctx, const KernelEntry *reference, const char *opName,
                              const Tensor &x, const Tensor &w, const Tensor *bias,
                              const Tensor *residual, Tensor &out);

/// llm.linear over a weight llmc compile packed into column panels
/// (kernels/Packed.h; `packed` is [panels, K, 16], `n` the real N): the
/// panel kernel for every shape, decode and prefill alike. x, bias,
/// residual and the result have the weight's type (f32, f16 or bf16).
LLMC_SUPPORT_FN Status packedLinear(const Context &ctx, const char *opName, const Tensor &x,
                                    const Tensor &packed, int64_t n, const Tensor *bias,
                                    const Tensor *residual, Tensor &out);

/// llm.rope (f32/f16/bf16 with in-range positions: the template; else the
/// reference kernel, which also reports bad positions).
LLMC_SUPPORT_FN Status rope(const Context &ctx, const KernelEntry *reference, const char *opName,
                            const Tensor &x, const Tensor &cosT, const Tensor &sinT,
                            const Tensor &pos, const Attributes *attrs, Tensor &out);

/// A decode step's attention over the cache (the fused decode_attention_
/// partial + attention_combine of llmc-fuse): kernels/Decode.h in f32 when
/// q and the caches share an f32/f16/bf16 type, or the caches are int8 with
/// their scales ks/vs (null for float caches) (split-KV when the rows alone
/// leave threads idle), the two reference kernels otherwise. `attrs` are
/// the partial's, `combineAttrs` the combine's (its sinks; null without).
LLMC_SUPPORT_FN Status decodeAttention(const Context &ctx, const KernelEntry *partialRef,
                                       const KernelEntry *combineRef, const char *opName,
                                       const Tensor &q, const Tensor &k, const Tensor &v,
                                       const Tensor &pos, const Tensor *ks, const Tensor *vs,
                                       const Attributes *attrs, const Attributes *combineAttrs,
                                       Tensor &out);

/// llm.rms_norm, llm.swiglu and onnx.cast with `call`'s signature: f32/f16/
/// bf16 rows go through the templates in kernels/Pointwise.h and Vec.h (in
/// f32, rounded once), anything else through the reference kernel.
LLMC_SUPPORT_FN Status rmsNorm(const Context &ctx, const KernelEntry *reference, const char *opName,
                               std::initializer_list<const Tensor *> inputs,
                               const Attributes *attrs, std::initializer_list<Tensor *> outputs,
                               uint64_t unwanted = 0);
LLMC_SUPPORT_FN Status swiglu(const Context &ctx, const KernelEntry *reference, const char *opName,
                              std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
                              std::initializer_list<Tensor *> outputs, uint64_t unwanted = 0);
LLMC_SUPPORT_FN Status cast(const Context &ctx, const KernelEntry *reference, const char *opName,
                            std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
                            std::initializer_list<Tensor *> outputs, uint64_t unwanted = 0);
/// onnx.softmax and onnx.log_softmax with `call`'s signature: f32/f16/bf16
/// along the last axis go through kernels::softmaxRow a row at a time (in
/// f32), the rows it declines through cpu::softmaxLine as the reference
/// kernel computes them; other axes and types the reference kernel.
LLMC_SUPPORT_FN Status softmax(const Context &ctx, const KernelEntry *reference, const char *opName,
                               std::initializer_list<const Tensor *> inputs,
                               const Attributes *attrs, std::initializer_list<Tensor *> outputs,
                               uint64_t unwanted = 0);
LLMC_SUPPORT_FN Status logSoftmax(const Context &ctx, const KernelEntry *reference,
                                  const char *opName, std::initializer_list<const Tensor *> inputs,
                                  const Attributes *attrs,
                                  std::initializer_list<Tensor *> outputs, uint64_t unwanted = 0);

/// llm.flash_attention (prefill over the cache) with `call`'s signature:
/// q, caches of one f32/f16/bf16 type (or int8 ones with their scales, the
/// two inputs after pos) and positions that fit the cache go through
/// kernels::shortPrefillAttention (a few queries per kv head) or
/// kernels::prefillAttentionRows, anything else the reference kernel.
LLMC_SUPPORT_FN Status flashAttention(const Context &ctx, const KernelEntry *reference,
                                      const char *opName,
                                      std::initializer_list<const Tensor *> inputs,
                                      const Attributes *attrs,
                                      std::initializer_list<Tensor *> outputs,
                                      uint64_t unwanted = 0);

/// llm.quantized_linear over the weights as stored, and with int8
/// activations over packed panels (defined below).
LLMC_SUPPORT_FN Status quantizedLinear(const Context &ctx, const char *opName, const Tensor &x,
                                       const Tensor &q, const Tensor &scales, const Tensor *zp,
                                       int64_t bits, int64_t groupSize, const Tensor *bias,
                                       const Tensor *residual, Tensor &out);
LLMC_SUPPORT_FN Status quantPanelLinear(const Context &ctx, const char *opName, const Tensor &x,
                                        const Tensor &packed, int64_t n, int64_t bits,
                                        int64_t groupSize, bool halfScales, bool zeroPoints,
                                        const Tensor *bias, const Tensor *residual, Tensor &out);

/// A slice of `count` segments of `len` elements of x, segment c from
/// element base + c * stride, as a new tensor of `shape` (what llmc compile
/// emits for a strided onnx.slice; an error when a segment leaves x).
Status sliceCopy(const Tensor &x, int64_t base, int64_t count, int64_t stride, int64_t len,
                 Shape shape, Tensor &out);

/// i64 token ids as the i32 a model takes (ids beyond i32 are an error).
Status narrowTokens(const Context &ctx, const Tensor &tokens, Tensor &out);

/// Writes the logits value into the caller's f32 buffer (converting from
/// f16/bf16): all of it when it holds the asked rows (an entry that selected
/// them), else the asked rows of every sequence.
Status storeLogits(const Tensor &value, const Args &args);

/// The rows [args.row0, args.row0 + args.rows) of each sequence of the
/// hidden state h [B, S, H]: h itself when they are all of them, a view of
/// them for one sequence, else a copy in the context's rows buffer.
Status selectRows(const Context &ctx, const Args &args, const Tensor &h, Tensor &out);

/// out += addend, elementwise, one shape (the residual of a reference linear).
Status addInPlace(Tensor &out, const Tensor &addend, const char *opName);

#if !defined(LLMC_MODEL_SUPPORT_SPLIT) || defined(LLMC_MODEL_SUPPORT_DEFINITIONS)
// (Everything from here to the #endif is the dispatchers' definitions and
// their helpers.)

/// Calls f with a null pointer of the storage type of `type` (float,
/// kernels::Half or kernels::Bf16); false for other types.
template <typename F> bool withFloatType(DType type, F &&f) {
  if (type == DType::Float)
    return f(static_cast<const float *>(nullptr)), true;
  if (type == DType::Float16)
    return f(static_cast<const kernels::Half *>(nullptr)), true;
  if (type == DType::BFloat16)
    return f(static_cast<const kernels::Bf16 *>(nullptr)), true;
  return false;
}

/// withFloatType over a cache's storage type: also int8 (a cache of
/// llm.quantized_cache_update, whose scales the caller passes on).
template <typename F> bool withCacheType(DType type, F &&f) {
  if (type == DType::Int8)
    return f(static_cast<const int8_t *>(nullptr)), true;
  return withFloatType(type, f);
}

/// Whether k and v are caches an attention template reads alongside q of a
/// float type: of q's type with no scales, or int8 with their f32
/// [B, Hkv, capacity, 1] scales ks and vs.
inline bool fastCaches(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor *ks,
                       const Tensor *vs) {
  DType type = q.dtype();
  if (type != DType::Float && type != DType::Float16 && type != DType::BFloat16)
    return false;
  if (!ks && !vs)
    return k.dtype() == type && v.dtype() == type;
  auto fits = [&](const Tensor &cache, const Tensor *scales) {
    return scales && scales->dtype() == DType::Float && scales->rank() == 4 &&
           cache.rank() == 4 && scales->dim(0) == cache.dim(0) &&
           scales->dim(1) == cache.dim(1) && scales->dim(2) == cache.dim(2) &&
           scales->dim(3) == 1;
  };
  return k.dtype() == DType::Int8 && v.dtype() == DType::Int8 && fits(k, ks) && fits(v, vs);
}

/// Allocates `out` (`type`, `shape`; not zeroed: the callers write every
/// element) and calls body(tag) with a null pointer of its storage type
/// (float, kernels::Half or kernels::Bf16), as withFloatType does; false
/// (and nothing run) for another type or when the allocation fails, which
/// the callers leave to the reference kernel.
template <typename F> bool intoFloatTensor(DType type, const Shape &shape, Tensor &out, F &&body) {
  if (type != DType::Float && type != DType::Float16 && type != DType::BFloat16)
    return false;
  if (!Tensor::allocateUninitialized(type, shape, out))
    return false;
  return withFloatType(type, body);
}

/// `t`'s elements as f32 (a view for f32, a converted copy for f16/bf16 in
/// the calling thread's scratch `slot`).
inline const float *asF32(const Tensor &t, ScratchSlot slot) {
  if (t.dtype() == DType::Float)
    return t.data<float>();
  float *scratch = threadScratch<float>(slot, t.numel());
  if (t.dtype() == DType::Float16)
    kernels::toF32(t.data<kernels::Half>(), scratch, t.numel());
  else
    kernels::toF32(t.data<kernels::Bf16>(), scratch, t.numel());
  return scratch;
}

/// Where an f32 kernel writes `out`: out itself when f32, else the calling
/// thread's scratch `slot`, which finishF32 then rounds into out.
inline float *f32Target(Tensor &out, ScratchSlot slot) {
  if (out.dtype() == DType::Float)
    return out.mutableData<float>();
  return threadScratch<float>(slot, out.numel());
}
inline void finishF32(Tensor &out, const float *y) {
  if (out.dtype() == DType::Float16)
    kernels::fromF32(y, out.mutableData<kernels::Half>(), out.numel());
  else if (out.dtype() == DType::BFloat16)
    kernels::fromF32(y, out.mutableData<kernels::Bf16>(), out.numel());
}

/// A linear layer's operands and result in f32 for its kernel: x, bias and
/// residual as f32 (views, or converted copies for f16/bf16), y where the
/// kernel writes (out itself when f32); finish() rounds y into out. start()
/// checks the residual against the [..., n] result and allocates out.
struct LinearF32 {
  const float *x = nullptr, *bias = nullptr, *residual = nullptr;
  float *y = nullptr;
  int64_t rows = 0; // of x

  Status start(const char *opName, const Tensor &xIn, int64_t n, const Tensor *biasIn,
               const Tensor *residualIn, Tensor &out) {
    Shape shape = xIn.shape();
    rows = xIn.numel() / shape.back();
    shape.back() = n;
    if (residualIn && (residualIn->dtype() != xIn.dtype() || residualIn->shape() != shape))
      return Status::error(std::string(opName) + ": the residual " + residualIn->describe() +
                           " does not match the output");
    LLMC_TRY(Tensor::allocateUninitialized(xIn.dtype(), shape, out));
    x = asF32(xIn, kScratchX);
    bias = biasIn ? asF32(*biasIn, kScratchBias) : nullptr;
    residual = residualIn ? asF32(*residualIn, kScratchResidual) : nullptr;
    y = f32Target(out, kScratchOut);
    return Status::ok();
  }
  void finish(Tensor &out) const { finishF32(out, y); }
};

LLMC_SUPPORT_FN Status linear(const Context &ctx, const KernelEntry *reference, const char *opName,
                              const Tensor &x, const Tensor &w, const Tensor *bias,
                              const Tensor *residual, Tensor &out) {
  Context::Timer timer(ctx, "linear");
  constexpr int64_t kGemvRows = 8;
  int64_t k = w.rank() == 2 ? w.dim(1) : -1, n = w.rank() == 2 ? w.dim(0) : -1;
  DType type = w.dtype();
  bool supported = type == DType::Float || type == DType::Float16 || type == DType::BFloat16;
  bool alike = x.dtype() == type && (!bias || bias->dtype() == type) &&
               (!residual || residual->dtype() == type);
  if (supported && alike && x.rank() >= 1 && k > 0 && x.dim(x.rank() - 1) == k &&
      (!bias || (bias->rank() == 1 && bias->dim(0) == n))) {
    int64_t m = x.numel() / k;
    Shape shape = x.shape();
    shape.back() = n;
    if (residual && residual->shape() != shape)
      return Status::error(std::string(opName) + ": the residual " + residual->describe() +
                           " does not match the output");
    LLMC_TRY(Tensor::allocateUninitialized(type, shape, out));
    const float *px = asF32(x, kScratchX);
    const float *pb = bias ? asF32(*bias, kScratchBias) : nullptr;
    const float *pr = residual ? asF32(*residual, kScratchResidual) : nullptr;
    float *py = f32Target(out, kScratchOut);
    // Blocks of 16 rows; a contiguous range of them per thread.
    int64_t blocks = (n + 15) / 16, threads = int64_t(ctx.pool->size());
    int64_t grain = std::max<int64_t>(1, (blocks + threads - 1) / threads);
    // Decode (a few rows): stream the weights once. Prefill: the blocked
    // product, each thread on its own weight rows.
    bool gemv = m <= kGemvRows;
    ctx.pool->parallelFor(blocks, grain, [&](int64_t b0, int64_t b1) {
      int64_t n0 = b0 * 16, n1 = std::min(n, b1 * 16);
      withFloatType(type, [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        if (gemv)
          kernels::gemvRows(px, m, k, w.data<T>(), pb, pr, py, n, n0, n1);
        else
          kernels::gemmRows(px, m, k, w.data<T>(), pb, pr, py, n, n0, n1);
      });
    });
    finishF32(out, py);
    return Status::ok();
  }
  LLMC_TRY(call(ctx, reference, opName, {&x, &w, bias}, nullptr, {&out}));
  if (residual)
    LLMC_TRY(addInPlace(out, *residual, opName));
  return Status::ok();
}

LLMC_SUPPORT_FN Status rope(const Context &ctx, const KernelEntry *reference, const char *opName,
                            const Tensor &x, const Tensor &cosT, const Tensor &sinT,
                            const Tensor &pos, const Attributes *attrs, Tensor &out) {
  Context::Timer timer(ctx, "rope");
  int64_t rot = attrs ? attrs->getInt("rotary_dim", 0) : 0;
  bool interleaved = attrs && attrs->getInt("interleaved", 0) != 0;
  if (x.rank() == 4 && rot == 0)
    rot = x.dim(3);
  DType type = x.dtype();
  bool fast = (type == DType::Float || type == DType::Float16 || type == DType::BFloat16) &&
              cosT.dtype() == type && sinT.dtype() == type && pos.dtype() == DType::Int64 &&
              x.rank() == 4 &&
              rot > 0 && rot % 2 == 0 && rot <= x.dim(3) && cosT.rank() == 2 &&
              cosT.shape() == sinT.shape() && cosT.dim(1) == rot / 2 && pos.rank() == 2 &&
              (pos.dim(0) == x.dim(0) || pos.dim(0) == 1) && pos.dim(1) == x.dim(1);
  if (fast) {
    int64_t rows = x.dim(0) * x.dim(1);
    int64_t *at = threadScratch<int64_t>(kScratchIndex, rows);
    const int64_t *p = pos.data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      at[r] = pos.dim(0) == 1 ? p[r % x.dim(1)] : p[r];
      if (at[r] < 0 || at[r] >= cosT.dim(0))
        fast = false; // the reference kernel reports it
    }
    if (fast) {
      LLMC_TRY(Tensor::allocateUninitialized(type, x.shape(), out));
      const float *px = asF32(x, kScratchX);
      float *py = f32Target(out, kScratchOut);
      withFloatType(type, [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        kernels::ropeRows(px, py, rows, x.dim(2), x.dim(3), rot, interleaved, cosT.data<T>(),
                          sinT.data<T>(), at);
      });
      finishF32(out, py);
      return Status::ok();
    }
  }
  return call(ctx, reference, opName, {&x, &cosT, &sinT, &pos}, attrs, {&out});
}

LLMC_SUPPORT_FN Status decodeAttention(const Context &ctx, const KernelEntry *partialRef,
                                       const KernelEntry *combineRef, const char *opName,
                                       const Tensor &q, const Tensor &k, const Tensor &v,
                                       const Tensor &pos, const Tensor *ks, const Tensor *vs,
                                       const Attributes *attrs, const Attributes *combineAttrs,
                                       Tensor &out) {
  Context::Timer timer(ctx, "decode_attention");
  int64_t hq = attrs ? attrs->getInt("num_heads", -1) : -1;
  int64_t hkv = attrs ? attrs->getInt("num_kv_heads", -1) : -1;
  bool fast = fastCaches(q, k, v, ks, vs) && pos.dtype() == DType::Int64 &&
              pos.numel() == 1 &&
              q.rank() == 4 && k.rank() == 4 && v.rank() == 4 && q.dim(1) == 1 &&
              q.dim(2) == hq && hkv > 0 && hq % hkv == 0 && k.dim(1) == hkv &&
              v.dim(1) == hkv && k.dim(0) == q.dim(0) && v.dim(0) == q.dim(0) &&
              k.dim(3) == q.dim(3) && v.dim(2) == k.dim(2);
  int64_t p = fast ? pos.data<int64_t>()[0] : -1;
  if (fast && p >= 0 && p < k.dim(2) && attrs && attrs->optFloat("scale")) {
    int64_t b = q.dim(0), d = q.dim(3), dv = v.dim(3), capacity = k.dim(2);
    float scale = float(*attrs->optFloat("scale"));
    float softcap = float(attrs->getFloat("softcap", 0.0));
    int64_t window = attrs->getInt("window", 0);
    const double *sinks;
    LLMC_TRY(cpu::attentionSinks(combineAttrs, hq, opName, sinks));
    // The combined result is f32 (as llm.attention_combine's is).
    LLMC_TRY(Tensor::allocateUninitialized(DType::Float, {b, 1, hq, dv}, out));
    const float *pq = asF32(q, kScratchX);
    float *po = out.mutableData<float>();
    // One unit per kv head of each sequence (its query heads together);
    // split-KV when the units alone leave threads idle and the context is
    // long: `splits` ranges of at least ctx.splitKvMinKeys keys per unit, in
    // parallel, then merged (kernels::combineSplits).
    int64_t group = hq / hkv, units = b * hkv, rows = b * hq;
    int64_t threads = int64_t(ctx.pool->size()), minKeys = ctx.splitKvMinKeys;
    int64_t keys = window > 0 ? std::min(window, p + 1) : p + 1;
    int64_t splits = std::max<int64_t>(
        1, std::min(keys / minKeys, (2 * threads + units - 1) / units));
    const float *pks = ks ? ks->data<float>() : nullptr, *pvs = vs ? vs->data<float>() : nullptr;
    withCacheType(k.dtype(), [&](auto *tag) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
      const T *pk = k.data<T>(), *pv = v.data<T>();
      // (Sized for the whole cache, so it grows once, not per position.)
      auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk, group * (capacity + 3));
      if (splits == 1) {
        ctx.pool->parallelFor(units, 1, [&](int64_t u0, int64_t u1) {
          float *scratch = chunk.get();
          for (int64_t u = u0; u < u1; ++u)
            kernels::decodeAttentionHeads(pq, pk, pv, pks, pvs, po, u / hkv, u % hkv, hq, hkv, d,
                                          dv, capacity, p, window, scale, softcap, scratch,
                                          sinks);
        });
        return;
      }
      // Row r's split s at r * splits + s (combineSplits reads a row's
      // splits together).
      float *acc = threadScratch<float>(kScratchAcc, rows * splits * dv);
      float *m = threadScratch<float>(kScratchMax, rows * splits);
      float *l = threadScratch<float>(kScratchSum, rows * splits);
      ctx.pool->parallelFor(units * splits, 1, [&](int64_t w0, int64_t w1) {
        float *scratch = chunk.get();
        for (int64_t w = w0; w < w1; ++w) {
          int64_t u = w / splits, sp = w % splits, r0 = u * group; // (bi * hkv + hk) * group
          kernels::decodeAttentionSplit(pq, pk, pv, pks, pvs, u / hkv, u % hkv, sp, splits, hq,
                                        hkv, d, dv, capacity, p, window, scale, softcap, scratch,
                                        acc + (r0 * splits + sp) * dv, splits * dv,
                                        m + r0 * splits + sp, l + r0 * splits + sp, splits);
        }
      });
      for (int64_t r = 0; r < rows; ++r) // (row r is query head r % hq)
        kernels::combineSplits(acc + r * splits * dv, m + r * splits, l + r * splits, splits, dv,
                               po + r * dv, kernels::sinkOf(sinks, r % hq));
    });
    return Status::ok();
  }
  Tensor partial, lse;
  if (ks && vs)
    LLMC_TRY(call(ctx, partialRef, opName, {&q, &k, &v, &pos, ks, vs}, attrs, {&partial, &lse}));
  else
    LLMC_TRY(call(ctx, partialRef, opName, {&q, &k, &v, &pos}, attrs, {&partial, &lse}));
  return call(ctx, combineRef, opName, {&partial, &lse}, combineAttrs, {&out});
}

LLMC_SUPPORT_FN Status rmsNorm(const Context &ctx, const KernelEntry *reference, const char *opName,
                               std::initializer_list<const Tensor *> inputs,
                               const Attributes *attrs, std::initializer_list<Tensor *> outputs,
                               uint64_t unwanted) {
  Context::Timer timer(ctx, "rms_norm");
  const Tensor *x = inputs.size() == 2 ? inputs.begin()[0] : nullptr;
  const Tensor *scale = inputs.size() == 2 ? inputs.begin()[1] : nullptr;
  Tensor *out = outputs.size() == 1 ? outputs.begin()[0] : nullptr;
  int64_t n = x && x->rank() >= 1 ? x->dim(x->rank() - 1) : 0;
  if (out && scale && n > 0 && scale->dtype() == x->dtype() && scale->rank() == 1 &&
      scale->dim(0) == n) {
    float eps = float(attrs ? attrs->getFloat("epsilon", 1e-6) : 1e-6);
    float offset = float(attrs ? attrs->getFloat("weight_offset", 0.0) : 0.0);
    int64_t rows = x->numel() / n;
    bool done = intoFloatTensor(x->dtype(), x->shape(), *out, [&](auto *tag) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
      const T *px = x->data<T>(), *ps = scale->data<T>();
      T *py = out->mutableData<T>();
      auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk, n);
      ctx.pool->parallelFor(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
        float *row = chunk.get();
        for (int64_t r = r0; r < r1; ++r)
          kernels::rmsNormRow(px + r * n, ps, offset, eps, py + r * n, n, row);
      });
    });
    if (done)
      return Status::ok();
  }
  return call(ctx, reference, opName, inputs, attrs, outputs, unwanted);
}

LLMC_SUPPORT_FN Status swiglu(const Context &ctx, const KernelEntry *reference, const char *opName,
                              std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
                              std::initializer_list<Tensor *> outputs, uint64_t unwanted) {
  Context::Timer timer(ctx, "swiglu");
  const Tensor *g = inputs.size() == 2 ? inputs.begin()[0] : nullptr;
  const Tensor *u = inputs.size() == 2 ? inputs.begin()[1] : nullptr;
  Tensor *out = outputs.size() == 1 ? outputs.begin()[0] : nullptr;
  if (out && g && u && g->dtype() == u->dtype() && g->shape() == u->shape()) {
    int64_t n = g->numel();
    bool done = intoFloatTensor(g->dtype(), g->shape(), *out, [&](auto *tag) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
      const T *pg = g->data<T>(), *pu = u->data<T>();
      T *py = out->mutableData<T>();
      constexpr int64_t kChunk = 4096;
      auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk, 2 * kChunk);
      ctx.pool->parallelFor((n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
        float *gs = chunk.get(), *us = gs + kChunk;
        for (int64_t c = c0; c < c1; ++c) {
          int64_t i = c * kChunk, len = std::min(kChunk, n - i);
          kernels::swiglu(pg + i, pu + i, py + i, len, gs, us);
        }
      });
    });
    if (done)
      return Status::ok();
  }
  return call(ctx, reference, opName, inputs, attrs, outputs, unwanted);
}

/// softmax and logSoftmax.
inline Status softmaxRows(const Context &ctx, const KernelEntry *reference, const char *opName,
                          std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
                          std::initializer_list<Tensor *> outputs, uint64_t unwanted, bool log) {
  Context::Timer timer(ctx, log ? "onnx.log_softmax" : "onnx.softmax");
  const Tensor *x = inputs.size() == 1 ? inputs.begin()[0] : nullptr;
  Tensor *out = outputs.size() == 1 ? outputs.begin()[0] : nullptr;
  int64_t axis = attrs ? attrs->getInt("axis", -1) : -1;
  if (x && out && x->rank() >= 1 && (axis == -1 || axis == x->rank() - 1) &&
      x->dim(x->rank() - 1) > 0) {
    int64_t n = x->dim(x->rank() - 1), rows = x->numel() / n;
    bool done = intoFloatTensor(x->dtype(), x->shape(), *out, [&](auto *tag) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
      const T *px = x->data<T>();
      T *py = out->mutableData<T>();
      auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk, n);
      ctx.pool->parallelFor(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
        float *row = chunk.get();
        for (int64_t r = r0; r < r1; ++r) {
          const T *xr = px + r * n;
          T *yr = py + r * n;
          if (!kernels::softmaxRow(xr, yr, n, row, log))
            cpu::softmaxLine(
                n, log, [&](int64_t j) { return double(kernels::toFloat(xr[j])); },
                [&](int64_t j, double v) { kernels::fromFloat(float(v), yr[j]); });
        }
      });
    });
    if (done)
      return Status::ok();
  }
  return call(ctx, reference, opName, inputs, attrs, outputs, unwanted);
}

LLMC_SUPPORT_FN Status softmax(const Context &ctx, const KernelEntry *reference, const char *opName,
                               std::initializer_list<const Tensor *> inputs,
                               const Attributes *attrs, std::initializer_list<Tensor *> outputs,
                               uint64_t unwanted) {
  return softmaxRows(ctx, reference, opName, inputs, attrs, outputs, unwanted, false);
}

LLMC_SUPPORT_FN Status logSoftmax(const Context &ctx, const KernelEntry *reference,
                                  const char *opName, std::initializer_list<const Tensor *> inputs,
                                  const Attributes *attrs,
                                  std::initializer_list<Tensor *> outputs, uint64_t unwanted) {
  return softmaxRows(ctx, reference, opName, inputs, attrs, outputs, unwanted, true);
}

LLMC_SUPPORT_FN Status cast(const Context &ctx, const KernelEntry *reference, const char *opName,
                            std::initializer_list<const Tensor *> inputs, const Attributes *attrs,
                            std::initializer_list<Tensor *> outputs, uint64_t unwanted) {
  Context::Timer timer(ctx, "cast");
  const Tensor *x = inputs.size() == 1 ? inputs.begin()[0] : nullptr;
  Tensor *out = outputs.size() == 1 ? outputs.begin()[0] : nullptr;
  std::optional<int64_t> to = attrs ? attrs->optInt("to") : std::nullopt;
  DType from = x ? x->dtype() : DType::Undefined;
  // f32 -> f16/bf16 and back (what --dtype f16/bf16 puts around f32 results).
  if (out && to && (from == DType::Float) != (DType(*to) == DType::Float) &&
      (from == DType::Float || DType(*to) == DType::Float)) {
    DType target = DType(*to);
    DType other = from == DType::Float ? target : from;
    auto convert = [&](auto *tag) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
      if (from == DType::Float)
        kernels::fromF32(x->data<float>(), out->mutableData<T>(), x->numel());
      else
        kernels::toF32(x->data<T>(), out->mutableData<float>(), x->numel());
    };
    // (Both sides float, or nothing is allocated: the reference kernel
    // then fills the output's place.)
    bool done = (other == DType::Float16 || other == DType::BFloat16) &&
                intoFloatTensor(target, x->shape(), *out, [](auto *) {}) &&
                withFloatType(other, convert);
    if (done)
      return Status::ok();
  }
  return call(ctx, reference, opName, inputs, attrs, outputs, unwanted);
}

LLMC_SUPPORT_FN Status packedLinear(const Context &ctx, const char *opName, const Tensor &x,
                                    const Tensor &packed, int64_t n, const Tensor *bias,
                                    const Tensor *residual, Tensor &out) {
  Context::Timer timer(ctx, "linear");
  DType type = packed.dtype();
  int64_t k = packed.rank() == 3 ? packed.dim(1) : -1;
  if (k <= 0 || packed.dim(2) != kernels::kPanel || packed.dim(0) != kernels::numPanels(n) ||
      x.dtype() != type || x.rank() < 1 || x.dim(x.rank() - 1) != k ||
      (bias && (bias->dtype() != type || bias->numel() != n)))
    return Status::error(std::string(opName) + ": x " + x.describe() + " and bias " +
                         (bias ? bias->describe() : std::string("none")) +
                         " do not fit the packed weight " + packed.describe() + " of " +
                         std::to_string(n) + " columns");
  LinearF32 f;
  LLMC_TRY(f.start(opName, x, n, bias, residual, out));
  const int64_t m = f.rows;
  const float *px = f.x, *pb = f.bias, *pr = f.residual;
  float *py = f.y;
  // Units of a register tile's panels; a contiguous range of them per thread.
  int64_t panels = packed.dim(0);
  int64_t units = (panels + kernels::kTilePanels - 1) / kernels::kTilePanels;
  int64_t threads = int64_t(ctx.pool->size());
  int64_t grain = std::max<int64_t>(1, (units + threads - 1) / threads);
  bool known = withFloatType(type, [&](auto *tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    const T *pw = packed.data<T>();
    ctx.pool->parallelFor(units, grain, [&](int64_t u0, int64_t u1) {
      kernels::packedRows(px, m, k, pw, n, pb, pr, py, u0 * kernels::kTilePanels,
                          std::min(panels, u1 * kernels::kTilePanels),
                          kernels::narrowTilesFaster());
    });
  });
  if (!known)
    return Status::error(std::string(opName) + ": packed weights of " +
                         cpu::dtypeName(type) + " are not supported");
  f.finish(out);
  return Status::ok();
}

/// llm.quantized_linear over the weights as stored (see kernels/Quant.h):
/// q uint8 [N, G, group_size * bits / 8], scales f32 [N, G], zp uint8
/// [N, G] or null, x used as it is (f32 activations; layers with int8
/// activations are packed: quantPanelLinear).
LLMC_SUPPORT_FN Status quantizedLinear(const Context &ctx, const char *opName, const Tensor &x,
                                       const Tensor &q, const Tensor &scales, const Tensor *zp,
                                       int64_t bits, int64_t groupSize, const Tensor *bias,
                                       const Tensor *residual, Tensor &out) {
  Context::Timer timer(ctx, "linear");
  kernels::QuantShape shape;
  shape.bits = bits, shape.groupSize = groupSize;
  shape.n = q.rank() == 3 ? q.dim(0) : -1, shape.groups = q.rank() == 3 ? q.dim(1) : -1;
  shape.k = x.rank() >= 1 ? x.dim(x.rank() - 1) : -1;
  DType type = x.dtype();
  bool floatX = type == DType::Float || type == DType::Float16 || type == DType::BFloat16;
  if (!floatX || (bits != 4 && bits != 8) || groupSize < 1 || q.dtype() != DType::UInt8 ||
      shape.n < 0 || q.dim(2) != groupSize * bits / 8 || shape.k <= 0 ||
      shape.groups != (shape.k + groupSize - 1) / groupSize || scales.dtype() != DType::Float ||
      scales.numel() != shape.n * shape.groups ||
      (zp && (zp->dtype() != DType::UInt8 || zp->numel() != shape.n * shape.groups)) ||
      (bias && (bias->dtype() != type || bias->numel() != shape.n)))
    return Status::error(std::string(opName) + ": x " + x.describe() + " does not fit the " +
                         std::to_string(bits) + "-bit weight " + q.describe() + " in groups of " +
                         std::to_string(groupSize) + " (scales " + scales.describe() + ")");
  LinearF32 f;
  LLMC_TRY(f.start(opName, x, shape.n, bias, residual, out));
  const int64_t m = f.rows;
  const float *px = f.x, *pb = f.bias, *pr = f.residual;
  float *py = f.y;
  const uint8_t *pq = q.data<uint8_t>(), *pz = zp ? zp->data<uint8_t>() : nullptr;
  const float *ps = scales.data<float>();
  int64_t threads = int64_t(ctx.pool->size());
  // Prefill (many rows of x): dequantized panels and the f32 register tile.
  constexpr int64_t kPanelRows = 16;
  if (m > kPanelRows) {
    int64_t tiles = (shape.n + kernels::kTilePanels * kernels::kPanel - 1) /
                    (kernels::kTilePanels * kernels::kPanel);
    int64_t tileGrain = std::max<int64_t>(1, (tiles + threads - 1) / threads);
    const int64_t width = kernels::kTilePanels * kernels::kPanel;
    auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk,
                                          kernels::quantizedPanelsScratch(shape));
    ctx.pool->parallelFor(tiles, tileGrain, [&](int64_t t0, int64_t t1) {
      kernels::quantizedRowsPanels(px, m, shape, pq, ps, pz, pb, pr, py, t0 * width,
                                   std::min(shape.n, t1 * width), chunk.get());
    });
  } else {
    // Blocks of 16 weight rows; a contiguous range of them per thread.
    int64_t blocks = (shape.n + 15) / 16;
    int64_t grain = std::max<int64_t>(1, (blocks + threads - 1) / threads);
    auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk,
                                          kernels::quantizedF32Scratch(shape, m));
    ctx.pool->parallelFor(blocks, grain, [&](int64_t b0, int64_t b1) {
      kernels::quantizedRowsF32(px, m, shape, pq, ps, pz, pb, pr, py, b0 * 16,
                                std::min(shape.n, b1 * 16), chunk.get());
    });
  }
  f.finish(out);
  return Status::ok();
}

/// llm.quantized_linear with int8 activations over the [n, K] weight llmc
/// compile packed into panels (kernels/QuantPanels.h; `packed` uint8
/// [panels, panel bytes]): x rounded to int8 per block of 32 and multiplied
/// with integer dot products, except prefill on CPUs without VNNI, which
/// multiplies x as it is by dequantized panels (int8 activations are a
/// permission, not a contract; VNNI makes the int8 kernel the faster one at
/// prompt sizes too).
LLMC_SUPPORT_FN Status quantPanelLinear(const Context &ctx, const char *opName, const Tensor &x,
                                        const Tensor &packed, int64_t n, int64_t bits,
                                        int64_t groupSize, bool halfScales, bool zeroPoints,
                                        const Tensor *bias, const Tensor *residual, Tensor &out) {
  Context::Timer timer(ctx, "linear");
  kernels::QuantPanelShape shape;
  shape.n = n, shape.bits = bits, shape.groupSize = groupSize;
  shape.halfScales = halfScales, shape.zeroPoints = zeroPoints;
  shape.k = x.rank() >= 1 ? x.dim(x.rank() - 1) : -1;
  shape.groups = groupSize > 0 && shape.k > 0 ? (shape.k + groupSize - 1) / groupSize : -1;
  DType type = x.dtype();
  bool floatX = type == DType::Float || type == DType::Float16 || type == DType::BFloat16;
  if (!floatX || !shape.valid() || packed.dtype() != DType::UInt8 || packed.rank() != 2 ||
      packed.dim(0) != shape.panels() || packed.dim(1) != shape.panelBytes() ||
      (bias && (bias->dtype() != type || bias->numel() != n)))
    return Status::error(std::string(opName) + ": x " + x.describe() + " does not fit the " +
                         std::to_string(bits) + "-bit weight of " + std::to_string(n) +
                         " rows in groups of " + std::to_string(groupSize) + " packed as " +
                         packed.describe());
  LinearF32 f;
  LLMC_TRY(f.start(opName, x, n, bias, residual, out));
  const int64_t m = f.rows, panels = shape.panels();
  const float *px = f.x, *pb = f.bias, *pr = f.residual;
  float *py = f.y;
  const uint8_t *pw = packed.data<uint8_t>();
  int64_t threads = int64_t(ctx.pool->size());
#if defined(__AVX512VNNI__)
  constexpr bool vnni = true;
#else
  constexpr bool vnni = false;
#endif
  constexpr int64_t kPanelRows = 16;
  if (!vnni && m > kPanelRows) {
    int64_t units = (panels + kernels::kTilePanels - 1) / kernels::kTilePanels;
    int64_t grain = std::max<int64_t>(1, (units + threads - 1) / threads);
    auto chunk = cpu::chunkScratch<float>(*ctx.pool, kScratchChunk,
                                          kernels::quantPanelScratch(shape));
    ctx.pool->parallelFor(units, grain, [&](int64_t u0, int64_t u1) {
      kernels::quantPanelRowsF32(px, m, shape, pw, pb, pr, py, u0 * kernels::kTilePanels,
                                 std::min(panels, u1 * kernels::kTilePanels), chunk.get());
    });
  } else {
    // Per calling thread, kept between calls so its buffers keep their
    // capacity; the workers read this thread's through the reference (a
    // thread_local named in the lambda would be each worker's own).
    thread_local kernels::QuantActivations perThread;
    kernels::QuantActivations &xa = perThread;
    kernels::prepareQuantActivations(px, m, shape.k, shape.blocks(), xa);
    int64_t grain = std::max<int64_t>(1, (panels + threads - 1) / threads);
    ctx.pool->parallelFor(panels, grain, [&](int64_t p0, int64_t p1) {
      kernels::quantPanelRows(xa, shape, pw, pb, pr, py, p0, p1);
    });
  }
  f.finish(out);
  return Status::ok();
}

LLMC_SUPPORT_FN Status flashAttention(const Context &ctx, const KernelEntry *reference,
                                      const char *opName,
                                      std::initializer_list<const Tensor *> inputs,
                                      const Attributes *attrs,
                                      std::initializer_list<Tensor *> outputs, uint64_t unwanted) {
  Context::Timer timer(ctx, "flash_attention");
  const Tensor *q = inputs.size() == 4 || inputs.size() == 6 ? inputs.begin()[0] : nullptr;
  const Tensor *k = q ? inputs.begin()[1] : nullptr, *v = q ? inputs.begin()[2] : nullptr;
  const Tensor *pos = q ? inputs.begin()[3] : nullptr;
  const Tensor *ks = inputs.size() == 6 ? inputs.begin()[4] : nullptr;
  const Tensor *vs = inputs.size() == 6 ? inputs.begin()[5] : nullptr;
  Tensor *out = outputs.size() == 1 ? outputs.begin()[0] : nullptr;
  int64_t hq = attrs ? attrs->getInt("num_heads", -1) : -1;
  int64_t hkv = attrs ? attrs->getInt("num_kv_heads", -1) : -1;
  bool fast = out && q && k && v && pos && attrs && attrs->optFloat("scale") &&
              q->rank() == 4 && k->rank() == 4 && v->rank() == 4 &&
              fastCaches(*q, *k, *v, ks, vs) && pos->dtype() == DType::Int64 && pos->numel() == 1 &&
              q->dim(2) == hq && hkv > 0 && hq % hkv == 0 && k->dim(1) == hkv &&
              v->dim(1) == hkv && k->dim(0) == q->dim(0) && v->dim(0) == q->dim(0) &&
              k->dim(3) == q->dim(3) && v->dim(2) == k->dim(2);
  int64_t p = fast ? pos->data<int64_t>()[0] : -1;
  if (fast && p >= 0 && p + q->dim(1) <= k->dim(2)) {
    int64_t b = q->dim(0), s = q->dim(1), d = q->dim(3), dv = v->dim(3), capacity = k->dim(2);
    float scale = float(*attrs->optFloat("scale"));
    float softcap = float(attrs->getFloat("softcap", 0.0));
    bool causal = attrs->getInt("causal", 1) != 0;
    int64_t window = attrs->getInt("window", 0);
    const double *sinks;
    LLMC_TRY(cpu::attentionSinks(attrs, hq, opName, sinks));
    const float *pq = asF32(*q, kScratchX);
    const float *pks = ks ? ks->data<float>() : nullptr, *pvs = vs ? vs->data<float>() : nullptr;
    bool done = intoFloatTensor(q->dtype(), {b, s, hq, dv}, *out, [&](auto *) {
      float *po = f32Target(*out, kScratchOut);
      // A few queries per kv head (a verification pass, a short prompt):
      // attendByKey, the head's rows a vector's lanes at a time; else
      // tiles of a head's rows over its packed keys. (Up to 64 rows the
      // first measured faster on the development VM's EPYC, AVX2 and
      // AVX-512 alike: 3x at 8 rows, 1.3x at 64, slower past 128.)
      bool fewRows = s * (hq / hkv) <= 8 * kernels::kKeyRows;
      // (Sized for the whole cache: p + s <= capacity.)
      auto chunk = cpu::chunkScratch<float>(
          *ctx.pool, kScratchChunk,
          fewRows ? kernels::attendByKeyScratch(capacity, d, dv)
                  : kernels::prefillAttentionScratch(capacity, d));
      withCacheType(k->dtype(), [&](auto *tag) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
        if (fewRows) {
          int64_t units = b * hkv * kernels::shortPrefillPasses(s, hq, hkv);
          ctx.pool->parallelFor(units, 1, [&](int64_t u0, int64_t u1) {
            float *scratch = chunk.get();
            for (int64_t u = u0; u < u1; ++u)
              kernels::shortPrefillAttention(pq, k->data<T>(), v->data<T>(), pks, pvs, po, s,
                                             hq, hkv, d, dv, capacity, p, causal, window,
                                             scale, softcap, u, scratch, sinks);
          });
          return;
        }
        // One head's rows per chunk: its keys stay in cache across them.
        ctx.pool->parallelFor(b * hq * s, s, [&](int64_t r0, int64_t r1) {
          float *scratch = chunk.get();
          kernels::prefillAttentionRows(pq, k->data<T>(), v->data<T>(), pks, pvs, po, s, hq,
                                        hkv, d, dv, capacity, p, causal, window, scale,
                                        softcap, r0, r1, scratch, sinks);
        });
      });
      finishF32(*out, po);
    });
    if (done)
      return Status::ok();
  }
  return call(ctx, reference, opName, inputs, attrs, outputs, unwanted);
}

#endif // !LLMC_MODEL_SUPPORT_SPLIT || LLMC_MODEL_SUPPORT_DEFINITIONS

} // namespace llmc::model

#endif // LLMC_RUNTIME_MODEL_MODELSUPPORT_H
