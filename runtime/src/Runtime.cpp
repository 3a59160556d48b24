//===- Runtime.cpp - the llmc runtime (llmc.h) ----------------------------===//
//
// Loading checks the artifact before trusting it: manifest.json's format
// version and target, libmodel.so's hash, weights.bin's size (and hash on
// request), and then that the library describes the same model as the
// manifest. A session owns KV caches of its batch and capacity (the
// compiled one or, when the code allows it, less) and feeds tokens through
// the prefill buckets (right-padded, chunked when the input is longer than
// the largest bucket) and the decode entry.
//
//===----------------------------------------------------------------------===//
#include "llmc/llmc.h"
#include "llmc/model_abi.h"
#include "runtime/src/Sampler.h"
#include "runtime/src/Tokenizer.h"
#include "runtime/src/support/Json.h"
#include "runtime/src/support/Sha256.h"
#include "runtime/src/support/WeightTable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef LLMC_VERSION
#define LLMC_VERSION "0.0.0"
#endif

namespace {

thread_local std::string lastError;

llmc_status fail(llmc_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

llmc_status ok() {
  lastError.clear();
  return LLMC_OK;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return bool(f) || f.eof();
}

/// weights.bin mapped read-only (an empty file maps to nothing).
struct Mapping {
  void *data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data && size)
      munmap(data, size);
  }
};

/// The features an x86-64 -march level needs.
bool hostSupports(const std::string &march) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (march == "x86-64" || march == "x86-64-v2")
    return true;
  if (march == "x86-64-v3")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (march == "x86-64-v4")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return march == "native"; // built for the machine that compiled it
#else
  (void)march;
  return false;
#endif
}

} // namespace

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

  ~llmc_session() {
    if (ctx && deviceCaches)
      model->abi->cache_free(ctx, cachePtrs.data());
    if (ctx)
      model->abi->destroy(ctx);
  }
};

