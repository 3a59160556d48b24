/* Heap allocations of a compiled model's entry points, counted by
 * interposing the allocator (malloc, calloc, realloc, aligned_alloc,
 * posix_memalign, memalign; C++'s operator new goes through malloc), on
 * every thread of the process:
 *   alloc_count LIBMODEL WEIGHTS_BIN ARENA_BYTES THREADS
 * 1. create() must make one allocation of exactly the arena the manifest
 *    promises (ARENA_BYTES: the largest entry's memory plan, rounded up to
 *    64 bytes, at least 64).
 * 2. Each prefill entry of batch 1 (a prompt from position 0), then four
 *    decode steps: once to warm up, then again, when no call may allocate.
 * Prints "arena N bytes: one allocation at create" and "M calls after
 * warm-up: 0 allocations", or what failed. With ALLOC_COUNT_BACKTRACE set,
 * each counted allocation after warm-up prints its stack to stderr. */
#include "llmc/model_abi.h"
#include "load_model.h"

#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static volatile int counting = 0, tracing = 0, inTrace = 0;
static long count = 0;
/* Sizes seen while recording (create). */
static size_t sizes[1 << 16];
static long numSizes = 0;

static void seen(size_t n) {
  if (!counting)
    return;
  long i = __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
  if (counting == 2 && i < (long)(sizeof sizes / sizeof sizes[0])) {
    sizes[i] = n;
    __atomic_store_n(&numSizes, i + 1, __ATOMIC_RELAXED);
  }
  if (counting == 1 && tracing && !inTrace) {
    inTrace = 1; /* backtrace() may allocate the first time */
    void *frames[16];
    int depth = backtrace(frames, 16);
    backtrace_symbols_fd(frames, depth, 2);
    write(2, "--\n", 3);
    inTrace = 0;
  }
}
void *malloc(size_t n) {
  seen(n);
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  seen(a * b);
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  seen(n);
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
  seen(n);
  return __libc_memalign(a, n);
}
void *memalign(size_t a, size_t n) {
  seen(n);
  return __libc_memalign(a, n);
}
int posix_memalign(void **p, size_t a, size_t n) {
  seen(n);
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}

static int fail(const char *what, const char *err) { return loadFail("alloc_count", what, err); }

static size_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case 1: return 4;           /* f32 */
  case 10: case 16: return 2; /* f16, bf16 */
  case 2: case 3: return 1;   /* u8, i8 */
  default: return 8;
  }
}

int main(int argc, char **argv) {
  if (argc != 5)
    return fail("usage: alloc_count LIBMODEL WEIGHTS ARENA_BYTES THREADS", NULL);
  LoadedModel lm = {0};
  if (loadModel("alloc_count", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  if (abi->buffers != LLMC_BUFFERS_HOST)
    return fail("not a host model library", argv[1]);
  size_t arena = (size_t)atoll(argv[3]);
  arena = arena < 64 ? 64 : (arena + 63) / 64 * 64;
  int threads = atoi(argv[4]);
  tracing = getenv("ALLOC_COUNT_BACKTRACE") != NULL;

  char err[1024] = "";
  void *ctx = NULL;
  count = 0, counting = 2;
  int rc = abi->create(lm.weights, lm.bytes, threads, &ctx, err, sizeof err);
  counting = 0;
  if (rc != 0)
    return fail("create", err);
  int found = 0;
  for (long i = 0; i < numSizes; ++i)
    found += sizes[i] == arena;
  if (found != 1) {
    fprintf(stderr, "alloc_count: create made %d allocations of the arena's %zu bytes; sizes:",
            found, arena);
    for (long i = 0; i < numSizes; ++i)
      fprintf(stderr, " %zu", sizes[i]);
    fprintf(stderr, "\n");
    return 1;
  }
  printf("arena %zu bytes: one allocation at create\n", arena);

  void *caches[256];
  if (abi->num_caches > 256)
    return fail("too many caches", NULL);
  for (uint32_t c = 0; c < abi->num_caches; ++c) {
    const llmc_model_cache *m = &abi->caches[c];
    caches[c] = calloc((size_t)(m->heads * m->capacity * m->head_dim), dtypeBytes(m->dtype));
    if (!caches[c])
      return fail("out of memory", NULL);
  }
  int64_t maxSeq = 1, vocab = abi->vocab, capacity = abi->num_caches ? abi->caches[0].capacity : 0;
  uint32_t decode = abi->num_entries;
  for (uint32_t e = 0; e < abi->num_entries; ++e) {
    if (abi->entries[e].batch != 1)
      continue;
    if (abi->entries[e].kind == LLMC_ENTRY_DECODE)
      decode = e;
    else if (abi->entries[e].seq > maxSeq)
      maxSeq = abi->entries[e].seq;
  }
  if (decode == abi->num_entries)
    return fail("no decode entry of batch 1", NULL);
  int64_t *tokens = malloc(sizeof(int64_t) * (size_t)maxSeq);
  float *logits = malloc(sizeof(float) * (size_t)(maxSeq * vocab));
  if (!tokens || !logits)
    return fail("out of memory", NULL);
  for (int64_t i = 0; i < maxSeq; ++i)
    tokens[i] = (i * 37 + 11) % vocab;

  long calls = 0;
  for (int round = 0; round < 2; ++round) {
    for (uint32_t e = 0; e < abi->num_entries; ++e) {
      const llmc_model_entry *entry = &abi->entries[e];
      if (entry->batch != 1 || entry->kind != LLMC_ENTRY_PREFILL)
        continue;
      if (entry->seq + 4 > capacity && abi->num_caches)
        continue; /* no room for the decode steps after it */
      for (int64_t s = 0; s <= 4; ++s) {
        uint32_t which = s == 0 ? e : decode;
        int64_t start = s == 0 ? 0 : entry->seq + s - 1;
        count = 0, counting = round;
        rc = abi->run(ctx, which, s == 0 ? tokens : tokens + s, start, caches, logits, err,
                      sizeof err);
        counting = 0;
        if (rc != 0)
          return fail("run", err);
        if (round == 1) {
          ++calls;
          if (count != 0) {
            fprintf(stderr, "alloc_count: %s (start %lld) made %ld allocations after warm-up\n",
                    abi->entries[which].name, (long long)start, count);
            return 1;
          }
        }
      }
    }
  }
  printf("%ld calls after warm-up: 0 allocations\n", calls);
  abi->destroy(ctx);
  return 0;
}
