/*===- llmc.h - the llmc runtime: load an artifact, generate tokens -------===*
 *
 * An application loads a model.llmc folder (written by `llmc compile`),
 * creates a session (its own KV cache) and generates:
 *
 *   llmc_model *model;
 *   if (llmc_model_load("model.llmc", NULL, &model) != LLMC_OK)
 *     fprintf(stderr, "%s\n", llmc_last_error());
 *   llmc_session *s;
 *   llmc_session_create(model, NULL, &s);
 *   llmc_generate_params p;
 *   llmc_generate_params_init(&p);          // greedy, 128 tokens
 *   int32_t out[128]; size_t n;
 *   llmc_generate(s, prompt, prompt_len, &p, NULL, NULL, out, 128, &n, NULL);
 *   llmc_session_free(s);
 *   llmc_model_free(model);
 *
 * Status: every fallible call returns llmc_status; on failure
 * llmc_last_error() gives a message naming the problem (per thread, valid
 * until the thread's next llmc call). No call aborts on a caller's mistake.
 *
 * Ownership: objects are created by the *_load and *_create functions and
 * released by the matching *_free (NULL is accepted). A session keeps its
 * model alive; the model may be freed while sessions remain.
 *
 * Threads: a model may be shared by threads; a session is used by one
 * thread at a time. Each session runs its kernels on its own pool of
 * `threads` threads.
 *
 * Tokens are int32 ids in [0, vocab). Logits are float32 [vocab].
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_LLMC_H
#define LLMC_LLMC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum llmc_status {
  LLMC_OK = 0,
  LLMC_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a token out of range, ... */
  LLMC_ERROR_IO = 2,               /* a file is missing or unreadable */
  LLMC_ERROR_FORMAT = 3,           /* the artifact is damaged or of another version */
  LLMC_ERROR_CAPACITY = 4,         /* the KV cache is full */
  LLMC_ERROR_UNSUPPORTED = 5,      /* e.g. the artifact needs CPU features this machine lacks */
  LLMC_ERROR_INTERNAL = 6          /* a kernel failed */
} llmc_status;

/* The message of this thread's last failed call ("" when none). */
const char *llmc_last_error(void);

/* The runtime's version, "0.1.0". */
const char *llmc_version(void);

/* ---- models ------------------------------------------------------------ */

typedef struct llmc_model llmc_model;

typedef struct llmc_load_options {
  /* 1: do not check weights.bin's per-tensor checksums (manifest.json's
   * weights.table). By default every byte is checked at load, on all cores:
   * a damaged file is an LLMC_ERROR_FORMAT naming the tensor. */
  int32_t skip_weight_checksums;
  /* What runs the model: NULL or "" for the artifact's own target (the CPU,
   * or the GPU of a --target cuda artifact); "emulated" runs a --target
   * cuda artifact on the host emulation of CUDA (libmodel-emulated.so:
   * slow, for tests and machines without a GPU). */
  const char *device;
} llmc_load_options;

/* Loads the artifact folder `path`: checks manifest.json (format version,
 * target, file sizes and the library's hashes), maps weights.bin and
 * loads libmodel.so. `options` may be NULL. */
llmc_status llmc_model_load(const char *path, const llmc_load_options *options,
                            llmc_model **out_model);
void llmc_model_free(llmc_model *model);

typedef struct llmc_model_info {
  int64_t vocab;
  int64_t capacity;       /* KV cache positions per sequence (max prompt + generated) */
  int64_t max_batch;      /* the largest compiled batch */
  int64_t num_prefill_buckets;
  int64_t weights_bytes;
  int64_t kv_cache_bytes; /* per sequence, at the compiled capacity */
  int32_t any_capacity;   /* 1: sessions may ask for a smaller capacity */
} llmc_model_info;

llmc_status llmc_model_get_info(const llmc_model *model, llmc_model_info *out_info);

/* ---- text ------------------------------------------------------------ */

/* 1 when the artifact carries a tokenizer (llmc compile --tokenizer, or a
 * tokenizer.json beside the model), else 0. */
int32_t llmc_model_has_tokenizer(const llmc_model *model);

/* The token ids of `text` (UTF-8, `len` bytes). With add_special, the
 * tokens the tokenizer adds around a sequence (a BOS) are included.
 * *out_count receives the number of ids; when it exceeds `capacity` nothing
 * is written to out_ids and the call fails with LLMC_ERROR_INVALID_ARGUMENT
 * (call again with a larger buffer). */
llmc_status llmc_tokenize(const llmc_model *model, const char *text, size_t len,
                          int32_t add_special, int32_t *out_ids, size_t capacity,
                          size_t *out_count);

/* The text of `ids` (special tokens left out), NUL-terminated in out_text.
 * *out_len receives the text's length without the NUL; when the buffer is
 * too small nothing is written and the call fails as above. */
llmc_status llmc_detokenize(const llmc_model *model, const int32_t *ids, size_t n,
                            char *out_text, size_t capacity, size_t *out_len);

/* The ids generation stops at by default (the model's end-of-sequence
 * tokens, from its generation config); *out_count receives how many, at
 * most `capacity` are written. */