namespace {

using json = llmc::json::Value;

llmc_status loadModel(const std::string &path, const llmc_load_options *options,
                      const std::shared_ptr<ModelData> &m) {
  m->path = path;
  std::string text, error;
  std::string manifestPath = path + "/manifest.json";
  if (!readFile(manifestPath, text))
    return fail(LLMC_ERROR_IO, "cannot read " + manifestPath + " (is " + path +
                                   " an artifact folder written by llmc compile?)");
  if (!llmc::json::parse(text, m->manifest, error))
    return fail(LLMC_ERROR_FORMAT, manifestPath + ": " + error);
  const json &man = m->manifest;
  const json *format = man.get("format_version");
  if (!format || !format->isInt())
    return fail(LLMC_ERROR_FORMAT, manifestPath + ": no format_version");
  if (format->asInt() != LLMC_ARTIFACT_FORMAT_VERSION)
    return fail(LLMC_ERROR_FORMAT, manifestPath + ": format version " +
                                       std::to_string(format->asInt()) + "; this runtime reads version " +
                                       std::to_string(LLMC_ARTIFACT_FORMAT_VERSION) + " (recompile the model)");
  const json *target = man.get("target");
  std::string kind = target && target->get("kind") ? target->get("kind")->asString() : "";
  std::string march = target && target->get("march") ? target->get("march")->asString() : "";
  std::string device = options && options->device ? options->device : "";
  if (kind != "cpu" && kind != "cuda")
    return fail(LLMC_ERROR_UNSUPPORTED, path + " is compiled for target '" + kind +
                                            "'; this runtime runs cpu and cuda artifacts");
  if (!device.empty() && device != "emulated" && device != kind)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "unknown device '" + device +
                                                 "' (the artifact's own: \"\", or \"emulated\")");
  if (device == "emulated" && kind != "cuda")
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "device 'emulated' runs cuda artifacts; " + path + " is compiled for " + kind);
  if (!hostSupports(march))
    return fail(LLMC_ERROR_UNSUPPORTED, path + " is compiled for -march=" + march +
                                            ", which this CPU does not support");

  // The library (libmodel.so, or the emulation's build of a cuda model):
  // its hash, then its description.
  bool emulated = device == "emulated";
  const json *lib = man.get(emulated ? "emulated_library" : "library");
  if (!lib || !lib->get("file"))
    return fail(LLMC_ERROR_UNSUPPORTED,
                path + (emulated ? " has no build for the CUDA emulation"
                                 : " has no library for its target (compiled without nvcc: "
                                   "run it with device \"emulated\", or compile it where nvcc is)"));
  std::string libSha = lib->get("sha256") ? lib->get("sha256")->asString() : "";
  std::string libPath = path + "/" + lib->get("file")->asString();
  std::string actual = llmc::sha256File(libPath, error);
  if (actual.empty())
    return fail(LLMC_ERROR_IO, error);
  if (actual != libSha)
    return fail(LLMC_ERROR_FORMAT, libPath + " does not match manifest.json (sha256 " + actual +
                                       ", expected " + libSha + ")");
  m->library = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->library)
    return fail(LLMC_ERROR_FORMAT, std::string("cannot load ") + libPath + ": " + dlerror());
  using AbiFn = const llmc_model_abi *(*)();
  auto abiFn = reinterpret_cast<AbiFn>(dlsym(m->library, "llmc_model_abi_v1"));
  if (!abiFn)
    return fail(LLMC_ERROR_FORMAT, libPath + " exports no llmc_model_abi_v1");
  m->abi = abiFn();
  if (!m->abi || m->abi->abi_version != LLMC_MODEL_ABI_VERSION)
    return fail(LLMC_ERROR_FORMAT, libPath + ": model ABI version " +
                                       std::to_string(m->abi ? m->abi->abi_version : 0) +
                                       ", this runtime speaks " +
                                       std::to_string(LLMC_MODEL_ABI_VERSION) +
                                       " (recompile the model)");
  if (m->abi->buffers == LLMC_BUFFERS_DEVICE && (!m->abi->cache_alloc || !m->abi->cache_free))
    return fail(LLMC_ERROR_FORMAT, libPath + " keeps its caches on a device but has no "
                                             "cache_alloc/cache_free");

  // weights.bin
  const json *weights = man.get("weights");
  std::string wSha = weights && weights->get("sha256") ? weights->get("sha256")->asString() : "";
  int64_t wBytes = weights && weights->get("bytes") ? weights->get("bytes")->asInt(-1) : -1;
  if (wSha != m->abi->weights_sha256 || wBytes != int64_t(m->abi->weights_bytes))
    return fail(LLMC_ERROR_FORMAT, "manifest.json and libmodel.so describe different weights");
  std::string wPath = path + "/weights.bin";
  int fd = open(wPath.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(LLMC_ERROR_IO, "cannot open " + wPath + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || int64_t(st.st_size) != wBytes) {
    close(fd);
    return fail(LLMC_ERROR_FORMAT, wPath + " is " + std::to_string(int64_t(st.st_size)) +
                                       " bytes; manifest.json says " + std::to_string(wBytes));
  }
  if (wBytes > 0) {
    void *p = mmap(nullptr, size_t(wBytes), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return fail(LLMC_ERROR_IO, "cannot map " + wPath + ": " + std::strerror(errno));
    }
    m->weights.data = p;
    m->weights.size = size_t(wBytes);
  }
  close(fd);
  std::vector<llmc::WeightRange> table;
  if (!llmc::readWeightTable(*weights, uint64_t(wBytes), table, error))
    return fail(LLMC_ERROR_FORMAT, path + "/" + error);
  if (!(options && options->skip_weight_checksums) &&
      !llmc::checkWeights(table, m->weights.data, error))
    return fail(LLMC_ERROR_FORMAT, path + "/" + error);

  // The tokenizer, and the default stop tokens.
  if (const json *tok = man.get("tokenizer"); tok && tok->kind == json::Object) {
    std::string tPath = path + "/" + (tok->get("file") ? tok->get("file")->asString() : "");
    std::string tText;
    if (!readFile(tPath, tText))
      return fail(LLMC_ERROR_IO, "cannot read " + tPath);
    llmc::Sha256 sha;
    sha.update(tText.data(), tText.size());
    std::string want = tok->get("sha256") ? tok->get("sha256")->asString() : "";
    if (sha.hexDigest() != want)
      return fail(LLMC_ERROR_FORMAT, tPath + " does not match manifest.json (sha256)");
    m->tokenizer = std::make_unique<llmc::Tokenizer>();
    if (!m->tokenizer->load(tText, error))
      return fail(LLMC_ERROR_FORMAT, error);
  }
  if (const json *stop = man.get("stop_tokens"); stop && stop->kind == json::Array)
    for (const json &id : stop->array)
      if (id.isInt())
        m->stopTokens.push_back(int32_t(id.asInt()));

  // The entries by batch size.
  m->vocab = m->abi->vocab;
  for (uint32_t i = 0; i < m->abi->num_entries; ++i) {
    const llmc_model_entry &e = m->abi->entries[i];
    m->maxBatch = std::max(m->maxBatch, e.batch);
    ModelData::Entries &b = m->byBatch[e.batch];
    if (e.kind == LLMC_ENTRY_DECODE)
      b.decode = int(i);
    else
      b.prefill.push_back({e.seq, int(i)});
  }
  for (auto &[batch, b] : m->byBatch) {
    std::sort(b.prefill.begin(), b.prefill.end());
    if (b.decode < 0)
      return fail(LLMC_ERROR_FORMAT, path + " has no decode entry for batch " +
                                         std::to_string(batch));
  }
  if (!m->byBatch.count(1))
    return fail(LLMC_ERROR_FORMAT, path + " has no batch-1 entry points");
  m->capacity = m->abi->num_caches ? m->abi->caches[0].capacity : 0;
  for (uint32_t i = 0; i < m->abi->num_caches; ++i) {
    const llmc_model_cache &c = m->abi->caches[i];
    int64_t elem = c.dtype == 1 ? 4 : (c.dtype == 10 || c.dtype == 16) ? 2 : 0;
    if (elem == 0 || c.capacity != m->capacity)
      return fail(LLMC_ERROR_FORMAT, std::string("cache '") + c.name + "' has an unsupported layout");
    m->kvCacheBytes += c.heads * c.capacity * c.head_dim * elem;
  }
  return ok();
}

