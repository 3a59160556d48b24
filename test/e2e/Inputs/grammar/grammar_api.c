/* The C API of constrained generation (llmc_grammar_create,
 * llmc_generate_params.grammar): misuse is a status naming the problem;
 * generated text matches the grammar, single, batched (sampled) and from
 * two threads sharing one grammar; a grammar of only the empty text
 * generates nothing. Prints "ok: ..." lines; exits 1 at the first surprise.
 *   grammar_api MODEL.llmc OTHER.llmc
 * MODEL: a tokenizer, compiled with --batch 1,2; OTHER: no tokenizer. */
#include "llmc/llmc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int expect(llmc_status got, llmc_status want, const char *needle, const char *what) {
  const char *err = llmc_last_error();
  if (got != want || (needle && !strstr(err, needle))) {
    fprintf(stderr, "grammar_api: %s: status %d (wanted %d), \"%s\"\n", what, got, want, err);
    return 1;
  }
  printf("ok: %s%s%s\n", what, needle ? ": " : "", needle ? err : "");
  return 0;
}

/* Whether `s` is ddd-dddd. */
static int phone(const char *s) {
  if (strlen(s) != 8 || s[3] != '-')
    return 0;
  for (int i = 0; i < 8; ++i)
    if (i != 3 && (s[i] < '0' || s[i] > '9'))
      return 0;
  return 1;
}

static const char *Pattern = "[0-9]{3}-[0-9]{4}";
static const int32_t Prompt[] = {5, 17, 42};

static int text(llmc_model *m, const int32_t *ids, size_t n, char *out, size_t cap) {
  size_t len;
  return llmc_detokenize(m, ids, n, out, cap, &len) == LLMC_OK;
}

static int calls;
static int count(int32_t token, void *user) {
  (void)token, (void)user;
  ++calls;
  return 0;
}

typedef struct {
  llmc_model *model;
  const llmc_grammar *grammar;
  uint64_t seed;
  int valid;
} Job;

