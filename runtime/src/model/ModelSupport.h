//===- ModelSupport.h - what the C++ that llmc compile emits builds on ----===//
//
// The emitted model source (compiler/Codegen/CPU) includes this header and
// is linked with LLMCModelSupport into libmodel.so. It holds the pieces every
// model shares: the context (weights, thread pool), calls into the
// reference kernels for operations without a specialised template, the
// in-place cache update, and the llmc_model_abi glue (model_abi.h).
//
// Values are llmc::cpu::Tensor: weights wrap weights.bin, views share
// storage, kernel results own theirs. Plain C++17, no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_MODELSUPPORT_H
#define LLMC_RUNTIME_MODEL_MODELSUPPORT_H

#include "llmc/model_abi.h"
#include "runtime/src/cpu/Kernel.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace llmc::model {

using cpu::Attribute;
using cpu::Attributes;
using cpu::DType;
using cpu::KernelEntry;
using cpu::Shape;
using cpu::Status;
using cpu::Tensor;

/// Returns from the enclosing function when `expr` fails.
#define LLMC_TRY(expr) LLMC_RETURN_IF_ERROR(expr)

/// One model instance: the weights it reads and the pool its kernels use.
/// The emitted `Model` derives from it and adds its weight tensors,
/// attributes and kernel table, filled by its init().
class Context {
public:
  virtual ~Context() = default;
  const uint8_t *weights = nullptr;
  uint64_t weightsBytes = 0;
  std::unique_ptr<cpu::ThreadPool> pool;

  /// The weight at `offset` of weights.bin.
  Tensor weight(DType type, Shape shape, uint64_t offset) const {
    return Tensor::wrap(type, std::move(shape), weights + offset);
  }
};

/// The arguments of one entry-point call, as tensors over the caller's
/// buffers.
struct Args {
  Tensor tokens;              // i64 [B, S]
  Tensor start;               // i64 []
  std::vector<Tensor> caches; // [B, H, capacity, D]
  float *logits = nullptr;    // [B, S, vocab]
  Shape logitsShape;
};

Attribute intAttr(int64_t v);
Attribute floatAttr(double v);
Attribute stringAttr(const char *v);
Attribute intsAttr(std::initializer_list<int64_t> v);
Attribute floatsAttr(std::initializer_list<double> v);
Attribute stringsAttr(std::initializer_list<const char *> v);
Attribute tensorAttr(Tensor v);

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

/// i64 token ids as the i32 a model takes (ids beyond i32 are an error).
Status narrowTokens(const Tensor &tokens, Tensor &out);

/// Writes the logits value into the caller's f32 buffer (converting from
/// f16/bf16).
Status storeLogits(const Tensor &value, const Args &args);

/// The llmc_model_abi functions for an emitted model class M, which
/// provides (static members) kEntries/kNumEntries, kCaches/kNumCaches,
/// kFns (one Status (*)(M &, const Args &) per entry), kWeightsBytes and
/// kVocab, and a member Status init().
template <class M> struct Glue {
  static int create(const void *weights, uint64_t bytes, int32_t threads, void **out, char *err,
                    size_t errlen);
  static void destroy(void *ctx) { delete static_cast<M *>(ctx); }
  static int run(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                 void *const *caches, float *logits, char *err, size_t errlen);
};

/// Copies `message` into err[0 .. errlen) and returns 1.
int fail(const std::string &message, char *err, size_t errlen);
/// Checks create()'s arguments and sets up the context.
Status initContext(Context &ctx, const void *weights, uint64_t bytes, uint64_t expectedBytes,
                   int32_t threads);
/// Checks run()'s arguments and wraps the buffers.
Status makeArgs(const llmc_model_entry &entry, const llmc_model_cache *caches,
                uint32_t numCaches, int64_t vocab, const int64_t *tokens, int64_t start,
                void *const *cacheBuffers, float *logits, Args &args);

template <class M>
int Glue<M>::create(const void *weights, uint64_t bytes, int32_t threads, void **out, char *err,
                    size_t errlen) {
  if (!out)
    return fail("create: out_ctx is null", err, errlen);
  *out = nullptr;
  std::unique_ptr<M> m(new M());
  if (Status s = initContext(*m, weights, bytes, M::kWeightsBytes, threads); !s)
    return fail(s.message(), err, errlen);
  if (Status s = m->init(); !s)
    return fail(s.message(), err, errlen);
  *out = m.release();
  return 0;
}

template <class M>
int Glue<M>::run(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                 void *const *cacheBuffers, float *logits, char *err, size_t errlen) {
  if (!ctx)
    return fail("run: the context is null", err, errlen);
  if (entry >= M::kNumEntries)
    return fail("run: entry " + std::to_string(entry) + " does not exist (the model has " +
                    std::to_string(M::kNumEntries) + ")",
                err, errlen);
  const llmc_model_entry &e = M::kEntries[entry];
  Args args;
  if (Status s = makeArgs(e, M::kCaches, M::kNumCaches, M::kVocab, tokens, start, cacheBuffers,
                          logits, args);
      !s)
    return fail(std::string(e.name) + ": " + s.message(), err, errlen);
  if (Status s = M::kFns[entry](*static_cast<M *>(ctx), args); !s)
    return fail(std::string(e.name) + ": " + s.message(), err, errlen);
  return 0;
}

} // namespace llmc::model

#endif // LLMC_RUNTIME_MODEL_MODELSUPPORT_H