/// Runs entry `entry` on `tokens` ([batch, n], row-major; each row padded
/// to the entry's length) at the session's current length; logits of the n
/// rows of each sequence go to `all` ([batch, n, vocab]) and/or the last
/// row's to `last` ([batch, vocab]). With `lastIds` (and a model that has
/// run_greedy) only the greedy token of each sequence's last row comes
/// back, to `lastIds` ([batch]), and no logits.
llmc_status runEntry(llmc_session *s, int entry, const int32_t *tokens, int64_t n, float *all,
                     float *last, int32_t *lastIds = nullptr) {
  const ModelData &m = *s->model;
  const llmc_model_entry &e = m.abi->entries[entry];
  int64_t b = s->batch, v = m.vocab;
  std::vector<int64_t> ids(size_t(b * e.seq), 0);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < n; ++i)
      ids[size_t(r * e.seq + i)] = tokens[r * n + i];
  char err[1024] = "";
  if (lastIds && m.abi->run_greedy) {
    std::vector<int64_t> chosen(size_t(b), 0);
    if (m.abi->run_greedy(s->ctx, uint32_t(entry), ids.data(), s->length, s->capacity,
                          s->cachePtrs.data(), n - 1, chosen.data(), err, sizeof err) != 0)
      return fail(LLMC_ERROR_INTERNAL, err);
    for (int64_t r = 0; r < b; ++r)
      lastIds[r] = int32_t(chosen[size_t(r)]);
    s->length += n;
    return LLMC_OK;
  }
  if (s->logits.size() < size_t(b * e.seq * v))
    s->logits.resize(size_t(b * e.seq * v));
  // Only the rows asked for: all n, else the last (a chunk whose logits
  // nobody reads asks for the last too: rows >= 1). The padding after n
  // never.
  int64_t row0 = 0, rows = e.seq;
  if (m.abi->run_rows)
    row0 = all ? 0 : n - 1, rows = all ? n : 1;
  int rc = m.abi->run_rows
               ? m.abi->run_rows(s->ctx, uint32_t(entry), ids.data(), s->length, s->capacity,
                                 s->cachePtrs.data(), row0, rows, s->logits.data(), err,
                                 sizeof err)
               : m.abi->run_at_capacity(s->ctx, uint32_t(entry), ids.data(), s->length,
                                        s->capacity, s->cachePtrs.data(), s->logits.data(), err,
                                        sizeof err);
  if (rc != 0)
    return fail(LLMC_ERROR_INTERNAL, err);
  for (int64_t r = 0; r < b; ++r) {
    const float *got = s->logits.data() + r * rows * v; // positions row0 ..
    if (all) // (then row0 is 0)
      std::memcpy(all + r * n * v, got, size_t(n * v) * sizeof(float));
    if (last)
      std::memcpy(last + r * v, got + (n - 1 - row0) * v, size_t(v) * sizeof(float));
  }
  s->length += n;
  return LLMC_OK;
}