static void *generate(void *arg) {
  Job *job = arg;
  llmc_session *s;
  if (llmc_session_create(job->model, NULL, &s) != LLMC_OK)
    return NULL;
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.grammar = job->grammar;
  p.temperature = 1;
  p.seed = job->seed;
  p.max_new_tokens = 32;
  int32_t out[32];
  size_t n;
  char buf[256];
  job->valid = llmc_generate(s, Prompt, 3, &p, NULL, NULL, out, 32, &n, NULL) == LLMC_OK &&
               text(job->model, out, n, buf, sizeof buf) && phone(buf);
  llmc_session_free(s);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: grammar_api MODEL.llmc OTHER.llmc\n");
    return 2;
  }
  llmc_model *model = NULL, *other = NULL;
  if (llmc_model_load(argv[1], NULL, &model) != LLMC_OK ||
      llmc_model_load(argv[2], NULL, &other) != LLMC_OK) {
    fprintf(stderr, "grammar_api: load: %s\n", llmc_last_error());
    return 1;
  }
  llmc_grammar *g = NULL;
  size_t plen = strlen(Pattern);
  if (expect(llmc_grammar_create(NULL, LLMC_GRAMMAR_REGEX, Pattern, plen, &g),
             LLMC_ERROR_INVALID_ARGUMENT, "model is null", "no model") ||
      expect(llmc_grammar_create(model, LLMC_GRAMMAR_REGEX, Pattern, plen, NULL),
             LLMC_ERROR_INVALID_ARGUMENT, "out_grammar is null", "no out pointer") ||
      expect(llmc_grammar_create(model, 7, Pattern, plen, &g), LLMC_ERROR_INVALID_ARGUMENT,
             "kind must be", "an unknown kind") ||
      expect(llmc_grammar_create(model, LLMC_GRAMMAR_REGEX, "(a", 2, &g),
             LLMC_ERROR_INVALID_ARGUMENT, "regex at offset 2: expected ')'", "a bad regex") ||
      expect(llmc_grammar_create(model, LLMC_GRAMMAR_JSON_SCHEMA, "{\"type\":\"date\"}", 15, &g),
             LLMC_ERROR_INVALID_ARGUMENT, "unknown type 'date'", "a bad schema") ||
      expect(llmc_grammar_create(other, LLMC_GRAMMAR_REGEX, Pattern, plen, &g),
             LLMC_ERROR_INVALID_ARGUMENT, "tokenizer", "a model without a tokenizer"))
    return 1;
  if (g) {
    fprintf(stderr, "grammar_api: a failed create left a grammar\n");
    return 1;
  }
  /* Only the first len bytes are the grammar. */
  if (expect(llmc_grammar_create(model, LLMC_GRAMMAR_REGEX, Pattern, plen, &g), LLMC_OK, NULL,
             "a regex"))
    return 1;

  /* Greedy, single sequence: the text is a phone number, the callback saw
   * every token, and the grammar's time is reported. */
  llmc_session *s = NULL, *b2 = NULL, *o = NULL;
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.grammar = g;
  p.max_new_tokens = 32;
  int32_t out[64];
  size_t n = 0, counts[2];
  llmc_generate_stats st;
  char buf[256];
  if (llmc_session_create(model, NULL, &s) != LLMC_OK ||
      llmc_generate(s, Prompt, 3, &p, count, NULL, out, 64, &n, &st) != LLMC_OK ||
      !text(model, out, n, buf, sizeof buf)) {
    fprintf(stderr, "grammar_api: greedy: %s\n", llmc_last_error());
    return 1;
  }
  if (!phone(buf) || calls != (int)n || n == 0 || !(st.grammar_ms > 0)) {
    fprintf(stderr, "grammar_api: greedy gave \"%s\" (%zu tokens, %d callbacks, %f ms)\n", buf,
            n, calls, st.grammar_ms);
    return 1;
  }
  printf("ok: greedy text matches %s\n", Pattern);

  /* Batched and sampled: each row matches. */
  llmc_session_options so = {0};
  so.batch = 2;
  int32_t prompts[6] = {5, 17, 42, 9, 9, 9};
  p.temperature = 1;
  p.seed = 11;
  if (llmc_session_create(model, &so, &b2) != LLMC_OK ||
      llmc_generate_batch(b2, prompts, 3, &p, out, 32, counts, NULL) != LLMC_OK) {
    fprintf(stderr, "grammar_api: batch: %s\n", llmc_last_error());
    return 1;
  }
  for (int r = 0; r < 2; ++r)
    if (!text(model, out + r * 32, counts[r], buf, sizeof buf) || !phone(buf)) {
      fprintf(stderr, "grammar_api: batch row %d gave \"%s\"\n", r, buf);
      return 1;
    }
  printf("ok: a batch of 2, sampled: both rows match\n");

  /* Two threads, one grammar. */
  Job jobs[2] = {{model, g, 1, 0}, {model, g, 2, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; ++i)
    pthread_create(&t[i], NULL, generate, &jobs[i]);
  for (int i = 0; i < 2; ++i)
    pthread_join(t[i], NULL);
  if (!jobs[0].valid || !jobs[1].valid) {
    fprintf(stderr, "grammar_api: threads: %d %d\n", jobs[0].valid, jobs[1].valid);
    return 1;
  }
  printf("ok: two threads sharing the grammar\n");

  /* Another vocabulary: refused. */
  if (llmc_session_create(other, NULL, &o) != LLMC_OK)
    return 1;
  if (expect(llmc_generate(o, Prompt, 3, &p, NULL, NULL, out, 64, &n, NULL),
             LLMC_ERROR_INVALID_ARGUMENT, "another vocabulary", "a model of another vocabulary"))
    return 1;

  /* The empty text only: nothing generated. */
  llmc_grammar *empty = NULL;
  if (llmc_grammar_create(model, LLMC_GRAMMAR_GBNF, "root ::= \"\"", 11, &empty) != LLMC_OK ||
      llmc_generate(s, Prompt, 3, &(llmc_generate_params){.max_new_tokens = 8, .top_p = 1,
                                                          .repetition_penalty = 1,
                                                          .grammar = empty},
                    NULL, NULL, out, 64, &n, NULL) != LLMC_OK ||
      n != 0) {
    fprintf(stderr, "grammar_api: empty grammar: %zu tokens, %s\n", n, llmc_last_error());
    return 1;
  }
  printf("ok: a grammar of only the empty text generates nothing\n");
  llmc_grammar_free(empty);
  llmc_grammar_free(g);
  llmc_grammar_free(NULL);
  llmc_session_free(o);
  llmc_session_free(b2);
  llmc_session_free(s);
  llmc_model_free(other);
  llmc_model_free(model);
  return 0;
}
