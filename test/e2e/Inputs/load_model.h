/* What the model-ABI test programs share: dlopen a compiled model library
 * and map its weights.bin. Header-only C. */
#ifndef LLMC_TEST_LOAD_MODEL_H
#define LLMC_TEST_LOAD_MODEL_H

#include "llmc/model_abi.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct LoadedModel {
  const llmc_model_abi *abi;
  void *weights; /* NULL for an empty weights.bin */
  uint64_t bytes;
} LoadedModel;

/* Prints "<tool>: what[: detail]" and returns 1. */
static int loadFail(const char *tool, const char *what, const char *detail) {
  fprintf(stderr, "%s: %s%s%s\n", tool, what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

/* 0, or 1 after saying what failed. */
static int loadModel(const char *tool, const char *library, const char *weightsPath,
                     LoadedModel *out) {
  void *lib = dlopen(library, RTLD_NOW);
  if (!lib)
    return loadFail(tool, "dlopen", dlerror());
  const llmc_model_abi *(*get)(void) =
      (const llmc_model_abi *(*)(void))dlsym(lib, "llmc_model_abi_v1");
  out->abi = get ? get() : NULL;
  if (!out->abi || out->abi->abi_version != LLMC_MODEL_ABI_VERSION)
    return loadFail(tool, "not a model library of this ABI", library);
  int fd = open(weightsPath, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0)
    return loadFail(tool, "cannot open the weights", weightsPath);
  out->bytes = (uint64_t)st.st_size;
  out->weights = NULL;
  if (st.st_size) {
    out->weights = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (out->weights == MAP_FAILED)
      return loadFail(tool, "cannot map the weights", weightsPath);
  }
  close(fd);
  return 0;
}

/* Two contexts of a model whose caches live on its device (run_greedy and
 * run_sample are checked against run_at_capacity on a twin), each with
 * batch-1 caches of the compiled capacity: 0, or 1 after saying what
 * failed. */
static int deviceTwins(const char *tool, const LoadedModel *lm, void *ctx[2],
                       void *caches[2][64]) {
  char err[1024] = "";
  const llmc_model_abi *abi = lm->abi;
  for (int c = 0; c < 2; ++c) {
    if (abi->create(lm->weights, lm->bytes, 1, &ctx[c], err, sizeof err) != 0)
      return loadFail(tool, "create", err);
    if (abi->cache_alloc(ctx[c], 1, abi->caches[0].capacity, caches[c], err, sizeof err) != 0)
      return loadFail(tool, "cache_alloc", err);
  }
  return 0;
}

static void freeDeviceTwins(const LoadedModel *lm, void *ctx[2], void *caches[2][64]) {
  for (int c = 0; c < 2; ++c) {
    lm->abi->cache_free(ctx[c], caches[c]);
    lm->abi->destroy(ctx[c]);
  }
}

#endif /* LLMC_TEST_LOAD_MODEL_H */
