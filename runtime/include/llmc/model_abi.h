/*===- model_abi.h - the interface between libmodel.so and the runtime -----===*
 *
 * `llmc compile` emits and builds libmodel.so; it exports one symbol,
 * llmc_model_abi_v1, returning a static description of the compiled model
 * and three functions. The runtime (llmc.h) loads the library, checks the
 * description against manifest.json, maps weights.bin and drives the entry
 * points; an application may also call them directly.
 *
 * Shapes and layouts
 *   tokens   int64 [batch, seq], row-major, the entry's own batch and seq.
 *   caches   one buffer per cache (keys and values of each layer, in
 *            `caches` order), [batch, heads, capacity, head_dim] of
 *            `dtype` (an ONNX TensorProto element type code: 1 f32,
 *            10 f16, 16 bf16), row-major, owned by the caller. An entry
 *            writes rows start_pos .. start_pos + seq - 1 in place.
 *            `capacity` is the compiled one (caches[i].capacity) for
 *            run; run_at_capacity takes any capacity from 1 to it when
 *            any_capacity is 1 (a session that needs fewer positions
 *            allocates less).
 *   logits   float32 [batch, seq, vocab], row-major, written by the entry.
 *
 * A prefill entry of sequence bucket S takes a prompt of n <= S tokens
 * padded on the right (any valid token id): rows n .. S-1 of the logits are
 * then meaningless, the caller advances start_pos by n and the padded cache
 * rows are overwritten by the next tokens before anything reads them.
 * start_pos + S must not exceed the capacity.
 *
 * Thread safety: create/destroy/run on distinct contexts may run
 * concurrently; one context runs one call at a time (it owns a thread pool
 * and scratch memory).
 *
 * Errors: every fallible function returns 0 on success and writes a
 * NUL-terminated message of at most errlen bytes into err otherwise; none
 * aborts on bad arguments.
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_MODEL_ABI_H
#define LLMC_MODEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 3: buffers may live on a device (buffers, cache_alloc, cache_free), and
 * a greedy step may return token ids only (run_greedy). 4: a step may
 * compute the logits of only some positions (run_rows). 5: a context's
 * threads may be pinned to CPUs (set_affinity). 6: a sampled step may return
 * token ids only (run_sample). 7: run_sample applies a repetition penalty,
 * and at temperature 0 takes the greedy token (llmc_model_sampling). */
#define LLMC_MODEL_ABI_VERSION 7
/* The artifact folder's format (manifest.json's format_version). 2: the
 * manifest lists weights.bin's tensors with a checksum each (weights.table). */
#define LLMC_ARTIFACT_FORMAT_VERSION 2

typedef enum llmc_entry_kind { LLMC_ENTRY_PREFILL = 0, LLMC_ENTRY_DECODE = 1 } llmc_entry_kind;

/* Where a model's caches live (llmc_model_abi.buffers). */
typedef enum llmc_buffers {
  LLMC_BUFFERS_HOST = 0,  /* host memory the caller allocates and zeroes */
  LLMC_BUFFERS_DEVICE = 1 /* device memory from cache_alloc, released by cache_free */
} llmc_buffers;

typedef struct llmc_model_entry {
  const char *name; /* "prefill_b1_s64", "decode_b1" */
  int32_t kind;     /* llmc_entry_kind */
  int64_t batch;
  int64_t seq;      /* 1 for decode */
} llmc_model_entry;

typedef struct llmc_model_cache {
  const char *name; /* "cache.k.0" */
  int64_t heads, capacity, head_dim;
  int32_t dtype;    /* ONNX element type code */
} llmc_model_cache;

/* What run_sample draws with (values as llmc_generate_params checks them). */
typedef struct llmc_model_sampling {
  float temperature; /* >= 0; 0: greedy, the first largest (penalised) logit */
  int32_t top_k;     /* 0: every token */
  float top_p;       /* (0, 1] */
  float min_p;       /* [0, 1) */
  float repetition_penalty; /* > 0; 1: none */
  /* With a repetition_penalty other than 1: [batch, (vocab + 31) / 32]
   * words, bit t % 32 of word t / 32 of sequence b's row set where token t
   * is in that sequence so far (the prompt and what was generated); each
   * such logit is divided by the penalty where positive and multiplied by
   * it where not, once, before the rest of the rule. Otherwise unread. */
  const uint32_t *penalized;
} llmc_model_sampling;