/// Appends tokens [batch, count] (row-major) to every sequence; see
/// runEntry for the logits and `lastIds`.
llmc_status append(llmc_session *s, const int32_t *tokens, size_t count, float *allLogits,
                   float *lastLogits, int32_t *lastIds = nullptr) {
  if (!s)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the session is null");
  if (count == 0 || !tokens)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "append needs at least one token");
  const ModelData &m = *s->model;
  int64_t n = int64_t(count), b = s->batch;
  for (int64_t i = 0; i < b * n; ++i)
    if (tokens[i] < 0 || tokens[i] >= m.vocab)
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "token " + std::to_string(tokens[i]) + " at position " +
                      std::to_string(i % n) + (b > 1 ? " of sequence " + std::to_string(i / n) : "") +
                      " is outside the vocabulary [0, " + std::to_string(m.vocab) + ")");
  if (s->length + n > s->capacity)
    return fail(LLMC_ERROR_CAPACITY, "the session holds " + std::to_string(s->length) +
                                         " tokens; " + std::to_string(n) +
                                         " more exceed the cache capacity " +
                                         std::to_string(s->capacity));
  int64_t before = s->length, done = 0;
  std::vector<int32_t> chunk;
  std::vector<float> chunkAll;
  while (done < n) {
    int64_t left = n - done;
    int entry = -1;
    int64_t take = 1;
    if (left > 1) {
      // The smallest bucket that takes everything left and fits the cache,
      // else the largest that fits.
      for (auto [seq, idx] : s->entries->prefill)
        if (s->length + seq <= s->capacity) {
          entry = idx, take = std::min(left, seq);
          if (seq >= left)
            break;
        }
    }
    if (entry < 0)
      entry = s->entries->decode, take = 1;
    // Columns [done, done + take) of every row.
    chunk.resize(size_t(b * take));
    for (int64_t r = 0; r < b; ++r)
      std::memcpy(chunk.data() + r * take, tokens + r * n + done, size_t(take) * sizeof(int32_t));
    float *all = nullptr;
    if (allLogits) {
      chunkAll.resize(size_t(b * take * m.vocab));
      all = chunkAll.data();
    }
    float *last = lastLogits && done + take == n ? lastLogits : nullptr;
    int32_t *ids = lastIds && done + take == n ? lastIds : nullptr;
    if (llmc_status st = runEntry(s, entry, chunk.data(), take, all, last, ids); st != LLMC_OK) {
      s->length = before;
      return st;
    }
    if (allLogits)
      for (int64_t r = 0; r < b; ++r)
        std::memcpy(allLogits + (r * n + done) * m.vocab, chunkAll.data() + r * take * m.vocab,
                    size_t(take * m.vocab) * sizeof(float));
    done += take;
  }
  return ok();
}

llmc_status needSingle(const llmc_session *s) {
  if (s && s->batch != 1)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "this session runs a batch of " + std::to_string(s->batch) +
                    " sequences: use the _batch functions");
  return LLMC_OK;
}

} // namespace

extern "C" {

const char *llmc_last_error(void) { return lastError.c_str(); }

const char *llmc_version(void) { return LLMC_VERSION; }

llmc_status llmc_model_load(const char *path, const llmc_load_options *options,
                            llmc_model **out_model) {
  if (!out_model)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "out_model is null");
  *out_model = nullptr;
  if (!path)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the path is null");
  auto m = std::make_shared<ModelData>();
  if (llmc_status st = loadModel(path, options, m); st != LLMC_OK)
    return st;
  *out_model = new llmc_model{std::move(m)};
  return ok();
}

void llmc_model_free(llmc_model *model) { delete model; }

llmc_status llmc_model_get_info(const llmc_model *model, llmc_model_info *out) {
  if (!model || !out)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "model and out_info must not be null");
  const ModelData &m = *model->data;
  out->vocab = m.vocab;
  out->capacity = m.capacity;
  out->any_capacity = m.abi->any_capacity;
  out->max_batch = m.maxBatch;
  out->num_prefill_buckets = int64_t(m.byBatch.at(1).prefill.size());
  out->weights_bytes = int64_t(m.weights.size);
  out->kv_cache_bytes = m.kvCacheBytes;
  return ok();
}

int32_t llmc_model_has_tokenizer(const llmc_model *model) {
  return model && model->data->tokenizer ? 1 : 0;
}

llmc_status llmc_tokenize(const llmc_model *model, const char *text, size_t len,
                          int32_t add_special, int32_t *out_ids, size_t capacity,
                          size_t *out_count) {
  if (!model || (!text && len > 0) || !out_count)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "model, text and out_count must not be null");
  if (!model->data->tokenizer)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "this artifact has no tokenizer (compile with "
                                             "--tokenizer, or pass token ids)");
  std::vector<int32_t> ids =
      model->data->tokenizer->encode(std::string_view(text ? text : "", len), add_special != 0);
  *out_count = ids.size();
  if (ids.size() > capacity || (!out_ids && !ids.empty()))
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the text has " + std::to_string(ids.size()) +
                                                 " tokens; the buffer holds " +
                                                 std::to_string(capacity));
  std::copy(ids.begin(), ids.end(), out_ids);
  return ok();
}

