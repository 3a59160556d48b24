//===- DeviceModel.h - what an emitted CUDA model links: context and glue ---===//
//
// `llmc compile --target cuda` writes model.cu: one host function per entry
// point that enqueues the kernels of runtime/src/model/cuda on a stream,
// with every intermediate at a fixed offset of one device arena. This header
// turns such a model into libmodel.so's llmc_model_abi (model_abi.h) with
// buffers on the device:
//
//   create    checks the device (none, driver too old, too little memory
//             for the weights and the arena: clear errors), uploads
//             weights.bin once per process and model (contexts of one
//             model share the copy), allocates the arena, the device token
//             and position buffers, the error word, the split counters
//             (Common.h, zeroed once), cuBLASLt's handle and workspace
//             when the library is there (Blas.h), and pinned staging for
//             what crosses to and from the host, and a stream;
//   cache_alloc  the session's KV caches on the device: one allocation,
//             zeroed;
//   run       copies the tokens and start position into pinned staging,
//             then runs the entry: a decode entry is captured once as a CUDA
//             graph per (caches, capacity) and replayed each step (the
//             copies in and out are nodes of the graph, so one launch and
//             one synchronisation per token); a prefill that needs one
//             position a sequence (a prompt's next token: kLogitRows, the
//             position copied in with the tokens and read on the device) is
//             captured at its second run and replayed from then on, for any
//             prompt length (its first run, uncaptured, lets cuBLASLt
//             choose its plans; LLMC_CUDA_PREFILL_GRAPHS=0 leaves every
//             prefill uncaptured, to compare on a GPU); other prefills are
//             enqueued directly, and so is every entry of a model with host
//             steps (HostSteps.h: operations that run on the host,
//             kHostSteps).
//             The logits come back as f32 (a replayed graph's through pinned
//             staging, others straight into the caller's buffer) and the
//             error word is checked after the step. Nothing is allocated on
//             the device while generating.
//   run_rows  the same with the logits of only some positions of each
//             sequence: where the compiler found the logits' tail (the
//             final norm, lm_head, a softcap: EmitCuda.cpp), a prefill runs
//             it on those positions only: one row a sequence (the rows
//             selected first, then the tail at [B, 1], as a decode step's),
//             or chunks of up to 64 (kLogitsChunk) positions, each chunk's
//             logits copied out before the next; so a bucket's padding and a
//             prompt's earlier positions cost no lm_head, and the arena
//             holds no [B, S, vocab] logits.
//   run_greedy  the same step, but only the argmax of one position of each
//             sequence (the runtime's greedy rule) crosses to the host: a
//             graph of its own per (caches, capacity, position), or for a
//             prefill per (caches, capacity), any position.
//   run_sample  likewise a token id per sequence, drawn on the device
//             (Sampling.h) with the parameters and uniforms the graph copies
//             in each step, or at temperature 0 the argmax; with a
//             repetition penalty the graph also copies in each sequence's
//             marks of the tokens it holds (vocab / 8 bytes a sequence),
//             which the kernels apply as they read the logits; a row the
//             device leaves to the host (-1) brings its f32 logits back
//             after the step.
//
// With LLMC_PROFILE set (and not 0) in the environment, each replayed
// decode graph is timed between two events on its stream, and the call
// that ran it by the host's clock; when the context goes, stderr gets the
// steps, the time of a call and of its graph on the device, and the share
// of the call the device was not busy with the graph: the host's overhead
// per step (issue 11's target: under 5% at batch 1), apart from what the
// caller does between calls; and how many prefills ran, and how many of
// them as replayed graphs.
//
// Built by nvcc for a GPU, or by the host compiler against the emulation
// (libmodel-emulated.so: `llmc run --device emulated`).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_CUDA_DEVICEMODEL_H
#define LLMC_RUNTIME_MODEL_CUDA_DEVICEMODEL_H

#include "llmc/model_abi.h"
#include "runtime/src/model/cuda/AttentionDecode.h"
#include "runtime/src/model/cuda/AttentionTensorCore.h"
#include "runtime/src/model/cuda/Blas.h"
#include "runtime/src/model/cuda/Common.h"
#include "runtime/src/model/cuda/Gemm.h"
#include "runtime/src/model/cuda/Gemv.h"
#include "runtime/src/model/cuda/Norm.h"
#include "runtime/src/model/cuda/Onnx.h"
#include "runtime/src/model/cuda/QuantGemv.h"
#include "runtime/src/model/cuda/Rope.h"
#include "runtime/src/model/cuda/Sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace llmc::cuda::model {

