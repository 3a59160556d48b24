/* What a verification pass of speculative decoding costs against a decode
 * step: one session of a compiled model (the runtime's C API), a prompt of
 * CONTEXT tokens cached, then ROUNDS rounds of appending 1, 2, 3, 4, 5 and 8
 * tokens at that position with every row's logits (llmc_session_append_all,
 * as a verification pass does: 1 is a decode step, the others the prefill
 * buckets that hold them), each rolled back before the next
 * (llmc_session_rollback). Prints each count's median microseconds and its
 * ratio to the decode step's.
 *   verify_pass ARTIFACT CONTEXT ROUNDS THREADS */
#include "llmc/llmc.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int byValue(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int fail(const char *what) {
  fprintf(stderr, "verify_pass: %s\n", what);
  return 1;
}

int main(int argc, char **argv) {
  enum { kCounts = 6 };
  const int counts[kCounts] = {1, 2, 3, 4, 5, 8};
  if (argc != 5)
    return fail("usage: ARTIFACT CONTEXT ROUNDS THREADS");
  int context = atoi(argv[2]), rounds = atoi(argv[3]);
  if (context < 1 || rounds < 1)
    return fail("CONTEXT and ROUNDS must be positive");
  llmc_model *model;
  llmc_session *session;
  if (llmc_model_load(argv[1], NULL, &model) != LLMC_OK)
    return fail(llmc_last_error());
  llmc_model_info info;
  llmc_model_get_info(model, &info);
  llmc_session_options options = {0};
  options.threads = atoi(argv[4]);
  if (llmc_session_create(model, &options, &session) != LLMC_OK)
    return fail(llmc_last_error());
  int32_t *tokens = malloc(sizeof(int32_t) * (size_t)context);
  float *logits = malloc(sizeof(float) * 8 * (size_t)info.vocab);
  double *times = malloc(sizeof(double) * kCounts * (size_t)rounds);
  for (int i = 0; i < context; ++i)
    tokens[i] = (int32_t)(5 + (i * 37) % (info.vocab - 5));
  if (llmc_session_append(session, tokens, (size_t)context, NULL) != LLMC_OK)
    return fail(llmc_last_error());
  for (int r = 0; r < rounds; ++r)
    for (int c = 0; c < kCounts; ++c) {
      double start = now();
      if (llmc_session_append_all(session, tokens, (size_t)counts[c], logits) != LLMC_OK)
        return fail(llmc_last_error());
      times[c * rounds + r] = now() - start;
      llmc_session_rollback(session, context);
    }
  double decode = 0;
  for (int c = 0; c < kCounts; ++c) {
    qsort(times + c * rounds, (size_t)rounds, sizeof(double), byValue);
    double median = times[c * rounds + rounds / 2];
    if (c == 0)
      decode = median;
    printf("%d token%s: %8.1f us  %.2fx a decode step\n", counts[c], counts[c] > 1 ? "s" : " ",
           median, median / decode);
  }
  free(times);
  free(logits);
  free(tokens);
  llmc_session_free(session);
  llmc_model_free(model);
  return 0;
}