llmc_status llmc_model_stop_tokens(const llmc_model *model, int32_t *out_ids, size_t capacity,
                                   size_t *out_count);

/* ---- sessions ---------------------------------------------------------- */

typedef struct llmc_session llmc_session;

typedef struct llmc_session_options {
  int32_t threads;  /* 0: one per hardware thread */
  int32_t batch;    /* sequences run together: 0 or 1, or a size compiled with --batch */
  int64_t capacity; /* KV-cache positions per sequence (prompt + generated): 0 for the
                       compiled one (llmc_model_info.capacity), or fewer to allocate less
                       when the model allows it (llmc_model_info.any_capacity) */
  const int32_t *cpus; /* NULL, or num_cpus CPU numbers: the session's worker threads are
                          pinned, worker i to cpus[i % num_cpus] (the calling thread, which
                          runs a share of every step, stays where it is: pin it yourself to
                          cpus[0] for a full pinning) */
  int32_t num_cpus;
  /* NULL, or a second, smaller model with the same vocabulary for speculative
   * decoding (LLMC_SPECULATIVE_DRAFT): the session makes one of its own on
   * it, single-sequence, of the same capacity (the draft model must allow
   * it), with draft_threads threads (0: `threads`). The draft model must
   * outlive the session. */
  llmc_model *draft_model;
  int32_t draft_threads;
} llmc_session_options;

llmc_status llmc_session_create(llmc_model *model, const llmc_session_options *options,
                                llmc_session **out_session);
void llmc_session_free(llmc_session *session);

/* Forgets every cached token. */
llmc_status llmc_session_reset(llmc_session *session);

/* Keeps the first `length` cached tokens (0 <= length <= llmc_session_length)
 * and forgets the rest: the next tokens appended overwrite their cache rows,
 * so rejecting a speculative draft costs nothing more. Every sequence of a
 * batched session moves back alike. */
llmc_status llmc_session_rollback(llmc_session *session, int64_t length);

/* KV-cache positions per sequence this session holds. */
int64_t llmc_session_capacity(const llmc_session *session);

/* Tokens cached so far. */
int64_t llmc_session_length(const llmc_session *session);

/* Appends `n` tokens (n >= 1) and writes the logits after the last one into
 * `logits` ([vocab] floats; NULL: not wanted). Long inputs run in chunks
 * of the compiled prefill buckets. LLMC_ERROR_CAPACITY when the cache
 * cannot hold them (nothing is appended then). */
llmc_status llmc_session_append(llmc_session *session, const int32_t *tokens, size_t n,
                                float *logits);

/* Like llmc_session_append, but writes the logits of every appended token
 * into `all_logits` ([n, vocab] floats). */
llmc_status llmc_session_append_all(llmc_session *session, const int32_t *tokens, size_t n,
                                    float *all_logits);

/* Batched sessions (llmc_session_options.batch = B > 1) run B sequences of
 * equal length side by side through the batch-B entry points; the
 * single-sequence calls above refuse them.
 * Appends tokens [B, n] (row-major) and writes each sequence's logits after
 * its last token into `logits` ([B, vocab]; NULL: not wanted). */
llmc_status llmc_session_append_batch(llmc_session *session, const int32_t *tokens, size_t n,
                                      float *logits);
/* The session's batch size. */
int64_t llmc_session_batch(const llmc_session *session);

/* ---- generation -------------------------------------------------------- */

typedef struct llmc_generate_params {
  int32_t max_new_tokens;     /* default 128 */
  float temperature;          /* 0: greedy (the default) */
  int32_t top_k;              /* 0: off */
  float top_p;                /* 1: off */
  float min_p;                /* 0: off */
  float repetition_penalty;   /* 1: off; > 1 discourages tokens already in the sequence (each
                                 distinct one once: a positive logit divided by it, a negative
                                 one multiplied, as Hugging Face transformers does) */
  uint64_t seed;              /* the sampler's seed; the same seed gives the same tokens */
  const int32_t *stop_tokens; /* generation ends after producing one of these */
  size_t num_stop_tokens;
  /* Generation ends after the token whose text (the decoding of the tokens
   * generated so far, by the artifact's tokenizer) first contains one of
   * these UTF-8 strings; that token is the last one returned (its text may
   * run past the stop string: cut the decoded text at the string's first
   * occurrence). Needs the artifact's tokenizer; each string non-empty. */
  const char *const *stop_strings;
  size_t num_stop_strings;
  /* Speculative decoding: LLMC_SPECULATIVE_NONE (the default);
   * LLMC_SPECULATIVE_PROMPT_LOOKUP: each step proposes up to draft_tokens
   * tokens that followed the latest earlier occurrence of the last n tokens
   * (n from ngram_max down to ngram_min) in the prompt and the text so far;
   * LLMC_SPECULATIVE_DRAFT: the session's draft model
   * (llmc_session_options.draft_model) proposes up to draft_tokens tokens,
   * one decode step each, sampled with these same parameters. Either way
   * how many follows how many stood: two more after a pass where all did,
   * one fewer otherwise (at least one, at most draft_tokens).
   * The model verifies them in one pass (a prefill entry; compile short
   * buckets for it, llmc compile --verify-buckets 2,4,8); the rejected rest
   * is rolled back. Greedy output is plain decoding's, token for token;
   * sampled output follows the same distribution (the rejection-sampling
   * rule: a token the draft proposed with probability q stands with
   * probability min(1, p / q), p the sampler's; else the token is drawn from
   * max(0, p - q), renormalised; prompt lookup proposes with q = 1).
   * Single-sequence sessions only. */
  int32_t speculative;
  int32_t draft_tokens; /* default 4, at most 64 */
  int32_t ngram_max;    /* default 3 */
  int32_t ngram_min;    /* default 1 */
  /* NULL, or a grammar (llmc_grammar_create) the generated text must match:
   * each step only the tokens that keep the text a prefix of a match can be
   * chosen; the stop tokens (stop_tokens and the model's end-of-sequence
   * tokens) only where the text may end, and choosing one ends the
   * generation; so does reaching a text the grammar cannot extend. The
   * text is the tokens' bytes as generated (a SentencePiece decoder's
   * removal of the text's leading space aside). Made for this model's
   * tokenizer, or one with the same vocabulary. */
  const struct llmc_grammar *grammar;
} llmc_generate_params;