/// What an entry function receives (device pointers, except the stream).
struct Args {
  const int64_t *tokens; // [batch, seq]
  const int64_t *pos;    // the first token's position, a scalar
  void *const *caches;   // the session's caches, [batch, heads, capacity, head_dim]
  int64_t capacity;
  Stream stream;
  // The positions of each sequence whose logits (or token) the step needs:
  // row0 .. row0 + rows - 1 (an entry with a logits tail computes only those).
  int64_t row0 = 0, rows = 1;
};

/// f32 logits from the model's type, for the copy to the host.
template <class T> LLMC_GLOBAL void widenKernel(const T *in, float *out, size_t n) {
  LLMC_KERNEL_BEGIN();
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = toFloat(in[i]);
}

/// The device copy of one model's weights, shared by its contexts.
struct SharedWeights {
  std::mutex mutex;
  std::map<const void *, std::pair<void *, int>> copies; // host bytes -> (device, users)

  static SharedWeights &get() {
    static SharedWeights s;
    return s;
  }
  std::string acquire(const void *host, size_t bytes, void **out) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = copies.find(host);
    if (it != copies.end()) {
      ++it->second.second;
      *out = it->second.first;
      return {};
    }
    void *d = nullptr;
    LLMC_CUDA_TRY(deviceAlloc(&d, bytes ? bytes : 1));
    if (std::string e = copyToDevice(d, host, bytes); !e.empty()) {
      deviceFree(d);
      return e;
    }
    copies[host] = {d, 1};
    *out = d;
    return {};
  }
  void release(const void *host) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = copies.find(host);
    if (it != copies.end() && --it->second.second == 0) {
      deviceFree(it->second.first);
      copies.erase(it);
    }
  }
};

/// The state of one context (one session of the runtime).
struct DeviceContext {
  const void *hostWeights = nullptr;
  unsigned char *weights = nullptr; // device copy of weights.bin
  unsigned char *arena = nullptr;
  int64_t *tokens = nullptr, *pos = nullptr;
  int64_t *row = nullptr; // a prefill's position whose logits are asked (selectRows reads it)
  float *logits = nullptr;              // f32 logits of a step's stored rows (kLogitsFloats)
  int32_t *ids = nullptr;               // a greedy or sampled step's token ids [batch]
  SampleParams *params = nullptr;       // a sampled step's parameters
  double *uniforms = nullptr;           // and its uniforms [batch]
  uint32_t *penalized = nullptr;        // and its penalty marks [batch, penaltyWords(vocab)]
  unsigned long long *error = nullptr;  // the device error word
  unsigned *counters = nullptr;         // the split counters (Common.h), zero
  Blas blas;                            // cuBLASLt for the prefill GEMMs, when there
  // Pinned staging: tokens, position, logits, ids, sampling, error word.
  int64_t *hostTokens = nullptr, *hostPos = nullptr, *hostRow = nullptr;
  float *hostLogits = nullptr;
  int32_t *hostIds = nullptr;
  SampleParams *hostParams = nullptr;
  double *hostUniforms = nullptr;
  uint32_t *hostPenalized = nullptr;
  unsigned long long *hostError = nullptr;
  // The step being enqueued: its [batch, seq] and, for a greedy or sampled
  // step, the position whose token per sequence is all that crosses to the
  // host (-1: the logits cross).
  int64_t stepBatch = 1, stepSeq = 1, greedyRow = -1, vocab = 0;
  // Where the logits of positions outRow0 .. outRow0 + outRows - 1 of each
  // sequence go ([batch, outRows, vocab] f32, host memory): the caller's
  // buffer, or the pinned staging of a replayed graph.
  float *outLogits = nullptr;
  int64_t outRow0 = 0, outRows = 1;
  // (With greedyRow >= 0) run_sample's step: the parameters copied in;
  // drawn (temperature > 0): the sampling kernel and the uniforms, else
  // the argmax; penalised: the marks copied in and applied.
  bool sampled = false, drawn = false, penalised = false;
  Stream stream = nullptr;
  int multiprocessors = 0;
  struct Captured {
    uint32_t entry;
    std::vector<void *> caches;
    // greedyRow -2: a token chosen at any one position, -3: the logits of
    // any one position (read on the device: kLogitRows).
    int64_t capacity, greedyRow;
    bool sampled, drawn, penalised;
    Graph graph;

