/* The C API of draft-model speculation (llmc_session_options.draft_model,
 * LLMC_SPECULATIVE_DRAFT): misuse is a status naming the problem, never a
 * crash; greedy generation with the draft gives plain greedy's tokens, and
 * the callback sees each of them once, in order. Prints "ok: ..." lines;
 * exits 1 at the first surprise.
 *   draft_api MODEL.llmc DRAFT.llmc   (MODEL compiled with --batch 1,2) */
#include "llmc/llmc.h"

#include <stdio.h>
#include <string.h>

static int expect(llmc_status got, llmc_status want, const char *needle, const char *what) {
  const char *err = llmc_last_error();
  if (got != want || (needle && !strstr(err, needle))) {
    fprintf(stderr, "draft_api: %s: status %d (wanted %d), \"%s\"\n", what, got, want, err);
    return 1;
  }
  printf("ok: %s%s%s\n", what, needle ? ": " : "", needle ? err : "");
  return 0;
}

typedef struct {
  int32_t seen[64];
  size_t count;
} Seen;

static int record(int32_t token, void *user) {
  Seen *s = user;
  if (s->count < 64)
    s->seen[s->count] = token;
  s->count++;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: draft_api MODEL.llmc DRAFT.llmc\n");
    return 2;
  }
  llmc_model *model = NULL, *draft = NULL;
  if (llmc_model_load(argv[1], NULL, &model) != LLMC_OK ||
      llmc_model_load(argv[2], NULL, &draft) != LLMC_OK) {
    fprintf(stderr, "draft_api: load: %s\n", llmc_last_error());
    return 1;
  }
  llmc_session *s = NULL;
  llmc_session_options o = {0};
  o.draft_model = draft;
  o.batch = 2;
  if (expect(llmc_session_create(model, &o, &s), LLMC_ERROR_UNSUPPORTED, "single-sequence",
             "a batched session with a draft"))
    return 1;
  o.batch = 1;
  o.draft_threads = -1;
  if (expect(llmc_session_create(model, &o, &s), LLMC_ERROR_INVALID_ARGUMENT, "draft_threads",
             "negative draft threads"))
    return 1;
  /* Without a draft model, LLMC_SPECULATIVE_DRAFT is refused. */
  if (expect(llmc_session_create(model, NULL, &s), LLMC_OK, NULL, "a plain session"))
    return 1;
  const int32_t prompt[] = {56, 4, 119, 158, 211, 251, 56, 4, 119};
  const size_t n = sizeof prompt / sizeof prompt[0];
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = 48;
  int32_t plain[48], spec[48];
  size_t plainCount = 0, specCount = 0;
  if (expect(llmc_generate(s, prompt, n, &p, NULL, NULL, plain, 48, &plainCount, NULL), LLMC_OK,
             NULL, "plain greedy generation"))
    return 1;
  p.speculative = LLMC_SPECULATIVE_DRAFT;
  if (expect(llmc_generate(s, prompt, n, &p, NULL, NULL, spec, 48, &specCount, NULL),
             LLMC_ERROR_INVALID_ARGUMENT, "needs a session made with a draft model",
             "LLMC_SPECULATIVE_DRAFT without a draft"))
    return 1;
  p.speculative = 7;
  if (expect(llmc_generate(s, prompt, n, &p, NULL, NULL, spec, 48, &specCount, NULL),
             LLMC_ERROR_INVALID_ARGUMENT, "speculative must be", "an unknown speculative kind"))
    return 1;
  llmc_session_free(s);
  /* With the draft: plain greedy's tokens, each seen by the callback once. */
  o.draft_threads = 1;
  if (expect(llmc_session_create(model, &o, &s), LLMC_OK, NULL, "a session with a draft"))
    return 1;
  p.speculative = LLMC_SPECULATIVE_DRAFT;
  p.draft_tokens = 5;
  Seen seen = {{0}, 0};
  llmc_generate_stats st;
  if (expect(llmc_generate(s, prompt, n, &p, record, &seen, spec, 48, &specCount, &st), LLMC_OK,
             NULL, "greedy generation with the draft"))
    return 1;
  if (specCount != plainCount || memcmp(spec, plain, plainCount * sizeof(int32_t)) != 0 ||
      seen.count != specCount || memcmp(seen.seen, spec, specCount * sizeof(int32_t)) != 0) {
    fprintf(stderr, "draft_api: the draft changed the output or the callback missed tokens\n");
    return 1;
  }
  if (st.verify_steps <= 0 || st.draft_tokens <= 0 || st.draft_ms <= 0) {
    fprintf(stderr, "draft_api: no speculation happened\n");
    return 1;
  }
  printf("ok: %zu tokens equal plain greedy, %lld of %lld proposals accepted in %lld passes\n",
         specCount, (long long)st.accepted_tokens, (long long)st.draft_tokens,
         (long long)st.verify_steps);
  /* Generating again reuses the draft's session from the start. */
  if (expect(llmc_generate(s, prompt, n, &p, NULL, NULL, spec, 48, &specCount, NULL), LLMC_OK,
             NULL, "a second generation") ||
      memcmp(spec, plain, plainCount * sizeof(int32_t)) != 0) {
    fprintf(stderr, "draft_api: the second generation differs\n");
    return 1;
  }
  llmc_session_free(s);
  llmc_model_free(model);
  llmc_model_free(draft);
  return 0;
}
