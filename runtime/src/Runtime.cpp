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
#include "runtime/src/Session.h"
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
} // namespace

namespace llmc::rt {

llmc_status fail(llmc_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

llmc_status ok() {
  lastError.clear();
  return LLMC_OK;
}

} // namespace llmc::rt

using llmc::rt::fail;
using llmc::rt::ok;

namespace {

bool readFile(const std::string &path, std::string &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return bool(f) || f.eof();
}


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


namespace {

using json = llmc::json::Value;

/// Bytes per element of a cache of ONNX element type `dtype` (f32, f16,
/// bf16, int8), 0 for another.
int64_t cacheElementBytes(int32_t dtype) {
  return dtype == 1 ? 4 : (dtype == 10 || dtype == 16) ? 2 : dtype == 3 ? 1 : 0;
}

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
    int64_t elem = cacheElementBytes(c.dtype);
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
/// back, to `lastIds` ([batch]), and no logits; with `draw` too (a model
/// with run_sample) the token drawn with uniforms[b], or -1 and that row's
/// logits in `last`.
llmc_status runEntry(llmc_session *s, int entry, const int32_t *tokens, int64_t n, float *all,
                     float *last, int32_t *lastIds = nullptr,
                     const llmc_model_sampling *draw = nullptr, const double *uniforms = nullptr) {
  const ModelData &m = *s->model;
  const llmc_model_entry &e = m.abi->entries[entry];
  int64_t b = s->batch, v = m.vocab;
  std::vector<int64_t> ids(size_t(b * e.seq), 0);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t i = 0; i < n; ++i)
      ids[size_t(r * e.seq + i)] = tokens[r * n + i];
  char err[1024] = "";
  if (lastIds && (draw ? m.abi->run_sample && last : m.abi->run_greedy != nullptr)) {
    std::vector<int64_t> chosen(size_t(b), 0);
    int rc = draw ? m.abi->run_sample(s->ctx, uint32_t(entry), ids.data(), s->length, s->capacity,
                                      s->cachePtrs.data(), n - 1, draw, uniforms, chosen.data(),
                                      last, err, sizeof err)
                  : m.abi->run_greedy(s->ctx, uint32_t(entry), ids.data(), s->length,
                                      s->capacity, s->cachePtrs.data(), n - 1, chosen.data(), err,
                                      sizeof err);
    if (rc != 0)
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

} // namespace

namespace llmc::rt {

llmc_status append(llmc_session *s, const int32_t *tokens, size_t count, float *allLogits,
                   float *lastLogits, int32_t *lastIds, const llmc_model_sampling *draw,
                   const double *uniforms) {
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
    if (llmc_status st = runEntry(s, entry, chunk.data(), take, all, last, ids, draw, uniforms);
        st != LLMC_OK) {
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

} // namespace llmc::rt

using llmc::rt::append;
using llmc::rt::needSingle;

namespace {

/// The draft model's session of `s` (llmc_session_options.draft_model):
/// single-sequence, of s's capacity, for speculative decoding.
llmc_status createDraft(llmc_session &s, const llmc_session_options &options) {
  const ModelData &target = *s.model, &draft = *options.draft_model->data;
  if (options.draft_threads < 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "draft_threads must be >= 0");
  if (s.batch != 1)
    return fail(LLMC_ERROR_UNSUPPORTED, "a draft model speculates for single-sequence "
                                        "sessions only (this one runs a batch of " +
                                            std::to_string(s.batch) + ")");
  if (draft.vocab != target.vocab)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "the draft model's vocabulary has " + std::to_string(draft.vocab) +
                    " tokens and the model's " + std::to_string(target.vocab) +
                    ": speculation needs the same tokenizer");
  if (draft.tokenizer && target.tokenizer && !draft.tokenizer->sameVocabulary(*target.tokenizer))
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "the draft model's tokenizer maps tokens to other ids than the model's: "
                "speculation needs the same tokenizer");
  if (draft.capacity < s.capacity)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "the draft model holds " + std::to_string(draft.capacity) +
                    " positions and the session " + std::to_string(s.capacity) +
                    ": compile the draft with --max-seq " + std::to_string(s.capacity) +
                    " or more, or ask the session for fewer (capacity)");
  llmc_session_options o{};
  o.threads = options.draft_threads > 0 ? options.draft_threads : options.threads;
  o.batch = 1;
  // Its compiled capacity when that is the session's, or when the draft's
  // code cannot take another.
  o.capacity = draft.abi->any_capacity ? s.capacity : 0;
  o.cpus = options.cpus, o.num_cpus = options.num_cpus;
  llmc_session *d = nullptr;
  if (llmc_status st = llmc_session_create(options.draft_model, &o, &d); st != LLMC_OK)
    return fail(st, "the draft model: " + lastError);
  s.draft.reset(d);
  return ok();
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
      int64_t elem = cacheElementBytes(c.dtype);
      s->caches.emplace_back(size_t(s->batch * c.heads * s->capacity * c.head_dim * elem), 0);
    }
    for (auto &c : s->caches)
      s->cachePtrs.push_back(c.data());
  }
  if (options && options->draft_model) {
    if (llmc_status st = createDraft(*s, *options); st != LLMC_OK)
      return st;
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


} // extern "C"