    bool same(const Captured &o) const {
      return entry == o.entry && capacity == o.capacity && caches == o.caches &&
             greedyRow == o.greedyRow && sampled == o.sampled && drawn == o.drawn &&
             penalised == o.penalised;
    }
  };
  std::vector<Captured> graphs;
  std::vector<Captured> warm;    // prefills run once, uncaptured (graph null)
  std::vector<Captured> refused; // prefills whose capture failed: never captured
  /// LLMC_PROFILE's decode step timing (see the top of this file).
  struct StepProfile {
    Event start = nullptr, end = nullptr;
    long long steps = 0, prefills = 0, prefillReplays = 0;
    double callSeconds = 0, graphMs = 0;
  };
  std::unique_ptr<StepProfile> stepProfile;

  template <class T> T *weight(size_t offset) const {
    return reinterpret_cast<T *>(weights + offset);
  }
  template <class T> T *at(size_t offset) const { return reinterpret_cast<T *>(arena + offset); }

  /// Logits of positions first .. first + perSeq - 1 of each sequence,
  /// [stepBatch, perSeq, vocab] at p: queues the copy of those of them the
  /// caller asked for (outRow0 ..) as f32 to outLogits; in a greedy step
  /// the argmax of position greedyRow of each sequence (which p holds) and
  /// the copy of those ids instead; in a sampled one, the draws, with that
  /// position's f32 logits kept on the device for rows the host must draw
  /// (rows of nothing but NaN).
  template <class T>
  std::string storeLogitRows(const T *p, int64_t perSeq, int64_t first, Stream s) {
    if (greedyRow >= 0) {
      if (greedyRow < first || greedyRow >= first + perSeq)
        return "the logits of position " + std::to_string(greedyRow) + " were not computed";
      const T *row = p + (greedyRow - first) * vocab;
      size_t stride = size_t(perSeq * vocab);
      const uint32_t *marks = penalised ? penalized : nullptr;
      if (drawn) // (rows left to the host get their f32 logits in `logits`)
        LLMC_CUDA_TRY(sample(row, ids, int(stepBatch), int(vocab), stride, params, uniforms, logits,
                             s, marks));
      else
        LLMC_CUDA_TRY(argmax(row, ids, int(stepBatch), int(vocab), stride, s, params, marks));
      return copyAsync(hostIds, ids, size_t(stepBatch) * sizeof(int32_t), s);
    }
    int64_t lo = std::max(first, outRow0), hi = std::min(first + perSeq, outRow0 + outRows);
    if (lo >= hi)
      return {};
    size_t n = size_t(stepBatch * perSeq * vocab);
    const float *f32 = reinterpret_cast<const float *>(p);
    if constexpr (!std::is_same_v<T, float>) {
      LLMC_CUDA_TRY(launch(widenKernel<T>, dim3(ceilDiv(n, 256)), dim3(256), 0, s, p, logits, n));
      f32 = logits;
    }
    size_t row = size_t(vocab) * sizeof(float);
    const float *from = f32 + (lo - first) * vocab;
    float *to = outLogits + (lo - outRow0) * vocab;
    if (stepBatch == 1 || (perSeq == outRows && hi - lo == perSeq))
      return copyAsync(to, from, size_t(stepBatch - 1) * size_t(perSeq) * row + size_t(hi - lo) * row,
                       s);
    // (A copy a sequence: a 2-D copy's pitch is capped by the device, and a
    // bucket's rows of a large vocabulary pass 2 GiB.)
    for (int64_t b = 0; b < stepBatch; ++b)
      LLMC_CUDA_TRY(copyAsync(to + b * outRows * vocab, from + b * perSeq * vocab,
                              size_t(hi - lo) * row, s));
    return {};
  }
};

inline void writeError(char *err, size_t errlen, const std::string &message) {
  if (err && errlen)
    std::snprintf(err, errlen, "%s", message.c_str());
}

