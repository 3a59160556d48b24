//===- Bench.cpp - llmc bench: how fast an artifact runs here -------------===//
//
// Time to first token, time per output token and tokens/s through the
// runtime, set against what this machine can do: the decode's bytes per
// token against its measured read bandwidth, and (CPU artifacts) the
// prefill's linear-layer FLOPs against its measured FMA rate. With
// --speculative: plain against speculative greedy generation.
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"

#include "llmc/llmc.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <immintrin.h>

using namespace mlir;
using namespace mlir::llmc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory &cat() { return llmcOptionCategory(); }

// --- llmc bench --------------------------------------------------------------
cl::SubCommand benchCmd("bench",
                        "Measure time to first token, time per output token, tokens/s and "
                        "the decode's share of this machine's memory bandwidth");
cl::opt<std::string> benchArtifact(cl::Positional, cl::desc("<model.llmc>"), cl::Required,
                                   cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchDevice("device",
                                 cl::desc("What runs a --target cuda artifact: its GPU (the "
                                          "default), or 'emulated'"),
                                 cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchPrompt("prompt-len", cl::desc("Prompt tokens (default 64)"), cl::init(64),
                         cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchGen("gen", cl::desc("Generated tokens (default 64)"), cl::init(64),
                      cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchBatch("batch",
                        cl::desc("Sequences generated together (a batch size the artifact was "
                                 "compiled with; default 1): each its own pseudo-random prompt"),
                        cl::init(1), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchRuns("runs", cl::desc("Runs; the median is reported (default 3)"),
                       cl::init(3), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchThreads("threads", cl::desc("Threads (0: one per hardware thread)"),
                          cl::init(0), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchCpus("cpus",
                              cl::desc("Pin the worker threads to these CPUs (comma-separated; "
                                       "worker i to the i-th, modulo)"),
                              cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchSpeculative(
    "speculative",
    cl::desc("prompt-lookup or draft:PATH: run plain and speculative greedy generation in "
             "turns and report the acceptance rate, tokens per verification pass, the speed-up "
             "and whether the output is the same"),
    cl::init(""), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchDraftTokens("draft-tokens",
                              cl::desc("--speculative: the most tokens proposed per step "
                                       "(default 4; fewer after rejections)"),
                              cl::init(4), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchNgram("ngram",
                        cl::desc("--speculative prompt-lookup: the longest n-gram (default 3)"),
                        cl::init(3), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<int> benchDraftThreads("draft-threads",
                               cl::desc("--speculative draft: the draft's threads (0: --threads)"),
                               cl::init(0), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchPromptText(
    "prompt", cl::desc("The prompt as text (needs the artifact's tokenizer) instead of "
                       "--prompt-len pseudo-random ids; speculation needs a real one"),
    cl::init(""), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchPromptFile("prompt-file", cl::desc("The prompt text from a file"),
                                     cl::init(""), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchJsonSchema(
    "json-schema",
    cl::desc("Run plain and constrained (this JSON Schema file) greedy generation in turns and "
             "report the token masks' cost against a decode step"),
    cl::value_desc("file"), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchRegex("regex", cl::desc("As --json-schema, with a regular expression"),
                                cl::value_desc("re"), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<std::string> benchGrammar("grammar", cl::desc("As --json-schema, with a GBNF file"),
                                  cl::value_desc("file"), cl::sub(benchCmd), cl::cat(cat()));
cl::opt<bool> benchJson("json", cl::desc("Print the results as JSON"), cl::init(false),
                        cl::sub(benchCmd), cl::cat(cat()));

} // namespace

bool mlir::llmc::benchCommandGiven() { return bool(benchCmd); }

namespace {

/// A way of reading memory for the bandwidth probe: `streams` interleaved
/// sequential streams per thread (blocks of streams x `chunk` bytes, read
/// in lockstep a line at a time, as the packed GEMV reads its panels), with
/// a software prefetch `prefetch` bytes ahead (0: none).
struct ReadPattern {
  int streams;
  size_t chunk;
  int prefetch;
};
constexpr ReadPattern kReadPatterns[] = {{1, 65536, 0}, {1, 65536, 4096}, {2, 49152, 4096},
                                         {4, 8192, 4096}, {2, 49152, 0}};

/// Sums the 64-bit words of bytes [b, e) of `p` (a multiple of 64 bytes is
/// read; the pattern's leftover tail is summed plainly) with AVX2 loads.
__attribute__((target("avx2"))) uint64_t sumAvx2(const char *p, size_t b, size_t e,
                                                 const ReadPattern &r) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  size_t block = size_t(r.streams) * r.chunk, at = b;
  for (; at + block <= e; at += block)
    for (size_t o = 0; o < r.chunk; o += 64)
      for (int s = 0; s < r.streams; ++s) {
        const char *q = p + at + size_t(s) * r.chunk + o;
        if (r.prefetch)
          _mm_prefetch(q + r.prefetch, _MM_HINT_T0);
        a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)));
        a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q + 32)));
      }
  uint64_t lanes[4], total = 0;
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(lanes), _mm256_add_epi64(a0, a1));
  for (; at + 8 <= e; at += 8) {
    uint64_t w;
    std::memcpy(&w, p + at, sizeof w);
    total += w;
  }
  return total + lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

/// The same with AVX-512 loads (a little faster on some machines). (GCC 12
/// warns of its own headers' undefined-value idiom in the reduction.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) uint64_t sumAvx512(const char *p, size_t b, size_t e,
                                                      const ReadPattern &r) {
  __m512i a0 = _mm512_setzero_si512();
  size_t block = size_t(r.streams) * r.chunk, at = b;
  for (; at + block <= e; at += block)
    for (size_t o = 0; o < r.chunk; o += 64)
      for (int s = 0; s < r.streams; ++s) {
        const char *q = p + at + size_t(s) * r.chunk + o;
        if (r.prefetch)
          _mm_prefetch(q + r.prefetch, _MM_HINT_T0);
        a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(q));
      }
  uint64_t total = uint64_t(_mm512_reduce_add_epi64(a0));
  for (; at + 8 <= e; at += 8) {
    uint64_t w;
    std::memcpy(&w, p + at, sizeof w);
    total += w;
  }
  return total;
}

#pragma GCC diagnostic pop

uint64_t sumScalar(const uint64_t *p, size_t b, size_t e) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = b; i + 4 <= e; i += 4)
    a0 += p[i], a1 += p[i + 1], a2 += p[i + 2], a3 += p[i + 3];
  return a0 + a1 + a2 + a3;
}

/// Fused multiply-adds on 12 independent vectors (enough in flight for two
/// FMA units of 4-cycle latency), `iterations` times: 12 x 8 x 2 FLOPs each
/// with AVX2, 12 x 16 x 2 with AVX-512. Returns a value that depends on
/// every result, so nothing is optimised away.
__attribute__((target("avx2,fma"))) float fmaAvx2(int64_t iterations, float seed) {
  __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm256_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm256_fmadd_ps(a[i], m, c);
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, a[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[7];
}
__attribute__((target("avx512f"))) float fmaAvx512(int64_t iterations, float seed) {
  __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm512_add_ps(s, a[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  return lanes[0] + lanes[15];
}

/// This machine's peak f32 FMA rate (FLOP/s) with `threads` threads, in
/// the widest vectors of the artifact's code (`avx512` for x86-64-v4): the
/// best of three timed passes of every thread running fmaAvx2/fmaAvx512.
/// 0 without AVX2 and FMA.
double measurePeakFlops(unsigned threads, bool avx512) {
  avx512 = avx512 && __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return 0;
  const int64_t iterations = 4 << 20;
  const double perThread = double(iterations) * 12 * (avx512 ? 16 : 8) * 2;
  std::vector<float> sinks(threads);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        sinks[t] = avx512 ? fmaAvx512(iterations, float(t)) : fmaAvx2(iterations, float(t));
      });
    for (std::thread &t : pool)
      t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, perThread * threads / s);
  }
  volatile float sink = 0;
  for (float v : sinks)
    sink = sink + v;
  return best;
}

/// Read bandwidth of this machine (bytes/s) with `threads` threads over a
/// buffer of `bytes` (the decode step's working set, so caches help both
/// alike): the best of two passes of each read pattern (with AVX2 loads, and
/// AVX-512 ones where the CPU has them), each thread summing its own part.
/// (Which pattern reads fastest differs between machines; on the
/// development VM one sequential stream without prefetch is 20-25% short of
/// four streams with it.)
double measureReadBandwidth(unsigned threads, size_t bytes) {
  const size_t words = bytes / sizeof(uint64_t);
  std::vector<uint64_t> buffer(words);
  for (size_t i = 0; i < words; i += 512)
    buffer[i] = i; // touch every page
  bool avx2 = __builtin_cpu_supports("avx2"), avx512 = __builtin_cpu_supports("avx512f");
  double best = 0;
  std::vector<uint64_t> sinks(threads);
  const char *base = reinterpret_cast<const char *>(buffer.data());
  for (int pass = 0; pass < (avx512 ? 4 : 2); ++pass)
    for (const ReadPattern &r : kReadPatterns) {
      bool wide = avx512 && pass % 2 == 1;
      auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          size_t b = words * t / threads, e = words * (t + 1) / threads;
          sinks[t] = wide   ? sumAvx512(base, b * 8, e * 8, r)
                     : avx2 ? sumAvx2(base, b * 8, e * 8, r)
                            : sumScalar(buffer.data(), b, e);
        });
      for (std::thread &th : pool)
        th.join();
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, double(words * sizeof(uint64_t)) / seconds);
    }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// The prompt: --prompt or --prompt-file tokenized, else --prompt-len fixed
/// pseudo-random ids inside the vocabulary (--batch of them, one after the
/// other: the first is the prompt of batch 1).
llvm::Expected<std::vector<int32_t>> benchPromptIds(llmc_model *model, int64_t vocab) {
  std::string text = benchPromptText;
  if (!benchPromptFile.empty()) {
    if (!text.empty())
      return llvm::createStringError("give --prompt or --prompt-file, not both");
    auto buf = llvm::MemoryBuffer::getFile(benchPromptFile);
    if (!buf)
      return llvm::createStringError("cannot read " + benchPromptFile + ": " +
                                     buf.getError().message());
    text = (*buf)->getBuffer().str();
  }
  std::vector<int32_t> prompt;
  if (!text.empty()) {
    if (!llmc_model_has_tokenizer(model))
      return llvm::createStringError("--prompt needs the artifact's tokenizer");
    auto ids = tokenizeText(model, text);
    if (!ids)
      return ids.takeError();
    prompt = std::move(*ids);
    if (prompt.empty())
      return llvm::createStringError("the prompt has no tokens");
    std::vector<int32_t> rows;
    for (int b = 0; b < benchBatch; ++b)
      rows.insert(rows.end(), prompt.begin(), prompt.end());
    return rows;
  }
  prompt.resize(size_t(benchPrompt.getValue()) * size_t(benchBatch.getValue()));
  uint64_t x = 88172645463325252ull;
  for (int32_t &t : prompt) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t = int32_t(x % uint64_t(vocab));
  }
  return prompt;
}

/// llmc bench --speculative: plain and speculative greedy generation of
/// the same prompt in turns (a warm-up of each first), medians of --runs.
int benchSpeculation(llmc_session *session, const SpeculativeChoice &choice,
                     const std::vector<int32_t> &prompt, unsigned threads) {
  llmc_generate_params plain;
  llmc_generate_params_init(&plain);
  plain.max_new_tokens = benchGen;
  llmc_generate_params spec = plain;
  spec.speculative = choice.mode;
  spec.draft_tokens = benchDraftTokens;
  spec.ngram_max = benchNgram;
  std::vector<int32_t> outPlain(size_t(benchGen.getValue())), outSpec(outPlain.size());
  std::vector<double> plainTpot, specTpot, plainTotal, specTotal, ratio;
  int64_t drafted = 0, accepted = 0, passes = 0;
  double draftMs = 0;
  bool same = true;
  for (int run = 0; run <= benchRuns; ++run) {
    llmc_generate_stats a, b;
    size_t na = 0, nb = 0;
    if (llmc_generate(session, prompt.data(), prompt.size(), &plain, nullptr, nullptr,
                      outPlain.data(), outPlain.size(), &na, &a) != LLMC_OK ||
        llmc_generate(session, prompt.data(), prompt.size(), &spec, nullptr, nullptr,
                      outSpec.data(), outSpec.size(), &nb, &b) != LLMC_OK)
      return fail(llmc_last_error());
    same = same && na == nb && std::equal(outPlain.begin(), outPlain.begin() + long(na),
                                          outSpec.begin());
    if (run == 0)
      continue;
    plainTpot.push_back(a.time_per_output_token_ms);
    specTpot.push_back(b.time_per_output_token_ms);
    plainTotal.push_back(a.total_ms);
    specTotal.push_back(b.total_ms);
    ratio.push_back(a.time_per_output_token_ms / b.time_per_output_token_ms);
    drafted += b.draft_tokens, accepted += b.accepted_tokens, passes += b.verify_steps;
    draftMs += b.draft_ms;
  }
  double acceptance = double(accepted) / double(std::max<int64_t>(drafted, 1));
  double perPass = double(accepted + passes) / double(std::max<int64_t>(passes, 1));
  if (benchJson) {
    llvm::json::Object o{{"artifact", benchArtifact.getValue()},
                         {"speculative", benchSpeculative.getValue()},
                         {"draft_tokens", int64_t(benchDraftTokens)},
                         {"threads", int64_t(threads)},
                         {"prompt_tokens", int64_t(prompt.size())},
                         {"generated_tokens", int64_t(benchGen)},
                         {"runs", int64_t(benchRuns)},
                         {"plain_time_per_output_token_ms", median(plainTpot)},
                         {"speculative_time_per_output_token_ms", median(specTpot)},
                         {"decode_speedup", median(ratio)},
                         {"plain_total_ms", median(plainTotal)},
                         {"speculative_total_ms", median(specTotal)},
                         {"acceptance_rate", acceptance},
                         {"tokens_per_pass", perPass},
                         {"draft_ms_per_run", draftMs / double(benchRuns)},
                         {"output_identical", same}};
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
    return same ? 0 : 1;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("model:              {0} ({1} threads)\n", benchArtifact, threads);
  os << llvm::formatv("speculative:        {0}, {1} tokens proposed per pass\n",
                      benchSpeculative, benchDraftTokens);
  os << llvm::formatv("prompt / generated: {0} / {1} tokens, greedy, median of {2} runs in "
                      "turns\n",
                      prompt.size(), benchGen, benchRuns);
  os << llvm::formatv("plain decode        {0:f3} ms per token ({1:f1} tokens/s), {2:f1} ms in "
                      "all\n",
                      median(plainTpot), 1e3 / median(plainTpot), median(plainTotal));
  os << llvm::formatv("speculative decode  {0:f3} ms per token ({1:f1} tokens/s), {2:f1} ms in "
                      "all: {3:f2}x the plain decode's tokens/s\n",
                      median(specTpot), 1e3 / median(specTpot), median(specTotal),
                      median(ratio));
  os << llvm::formatv("acceptance          {0} of {1} proposed tokens ({2:f1}%), {3:f2} tokens "
                      "per verification pass\n",
                      accepted, drafted, 100 * acceptance, perPass);
  if (choice.draft)
    os << llvm::formatv("draft model         {0:f1} ms of each run's {1:f1}\n",
                        draftMs / double(benchRuns), median(specTotal));
  os << (same ? "output              identical to plain greedy decoding\n"
              : "output              DIFFERS from plain greedy decoding\n");
  return same ? 0 : 1;
}

/// llmc bench --json-schema/--regex/--grammar: the grammar made, a first
/// constrained generation (each state's masks built as it is reached),
/// then plain and constrained greedy generation in turns, medians of
/// --runs: the masks' and grammar's time per token against a decode step.
int benchConstrained(llmc_model *model, llmc_session *session, const std::vector<int32_t> &prompt,
                     unsigned threads) {
  using Clock = std::chrono::steady_clock;
  auto begin = Clock::now();
  auto made = makeGrammar(model, benchJsonSchema, benchRegex, benchGrammar);
  if (!made)
    return fail(llvm::toString(made.takeError()));
  double createMs = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
  llmc_grammar *grammar = *made;
  auto freeGrammar = llvm::make_scope_exit([&] { llmc_grammar_free(grammar); });
  llmc_generate_params plain;
  llmc_generate_params_init(&plain);
  plain.max_new_tokens = benchGen;
  llmc_generate_params constrained = plain;
  constrained.grammar = grammar;
  std::vector<int32_t> out(size_t(benchGen.getValue()));
  size_t count = 0;
  llmc_generate_stats first, a, b;
  if (llmc_generate(session, prompt.data(), prompt.size(), &constrained, nullptr, nullptr,
                    out.data(), out.size(), &count, &first) != LLMC_OK)
    return fail(llmc_last_error());
  std::vector<double> plainTpot, tpot, maskMs, overhead;
  int64_t generated = 0;
  for (int run = 0; run < benchRuns; ++run) {
    if (llmc_generate(session, prompt.data(), prompt.size(), &plain, nullptr, nullptr,
                      out.data(), out.size(), &count, &a) != LLMC_OK ||
        llmc_generate(session, prompt.data(), prompt.size(), &constrained, nullptr, nullptr,
                      out.data(), out.size(), &count, &b) != LLMC_OK)
      return fail(llmc_last_error());
    double perToken = b.grammar_ms / double(std::max<int64_t>(b.generated_tokens, 1));
    plainTpot.push_back(a.time_per_output_token_ms);
    tpot.push_back(b.time_per_output_token_ms);
    maskMs.push_back(perToken);
    overhead.push_back(perToken / a.time_per_output_token_ms);
    generated = b.generated_tokens;
  }
  double coldPerToken = first.grammar_ms / double(std::max<int64_t>(first.generated_tokens, 1));
  if (benchJson) {
    llvm::json::Object o{{"artifact", benchArtifact.getValue()},
                         {"threads", int64_t(threads)},
                         {"prompt_tokens", int64_t(prompt.size())},
                         {"constrained_tokens", generated},
                         {"runs", int64_t(benchRuns)},
                         {"grammar_create_ms", createMs},
                         {"first_run_grammar_ms", first.grammar_ms},
                         {"first_run_grammar_ms_per_token", coldPerToken},
                         {"grammar_ms_per_token", median(maskMs)},
                         {"plain_time_per_output_token_ms", median(plainTpot)},
                         {"constrained_time_per_output_token_ms", median(tpot)},
                         {"grammar_share_of_decode_step", median(overhead)}};
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
    return 0;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("model:              {0} ({1} threads)\n", benchArtifact, threads);
  os << llvm::formatv("constrained:        {0} tokens generated, greedy, median of {1} runs in "
                      "turns with plain decoding\n",
                      generated, benchRuns);
  os << llvm::formatv("grammar made        in {0:f2} ms\n", createMs);
  os << llvm::formatv("first run           {0:f2} ms on masks and the grammar ({1:f3} ms per "
                      "token: each state's masks built when first reached)\n",
                      first.grammar_ms, coldPerToken);
  os << llvm::formatv("plain decode        {0:f3} ms per token\n", median(plainTpot));
  os << llvm::formatv("constrained decode  {0:f3} ms per token, of which masks and grammar "
                      "{1:f3} ms: {2:f2}% of a plain decode step\n",
                      median(tpot), median(maskMs), 100 * median(overhead));
  return 0;
}

} // namespace

int mlir::llmc::runBench() {
  if (benchPrompt < 1 || benchGen < 2 || benchRuns < 1 || benchBatch < 1)
    return fail("--prompt-len must be >= 1, --gen >= 2, --runs >= 1 and --batch >= 1");
  llvm::SmallString<256> manifestPath(benchArtifact);
  llvm::sys::path::append(manifestPath, "manifest.json");
  auto buf = llvm::MemoryBuffer::getFile(manifestPath);
  if (!buf)
    return fail("cannot read " + manifestPath.str() + ": " + buf.getError().message());
  auto manifest = llvm::json::parse((*buf)->getBuffer());
  if (!manifest || !manifest->getAsObject())
    return fail(manifestPath.str() + ": not a JSON object");
  const llvm::json::Object &m = *manifest->getAsObject();
  int64_t decodeWeightBytes = -1;
  const std::string decodeEntry = "decode_b" + std::to_string(benchBatch);
  // The prefill bucket the prompt runs through (the smallest of the batch's
  // size that takes it whole) and its linear layers' FLOPs, for the prefill's
  // share of the peak FMA rate (CPU artifacts).
  int64_t prefillSeq = 0, prefillFlops = 0;
  if (const llvm::json::Array *entries = m.getArray("entries"))
    for (const llvm::json::Value &v : *entries) {
      const llvm::json::Object *e = v.getAsObject();
      if (!e)
        continue;
      if (e->getString("name") == llvm::StringRef(decodeEntry))
        decodeWeightBytes = e->getInteger("weight_bytes_read").value_or(-1);
      int64_t seq = e->getInteger("seq").value_or(0);
      if (e->getString("kind") == llvm::StringRef("prefill") &&
          e->getInteger("batch").value_or(0) == benchBatch && seq >= benchPrompt &&
          (!prefillSeq || seq < prefillSeq) && e->getInteger("linear_flops"))
        prefillSeq = seq,
        prefillFlops = *e->getInteger("linear_flops") +
                       e->getInteger("logits_flops_per_row").value_or(0);
    }
  const llvm::json::Object *target = m.getObject("target");
  bool cpuTarget = target && target->getString("kind") == llvm::StringRef("cpu");
  bool wide = target && (target->getString("march") == llvm::StringRef("x86-64-v4") ||
                         target->getString("march") == llvm::StringRef("native"));
  if (decodeWeightBytes < 0)
    return fail(manifestPath.str() + " has no " + decodeEntry +
                " entry with weight_bytes_read" +
                (benchBatch > 1 ? " (llmc compile --batch)" : ""));

  auto speculative = parseSpeculative(benchSpeculative, benchDevice);
  if (!speculative)
    return fail(llvm::toString(speculative.takeError()));
  auto freeDraft = llvm::make_scope_exit([&] { llmc_model_free(speculative->draft); });
  llmc_model *model = nullptr;
  llmc_load_options loadOptions{};
  loadOptions.device = benchDevice.c_str();
  if (llmc_model_load(benchArtifact.c_str(), &loadOptions, &model) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeModel = llvm::make_scope_exit([&] { llmc_model_free(model); });
  llmc_model_info info;
  (void)llmc_model_get_info(model, &info);
  auto promptIds = benchPromptIds(model, info.vocab);
  if (!promptIds)
    return fail(llvm::toString(promptIds.takeError()));
  std::vector<int32_t> prompt = std::move(*promptIds);
  const size_t batch = size_t(benchBatch.getValue()), promptLen = prompt.size() / batch;
  if (int64_t(promptLen) + benchGen > info.capacity)
    return fail("the prompt (" + std::to_string(promptLen) + " tokens) and --gen exceed "
                "the artifact's capacity " + std::to_string(info.capacity));
  llmc_session_options so{benchThreads, benchBatch, 0, nullptr, 0};
  so.draft_model = speculative->draft;
  so.draft_threads = benchDraftThreads;
  auto created = createSession(model, so, benchCpus);
  if (!created)
    return fail(llvm::toString(created.takeError()));
  llmc_session *session = *created;
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  unsigned threads = benchThreads > 0 ? unsigned(benchThreads)
                                      : std::max(1u, std::thread::hardware_concurrency());
  bool constrained = !benchJsonSchema.empty() || !benchRegex.empty() || !benchGrammar.empty();
  if (speculative->mode && constrained)
    return fail("--speculative and --json-schema/--regex/--grammar are measured one at a time");
  if (batch > 1 && (speculative->mode || constrained))
    return fail("--batch is measured with plain greedy generation (not --speculative, "
                "--json-schema, --regex or --grammar)");
  if (speculative->mode)
    return benchSpeculation(session, *speculative, prompt, threads);
  if (constrained)
    return benchConstrained(model, session, prompt, threads);
  std::vector<int32_t> out(size_t(benchGen.getValue()) * batch);
  std::vector<size_t> counts(batch);
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = benchGen;
  std::vector<double> ttft, tpot, total;
  // Bytes a decode step reads: its weights, and each sequence's cache rows
  // of the context (on average halfway through the generation). The
  // machine's bandwidth is measured before and after the runs (shared
  // machines vary); the larger counts. (Not for a GPU: this probe reads the
  // host's memory; bench/cuda measures the device's.)
  double context = double(promptLen) + double(benchGen) / 2;
  double kvBytes = double(info.kv_cache_bytes) / double(info.capacity) * context;
  double bytesPerStep = double(decodeWeightBytes) + kvBytes * double(batch);
  size_t probe = std::max<size_t>(size_t(256) << 20, size_t(bytesPerStep));
  const bool onGpu = !cpuTarget && benchDevice != "emulated";
  double bandwidth = onGpu ? 0 : measureReadBandwidth(threads, probe);
  // One warm-up run (page in the weights), then the measured runs.
  for (int run = 0; run <= benchRuns; ++run) {
    size_t count = 0;
    llmc_generate_stats st;
    llmc_status status =
        batch > 1 ? llmc_generate_batch(session, prompt.data(), promptLen, &p, out.data(),
                                        size_t(benchGen.getValue()), counts.data(), &st)
                  : llmc_generate(session, prompt.data(), prompt.size(), &p, nullptr, nullptr,
                                  out.data(), out.size(), &count, &st);
    if (status != LLMC_OK)
      return fail(llmc_last_error());
    if (run == 0)
      continue;
    ttft.push_back(st.time_to_first_token_ms);
    tpot.push_back(st.time_per_output_token_ms);
    total.push_back(st.total_ms);
  }
  if (!onGpu)
    bandwidth = std::max(bandwidth, measureReadBandwidth(threads, probe));
  double tpotMs = median(tpot); // per decode step: a token of every sequence
  double achieved = bytesPerStep / (tpotMs / 1e3);
  double peak = cpuTarget && prefillFlops ? measurePeakFlops(threads, wide) : 0;
  double prefillRate = prefillFlops / (median(ttft) / 1e3);
  if (benchJson) {
    llvm::json::Object o{{"artifact", benchArtifact.getValue()},
                         {"threads", int64_t(threads)},
                         {"batch", int64_t(batch)},
                         {"prompt_tokens", int64_t(promptLen)},
                         {"generated_tokens", int64_t(benchGen)},
                         {"runs", int64_t(benchRuns)},
                         {"time_to_first_token_ms", median(ttft)},
                         {"time_per_output_token_ms", tpotMs},
                         {"decode_tokens_per_s", double(batch) * 1e3 / tpotMs},
                         {"prefill_tokens_per_s",
                          double(batch * promptLen) / (median(ttft) / 1e3)},
                         {"decode_bytes_per_step", bytesPerStep},
                         {"decode_bytes_per_token", bytesPerStep / double(batch)},
                         {"decode_bandwidth_gbs", achieved / 1e9}};
    if (!onGpu) {
      o["machine_read_bandwidth_gbs"] = bandwidth / 1e9;
      o["bandwidth_fraction"] = achieved / bandwidth;
    }
    if (peak > 0) {
      o["prefill_linear_gflop"] = double(prefillFlops) / 1e9;
      o["prefill_gflops"] = prefillRate / 1e9;
      o["machine_peak_fma_gflops"] = peak / 1e9;
      o["prefill_fma_fraction"] = prefillRate / peak;
    }
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
    return 0;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("model:              {0} ({1} threads)\n", benchArtifact, threads);
  os << llvm::formatv("prompt / generated: {0} / {1} tokens{3}, median of {2} runs\n",
                      promptLen, benchGen, benchRuns,
                      batch > 1 ? " for each of " + std::to_string(batch) + " sequences" : "");
  os << llvm::formatv("time to first token {0:f2} ms ({1:f1} prompt tokens/s)\n", median(ttft),
                      double(batch * promptLen) / (median(ttft) / 1e3));
  os << llvm::formatv("{0,-20}{1:f2} ms ({2:f1} tokens/s)\n",
                      batch > 1 ? "time per step" : "time per token", tpotMs,
                      double(batch) * 1e3 / tpotMs);
  if (onGpu)
    os << llvm::formatv("decode reads        {0:f1} MB/step: {1:f1} GB/s (bench/cuda/decode.sh "
                        "sets it against the GPU's measured bandwidth)\n",
                        bytesPerStep / 1e6, achieved / 1e9);
  else
    os << llvm::formatv("decode reads        {0:f1} MB/step: {1:f1} GB/s, {3:f0}% of the {2:f1} "
                        "GB/s this machine reads a buffer of that size at\n",
                        bytesPerStep / 1e6, achieved / 1e9, bandwidth / 1e9,
                        100 * achieved / bandwidth);
  if (peak > 0)
    os << llvm::formatv("prefill computes    {0:f2} GFLOP in its linear layers (bucket {1}): "
                        "{2:f1} GFLOP/s over the whole step, {4:f0}% of the {3:f1} GFLOP/s this "
                        "machine's f32 FMAs peak at ({5})\n",
                        double(prefillFlops) / 1e9, prefillSeq, prefillRate / 1e9, peak / 1e9,
                        100 * prefillRate / peak, wide ? "AVX-512" : "AVX2");
  return 0;
}