llmc_status llmc_detokenize(const llmc_model *model, const int32_t *ids, size_t n,
                            char *out_text, size_t capacity, size_t *out_len) {
  if (!model || (!ids && n > 0) || !out_len)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "model, ids and out_len must not be null");
  if (!model->data->tokenizer)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "this artifact has no tokenizer");
  std::string text = model->data->tokenizer->decode(std::vector<int32_t>(ids, ids + n));
  *out_len = text.size();
  if (!out_text || text.size() + 1 > capacity)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the text needs " + std::to_string(text.size() + 1) +
                                                 " bytes; the buffer holds " +
                                                 std::to_string(capacity));
  std::memcpy(out_text, text.data(), text.size());
  out_text[text.size()] = '\0';
  return ok();
}

llmc_status llmc_model_stop_tokens(const llmc_model *model, int32_t *out_ids, size_t capacity,
                                   size_t *out_count) {
  if (!model || !out_count)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "model and out_count must not be null");
  const std::vector<int32_t> &stop = model->data->stopTokens;
  *out_count = stop.size();
  for (size_t i = 0; i < stop.size() && i < capacity && out_ids; ++i)
    out_ids[i] = stop[i];
  return ok();
}

llmc_status llmc_session_create(llmc_model *model, const llmc_session_options *options,
                                llmc_session **out_session) {
  if (!out_session)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "out_session is null");
  *out_session = nullptr;
  if (!model)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the model is null");
  int32_t threads = options ? options->threads : 0;
  if (threads < 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "threads must be >= 0");
  auto s = std::make_unique<llmc_session>();
  s->model = model->data;
  const ModelData &m = *s->model;
  s->batch = options && options->batch > 0 ? options->batch : 1;
  auto found = m.byBatch.find(s->batch);
  if (found == m.byBatch.end()) {
    std::string compiled;
    for (auto &[batch, e] : m.byBatch)
      compiled += (compiled.empty() ? "" : ", ") + std::to_string(batch);
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "batch " + std::to_string(s->batch) +
                                                 " is not compiled (the artifact has " +
                                                 compiled + "; llmc compile --batch)");
  }
  s->entries = &found->second;
  s->capacity = options && options->capacity > 0 ? options->capacity : m.capacity;
  if (s->capacity > m.capacity || (s->capacity != m.capacity && !m.abi->any_capacity))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "a capacity of " + std::to_string(s->capacity) + " positions: this model takes " +
                    (m.abi->any_capacity ? "1 to " + std::to_string(m.capacity) +
                                               " (llmc compile --max-seq)"
                                         : "only its compiled " + std::to_string(m.capacity) +
                                               " (its code reads the caches with that shape)"));
  if (options && options->capacity < 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "capacity must be >= 0 (0: the compiled one)");
  char err[1024] = "";
  if (options && (options->num_cpus < 0 || (options->num_cpus > 0 && !options->cpus)))
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "cpus must list num_cpus >= 0 CPU numbers");
  if (options && options->num_cpus > 0 && !m.abi->set_affinity)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                std::string("this model runs on ") + m.abi->device + ": it has no threads to pin");
  if (m.abi->create(m.weights.data, m.weights.size, threads, &s->ctx, err, sizeof err) != 0)
    return fail(LLMC_ERROR_INTERNAL, err);
  if (options && options->num_cpus > 0 &&
      m.abi->set_affinity(s->ctx, options->cpus, options->num_cpus, err, sizeof err) != 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, err);
  if (m.abi->buffers == LLMC_BUFFERS_DEVICE) {
    s->cachePtrs.assign(m.abi->num_caches, nullptr);
    if (m.abi->cache_alloc(s->ctx, s->batch, s->capacity, s->cachePtrs.data(), err, sizeof err) !=
        0)
      return fail(LLMC_ERROR_INTERNAL, err);
    s->deviceCaches = true;
  } else {
    for (uint32_t i = 0; i < m.abi->num_caches; ++i) {
      const llmc_model_cache &c = m.abi->caches[i];
      int64_t elem = c.dtype == 1 ? 4 : 2;
      s->caches.emplace_back(size_t(s->batch * c.heads * s->capacity * c.head_dim * elem), 0);
    }
    for (auto &c : s->caches)
      s->cachePtrs.push_back(c.data());
  }
  *out_session = s.release();
  return ok();
}

void llmc_session_free(llmc_session *session) { delete session; }

llmc_status llmc_session_reset(llmc_session *session) {
  if (!session)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the session is null");
  session->length = 0;
  return ok();
}

