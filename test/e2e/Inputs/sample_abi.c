/* The model ABI's run_sample on one library, step by step against
 * run_at_capacity on a second context fed the same tokens: every id is a
 * token of the vocabulary whose logit at that position is finite and,
 * where top_k is given, among the top_k largest; where the model left the
 * draw to the caller (-1) the row_logits it hands back equal
 * run_at_capacity's logits of that position, bit for bit. The next token is
 * the drawn one (or, when left, the argmax). With a repetition PENALTY
 * (default 1: none) the marks of the prompt's and the chosen tokens go
 * with each step and the logits above are the penalised ones (each token
 * once: divided where positive, multiplied where not); at temperature 0
 * every id must be the first largest of them. Then the refusals: bad
 * parameters, a penalty without marks, a uniform outside [0, 1), a
 * position past the entry.
 *   sample_abi LIBMODEL WEIGHTS_BIN PREFILL_ENTRY DECODE_ENTRY PROMPT_LEN STEPS T TOP_K TOP_P
 *              [PENALTY]
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

/* The repetition penalty over the marked tokens, as the runtime's rule. */
static void penalize(float *row, int64_t vocab, const uint32_t *marks, float penalty) {
  for (int64_t i = 0; i < vocab; ++i)
    if (marks[i / 32] >> (i % 32) & 1u)
      row[i] = row[i] > 0 ? row[i] / penalty : row[i] * penalty;
}

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
  if (argc != 10 && argc != 11)
    return fail("usage: sample_abi LIBMODEL WEIGHTS PREFILL DECODE PROMPT_LEN STEPS T TOP_K TOP_P "
                "[PENALTY]",
                NULL);
  LoadedModel lm = {0};
  if (loadModel("sample_abi", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  if (!abi->run_sample)
    return fail("the library has no run_sample", NULL);
  uint32_t prefill = (uint32_t)atoi(argv[3]), decode = (uint32_t)atoi(argv[4]);
  int64_t promptLen = atoll(argv[5]), steps = atoll(argv[6]), vocab = abi->vocab;
  uint32_t *marks = calloc((size_t)(vocab + 31) / 32, sizeof(uint32_t));
  llmc_model_sampling sp = {(float)atof(argv[7]), atoi(argv[8]), (float)atof(argv[9]), 0.0f,
                            argc == 11 ? (float)atof(argv[10]) : 1.0f, marks};
  int64_t seq = abi->entries[prefill].seq, capacity = abi->caches[0].capacity;
  char err[1024] = "";
  void *ctx[2], *caches[2][64];
  if (deviceTwins("sample_abi", &lm, ctx, caches) != 0)
    return 1;
  float *logits = malloc(sizeof(float) * (size_t)(seq * vocab));
  float *rowLogits = malloc(sizeof(float) * (size_t)vocab);
  int64_t tokens[4096] = {0}, id = 0, device = 0, left = 0;
  for (int64_t i = 0; i < promptLen; ++i) {
    tokens[i] = (i * 37 + 11) % vocab;
    marks[tokens[i] / 32] |= 1u << (tokens[i] % 32);
  }
  for (int64_t s = 0; s <= steps; ++s) {
    uint32_t entry = s == 0 ? prefill : decode;
    int64_t start = s == 0 ? 0 : promptLen + s - 1, row = s == 0 ? promptLen - 1 : 0;
    const int64_t *in = s == 0 ? tokens : &id;
    if (abi->run_at_capacity(ctx[0], entry, in, start, capacity, caches[0], logits, err,
                             sizeof err) != 0)
      return fail("run_at_capacity", err);
    float *want = logits + row * vocab;
    float *raw = malloc(sizeof(float) * (size_t)vocab); /* (what a row left to the caller holds) */
    memcpy(raw, want, sizeof(float) * (size_t)vocab);
    if (sp.repetition_penalty != 1)
      penalize(want, vocab, marks, sp.repetition_penalty);
    double u = (double)((s * 7919 + 13) % 1000) / 1000.0;
    int64_t got = -2;
    for (int64_t i = 0; i < vocab; ++i)
      rowLogits[i] = NAN;
    if (abi->run_sample(ctx[1], entry, in, start, capacity, caches[1], row, &sp, &u, &got,
                        rowLogits, err, sizeof err) != 0)
      return fail("run_sample", err);
    if (got == -1) {
      if (memcmp(rowLogits, raw, sizeof(float) * (size_t)vocab) != 0) {
        fprintf(stderr, "sample_abi: step %lld: the row_logits differ from the logits\n",
                (long long)s);
        return 1;
      }
      ++left;
      id = argmaxRow(want, vocab);
    } else {
      if (got < 0 || got >= vocab || !isfinite(want[got]) ||
          (sp.top_k > 0 && rankOf(want, vocab, got) >= sp.top_k) ||
          (sp.temperature == 0 && got != argmaxRow(want, vocab))) {
        fprintf(stderr, "sample_abi: step %lld: drew %lld, not a token the rule keeps\n",
                (long long)s, (long long)got);
        return 1;
      }
      ++device;
      id = got;
    }
    free(raw);
    marks[id / 32] |= 1u << (id % 32);
  }
  double u = 0.5, bad = 1.0;
  int64_t ignored;
  llmc_model_sampling cold = sp;
  cold.temperature = -1;
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, &cold, &u, &ignored,
                      rowLogits, err, sizeof err) == 0)
    return fail("temperature -1 was accepted", NULL);
  printf("temperature -1: %s\n", err);
  llmc_model_sampling unmarked = sp;
  unmarked.repetition_penalty = 1.2f, unmarked.penalized = NULL;
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, &unmarked, &u, &ignored,
                      rowLogits, err, sizeof err) == 0)
    return fail("a penalty without marks was accepted", NULL);
  printf("penalty without marks: %s\n", err);
  llmc_model_sampling warm = sp; /* (uniforms are read only when drawing) */
  if (warm.temperature == 0)
    warm.temperature = 1;
  if (abi->run_sample(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, &warm, &bad, &ignored,
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
  free(marks);
  return 0;
}
