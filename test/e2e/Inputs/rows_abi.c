/* The model ABI's run_rows against run_at_capacity on one library: a
 * prefill entry run on a prompt from position 0 gives every position's
 * logits; run_rows on a second context fed the same tokens must give the
 * same logits for each asked range of rows (within TOLERANCE, default
 * 1e-5, of the logits' scale: a few rows take the GEMV where many take the
 * tiled GEMM), and refuse ranges outside the entry. A device model's caches come from its
 * cache_alloc (the CUDA target, on the emulation here). The ranges: the
 * last row (a prompt's next token), the first, one inside, 3 rows inside,
 * the last 100 (the CUDA target's chunks of 64 from the first asked: at
 * 128 positions a second chunk past the entry's end), all, and the last
 * again: the CUDA target captures a one-row prefill as a graph at its
 * second run and replays it for any row (read on the device).
 *   rows_abi LIBMODEL WEIGHTS_BIN PREFILL_ENTRY [TOLERANCE]
 * Prints "run_rows equals the logits of run_at_capacity for N ranges" or
 * fails. */
#include "llmc/model_abi.h"
#include "load_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t dtypeBytes(int32_t dtype) { return dtype == 1 ? 4 : dtype == 10 || dtype == 16 ? 2 : 8; }

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5)
    return loadFail("rows_abi", "usage: rows_abi LIBMODEL WEIGHTS PREFILL [TOLERANCE]", NULL);
  double tolerance = argc == 5 ? atof(argv[4]) : 1e-5;
  LoadedModel lm = {0};
  if (loadModel("rows_abi", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  if (!abi->run_rows)
    return loadFail("rows_abi", "the library has no run_rows", NULL);
  uint32_t entry = (uint32_t)atoi(argv[3]);
  if (entry >= abi->num_entries)
    return loadFail("rows_abi", "no such entry", argv[3]);
  int64_t batch = abi->entries[entry].batch, seq = abi->entries[entry].seq, vocab = abi->vocab;
  int64_t capacity = abi->caches[0].capacity;
  char err[1024] = "";
  void *ctx[2], *caches[2][256];
  if (abi->num_caches > 256)
    return loadFail("rows_abi", "too many caches", NULL);
  for (int c = 0; c < 2; ++c) {
    if (abi->create(lm.weights, lm.bytes, 1, &ctx[c], err, sizeof err) != 0)
      return loadFail("rows_abi", "create", err);
    if (abi->buffers == LLMC_BUFFERS_DEVICE) {
      if (abi->cache_alloc(ctx[c], batch, capacity, caches[c], err, sizeof err) != 0)
        return loadFail("rows_abi", "cache_alloc", err);
      continue;
    }
    for (uint32_t i = 0; i < abi->num_caches; ++i) {
      const llmc_model_cache *m = &abi->caches[i];
      caches[c][i] = calloc((size_t)(batch * m->heads * m->capacity * m->head_dim),
                            dtypeBytes(m->dtype));
    }
  }
  int64_t *tokens = malloc(sizeof(int64_t) * (size_t)(batch * seq));
  float *all = malloc(sizeof(float) * (size_t)(batch * seq * vocab));
  float *some = malloc(sizeof(float) * (size_t)(batch * seq * vocab));
  for (int64_t i = 0; i < batch * seq; ++i)
    tokens[i] = (i * 37 + 11) % vocab;
  if (abi->run_at_capacity(ctx[0], entry, tokens, 0, capacity, caches[0], all, err, sizeof err))
    return loadFail("rows_abi", "run_at_capacity", err);
  double scale = 0;
  for (int64_t i = 0; i < batch * seq * vocab; ++i)
    scale = fmax(scale, fabs(all[i]));
  int64_t last = seq > 100 ? 100 : seq;
  int64_t ranges[7][2] = {{seq - 1, 1},       {0, 1},   {seq / 3, 1},
                          {seq / 2, seq - seq / 2 > 3 ? 3 : 1},
                          {seq - last, last}, {0, seq}, {seq - 1, 1}};
  for (int r = 0; r < 7; ++r) {
    int64_t row0 = ranges[r][0], rows = ranges[r][1];
    if (abi->run_rows(ctx[1], entry, tokens, 0, capacity, caches[1], row0, rows, some, err,
                      sizeof err) != 0)
      return loadFail("rows_abi", "run_rows", err);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows * vocab; ++i) {
        double want = all[(b * seq + row0) * vocab + i], got = some[(b * rows) * vocab + i];
        if (!(fabs(got - want) <= tolerance * scale)) {
          fprintf(stderr, "rows_abi: rows [%lld, %lld) sequence %lld element %lld: %g, not %g\n",
                  (long long)row0, (long long)(row0 + rows), (long long)b, (long long)i, got,
                  want);
          return 1;
        }
      }
  }
  /* Ranges outside the entry are refused with a message. */
  int64_t bad[3][2] = {{0, 0}, {seq - 1, 2}, {-1, 1}};
  for (int r = 0; r < 3; ++r) {
    err[0] = 0;
    if (abi->run_rows(ctx[1], entry, tokens, 0, capacity, caches[1], bad[r][0], bad[r][1], some,
                      err, sizeof err) == 0 ||
        !strstr(err, "do not lie in the entry"))
      return loadFail("rows_abi", "a range outside the entry was not refused", err);
  }
  printf("run_rows equals the logits of run_at_capacity for 7 ranges of %lld x %lld\n",
         (long long)batch, (long long)seq);
  for (int c = 0; c < 2; ++c) {
    if (abi->buffers == LLMC_BUFFERS_DEVICE)
      abi->cache_free(ctx[c], caches[c]);
    abi->destroy(ctx[c]);
  }
  return 0;
}