llmc_status llmc_session_rollback(llmc_session *session, int64_t length) {
  if (!session)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the session is null");
  if (length < 0 || length > session->length)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "cannot roll back to " + std::to_string(length) + " tokens: the session holds " +
                    std::to_string(session->length));
  session->length = length;
  return ok();
}

int64_t llmc_session_length(const llmc_session *session) { return session ? session->length : 0; }

int64_t llmc_session_capacity(const llmc_session *session) {
  return session ? session->capacity : 0;
}

llmc_status llmc_session_append(llmc_session *session, const int32_t *tokens, size_t n,
                                float *logits) {
  if (llmc_status st = needSingle(session); st != LLMC_OK)
    return st;
  return append(session, tokens, n, nullptr, logits);
}

llmc_status llmc_session_append_all(llmc_session *session, const int32_t *tokens, size_t n,
                                    float *all_logits) {
  if (!all_logits)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "all_logits is null");
  if (llmc_status st = needSingle(session); st != LLMC_OK)
    return st;
  return append(session, tokens, n, all_logits, nullptr);
}

llmc_status llmc_session_append_batch(llmc_session *session, const int32_t *tokens, size_t n,
                                      float *logits) {
  return append(session, tokens, n, nullptr, logits);
}

int64_t llmc_session_batch(const llmc_session *session) { return session ? session->batch : 0; }

void llmc_generate_params_init(llmc_generate_params *p) {
  if (!p)
    return;
  *p = llmc_generate_params{};
  p->max_new_tokens = 128;
  p->temperature = 0;
  p->top_k = 0;
  p->top_p = 1;
  p->min_p = 0;
  p->repetition_penalty = 1;
  p->seed = 0;
  p->speculative = LLMC_SPECULATIVE_NONE;
  p->draft_tokens = 4;
  p->ngram_max = 3;
  p->ngram_min = 1;
}

} // extern "C"