/// libmodel.so's functions for the emitted struct M (a DeviceContext with
/// kEntries, kFns, kCaches, kWeightsBytes, kVocab, kArenaBytes, kMaxTokens,
/// and kAssertMessages: what each llm.assert_equal says when it fails).
template <class M> struct Glue {
  static size_t maxBatch() {
    size_t most = 1;
    for (uint32_t i = 0; i < M::kNumEntries; ++i)
      most = std::max(most, size_t(M::kEntries[i].batch));
    return most;
  }

  /// The repetition penalty's marks of `batch` sequences, in bytes.
  static size_t markBytes(size_t batch) {
    return batch * size_t(penaltyWords(int(M::kVocab))) * sizeof(uint32_t);
  }

  static std::string setUp(M &m, const void *weights, uint64_t bytes) {
    if (bytes != M::kWeightsBytes)
      return "weights.bin holds " + std::to_string(bytes) + " bytes; the model expects " +
             std::to_string(M::kWeightsBytes);
    DeviceInfo info;
    LLMC_CUDA_TRY(deviceInfo(&info));
    m.multiprocessors = info.multiprocessors;
    size_t need = size_t(M::kWeightsBytes) + size_t(M::kArenaBytes) + size_t(M::kLogitsFloats) * 4 +
                  (Blas::wanted() ? Blas::kWorkspaceBytes : 0);
    if (info.freeBytes < need)
      return "too little device memory on " + info.name + ": the weights and activations need " +
             std::to_string(need >> 20) + " MiB, " + std::to_string(info.freeBytes >> 20) +
             " MiB are free";
    void *p = nullptr;
    LLMC_CUDA_TRY(SharedWeights::get().acquire(weights, bytes, &p));
    m.hostWeights = weights;
    m.weights = static_cast<unsigned char *>(p);
    auto alloc = [](auto **out, size_t bytes) {
      void *q = nullptr;
      std::string e = deviceAlloc(&q, bytes ? bytes : 1);
      *out = static_cast<std::remove_reference_t<decltype(**out)> *>(q);
      return e;
    };
    auto pinned = [](auto **out, size_t bytes) {
      void *q = nullptr;
      std::string e = hostAllocPinned(&q, bytes ? bytes : 1);
      *out = static_cast<std::remove_reference_t<decltype(**out)> *>(q);
      return e;
    };
    LLMC_CUDA_TRY(alloc(&m.arena, size_t(M::kArenaBytes)));
    LLMC_CUDA_TRY(alloc(&m.tokens, size_t(M::kMaxTokens) * 8));
    LLMC_CUDA_TRY(alloc(&m.pos, 8));
    LLMC_CUDA_TRY(alloc(&m.row, 8));
    LLMC_CUDA_TRY(pinned(&m.hostRow, 8));
    LLMC_CUDA_TRY(alloc(&m.logits, size_t(M::kLogitsFloats) * 4));
    LLMC_CUDA_TRY(alloc(&m.ids, maxBatch() * 4));
    LLMC_CUDA_TRY(pinned(&m.hostIds, maxBatch() * 4));
    LLMC_CUDA_TRY(alloc(&m.params, sizeof(SampleParams)));
    LLMC_CUDA_TRY(alloc(&m.uniforms, maxBatch() * sizeof(double)));
    LLMC_CUDA_TRY(pinned(&m.hostParams, sizeof(SampleParams)));
    LLMC_CUDA_TRY(pinned(&m.hostUniforms, maxBatch() * sizeof(double)));
    LLMC_CUDA_TRY(alloc(&m.penalized, markBytes(maxBatch())));
    LLMC_CUDA_TRY(pinned(&m.hostPenalized, markBytes(maxBatch())));
    m.vocab = M::kVocab;
    LLMC_CUDA_TRY(alloc(&m.error, 8));
    LLMC_CUDA_TRY(alloc(&m.counters, kSplitCounters * sizeof(unsigned)));
    LLMC_CUDA_TRY(pinned(&m.hostTokens, size_t(M::kMaxTokens) * 8));
    LLMC_CUDA_TRY(pinned(&m.hostPos, 8));
    LLMC_CUDA_TRY(pinned(&m.hostLogits, maxBatch() * size_t(M::kVocab) * 4)); // (decode graphs)
    LLMC_CUDA_TRY(pinned(&m.hostError, 8));
    (void)programmaticLaunches(); // decided now, not while a graph is captured
    (void)wg::wgmmaBuilt();       // (a probe launch: before any capture)
    LLMC_CUDA_TRY(m.blas.open());
    LLMC_CUDA_TRY(streamCreate(&m.stream));
    if (const char *p = std::getenv("LLMC_PROFILE"); p && *p && std::strcmp(p, "0") != 0) {
      m.stepProfile = std::make_unique<typename M::StepProfile>();
      LLMC_CUDA_TRY(eventCreate(&m.stepProfile->start));
      LLMC_CUDA_TRY(eventCreate(&m.stepProfile->end));
    }
    // The kernels that count their splits leave the counters at zero.
    LLMC_CUDA_TRY(memsetAsync(m.counters, 0, kSplitCounters * sizeof(unsigned), m.stream));
    return streamSynchronize(m.stream);
  }

  static int create(const void *weights, uint64_t bytes, int32_t threads, void **out, char *err,
                    size_t errlen) {
    (void)threads;
    if (!out) {
      writeError(err, errlen, "out_ctx is null");
      return 1;
    }
    auto *m = new M();
    if (std::string e = setUp(*m, weights, bytes); !e.empty()) {
      destroy(m);
      writeError(err, errlen, e);
      return 1;
    }
    *out = m;
    return 0;
  }

  static void destroy(void *ctx) {
    auto *m = static_cast<M *>(ctx);
    if (!m)
      return;
    for (auto &g : m->graphs)
      graphDestroy(g.graph);
    if (auto &p = m->stepProfile) {
      if (p->steps > 0) {
        double call = p->callSeconds * 1e6 / double(p->steps);
        double graph = p->graphMs * 1e3 / double(p->steps);
        std::fprintf(stderr,
                     "llmc profile (LLMC_PROFILE): %lld decode steps replayed: %.1f us a call, "
                     "%.1f us of it the graph on the device; host overhead %.1f%% of the call\n",
                     p->steps, call, graph, call > 0 ? 100 * (1 - graph / call) : 0.0);
      } else if (M::kHostSteps) {
        std::fprintf(stderr, "llmc profile (LLMC_PROFILE): no decode graph to time: the model "
                             "runs host steps (HostSteps.h), its entries without CUDA graphs\n");
      }
      if (p->prefills > 0)
        std::fprintf(stderr,
                     "llmc profile (LLMC_PROFILE): %lld prefills, %lld of them replayed graphs\n",
                     p->prefills, p->prefillReplays);
      if (p->start)
        eventDestroy(p->start);
      if (p->end)
        eventDestroy(p->end);
    }
    if (m->stream)
      streamDestroy(m->stream);
    m->blas.close();
    for (void *p : {(void *)m->arena, (void *)m->tokens, (void *)m->pos, (void *)m->row,
                    (void *)m->logits,
                    (void *)m->ids, (void *)m->params, (void *)m->uniforms, (void *)m->penalized,
                    (void *)m->error, (void *)m->counters})
      if (p)
        deviceFree(p);
    for (void *p : {(void *)m->hostTokens, (void *)m->hostPos, (void *)m->hostRow,
                    (void *)m->hostLogits,
                    (void *)m->hostIds, (void *)m->hostParams, (void *)m->hostUniforms,
                    (void *)m->hostPenalized, (void *)m->hostError})
      if (p)
        hostFreePinned(p);
    if (m->weights)
      SharedWeights::get().release(m->hostWeights);
    delete m;
  }

  /// Whether a one-position prefill is captured and replayed
  /// (LLMC_CUDA_PREFILL_GRAPHS=0: never).
  static bool prefillGraphs() {
    static const bool enabled = [] {
      const char *env = std::getenv("LLMC_CUDA_PREFILL_GRAPHS");
      return !(env && std::strcmp(env, "0") == 0);
    }();
    return enabled;
  }

  /// The step's work on the stream: copies in, the entry, copies out.
  static std::string enqueue(M &m, uint32_t entry, void *const *caches, int64_t capacity,
                             int64_t row0, int64_t rows) {
    const llmc_model_entry &e = M::kEntries[entry];
    size_t tokens = size_t(e.batch * e.seq);
    Stream s = m.stream;
    LLMC_CUDA_TRY(memsetAsync(m.error, 0, 8, s));
    LLMC_CUDA_TRY(copyAsync(m.tokens, m.hostTokens, tokens * 8, s));
    LLMC_CUDA_TRY(copyAsync(m.pos, m.hostPos, 8, s));
    if (e.kind == LLMC_ENTRY_PREFILL)
      LLMC_CUDA_TRY(copyAsync(m.row, m.hostRow, 8, s));
    if (m.sampled)
      LLMC_CUDA_TRY(copyAsync(m.params, m.hostParams, sizeof(SampleParams), s));
    if (m.drawn)
      LLMC_CUDA_TRY(copyAsync(m.uniforms, m.hostUniforms, size_t(e.batch) * sizeof(double), s));
    if (m.penalised)
      LLMC_CUDA_TRY(copyAsync(m.penalized, m.hostPenalized, markBytes(size_t(e.batch)), s));
    Args a{m.tokens, m.pos, caches, capacity, s, row0, rows};
    LLMC_CUDA_TRY(M::kFns[entry](m, a));
    return copyAsync(m.hostError, m.error, 8, s);
  }

  /// Runs an entry; the logits of positions row0 .. row0 + rows - 1 of
  /// each sequence go to `logits` ([batch, rows, vocab]), or (greedyRow >=
  /// 0) the argmax of that position of each sequence to `ids`, or with
  /// `sampling` a draw with uniforms[b] (-1 where the host must draw: that
  /// row's f32 logits then go to rowLogits + b * vocab).
  static std::string runEntry(M &m, uint32_t entry, const int64_t *tokens, int64_t start,
                              int64_t capacity, void *const *caches, float *logits,
                              int64_t greedyRow, int64_t *ids,
                              const llmc_model_sampling *sampling = nullptr,
                              const double *uniforms = nullptr, float *rowLogits = nullptr,
                              int64_t row0 = 0, int64_t rows = -1) {
    std::chrono::steady_clock::time_point called; // (read under LLMC_PROFILE only)
    if (m.stepProfile)
      called = std::chrono::steady_clock::now();
    if (entry >= M::kNumEntries)
      return "entry " + std::to_string(entry) + " does not exist (the model has " +
             std::to_string(M::kNumEntries) + ")";
    const llmc_model_entry &e = M::kEntries[entry];
    if (!tokens || (greedyRow < 0 ? !logits : !ids) || (M::kNumCaches && !caches))
      return "tokens, caches and logits (or ids) must not be null";
    if (greedyRow >= e.seq)
      return "position " + std::to_string(greedyRow) + " is outside the entry's " +
             std::to_string(e.seq) + " tokens";
    if (greedyRow >= 0)
      row0 = greedyRow, rows = 1;
    else if (rows < 0)
      row0 = 0, rows = e.seq;
    if (row0 < 0 || rows < 1 || row0 > e.seq || rows > e.seq - row0)
      return "rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) +
             ") do not lie in the entry's " + std::to_string(e.seq) + " positions";
    if (capacity < 1 || capacity > M::kCaches[0].capacity)
      return "capacity " + std::to_string(capacity) + " is outside 1 .. " +
             std::to_string(M::kCaches[0].capacity);
    if (!M::kAnyCapacity && capacity != M::kCaches[0].capacity)
      return "capacity " + std::to_string(capacity) + ": the model reads its caches whole, at " +
             std::to_string(M::kCaches[0].capacity) + " positions (model_abi.h's any_capacity)";
    if (start < 0 || start + e.seq > capacity)
      return "positions " + std::to_string(start) + " .. " + std::to_string(start + e.seq - 1) +
             " do not fit a cache of " + std::to_string(capacity);
    for (int64_t i = 0; i < e.batch * e.seq; ++i)
      if (tokens[i] < 0 || tokens[i] >= M::kVocab)
        return "token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
               std::to_string(M::kVocab);
    bool drawn = false, penalised = false;
    if (sampling) {
      if (!(sampling->temperature >= 0) || !std::isfinite(sampling->temperature) ||
          sampling->top_k < 0 || !(sampling->top_p > 0 && sampling->top_p <= 1) ||
          !(sampling->min_p >= 0 && sampling->min_p < 1) ||
          !(sampling->repetition_penalty > 0) || !std::isfinite(sampling->repetition_penalty))
        return "sampling needs temperature >= 0, top_k >= 0, top_p in (0, 1], min_p in [0, 1), "
               "repetition_penalty > 0";
      drawn = sampling->temperature > 0;
      penalised = sampling->repetition_penalty != 1;
      if (drawn && (!uniforms || !rowLogits))
        return "uniforms and row_logits must not be null";
      if (penalised && !sampling->penalized)
        return "a repetition penalty needs the penalized marks";
      if (drawn)
        for (int64_t b = 0; b < e.batch; ++b)
          if (!(uniforms[b] >= 0 && uniforms[b] < 1))
            return "uniforms must lie in [0, 1)";
      *m.hostParams = SampleParams{sampling->temperature, sampling->top_k, sampling->top_p,
                                   sampling->min_p, sampling->repetition_penalty};
      if (drawn)
        std::memcpy(m.hostUniforms, uniforms, size_t(e.batch) * sizeof(double));
      if (penalised)
        std::memcpy(m.hostPenalized, sampling->penalized, markBytes(size_t(e.batch)));
    }
    std::memcpy(m.hostTokens, tokens, size_t(e.batch * e.seq) * 8);
    *m.hostPos = start;
    *m.hostRow = row0;
    if (m.stepProfile && e.kind == LLMC_ENTRY_PREFILL)
      ++m.stepProfile->prefills;
    m.stepBatch = e.batch, m.stepSeq = e.seq, m.greedyRow = greedyRow;
    m.outRow0 = row0, m.outRows = rows;
    m.sampled = sampling != nullptr, m.drawn = drawn, m.penalised = penalised;
    // Graphs (see the top of this file): a decode step's from its first
    // run, a one-position prefill's from its second, whatever the position.
    bool anyRow = e.kind == LLMC_ENTRY_PREFILL && M::kLogitRows[entry] && rows == 1;
    bool graphed = !M::kHostSteps && (e.kind == LLMC_ENTRY_DECODE || (anyRow && prefillGraphs()));
    typename M::Captured key{entry,     std::vector<void *>(caches, caches + M::kNumCaches),
                             capacity,  anyRow ? (greedyRow >= 0 ? -2 : -3) : greedyRow,
                             m.sampled, drawn,
                             penalised, nullptr};
    Graph graph = nullptr;
    bool capture = false;
    auto listed = [&](const std::vector<typename M::Captured> &list) {
      return std::any_of(list.begin(), list.end(),
                         [&](const typename M::Captured &w) { return w.same(key); });
    };
    if (graphed) {
      for (auto &g : m.graphs)
        if (g.same(key))
          graph = g.graph;
      if (!graph && !listed(m.refused)) {
        capture = e.kind == LLMC_ENTRY_DECODE || listed(m.warm);
        if (!capture)
          m.warm.push_back(key);
      }
    }
    // A graph copies the logits into the pinned staging (its nodes' fixed
    // address); other steps straight into the caller's buffer.
    m.outLogits = graph || capture ? m.hostLogits : logits;
    if (capture) {
      LLMC_CUDA_TRY(captureBegin(m.stream));
      std::string queued = enqueue(m, entry, caches, capacity, row0, rows);
      std::string end = captureEnd(m.stream, &graph);
      if (queued.empty() && end.empty()) {
        key.graph = graph;
        m.graphs.push_back(key);
      } else {
        if (graph)
          graphDestroy(graph);
        graph = nullptr;
        if (e.kind == LLMC_ENTRY_DECODE)
          return queued.empty() ? end : queued;
        // A prefill that did not capture (nothing of it ran) runs
        // uncaptured, now and from then on; an error of the step's own
        // comes back from that run.
        m.refused.push_back(key);
        m.outLogits = logits;
      }
    }
    bool timed = false; // (a replayed decode graph, under LLMC_PROFILE)
    if (graph) {
      if (!capture) {
        timed = m.stepProfile != nullptr && e.kind == LLMC_ENTRY_DECODE;
        if (m.stepProfile && e.kind == LLMC_ENTRY_PREFILL)
          ++m.stepProfile->prefillReplays;
      }
      if (timed)
        LLMC_CUDA_TRY(eventRecord(m.stepProfile->start, m.stream));
      LLMC_CUDA_TRY(graphLaunch(graph, m.stream));
      if (timed)
        LLMC_CUDA_TRY(eventRecord(m.stepProfile->end, m.stream));
    } else {
      LLMC_CUDA_TRY(enqueue(m, entry, caches, capacity, row0, rows));
    }
    LLMC_CUDA_TRY(streamSynchronize(m.stream));
    if (unsigned long long word = *m.hostError) {
      size_t index = size_t(word & 0xffffffffull);
      if (word >> 32 == kAssertFailed && index < M::kNumAsserts)
        return M::kAssertMessages[index];
      return describeDeviceError(word);
    }
    if (greedyRow >= 0)
      for (int64_t b = 0; b < e.batch; ++b) {
        ids[b] = m.hostIds[b];
        if (ids[b] < 0) // a draw the device left to the host
          LLMC_CUDA_TRY(copyToHost(rowLogits + b * M::kVocab, m.logits + b * M::kVocab,
                                   size_t(M::kVocab) * sizeof(float)));
      }
    else if (graph) // (staged: see m.outLogits)
      std::memcpy(logits, m.hostLogits, size_t(e.batch * rows * M::kVocab) * sizeof(float));
    if (timed) {
      float ms = 0;
      LLMC_CUDA_TRY(eventElapsed(&ms, m.stepProfile->start, m.stepProfile->end));
      m.stepProfile->graphMs += ms;
      m.stepProfile->callSeconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - called).count();
      ++m.stepProfile->steps;
    }
    return {};
  }

  static int runAtCapacity(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                           int64_t capacity, void *const *caches, float *logits, char *err,
                           size_t errlen) {
    if (!ctx) {
      writeError(err, errlen, "the context is null");
      return 1;
    }
    std::string e =
        runEntry(*static_cast<M *>(ctx), entry, tokens, start, capacity, caches, logits, -1, nullptr);
    if (!e.empty()) {
      writeError(err, errlen, e);
      return 1;
    }
    return 0;
  }

  static int runRows(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                     int64_t capacity, void *const *caches, int64_t row0, int64_t rows,
                     float *logits, char *err, size_t errlen) {
    std::string e = !ctx     ? "the context is null"
                    : rows < 1 ? "rows [" + std::to_string(row0) + ", " +
                                     std::to_string(row0 + rows) + ") do not lie in the entry"
                               : runEntry(*static_cast<M *>(ctx), entry, tokens, start, capacity,
                                          caches, logits, -1, nullptr, nullptr, nullptr, nullptr,
                                          row0, rows);
    if (!e.empty()) {
      writeError(err, errlen, e);
      return 1;
    }
    return 0;
  }

  /// run_greedy and run_sample: the token id of position `row` of each
  /// sequence (`sampling` null: the argmax).
  static int runChoice(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                       int64_t capacity, void *const *caches, int64_t row,
                       const llmc_model_sampling *sampling, const double *uniforms,
                       int64_t *out_ids, float *row_logits, char *err, size_t errlen) {
    std::string e = !ctx      ? "the context is null"
                    : row < 0 ? "the position must be >= 0"
                              : runEntry(*static_cast<M *>(ctx), entry, tokens, start, capacity,
                                         caches, nullptr, row, out_ids, sampling, uniforms,
                                         row_logits);
    if (!e.empty()) {
      writeError(err, errlen, e);
      return 1;
    }
    return 0;
  }

  static int runGreedy(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                       int64_t capacity, void *const *caches, int64_t row, int64_t *out_ids,
                       char *err, size_t errlen) {
    return runChoice(ctx, entry, tokens, start, capacity, caches, row, nullptr, nullptr, out_ids,
                     nullptr, err, errlen);
  }

  static int runSample(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                       int64_t capacity, void *const *caches, int64_t row,
                       const llmc_model_sampling *sampling, const double *uniforms,
                       int64_t *out_ids, float *row_logits, char *err, size_t errlen) {
    if (!sampling) {
      writeError(err, errlen, "the sampling parameters must not be null");
      return 1;
    }
    return runChoice(ctx, entry, tokens, start, capacity, caches, row, sampling, uniforms,
                     out_ids, row_logits, err, errlen);
  }

  static int run(void *ctx, uint32_t entry, const int64_t *tokens, int64_t start,
                 void *const *caches, float *logits, char *err, size_t errlen) {
    return runAtCapacity(ctx, entry, tokens, start, M::kNumCaches ? M::kCaches[0].capacity : 1,
                         caches, logits, err, errlen);
  }

  /// The session's caches as one device allocation (each cache at a
  /// 256-byte aligned offset of it), zeroed.
  static int cacheAlloc(void *ctx, int64_t batch, int64_t capacity, void **out, char *err,
                        size_t errlen) {
    (void)ctx;
    if (M::kNumCaches == 0)
      return 0;
    std::vector<size_t> offsets;
    size_t total = 0;
    for (uint32_t i = 0; i < M::kNumCaches; ++i) {
      const llmc_model_cache &c = M::kCaches[i];
      offsets.push_back(total);
      total += (size_t(batch * c.heads * capacity * c.head_dim) * (c.dtype == 1 ? 4 : c.dtype == 3 ? 1 : 2) + 255) /
               256 * 256;
    }
    void *base = nullptr;
    std::string e = deviceAlloc(&base, total);
    if (e.empty()) {
      e = memsetAsync(base, 0, total, nullptr);
      if (e.empty())
        e = synchronize();
      if (!e.empty())
        deviceFree(base);
    }
    if (!e.empty()) {
      writeError(err, errlen, "cannot allocate the KV cache on the device (" +
                                  std::to_string(total >> 20) + " MiB): " + e);
      return 1;
    }
    for (uint32_t i = 0; i < M::kNumCaches; ++i)
      out[i] = static_cast<unsigned char *>(base) + offsets[i];
    return 0;
  }

  static void cacheFree(void *ctx, void *const *caches) {
    auto *m = static_cast<M *>(ctx);
    if (m) { // graphs captured over these caches go with them
      for (size_t i = 0; i < m->graphs.size();)
        if (M::kNumCaches && m->graphs[i].caches[0] == caches[0]) {
          graphDestroy(m->graphs[i].graph);
          m->graphs.erase(m->graphs.begin() + long(i));
        } else {
          ++i;
        }
      if (M::kNumCaches)
        for (auto *list : {&m->warm, &m->refused})
          list->erase(std::remove_if(list->begin(), list->end(),
                                     [&](const auto &w) { return w.caches[0] == caches[0]; }),
                      list->end());
    }
    if (M::kNumCaches) // one allocation, at the first cache
      deviceFree(caches[0]);
  }
};

} // namespace llmc::cuda::model

#endif // LLMC_RUNTIME_MODEL_CUDA_DEVICEMODEL_H
