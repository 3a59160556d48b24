/* Time to first token with and without logits only where needed: the same
 * prefill entry of one compiled model, run on the same prompt from position
 * 0, alternating run_at_capacity (every position's logits: the whole
 * bucket's final norm and lm_head) and run_rows for the prompt's last
 * position (one row), ROUNDS rounds of REPS calls each; prints the median
 * milliseconds of each and their ratio.
 *   logits_rows LIBMODEL WEIGHTS_BIN PREFILL_ENTRY PROMPT_LEN THREADS ROUNDS REPS */
#include "llmc/model_abi.h"
#include "../../test/e2e/Inputs/load_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int byValue(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 8)
    return loadFail("logits_rows", "usage: LIBMODEL WEIGHTS ENTRY PROMPT_LEN THREADS ROUNDS REPS",
                    NULL);
  LoadedModel lm = {0};
  if (loadModel("logits_rows", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  uint32_t entry = (uint32_t)atoi(argv[3]);
  int64_t n = atoll(argv[4]);
  int threads = atoi(argv[5]), rounds = atoi(argv[6]), reps = atoi(argv[7]);
  if (!abi->run_rows || entry >= abi->num_entries || n < 1 || n > abi->entries[entry].seq ||
      rounds < 1 || rounds > 64 || reps < 1)
    return loadFail("logits_rows", "no run_rows, or bad arguments", NULL);
  int64_t seq = abi->entries[entry].seq, vocab = abi->vocab, capacity = abi->caches[0].capacity;
  char err[1024] = "";
  void *ctx, *caches[512];
  if (abi->create(lm.weights, lm.bytes, threads, &ctx, err, sizeof err) != 0)
    return loadFail("logits_rows", "create", err);
  for (uint32_t c = 0; c < abi->num_caches && c < 512; ++c)
    caches[c] = calloc((size_t)(abi->caches[c].heads * capacity * abi->caches[c].head_dim), 4);
  int64_t *tokens = calloc((size_t)seq, sizeof(int64_t));
  float *logits = malloc(sizeof(float) * (size_t)(seq * vocab));
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = (i * 37 + 11) % vocab;
  double all[64], last[64];
  for (int r = -1; r < rounds; ++r) { /* round -1 warms up */
    for (int which = 0; which < 2; ++which) {
      double start = now();
      for (int i = 0; i < reps; ++i) {
        int rc = which == 0 ? abi->run_at_capacity(ctx, entry, tokens, 0, capacity, caches,
                                                   logits, err, sizeof err)
                            : abi->run_rows(ctx, entry, tokens, 0, capacity, caches, n - 1, 1,
                                            logits, err, sizeof err);
        if (rc != 0)
          return loadFail("logits_rows", "run", err);
      }
      double ms = (now() - start) / reps;
      if (r >= 0)
        (which == 0 ? all : last)[r] = ms;
    }
  }
  qsort(all, (size_t)rounds, sizeof(double), byValue);
  qsort(last, (size_t)rounds, sizeof(double), byValue);
  double a = all[rounds / 2], l = last[rounds / 2];
  printf("%s, %lld-token prompt in a %lld bucket, %d threads: every position's logits %.2f ms, "
         "the last one's %.2f ms: %.2fx\n",
         abi->entries[entry].name, (long long)n, (long long)seq, threads, a, l, a / l);
  abi->destroy(ctx);
  return 0;
}
