//===- ModelGlue.h - an emitted CPU model's llmc_model_abi functions ------===//
//
// The C ABI (llmc/model_abi.h) over the `Model` class that llmc compile
// emits for the CPU target (compiler/Codegen/CPU): create checks the
// weights and makes the context (ModelSupport.h's Context: the pool, the
// arena), run / runAtCapacity / runRows check the caller's arguments and
// call the entry point, setAffinity pins the pool's threads. Errors come
// back as a message in the caller's buffer and a nonzero result, never an
// abort.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_MODELGLUE_H
#define LLMC_RUNTIME_MODEL_MODELGLUE_H

#include "runtime/src/model/ModelSupport.h"

#include <cstdio>
#include <memory>
#include <string>

namespace llmc::model {

/// The llmc_model_abi functions for an emitted model class M, which
/// provides (static members) kEntries/kNumEntries, kCaches/kNumCaches,
/// kFns (one Status (*)(M &, const Args &) per entry), kWeightsBytes,
/// kVocab and kAnyCapacity, and a member Status init().
template <class M> struct Glue {
  static int create(const void *weights, uint64_t bytes, int32_t threads, void **out, char *err,
                    size_t errlen);
  static void destroy(void *ctx) { delete static_cast<M *>(ctx); }
  static int run(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                 void *const *caches, float *logits, char *err, size_t errlen) {
    return runAtCapacity(ctx, entry, tokens, start, M::kNumCaches ? M::kCaches[0].capacity : 0,
                         caches, logits, err, errlen);
  }
  static int runAtCapacity(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                           int64_t capacity, void *const *caches, float *logits, char *err,
                           size_t errlen) {
    return runRows(ctx, entry, tokens, start, capacity, caches, 0, -1, logits, err, errlen);
  }
  static int setAffinity(void *ctx, const int32_t *cpus, int32_t count, char *err,
                         size_t errlen);
  /// rows -1: all of them.
  static int runRows(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                     int64_t capacity, void *const *caches, int64_t row0, int64_t rows,
                     float *logits, char *err, size_t errlen);
};

/// Copies `message` into err[0 .. errlen) and returns 1.
int fail(const std::string &message, char *err, size_t errlen);
/// Checks create()'s arguments and sets up the context.
Status initContext(Context &ctx, const void *weights, uint64_t bytes, uint64_t expectedBytes,
                   int32_t threads, uint64_t arenaBytes, int64_t maxTokens, uint64_t rowsBytes);
/// Checks run()'s arguments and wraps the buffers.
Status makeArgs(const llmc_model_entry &entry, const llmc_model_cache *caches,
                uint32_t numCaches, int64_t vocab, const int64_t *tokens, int64_t start,
                int64_t capacity, bool anyCapacity, void *const *cacheBuffers, int64_t row0,
                int64_t rows, float *logits, Args &args);

template <class M>
int Glue<M>::setAffinity(void *ctx, const int32_t *cpus, int32_t count, char *err,
                         size_t errlen) {
  if (!ctx)
    return fail("set_affinity: the context is null", err, errlen);
  std::string refused = static_cast<M *>(ctx)->pool->pin(cpus, count);
  return refused.empty() ? 0 : fail("set_affinity: " + refused, err, errlen);
}

template <class M>
int Glue<M>::create(const void *weights, uint64_t bytes, int32_t threads, void **out, char *err,
                    size_t errlen) {
  if (!out)
    return fail("create: out_ctx is null", err, errlen);
  *out = nullptr;
  std::unique_ptr<M> m(new M());
  if (Status s = initContext(*m, weights, bytes, M::kWeightsBytes, threads, M::kArenaBytes,
                             M::kMaxTokens, M::kRowsBytes);
      !s)
    return fail(s.message(), err, errlen);
  if (Status s = m->init(); !s)
    return fail(s.message(), err, errlen);
  bool narrow = kernels::narrowTilesFaster(); // its probe now, not in the first prefill
  if (m->profile) { // (which tile the packed linears take: a wrong one costs a fifth)
    using Narrow = kernels::NarrowTile;
    using Wide = kernels::WideTile;
    int rows = narrow ? Narrow::kRows : Wide::kRows;
    int bits = 32 * (narrow ? Narrow::V::kLanes : Wide::V::kLanes);
    int columns = int((narrow ? Narrow::kPanels : Wide::kPanels) * kernels::kPanel);
    std::fprintf(stderr,
                 "llmc profile (LLMC_PROFILE): packed linears in tiles of %d rows x %d columns, "
                 "%d-bit vectors%s\n",
                 rows, columns, bits, narrow ? " (the narrow tile: it measured faster here)" : "");
  }
  *out = m.release();
  return 0;
}

template <class M>
int Glue<M>::runRows(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                     int64_t capacity, void *const *cacheBuffers, int64_t row0, int64_t rows,
                     float *logits, char *err, size_t errlen) {
  if (!ctx)
    return fail("run: the context is null", err, errlen);
  if (entry >= M::kNumEntries)
    return fail("run: entry " + std::to_string(entry) + " does not exist (the model has " +
                    std::to_string(M::kNumEntries) + ")",
                err, errlen);
  const llmc_model_entry &e = M::kEntries[entry];
  Args &args = static_cast<M *>(ctx)->args;
  if (Status s = makeArgs(e, M::kCaches, M::kNumCaches, M::kVocab, tokens, start, capacity,
                          M::kAnyCapacity != 0, cacheBuffers, row0, rows, logits, args);
      !s)
    return fail(std::string(e.name) + ": " + s.message(), err, errlen);
  if (Status s = M::kFns[entry](*static_cast<M *>(ctx), args); !s)
    return fail(std::string(e.name) + ": " + s.message(), err, errlen);
  return 0;
}

} // namespace llmc::model

#endif // LLMC_RUNTIME_MODEL_MODELGLUE_H
