//===- Session.h - the runtime's model and session state ------------------===//
//
// What Runtime.cpp (loading, sessions, appending tokens) and Generate.cpp
// (generation, speculative decoding) share: the loaded artifact, the
// session, and the internal calls between them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SESSION_H
#define LLMC_RUNTIME_SESSION_H

#include "llmc/llmc.h"
#include "llmc/model_abi.h"
#include "runtime/src/Tokenizer.h"
#include "runtime/src/grammar/Matcher.h"
#include "runtime/src/support/Json.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/mman.h>

/// weights.bin mapped read-only (an empty file maps to nothing).
struct Mapping {
  void *data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data && size)
      munmap(data, size);
  }
};

/// A loaded artifact; shared by the llmc_model handle and its sessions.
struct ModelData {
  ModelData() = default;
  ModelData(const ModelData &) = delete;
  ModelData &operator=(const ModelData &) = delete;
  std::string path;
  llmc::json::Value manifest;
  Mapping weights;
  void *library = nullptr;
  const llmc_model_abi *abi = nullptr;
  int64_t vocab = 0, capacity = 0, maxBatch = 0, kvCacheBytes = 0;
  std::unique_ptr<llmc::Tokenizer> tokenizer;   // when the artifact has one
  std::vector<int32_t> stopTokens;
  /// The entry points of one batch size.
  struct Entries {
    int decode = -1;
    std::vector<std::pair<int64_t, int>> prefill; // (seq, entry), by seq
  };
  std::map<int64_t, Entries> byBatch;

  ~ModelData() {
    if (library)
      dlclose(library);
  }
};

struct llmc_model {
  std::shared_ptr<ModelData> data;
};

struct llmc_session {
  std::shared_ptr<ModelData> model;
  int64_t batch = 1;
  const ModelData::Entries *entries = nullptr;
  void *ctx = nullptr;
  std::vector<std::vector<char>> caches;
  std::vector<void *> cachePtrs;
  std::vector<float> logits; // [batch, seq, vocab] of the largest entry
  int64_t length = 0;
  int64_t capacity = 0; // positions per cache: the compiled one or less

  bool deviceCaches = false; // cachePtrs came from the model's cache_alloc
  /// The draft model's session for speculative decoding
  /// (llmc_session_options.draft_model), or none.
  std::unique_ptr<llmc_session> draft;

  ~llmc_session() {
    if (ctx && deviceCaches)
      model->abi->cache_free(ctx, cachePtrs.data());
    if (ctx)
      model->abi->destroy(ctx);
  }
};

struct llmc_grammar {
  std::shared_ptr<ModelData> model;
  std::unique_ptr<llmc::grammar::Matcher> matcher;
};

namespace llmc::rt {

/// Records `message` as llmc_last_error() and returns `status`.
llmc_status fail(llmc_status status, std::string message);
/// Clears llmc_last_error() and returns LLMC_OK.
llmc_status ok();
/// Appends tokens [batch, count] (row-major) to every sequence; the logits
/// of every row to `allLogits` ([batch, count, vocab]) and/or of the last to
/// `lastLogits` ([batch, vocab]); with `lastIds` (a model with run_greedy)
/// only the greedy token of each sequence's last row, to `lastIds` [batch];
/// with `draw` and `uniforms` ([batch]; a model with run_sample) the token
/// drawn from it with that uniform instead, or -1 where the model left the
/// draw to the caller: that row's logits are then in `lastLogits`.
/// On an error nothing is appended.
llmc_status append(llmc_session *s, const int32_t *tokens, size_t count, float *allLogits,
                   float *lastLogits, int32_t *lastIds = nullptr,
                   const llmc_model_sampling *draw = nullptr, const double *uniforms = nullptr);
/// LLMC_OK for a single-sequence session; an error naming the batch else.
llmc_status needSingle(const llmc_session *s);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SESSION_H