typedef struct llmc_model_abi {
  uint32_t abi_version; /* LLMC_MODEL_ABI_VERSION */
  const char *llmc_version;
  const char *weights_sha256; /* of weights.bin, hex */
  uint64_t weights_bytes;
  int64_t vocab;
  uint32_t num_entries;
  const llmc_model_entry *entries;
  uint32_t num_caches;
  const llmc_model_cache *caches;

  /* A context over `weights` (weights.bin's bytes, 64-byte aligned, kept
   * alive and unmodified by the caller until destroy), with `threads`
   * threads (0: one per hardware thread). */
  int (*create)(const void *weights, uint64_t weights_bytes, int32_t threads, void **out_ctx,
                char *err, size_t errlen);
  void (*destroy)(void *ctx);
  /* Runs entry `entry` (an index into `entries`). */
  int (*run)(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start_pos,
             void *const *caches, float *logits, char *err, size_t errlen);
  /* 1 when the entries read the caches' capacity at run time (they reach
   * the caches only through the cache update and attention kernels), so
   * run_at_capacity takes caches of any capacity 1 .. caches[i].capacity;
   * 0 when the compiled capacity is built into the code (run_at_capacity
   * then takes only that one). */
  int32_t any_capacity;
  /* run with caches of `capacity` positions each. */
  int (*run_at_capacity)(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start_pos,
                         int64_t capacity, void *const *caches, float *logits, char *err,
                         size_t errlen);

  /* llmc_buffers. With LLMC_BUFFERS_DEVICE the caches are device memory:
   * cache_alloc makes num_caches zeroed buffers of [batch, heads, capacity,
   * head_dim] for a context (written to out_caches), run takes them as
   * they are and the caller never reads them; cache_free releases them
   * (before the context is destroyed). tokens and logits stay host memory:
   * run copies them. With LLMC_BUFFERS_HOST both functions are NULL. */
  int32_t buffers;
  const char *device; /* what the entries run on: "cpu", "cuda", "cuda-emulated" */
  int (*cache_alloc)(void *ctx, int64_t batch, int64_t capacity, void **out_caches, char *err,
                     size_t errlen);
  void (*cache_free)(void *ctx, void *const *caches);

  /* Optional (NULL when absent): run_at_capacity, but instead of the logits
   * writes, per sequence, the first index of the largest logit of position
   * `row` (0 <= row < the entry's seq) to out_ids [batch]. A device model
   * then copies batch ids to the host instead of batch * seq * vocab floats. */
  int (*run_greedy)(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start_pos,
                    int64_t capacity, void *const *caches, int64_t row, int64_t *out_ids,
                    char *err, size_t errlen);

  /* Optional (NULL when absent): run_at_capacity, but the logits of only
   * positions [row0, row0 + rows) of each sequence (1 <= rows, row0 + rows
   * <= the entry's seq), written to logits [batch, rows, vocab]. A prompt's
   * earlier positions and a bucket's padding then cost no final norm and
   * lm_head (where the compiler found them: the manifest's
   * entries[].code.logits_rows; else the asked rows are copied). */
  int (*run_rows)(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start_pos,
                  int64_t capacity, void *const *caches, int64_t row0, int64_t rows,
                  float *logits, char *err, size_t errlen);

  /* Optional (NULL when absent): pins the context's worker threads to CPUs:
   * worker i (1 .. threads - 1) to cpus[i % count]; the thread that calls
   * run (the application's) is left where it is. */
  int (*set_affinity)(void *ctx, const int32_t *cpus, int32_t count, char *err, size_t errlen);

  /* Optional (NULL when absent): run_greedy, but per sequence b the token
   * that the runtime's sampling rule (the repetition penalty, then
   * temperature, top-k, top-p and min-p, then a draw in order of
   * likelihood: runtime/src/Sampler.h) draws from position `row` with the
   * uniform uniforms[b] in [0, 1), to out_ids[b]; at temperature 0 the
   * first largest logit after the penalty (uniforms unread). Where the
   * model could not finish a draw (a distribution too flat for its
   * candidate buffer) out_ids[b] is -1 and row_logits + b * vocab holds
   * that position's f32 logits (without the penalty), for the caller to
   * draw from with the same uniform; row_logits [batch, vocab] is otherwise
   * left as it was. */
  int (*run_sample)(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start_pos,
                    int64_t capacity, void *const *caches, int64_t row,
                    const llmc_model_sampling *sampling, const double *uniforms, int64_t *out_ids,
                    float *row_logits, char *err, size_t errlen);
} llmc_model_abi;

/* The one symbol libmodel.so exports. */
const llmc_model_abi *llmc_model_abi_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_MODEL_ABI_H */
