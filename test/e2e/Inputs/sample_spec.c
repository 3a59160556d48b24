/* Speculative sampling against the exact distribution. Generates two
 * tokens (t0, t1) after a prompt N times per mode (plain sampling, and
 * speculative decoding: prompt lookup, whose draft for t1 is the token that
 * followed t0 earlier in the prompt, or with DRAFT.llmc a draft model that
 * proposes t1 from its own distribution), each run with its own seed, at
 * temperature 2 and top-k 3. For every t0 seen, it also computes in float64
 * the distribution the documented sampler rule gives t1 (softmax of the
 * logits after prompt + t0 at the temperature, over the 3 largest, ties to
 * the lower id), and with a draft model the same of the draft's logits (what
 * it proposes from). Prints "count MODE T0 T1 N", "exact T0 T1 P" and
 * "draftq T0 T1 Q" lines and "drafts ACCEPTED PROPOSED" for chi_square.py.
 *   sample_spec MODEL.llmc N [DRAFT.llmc] */
#include "llmc/llmc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kVocabMax = 4096, kTopK = 3 };
static const float kTemperature = 2.0f;

static int fail(const char *what) {
  fprintf(stderr, "sample_spec: %s: %s\n", what, llmc_last_error());
  return 1;
}

/* Prints "TAG T0 T TOPK-PROBABILITY" for the kTopK largest of `logits`
 * at kTemperature (ties to the lower id), in float64. */
