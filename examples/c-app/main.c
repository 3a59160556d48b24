/* A small C program that runs a compiled model through the llmc runtime:
 *
 *   llmc compile model.onnx -o model.llmc
 *   cc main.c -I<llmc>/include -L<llmc>/lib -lllmc_runtime -lstdc++ -ldl -lpthread
 *   ./a.out model.llmc 1,2,3 16         # prompt ids, tokens to generate
 *
 * It prints the generated ids, comma-separated, as they come. */
#include <llmc/llmc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_token(int32_t token, void *user) {
  int *first = (int *)user;
  printf(*first ? "%d" : ",%d", token);
  fflush(stdout);
  *first = 0;
  return 0; /* keep going */
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s model.llmc ids [max_new_tokens]\n", argv[0]);
    return 2;
  }
  int32_t prompt[1024];
  size_t n = 0;
  for (char *tok = strtok(argv[2], ","); tok && n < 1024; tok = strtok(NULL, ","))
    prompt[n++] = (int32_t)atoi(tok);
  int max_new = argc > 3 ? atoi(argv[3]) : 16;

  llmc_model *model = NULL;
  if (llmc_model_load(argv[1], NULL, &model) != LLMC_OK) {
    fprintf(stderr, "load: %s\n", llmc_last_error());
    return 1;
  }
  llmc_model_info info;
  llmc_model_get_info(model, &info);
  llmc_session *session = NULL;
  if (llmc_session_create(model, NULL, &session) != LLMC_OK) {
    fprintf(stderr, "session: %s\n", llmc_last_error());
    llmc_model_free(model);
    return 1;
  }
  llmc_generate_params params;
  llmc_generate_params_init(&params); /* greedy */
  params.max_new_tokens = max_new;
  int32_t *out = malloc(sizeof(int32_t) * (size_t)(max_new > 0 ? max_new : 1));
  size_t count = 0;
  int first = 1;
  llmc_generate_stats stats;
  llmc_status st = llmc_generate(session, prompt, n, &params, print_token, &first, out,
                                 (size_t)max_new, &count, &stats);
  printf("\n");
  if (st != LLMC_OK)
    fprintf(stderr, "generate: %s\n", llmc_last_error());
  else
    fprintf(stderr, "vocab %lld, %zu tokens, %.1f tokens/s\n", (long long)info.vocab, count,
            stats.tokens_per_second);
  free(out);
  llmc_session_free(session);
  llmc_model_free(model);
  return st == LLMC_OK ? 0 : 1;
}