enum {
  LLMC_SPECULATIVE_NONE = 0,
  LLMC_SPECULATIVE_PROMPT_LOOKUP = 1,
  LLMC_SPECULATIVE_DRAFT = 2
};

/* ---- constrained generation ------------------------------------------ */

typedef struct llmc_grammar llmc_grammar;

enum {
  LLMC_GRAMMAR_GBNF = 0,       /* llama.cpp's GBNF: rules `name ::= ...`, one named root */
  LLMC_GRAMMAR_REGEX = 1,      /* a regular expression the whole text must match */
  LLMC_GRAMMAR_JSON_SCHEMA = 2 /* a JSON Schema (the subset docs/runtime.md lists) */
};

/* Compiles `text` (`len` UTF-8 bytes, of the given kind) into an automaton
 * over the model's vocabulary, once, for any number of generations
 * (llmc_generate_params.grammar) on any thread. Token masks are built as
 * the automaton reaches each state and kept. A grammar that cannot be
 * parsed or run (left recursion, an undefined rule, a root that matches
 * nothing, a schema keyword it cannot enforce) is an
 * LLMC_ERROR_INVALID_ARGUMENT naming the problem; the model must carry a
 * tokenizer. The model must outlive the grammar. */
llmc_status llmc_grammar_create(const llmc_model *model, int32_t kind, const char *text,
                                size_t len, llmc_grammar **out_grammar);
void llmc_grammar_free(llmc_grammar *grammar);

/* Fills `params` with the defaults above. */
void llmc_generate_params_init(llmc_generate_params *params);

/* Called after each new token; return nonzero to stop. */
typedef int (*llmc_token_callback)(int32_t token, void *user_data);

typedef struct llmc_generate_stats {
  int64_t prompt_tokens, generated_tokens;
  double time_to_first_token_ms; /* prompt processing and the first token */
  double time_per_output_token_ms; /* mean over the tokens after the first */
  double tokens_per_second;        /* generated tokens after the first / their time */
  double total_ms;
  /* Speculative decoding: tokens proposed, and of those accepted (the
   * acceptance rate is their ratio), and verification passes; the time the
   * draft model took (proposing, and catching up with accepted tokens). */
  int64_t draft_tokens, accepted_tokens, verify_steps;
  double draft_ms;
  /* Constrained generation: the time spent on token masks and on following
   * the grammar (included in the times above), and whether the text (of
   * the first sequence) is complete: one the grammar matches whole (0 when
   * max_new_tokens, the cache or the callback cut it short). */
  double grammar_ms;
  int32_t grammar_complete;
} llmc_generate_stats;

/* Resets the session, runs the prompt and generates up to
 * params->max_new_tokens tokens (stopping after a stop token, when the
 * callback asks, or when the cache is full), writing them to out_tokens
 * (capacity out_capacity) and their count to *out_count. `params`,
 * `callback` and `stats` may be NULL. */
llmc_status llmc_generate(llmc_session *session, const int32_t *prompt, size_t prompt_len,
                          const llmc_generate_params *params, llmc_token_callback callback,
                          void *user_data, int32_t *out_tokens, size_t out_capacity,
                          size_t *out_count, llmc_generate_stats *stats);

/* Generation for a batched session: prompts [B, prompt_len] (row-major, all
 * of one length), out_tokens [B, out_capacity], out_counts [B]. Each
 * sequence samples with its own generator (seed + its index) and stops on
 * its own (stop tokens, max_new_tokens); the batch runs until all have. */
llmc_status llmc_generate_batch(llmc_session *session, const int32_t *prompts, size_t prompt_len,
                                const llmc_generate_params *params, int32_t *out_tokens,
                                size_t out_capacity, size_t *out_counts,
                                llmc_generate_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_LLMC_H */
