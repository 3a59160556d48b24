/* The model ABI's run_sample on one library, step by step against
 * run_at_capacity on a second context fed the same tokens: every id is a
 * token of the vocabulary whose logit at that position is finite and,
 * where top_k is given, among the top_k largest; where the model left the
 * draw to the caller (-1) the row_logits it hands back equal
 * run_at_capacity's logits of that position, bit for bit. The next token is
 * the drawn one (or, when left, the argmax). Then the refusals: bad
 * parameters, a uniform outside [0, 1), a position past the entry.
 *   sample_abi LIBMODEL WEIGHTS_BIN PREFILL_ENTRY DECODE_ENTRY PROMPT_LEN STEPS T TOP_K TOP_P
 * Prints "N steps: D drawn on the device, H left to the caller" or fails.
 * (Whether the draws follow the runtime's rule is tested in
 * CudaKernelsTest.cpp against the sampler itself, and end to end in
 * cuda-sampling.test.) */
#include "llmc/model_abi.h"
#include "load_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *err) { return loadFail("sample_abi", what, err); }

static int64_t argmaxRow(const float *row, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (row[i] > row[best])
      best = i;
  return best;
}

/* How many logits of the row are larger than row[id]. */
static int64_t rankOf(const float *row, int64_t vocab, int64_t id) {
  int64_t above = 0;
  for (int64_t i = 0; i < vocab; ++i)
    above += row[i] > row[id];
  return above;
}

int main(int argc, char **argv) {
  if (argc != 10)
    return fail("usage: sample_abi LIBMODEL WEIGHTS PREFILL DECODE PROMPT_LEN STEPS T TOP_K TOP_P",
                NULL);
  LoadedModel lm = {0};
  if (loadModel("sample_abi", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  if (!abi->run_sample)
    return fail("the library has no run_sample", NULL);
  uint32_t prefill = (uint32_t)atoi(argv[3]), decode = (uint32_t)atoi(argv[4]);
  int64_t promptLen = atoll(argv[5]), steps = atoll(argv[6]), vocab = abi->vocab;
  llmc_model_sampling sp = {(float)atof(argv[7]), atoi(argv[8]), (float)atof(argv[9]), 0.0f};
  int64_t seq = abi->entries[prefill].seq, capacity = abi->caches[0].capacity;
  char err[1024] = "";
  void *ctx[2], *caches[2][64];
  if (deviceTwins("sample_abi", &lm, ctx, caches) != 0)
    return 1;
  float *logits = malloc(sizeof(float) * (size_t)(seq * vocab));
  float *rowLogits = malloc(sizeof(float) * (size_t)vocab);
  int64_t tokens[4096] = {0}, id = 0, device = 0, left = 0;
  for (int64_t i = 0; i < promptLen; ++i)
    tokens[i] = (i * 37 + 11) % vocab;
  for (int64_t s = 0; s <= steps; ++s) {
    uint32_t entry = s == 0 ? prefill : decode;
    int64_t start = s == 0 ? 0 : promptLen + s - 1, row = s == 0 ? promptLen - 1 : 0;
    const int64_t *in = s == 0 ? tokens : &id;
    if (abi->run_at_capacity(ctx[0], entry, in, start, capacity, caches[0], logits, err,
                             sizeof err) != 0)
      return fail("run_at_capacity", err);
    const float *want = logits + row * vocab;
    double u = (double)((s * 7919 + 13) % 1000) / 1000.0;
    int64_t got = -2;
    for (int64_t i = 0; i < vocab; ++i)
      rowLogits[i] = NAN;
    if (abi->run_sample(ctx[1], entry, in, start, capacity, caches[1], row, &sp, &u, &got,
                        rowLogits, err, sizeof err) != 0)
      return fail("run_sample", err);
    if (got == -1) {
      if (memcmp(rowLogits, want, sizeof(float) * (size_t)vocab) != 0) {
        fprintf(stderr, "sample_abi: step %lld: the row_logits differ from the logits\n",
                (long long)s);
        return 1;
      }
      ++left;
      id = argmaxRow(want, vocab);
    } else {
      if (got < 0 || got >= vocab || !isfinite(want[got]) ||
          (sp.top_k > 0 && rankOf(want, vocab, got) >= sp.top_k)) {
        fprintf(stderr, "sample_abi: step %lld: drew %lld, not a token the rule keeps\n",
                (long long)s, (long long)got);
        return 1;
      }
      ++device;
      id = got;
    }
  }
  double u = 0.5, bad = 1.0;
  int64_t ignored;
  llmc_model_sampling cold = sp;
  cold.temperature = 0;
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, &cold, &u, &ignored,
                      rowLogits, err, sizeof err) == 0)
    return fail("temperature 0 was accepted", NULL);
  printf("temperature 0: %s\n", err);
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, &sp, &bad, &ignored,
                      rowLogits, err, sizeof err) == 0)
    return fail("a uniform of 1 was accepted", NULL);
  printf("uniform 1: %s\n", err);
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], seq, &sp, &u, &ignored,
                      rowLogits, err, sizeof err) == 0)
    return fail("a position past the entry was accepted", NULL);
  printf("position outside: %s\n", err);
  printf("%lld steps: %lld drawn on the device, %lld left to the caller\n", (long long)steps + 1,
         (long long)device, (long long)left);
  freeDeviceTwins(&lm, ctx, caches);
  free(logits);
  free(rowLogits);
  return 0;
}