static void printTopK(const char *tag, int t0, const float *logits, int vocab, int *order) {
  double w[kTopK];
  for (int i = 0; i < vocab; ++i)
    order[i] = i;
  for (int k = 0; k < kTopK; ++k)
    for (int i = k + 1; i < vocab; ++i)
      if (logits[order[i]] > logits[order[k]] ||
          (logits[order[i]] == logits[order[k]] && order[i] < order[k])) {
        int t = order[k];
        order[k] = order[i];
        order[i] = t;
      }
  double top = (double)logits[order[0]] / kTemperature, sum = 0;
  for (int k = 0; k < kTopK; ++k)
    sum += w[k] = exp((double)logits[order[k]] / kTemperature - top);
  for (int k = 0; k < kTopK; ++k)
    printf("%s %d %d %.17g\n", tag, t0, order[k], w[k] / sum);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: sample_spec MODEL.llmc N [DRAFT.llmc]\n");
    return 2;
  }
  int runs = atoi(argv[2]);
  llmc_model *model = NULL, *draft = NULL;
  if (llmc_model_load(argv[1], NULL, &model) != LLMC_OK)
    return fail("load");
  if (argc == 4 && llmc_model_load(argv[3], NULL, &draft) != LLMC_OK)
    return fail("load the draft");
  llmc_model_info info;
  if (llmc_model_get_info(model, &info) != LLMC_OK || info.vocab > kVocabMax)
    return fail("info");
  int vocab = (int)info.vocab;
  llmc_session *session = NULL, *draftAlone = NULL;
  llmc_session_options options = {0};
  options.draft_model = draft;
  if (llmc_session_create(model, &options, &session) != LLMC_OK)
    return fail("session");
  if (draft && llmc_session_create(draft, NULL, &draftAlone) != LLMC_OK)
    return fail("draft session");
  /* The prompt: for each of the likeliest first tokens c, c followed by
   * the model's greedy choice after c, then a loop this model falls into
   * when greedy. Whatever t0 is among those, it occurred before, so a
   * lookup proposes a draft for t1, and that draft is a likely token (the
   * acceptance rule then matters). */
  const int32_t loop[] = {77, 246, 89, 77, 246, 89, 77, 246};
  const size_t loopLen = sizeof loop / sizeof loop[0];
  float *logits = malloc(sizeof(float) * (size_t)vocab);
  int32_t prompt[128], firsts[64], seconds[64];
  size_t n = 0, numFirsts = 0;
  /* The likeliest first tokens and their successors change with the
   * prompt: gather and recompute them over a few rounds. */
  for (int round = 0; round < 6; ++round) {
    n = 0;
    for (size_t f = 0; f < numFirsts; ++f) {
      prompt[n++] = firsts[f];
      prompt[n++] = seconds[f];
    }
    memcpy(prompt + n, loop, sizeof loop);
    n += loopLen;
    if (round == 5)
      break;
    if (llmc_session_reset(session) != LLMC_OK ||
        llmc_session_append(session, prompt, n, logits) != LLMC_OK)
      return fail("append");
    float row[kVocabMax];
    memcpy(row, logits, sizeof(float) * (size_t)vocab);
    for (int k = 0; k < kTopK && numFirsts < 48; ++k) {
      int best = 0;
      for (int i = 1; i < vocab; ++i)
        if (row[i] > row[best])
          best = i;
      row[best] = -INFINITY;
      int known = 0;
      for (size_t f = 0; f < numFirsts; ++f)
        known |= firsts[f] == best;
      if (!known) {
        firsts[numFirsts] = best;
        seconds[numFirsts++] = loop[0];
      }
    }
    /* Each first token's successor: the greedy choice after the prompt
     * and it. */
    for (size_t f = 0; f < numFirsts; ++f) {
      prompt[n] = firsts[f];
      if (llmc_session_reset(session) != LLMC_OK ||
          llmc_session_append(session, prompt, n + 1, logits) != LLMC_OK)
        return fail("append");
      int next = 0;
      for (int i = 1; i < vocab; ++i)
        if (logits[i] > logits[next])
          next = i;
      seconds[f] = next;
    }
  }
  static int32_t seen[kVocabMax];
  long accepted = 0, proposed = 0;
  for (int mode = 0; mode < 2; ++mode)
    for (int run = 0; run < runs; ++run) {
      llmc_generate_params p;
      llmc_generate_params_init(&p);
      p.max_new_tokens = 2;
      p.temperature = kTemperature;
      p.top_k = kTopK;
      p.seed = (uint64_t)(mode * runs + run); /* independent samples per mode */
      if (mode == 1 && draft) {
        p.speculative = LLMC_SPECULATIVE_DRAFT;
        p.draft_tokens = 1;
      } else if (mode == 1) {
        p.speculative = LLMC_SPECULATIVE_PROMPT_LOOKUP;
        p.ngram_max = 1;
      }
      int32_t out[2];
      size_t count = 0;
      llmc_generate_stats stats;
      if (llmc_generate(session, prompt, n, &p, NULL, NULL, out, 2, &count, &stats) != LLMC_OK)
        return fail("generate");
      if (count != 2) {
        fprintf(stderr, "sample_spec: generated %zu tokens\n", count);
        return 1;
      }
      seen[out[0]] = 1;
      printf("count %s %d %d 1\n", mode ? "speculative" : "plain", out[0], out[1]);
      accepted += stats.accepted_tokens;
      proposed += stats.draft_tokens;
    }
  /* The exact distribution of t1 for each t0 seen. */
  int *order = malloc(sizeof(int) * (size_t)vocab);
  for (int t0 = 0; t0 < vocab; ++t0) {
    if (!seen[t0])
      continue;
    prompt[n] = t0;
    if (llmc_session_reset(session) != LLMC_OK ||
        llmc_session_append(session, prompt, n + 1, logits) != LLMC_OK)
      return fail("append");
    printTopK("exact", t0, logits, vocab, order);
    if (draft) { /* what the draft proposes t1 from */
      if (llmc_session_reset(draftAlone) != LLMC_OK ||
          llmc_session_append(draftAlone, prompt, n + 1, logits) != LLMC_OK)
        return fail("append to the draft");
      printTopK("draftq", t0, logits, vocab, order);
      continue;
    }
    /* The draft a lookup of t0 proposes: what followed its last
     * occurrence in the prompt. */
    for (size_t i = n; i-- > 0;)
      if (prompt[i] == t0 && i + 1 < n) {
        printf("draft %d %d\n", t0, prompt[i + 1]);
        break;
      }
  }
  printf("drafts %ld %ld\n", accepted, proposed);
  free(logits);
  free(order);
  llmc_session_free(session);
  llmc_session_free(draftAlone);
  llmc_model_free(model);
  llmc_model_free(draft);
  return 0;
}
