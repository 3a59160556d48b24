/* The model ABI's run_greedy against run_at_capacity on one library: for
 * each step of a prompt (a prefill bucket padded past the prompt, then
 * decode steps) the id run_greedy returns must be the first largest logit
 * of the same position that run_at_capacity returns, on two contexts fed
 * the same tokens; then the prompt's prefill again, greedy at three other
 * positions (the CUDA target captures it as a graph at its second run and
 * replays it for any position), and the logits of one position through
 * run_rows on the same context; a position outside the entry is an
 * error.
 *   greedy_abi LIBMODEL WEIGHTS_BIN PREFILL_ENTRY DECODE_ENTRY PROMPT_LEN STEPS
 * Prints "greedy ids equal the logits' argmax over N steps" or fails. */
#include "llmc/model_abi.h"
#include "load_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *err) { return loadFail("greedy_abi", what, err); }

static int64_t argmaxRow(const float *row, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (row[i] > row[best])
      best = i;
  return best;
}

int main(int argc, char **argv) {
  if (argc != 7)
    return fail("usage: greedy_abi LIBMODEL WEIGHTS PREFILL DECODE PROMPT_LEN STEPS", NULL);
  LoadedModel lm = {0};
  if (loadModel("greedy_abi", argv[1], argv[2], &lm) != 0)
    return 1;
  const llmc_model_abi *abi = lm.abi;
  if (!abi->run_greedy)
    return fail("the library has no run_greedy", NULL);
  uint32_t prefill = (uint32_t)atoi(argv[3]), decode = (uint32_t)atoi(argv[4]);
  int64_t promptLen = atoll(argv[5]), steps = atoll(argv[6]), vocab = abi->vocab;
  int64_t seq = abi->entries[prefill].seq, capacity = abi->caches[0].capacity;
  char err[1024] = "";
  void *ctx[2], *caches[2][64];
  if (deviceTwins("greedy_abi", &lm, ctx, caches) != 0)
    return 1;
  float *logits = malloc(sizeof(float) * (size_t)(seq * vocab));
  float *prompt = malloc(sizeof(float) * (size_t)(seq * vocab)); /* the prefill's logits */
  int64_t tokens[4096] = {0}, id = 0;
  for (int64_t i = 0; i < promptLen; ++i)
    tokens[i] = (i * 37 + 11) % vocab;
  /* The prompt through the prefill bucket (padded), then decode steps fed
   * the greedy token. */
  for (int64_t s = 0; s <= steps; ++s) {
    uint32_t entry = s == 0 ? prefill : decode;
    int64_t start = s == 0 ? 0 : promptLen + s - 1, row = s == 0 ? promptLen - 1 : 0;
    const int64_t *in = s == 0 ? tokens : &id;
    if (abi->run_at_capacity(ctx[0], entry, in, start, capacity, caches[0], logits, err,
                             sizeof err) != 0)
      return fail("run_at_capacity", err);
    if (s == 0)
      memcpy(prompt, logits, sizeof(float) * (size_t)(seq * vocab));
    int64_t want = argmaxRow(logits + row * vocab, vocab), got = -1;
    if (abi->run_greedy(ctx[1], entry, in, start, capacity, caches[1], row, &got, err,
                        sizeof err) != 0)
      return fail("run_greedy", err);
    if (got != want) {
      fprintf(stderr, "greedy_abi: step %lld: run_greedy %lld, argmax of the logits %lld\n",
              (long long)s, (long long)got, (long long)want);
      return 1;
    }
    id = got;
  }
  /* The same prefill (the same cache rows rewritten), greedy elsewhere. */
  int64_t again[3] = {promptLen > 2 ? promptLen - 3 : 0, 0, promptLen - 1};
  for (int i = 0; i < 3; ++i) {
    int64_t want = argmaxRow(prompt + again[i] * vocab, vocab), got = -1;
    if (abi->run_greedy(ctx[1], prefill, tokens, 0, capacity, caches[1], again[i], &got, err,
                        sizeof err) != 0)
      return fail("run_greedy (the prefill again)", err);
    if (got != want) {
      fprintf(stderr, "greedy_abi: the prefill again at position %lld: run_greedy %lld, argmax "
                      "of the logits %lld\n",
              (long long)again[i], (long long)got, (long long)want);
      return 1;
    }
  }
  /* And the logits of one position on the same context (run_rows, where
   * the model has it: a graph of its own, not the greedy one's). */
  if (abi->run_rows) {
    int64_t row = promptLen > 1 ? 1 : 0;
    if (abi->run_rows(ctx[1], prefill, tokens, 0, capacity, caches[1], row, 1, logits, err,
                      sizeof err) != 0)
      return fail("run_rows", err);
    for (int64_t i = 0; i < vocab; ++i)
      if (!(fabs(logits[i] - prompt[row * vocab + i]) <= 1e-4 * (1 + fabs(prompt[row * vocab + i]))))
        return fail("run_rows after run_greedy: other logits", NULL);
    if (abi->run_rows(ctx[1], prefill, tokens, 0, capacity, caches[1], 0, 1, logits, err,
                      sizeof err) != 0 ||
        argmaxRow(logits, vocab) != argmaxRow(prompt, vocab))
      return fail("run_rows after run_greedy, again", err);
  }
  int64_t ignored;
  if (abi->run_greedy(ctx[1], prefill, tokens, 0, capacity, caches[1], seq, &ignored, err,
                      sizeof err) == 0)
    return fail("a position past the entry was accepted", NULL);
  printf("position outside: %s\n", err);
  printf("greedy ids equal the logits' argmax over %lld steps\n", (long long)steps + 1);
  freeDeviceTwins(&lm, ctx, caches);
  free(logits);
  free(prompt);
  return 0;
}