namespace {

/// Prompt lookup: up to `k` tokens that followed the latest earlier
/// occurrence of the last n tokens of `text` (n from nmax down to nmin;
/// the first size that occurs wins), or none.
std::vector<int32_t> promptLookup(const std::vector<int32_t> &text, size_t k, size_t nmin,
                                  size_t nmax) {
  size_t len = text.size();
  for (size_t n = std::min(nmax, len > 0 ? len - 1 : 0); n >= nmin && n > 0; --n) {
    const int32_t *tail = text.data() + (len - n);
    // Occurrences starting at i < len - n, latest first.
    for (size_t i = len - n; i-- > 0;)
      if (std::equal(tail, tail + n, text.data() + i)) {
        size_t from = i + n, to = std::min(len, from + k);
        if (from < to)
          return std::vector<int32_t>(text.begin() + int64_t(from), text.begin() + int64_t(to));
      }
  }
  return {};
}

/// Generation for every sequence of the session: prompts [batch,
/// prompt_len], out [batch, out_capacity], counts [batch]. Each sequence
/// samples with its own generator (seed + its index) and stops on its own;
/// a finished one keeps feeding its last token, whose results are ignored.
llmc_status generateRows(llmc_session *session, const int32_t *prompts, size_t promptLen,
                         const llmc_generate_params *params, llmc_token_callback callback,
                         void *user, int32_t *out, size_t outCapacity, size_t *counts,
                         llmc_generate_stats *stats) {
  using Clock = std::chrono::steady_clock;
  if (!session)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the session is null");
  int64_t b = session->batch;
  if (counts)
    std::fill(counts, counts + b, 0);
  if (!prompts || promptLen == 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the prompt is empty");
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  if (params)
    p = *params;
  if (p.max_new_tokens < 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "max_new_tokens must be >= 0");
  if (p.max_new_tokens > 0 && (!out || outCapacity < size_t(p.max_new_tokens)))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "out_tokens must hold max_new_tokens (" + std::to_string(p.max_new_tokens) +
                    ") tokens per sequence");
  if (p.num_stop_tokens > 0 && !p.stop_tokens)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "stop_tokens is null");
  std::vector<std::string> stopStrings;
  if (p.num_stop_strings > 0) {
    if (!p.stop_strings)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "stop_strings is null");
    if (!session->model->tokenizer)
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "stop strings need the artifact's tokenizer (compile with --tokenizer)");
    for (size_t i = 0; i < p.num_stop_strings; ++i) {
      if (!p.stop_strings[i] || !*p.stop_strings[i])
        return fail(LLMC_ERROR_INVALID_ARGUMENT,
                    "stop_strings[" + std::to_string(i) + "] is null or empty");
      stopStrings.emplace_back(p.stop_strings[i]);
    }
  }
  llmc::SamplerOptions so;
  so.temperature = p.temperature, so.topK = p.top_k, so.topP = p.top_p, so.minP = p.min_p;
  so.repetitionPenalty = p.repetition_penalty;
  std::string why;
  if (!llmc::Sampler::validate(so, why))
    return fail(LLMC_ERROR_INVALID_ARGUMENT, why);
  std::vector<llmc::Sampler> samplers;
  for (int64_t r = 0; r < b; ++r) {
    so.seed = p.seed + uint64_t(r);
    samplers.emplace_back(so);
  }
  bool speculate = p.speculative != LLMC_SPECULATIVE_NONE;
  if (p.speculative != LLMC_SPECULATIVE_NONE && p.speculative != LLMC_SPECULATIVE_PROMPT_LOOKUP)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "speculative must be LLMC_SPECULATIVE_NONE or LLMC_SPECULATIVE_PROMPT_LOOKUP");
  if (speculate) {
    if (b != 1)
      return fail(LLMC_ERROR_UNSUPPORTED, "speculative decoding runs single-sequence sessions");
    if (p.draft_tokens < 1 || p.draft_tokens > 64)
      return fail(LLMC_ERROR_INVALID_ARGUMENT, "draft_tokens must be in 1 .. 64");
    if (p.ngram_min < 1 || p.ngram_max < p.ngram_min || p.ngram_max > 64)
      return fail(LLMC_ERROR_INVALID_ARGUMENT,
                  "the n-gram sizes must satisfy 1 <= ngram_min <= ngram_max <= 64");
  }
  const ModelData &m = *session->model;
  std::vector<float> logits(static_cast<size_t>(b * m.vocab));
  std::vector<std::vector<int32_t>> history(static_cast<size_t>(b));
  for (int64_t r = 0; r < b; ++r)
    history[size_t(r)].assign(prompts + r * int64_t(promptLen), prompts + (r + 1) * int64_t(promptLen));
  // A stop string completed by the newest token lies in the text of the
  // last `window` tokens (each adds at least a byte; a few more tokens keep
  // the decoder's start-of-text rules away from it), so each step decodes
  // only those: no quadratic cost over a long generation.
  size_t window = 0;
  for (const std::string &s : stopStrings)
    window = std::max(window, s.size() + 4);
  auto completesStopString = [&](int64_t r) {
    if (stopStrings.empty())
      return false;
    const std::vector<int32_t> &h = history[size_t(r)];
    size_t generated = h.size() - promptLen, from = h.size() - std::min(generated, window);
    std::string text = session->model->tokenizer->decode(
        std::vector<int32_t>(h.begin() + int64_t(from), h.end()));
    for (const std::string &s : stopStrings)
      if (text.find(s) != std::string::npos)
        return true;
    return false;
  };
  // Greedy without a repetition penalty needs only the argmax of each
  // step: a model that computes it where the logits are (run_greedy: a GPU
  // model) sends back token ids instead of the logits.
  bool deviceGreedy =
      m.abi->run_greedy && p.temperature == 0 && p.repetition_penalty == 1 && !speculate;
  std::vector<int32_t> greedy(static_cast<size_t>(b));
  auto step = [&](const int32_t *tokens, size_t count) {
    return deviceGreedy ? append(session, tokens, count, nullptr, nullptr, greedy.data())
                        : append(session, tokens, count, nullptr, logits.data());
  };
  auto start = Clock::now();
  session->length = 0;
  if (llmc_status st = step(prompts, promptLen); st != LLMC_OK)
    return st;
  std::vector<bool> finished(static_cast<size_t>(b), false);
  std::vector<int32_t> next(static_cast<size_t>(b));
  size_t produced = 0;
  Clock::time_point first = start;
  int64_t drafted = 0, accepted = 0, verifies = 0;
  // Writes token `produced` of row r; returns whether the row is done.
  auto emit = [&](int64_t r, int32_t token) {
    out[size_t(r) * outCapacity + produced] = token;
    history[size_t(r)].push_back(token);
    if (counts)
      counts[r] = produced + 1;
    bool stop = std::find(p.stop_tokens, p.stop_tokens + p.num_stop_tokens, token) !=
                    p.stop_tokens + p.num_stop_tokens ||
                completesStopString(r);
    if (callback && b == 1 && callback(token, user) != 0)
      stop = true;
    if (stop || produced + 1 == size_t(p.max_new_tokens))
      finished[size_t(r)] = true;
    return bool(finished[size_t(r)]);
  };
  std::vector<float> verified;
  llmc::Sampler::Distribution target;
  int32_t pending = -1; // a token speculative sampling chose on a rejection
  while (produced < size_t(p.max_new_tokens)) {
    bool all = true;
    for (int64_t r = 0; r < b; ++r) {
      if (finished[size_t(r)]) {
        next[size_t(r)] = history[size_t(r)].back();
        continue;
      }
      int32_t token = pending >= 0 ? pending
                      : deviceGreedy
                          ? greedy[size_t(r)]
                          : samplers[size_t(r)].sample(logits.data() + r * m.vocab, m.vocab,
                                                       history[size_t(r)]);
      pending = -1;
      next[size_t(r)] = token;
      all = emit(r, token) && all;
    }
    ++produced;
    if (produced == 1)
      first = Clock::now();
    if (all || session->length + 1 > session->capacity)
      break;
    // Prompt lookup: the tokens that followed the latest earlier occurrence
    // of the text's last n tokens, verified together with the new token.
    std::vector<int32_t> draft;
    if (speculate) {
      size_t room = std::min<size_t>(size_t(p.max_new_tokens) - produced,
                                     size_t(session->capacity - session->length - 1));
      draft = promptLookup(history[0], std::min<size_t>(size_t(p.draft_tokens), room),
                           size_t(p.ngram_min), size_t(p.ngram_max));
    }
    if (draft.empty()) {
      if (llmc_status st = step(next.data(), 1); st != LLMC_OK)
        return st;
      continue;
    }
    std::vector<int32_t> chunk = {next[0]};
    chunk.insert(chunk.end(), draft.begin(), draft.end());
    int64_t before = session->length;
    verified.resize(chunk.size() * size_t(m.vocab));
    if (llmc_status st = append(session, chunk.data(), chunk.size(), verified.data(), nullptr);
        st != LLMC_OK)
      return st;
    ++verifies;
    drafted += int64_t(draft.size());
    // Draft token i stands if it is what the sampler chooses after the
    // ones before it: greedy, the choice itself; sampling, with the
    // probability p(token) the sampler gives it (the draft proposed it with
    // certainty), and on a rejection the token comes from p without it,
    // renormalised: each token then follows p exactly.
    size_t kept = 0;
    bool done = false;
    llmc::Sampler &sampler = samplers[0];
    while (kept < draft.size() && !done) {
      const float *row = verified.data() + kept * size_t(m.vocab);
      bool stands;
      if (sampler.greedy()) {
        stands = sampler.sample(row, m.vocab, history[0]) == draft[kept];
      } else {
        sampler.distribution(row, m.vocab, history[0], target);
        stands = sampler.uniform() < target.probability(draft[kept]);
        if (!stands)
          pending = sampler.draw(target, draft[kept]);
      }
      if (!stands)
        break;
      done = emit(0, draft[kept]);
      ++produced;
      ++kept;
    }
    accepted += int64_t(kept);
    std::copy_n(verified.data() + kept * size_t(m.vocab), size_t(m.vocab), logits.data());
    session->length = before + 1 + int64_t(kept); // the rejected rows are written over later
    if (done)
      break;
  }
  auto end = Clock::now();
  if (stats) {
    auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    *stats = llmc_generate_stats{};
    stats->prompt_tokens = int64_t(promptLen) * b;
    stats->generated_tokens = int64_t(produced) * b;
    stats->time_to_first_token_ms = produced ? ms(first - start) : 0;
    stats->total_ms = ms(end - start);
    stats->draft_tokens = drafted;
    stats->accepted_tokens = accepted;
    stats->verify_steps = verifies;
    if (produced > 1) {
      stats->time_per_output_token_ms = ms(end - first) / double(produced - 1);
      stats->tokens_per_second = 1000.0 * double(b) / stats->time_per_output_token_ms;
    }
  }
  return ok();
}

} // namespace

extern "C" {

llmc_status llmc_generate(llmc_session *session, const int32_t *prompt, size_t prompt_len,
                          const llmc_generate_params *params, llmc_token_callback callback,
                          void *user_data, int32_t *out_tokens, size_t out_capacity,
                          size_t *out_count, llmc_generate_stats *stats) {
  if (out_count)
    *out_count = 0;
  if (llmc_status st = needSingle(session); st != LLMC_OK)
    return st;
  return generateRows(session, prompt, prompt_len, params, callback, user_data, out_tokens,
                      out_capacity, out_count, stats);
}

llmc_status llmc_generate_batch(llmc_session *session, const int32_t *prompts, size_t prompt_len,
                                const llmc_generate_params *params, int32_t *out_tokens,
                                size_t out_capacity, size_t *out_counts,
                                llmc_generate_stats *stats) {
  return generateRows(session, prompts, prompt_len, params, nullptr, nullptr, out_tokens,
                      out_capacity, out_counts, stats);
}

} // extern "C"
