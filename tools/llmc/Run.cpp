//===- Run.cpp - llmc run: generate tokens from an artifact ---------------===//
//
// Generates tokens through the runtime (llmc.h), as an application would:
// a prompt as ids or text, sampling and stop options, streaming, batches
// of sequences, and speculative decoding (prompt lookup or a draft model).
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"

#include "llmc/llmc.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::llmc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory &cat() { return llmcOptionCategory(); }

// --- llmc run ----------------------------------------------------------------
cl::SubCommand runCmd("run", "Generate tokens from a compiled artifact");
cl::opt<std::string> runArtifact(cl::Positional, cl::desc("<model.llmc>"), cl::Required,
                                 cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runIds("ids", cl::desc("The prompt as token ids, comma-separated"),
                            cl::value_desc("1,2,3"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runPrompt("prompt", cl::desc("The prompt as text (needs a tokenizer)"),
                               cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runMaxNew("max-new-tokens", cl::desc("Tokens to generate (default 32)"),
                       cl::init(32), cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runTemperature("temperature", cl::desc("0: greedy (the default)"), cl::init(0),
                              cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runTopK("top-k", cl::desc("Keep the k most likely tokens (0: off)"), cl::init(0),
                     cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runTopP("top-p", cl::desc("Nucleus sampling (1: off)"), cl::init(1),
                       cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runMinP("min-p", cl::desc("Drop tokens below min-p x the top probability"),
                       cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<float> runRepPenalty("repetition-penalty", cl::desc("1: off"), cl::init(1),
                             cl::sub(runCmd), cl::cat(cat()));
cl::opt<uint64_t> runSeed("seed", cl::desc("Sampling seed"), cl::init(0), cl::sub(runCmd),
                          cl::cat(cat()));
cl::opt<std::string> runStop("stop-ids", cl::desc("Stop after any of these token ids"),
                             cl::value_desc("2,3"), cl::sub(runCmd), cl::cat(cat()));
cl::list<std::string> runStopText(
    "stop", cl::desc("Stop once the generated text contains this string (repeatable); the text "
                     "printed ends before it (needs the artifact's tokenizer)"),
    cl::value_desc("text"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runFormat("format",
                               cl::desc("ids: the generated ids on one line, comma-separated; "
                                        "text: their text (default: text for --prompt, ids for "
                                        "--ids)"),
                               cl::init(""), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runIgnoreEos("ignore-eos",
                           cl::desc("Do not stop at the model's end-of-sequence tokens"),
                           cl::init(false), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runStream("stream", cl::desc("Print each token as it is generated"),
                        cl::init(false), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runThreads("threads", cl::desc("Threads (0: one per hardware thread)"),
                        cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runCpus("cpus",
                            cl::desc("Pin the worker threads to these CPUs (comma-separated; "
                                     "worker i to the i-th, modulo)"),
                            cl::sub(runCmd), cl::cat(cat()));
cl::opt<int64_t> runCapacity(
    "capacity",
    cl::desc("KV-cache positions per sequence (prompt + generated; 0: the compiled --max-seq)"),
    cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runSpeculative(
    "speculative",
    cl::desc("prompt-lookup: propose the tokens that followed the latest earlier occurrence of "
             "the text's last n tokens; draft:PATH: a smaller artifact with the same tokenizer "
             "proposes them; either way they are verified in one pass (greedy output "
             "unchanged, sampled output of the same distribution)"),
    cl::init(""), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runDraftThreads("draft-threads",
                             cl::desc("--speculative draft: the draft's threads (0: --threads)"),
                             cl::init(0), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runDraftTokens("draft-tokens",
                            cl::desc("--speculative: the most tokens proposed per step "
                                     "(default 4; fewer after rejections)"),
                            cl::init(4), cl::sub(runCmd), cl::cat(cat()));
cl::opt<int> runNgram("ngram", cl::desc("--speculative prompt-lookup: the longest n-gram matched "
                                        "(default 3; down to 1)"),
                      cl::init(3), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runJsonSchema(
    "json-schema",
    cl::desc("Generate JSON that validates against the JSON Schema in this file"),
    cl::value_desc("file"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runRegex("regex",
                              cl::desc("Generate text that this regular expression matches whole"),
                              cl::value_desc("re"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<std::string> runGrammarFile("grammar",
                                cl::desc("Generate text that this GBNF grammar file's root "
                                         "matches"),
                                cl::value_desc("file"), cl::sub(runCmd), cl::cat(cat()));
cl::opt<bool> runVerbose("v", cl::desc("Print timing to stderr"), cl::init(false),
                         cl::sub(runCmd), cl::cat(cat()));

cl::opt<std::string> runDevice("device",
                               cl::desc("What runs a --target cuda artifact: its GPU (the "
                                        "default), or 'emulated' (the host emulation of CUDA)"),
                               cl::sub(runCmd), cl::cat(cat()));

} // namespace

bool mlir::llmc::runCommandGiven() { return bool(runCmd); }

llvm::Expected<GrammarSource> mlir::llmc::grammarSource(llvm::StringRef jsonSchemaFile,
                                                        llvm::StringRef regex,
                                                        llvm::StringRef grammarFile) {
  int given = !jsonSchemaFile.empty() + !regex.empty() + !grammarFile.empty();
  GrammarSource src;
  if (given == 0)
    return src;
  if (given > 1)
    return llvm::createStringError("give at most one of --json-schema, --regex and --grammar");
  if (!regex.empty()) {
    src.kind = LLMC_GRAMMAR_REGEX, src.option = "--regex", src.text = regex.str();
    return src;
  }
  llvm::StringRef file = jsonSchemaFile.empty() ? grammarFile : jsonSchemaFile;
  src.option = jsonSchemaFile.empty() ? "--grammar" : "--json-schema";
  src.kind = jsonSchemaFile.empty() ? LLMC_GRAMMAR_GBNF : LLMC_GRAMMAR_JSON_SCHEMA;
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return llvm::createStringError(src.option + " " + file.str() + ": " +
                                   buf.getError().message());
  src.text = (*buf)->getBuffer().str();
  return src;
}

llvm::Expected<llmc_grammar *> mlir::llmc::makeGrammar(llmc_model *model,
                                                       llvm::StringRef jsonSchemaFile,
                                                       llvm::StringRef regex,
                                                       llvm::StringRef grammarFile) {
  auto src = grammarSource(jsonSchemaFile, regex, grammarFile);
  if (!src)
    return src.takeError();
  if (src->kind < 0)
    return nullptr;
  llmc_grammar *grammar = nullptr;
  if (llmc_grammar_create(model, src->kind, src->text.data(), src->text.size(), &grammar) !=
      LLMC_OK)
    return llvm::createStringError(src->option + ": " + llmc_last_error());
  return grammar;
}

llvm::Expected<std::vector<int32_t>> mlir::llmc::parseIds(llvm::StringRef text, llvm::StringRef what) {
  std::vector<int32_t> ids;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v < INT32_MIN || v > INT32_MAX)
      return llvm::createStringError(what.str() + ": '" + p.str() + "' is not a token id");
    ids.push_back(int32_t(v));
  }
  return ids;
}

llvm::Error mlir::llmc::takeCpus(llvm::StringRef text, std::vector<int32_t> &cpus, llmc_session_options &so) {
  if (text.empty())
    return llvm::Error::success();
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int32_t v;
    if (p.trim().getAsInteger(10, v) || v < 0)
      return llvm::createStringError("--cpus: '" + p.str() + "' is not a CPU number");
    cpus.push_back(v);
  }
  if (cpus.empty())
    return llvm::createStringError("--cpus lists no CPU");
  so.cpus = cpus.data();
  so.num_cpus = int32_t(cpus.size());
  return llvm::Error::success();
}

llvm::Expected<std::vector<int32_t>> mlir::llmc::tokenizeText(llmc_model *model,
                                                               llvm::StringRef text) {
  size_t count = 0;
  (void)llmc_tokenize(model, text.data(), text.size(), 1, nullptr, 0, &count);
  std::vector<int32_t> ids(count);
  if (llmc_tokenize(model, text.data(), text.size(), 1, ids.data(), ids.size(), &count) !=
      LLMC_OK)
    return llvm::createStringError(llmc_last_error());
  return ids;
}

llvm::Expected<llmc_session *> mlir::llmc::createSession(llmc_model *model,
                                                         llmc_session_options so,
                                                         llvm::StringRef cpus) {
  std::vector<int32_t> numbers;
  if (llvm::Error e = takeCpus(cpus, numbers, so))
    return std::move(e);
  llmc_session *session = nullptr;
  if (llmc_session_create(model, &so, &session) != LLMC_OK)
    return llvm::createStringError(llmc_last_error());
  return session;
}

llvm::Expected<SpeculativeChoice> mlir::llmc::parseSpeculative(llvm::StringRef spec,
                                                               llvm::StringRef device) {
  SpeculativeChoice c;
  if (spec.empty())
    return c;
  if (spec == "prompt-lookup") {
    c.mode = LLMC_SPECULATIVE_PROMPT_LOOKUP;
    return c;
  }
  llvm::StringRef given = spec;
  if (!spec.consume_front("draft:") || spec.empty())
    return llvm::createStringError("--speculative takes prompt-lookup or draft:PATH, not '" +
                                   given.str() + "'");
  // --device names what runs a cuda artifact: the draft's too when it is
  // one, and a CPU draft beside a (GPU or emulated) cuda model runs as it is.
  std::string path = spec.str(), dev;
  llvm::SmallString<256> manifest(path);
  llvm::sys::path::append(manifest, "manifest.json");
  if (auto buf = llvm::MemoryBuffer::getFile(manifest))
    if (auto json = llvm::json::parse((*buf)->getBuffer()))
      if (const llvm::json::Object *o = json->getAsObject())
        if (const llvm::json::Object *t = o->getObject("target"))
          if (t->getString("kind") == llvm::StringRef("cuda"))
            dev = device.str();
  llmc_load_options o{};
  o.device = dev.c_str();
  if (llmc_model_load(path.c_str(), &o, &c.draft) != LLMC_OK)
    return llvm::createStringError("--speculative draft:" + path + ": " + llmc_last_error());
  c.mode = LLMC_SPECULATIVE_DRAFT;
  return c;
}

namespace {

/// What --stream prints as tokens come: ids, or the text they add (held
/// back while it ends inside a UTF-8 sequence).
struct Stream {
  llmc_model *model = nullptr;
  bool text = false;
  std::vector<int32_t> ids;
  size_t printed = 0; // bytes of text already out
  size_t holdBack = 0; // bytes a stop string could still claim (its length - 1)
};

/// `text` up to the first occurrence of any --stop string.
llvm::StringRef beforeStop(llvm::StringRef text) {
  size_t cut = text.size();
  for (const std::string &s : runStopText)
    cut = std::min(cut, text.find(s));
  return text.take_front(cut);
}

int streamToken(int32_t token, void *user) {
  auto *st = static_cast<Stream *>(user);
  st->ids.push_back(token);
  if (!st->text) {
    llvm::outs() << (st->ids.size() > 1 ? "," : "") << token;
    llvm::outs().flush();
    return 0;
  }
  size_t len = 0;
  std::string buf(256, '\0');
  while (llmc_detokenize(st->model, st->ids.data(), st->ids.size(), buf.data(), buf.size(),
                         &len) != LLMC_OK &&
         len + 1 > buf.size())
    buf.resize(len + 1);
  buf.resize(len);
  // Hold back a trailing replacement character: the next token may
  // complete the sequence; and what a stop string may yet turn out to hold.
  size_t upto = beforeStop(buf).size();
  if (upto == buf.size())
    upto = buf.size() > st->holdBack ? buf.size() - st->holdBack : 0;
  if (upto >= 3 && buf.compare(upto - 3, 3, "\xef\xbf\xbd") == 0)
    upto -= 3;
  if (upto > st->printed) {
    llvm::outs() << llvm::StringRef(buf).slice(st->printed, upto);
    llvm::outs().flush();
    st->printed = upto;
  }
  return 0;
}

std::string detokenize(llmc_model *model, const std::vector<int32_t> &ids) {
  size_t len = 0;
  std::string buf(1024, '\0');
  while (llmc_detokenize(model, ids.data(), ids.size(), buf.data(), buf.size(), &len) !=
             LLMC_OK &&
         len + 1 > buf.size())
    buf.resize(len + 1);
  buf.resize(len);
  return buf;
}

/// The sampling and stop parameters `llmc run` was given.
/// The --stop strings as the C API takes them.
std::vector<const char *> stopStrings() {
  std::vector<const char *> out;
  for (const std::string &s : runStopText)
    out.push_back(s.c_str());
  return out;
}

llmc_generate_params generateParams(const std::vector<int32_t> &stop,
                                    const std::vector<const char *> &stopText) {
  llmc_generate_params p;
  llmc_generate_params_init(&p);
  p.max_new_tokens = runMaxNew;
  p.temperature = runTemperature;
  p.top_k = runTopK;
  p.top_p = runTopP;
  p.min_p = runMinP;
  p.repetition_penalty = runRepPenalty;
  p.seed = runSeed;
  p.stop_tokens = stop.data();
  p.num_stop_tokens = stop.size();
  p.stop_strings = stopText.data();
  p.num_stop_strings = stopText.size();
  p.draft_tokens = runDraftTokens;
  p.ngram_max = runNgram;
  return p;
}

} // namespace

/// llmc run --ids "A;B;...": the sequences side by side in one batched
/// session (equal lengths, a compiled batch size); one line of ids each.
static int runBatch(llmc_model *model, const std::vector<int32_t> &stop,
                    const llmc_grammar *grammar) {
  llvm::SmallVector<llvm::StringRef> rows;
  llvm::StringRef(runIds).split(rows, ';', -1, false);
  std::vector<int32_t> prompts;
  size_t length = 0;
  for (llvm::StringRef row : rows) {
    auto ids = parseIds(row, "--ids");
    if (!ids)
      return fail(llvm::toString(ids.takeError()));
    if (length && ids->size() != length)
      return fail("--ids: the sequences of a batch must have one length (" +
                  std::to_string(length) + " and " + std::to_string(ids->size()) + ")");
    length = ids->size();
    prompts.insert(prompts.end(), ids->begin(), ids->end());
  }
  if (length == 0)
    return fail("--ids is empty");
  if (runStream || (!runFormat.empty() && runFormat != "ids"))
    return fail("a batch (--ids with ';') prints ids, without --stream");
  llmc_session_options so{runThreads, int32_t(rows.size()), runCapacity, nullptr, 0};
  auto created = createSession(model, so, runCpus);
  if (!created)
    return fail(llvm::toString(created.takeError()));
  llmc_session *session = *created;
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  std::vector<const char *> stopText = stopStrings();
  llmc_generate_params p = generateParams(stop, stopText);
  p.grammar = grammar;
  size_t capacity = size_t(std::max(runMaxNew.getValue(), 1));
  std::vector<int32_t> out(rows.size() * capacity);
  std::vector<size_t> counts(rows.size());
  llmc_generate_stats stats;
  if (llmc_generate_batch(session, prompts.data(), length, &p, out.data(), capacity,
                          counts.data(), &stats) != LLMC_OK)
    return fail(llmc_last_error());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < counts[r]; ++i)
      llvm::outs() << (i ? "," : "") << out[r * capacity + i];
    llvm::outs() << "\n";
  }
  llvm::outs().flush();
  if (runVerbose)
    llvm::errs() << llvm::formatv("batch {0}: time to first token {1:f2} ms, {2:f2} ms per step, "
                                  "{3:f1} tokens/s\n",
                                  rows.size(), stats.time_to_first_token_ms,
                                  stats.time_per_output_token_ms, stats.tokens_per_second);
  return 0;
}

int mlir::llmc::runRun() {
  if (runIds.empty() == runPrompt.empty())
    return fail("give the prompt with exactly one of --ids and --prompt");
  std::string format = runFormat;
  if (format.empty())
    format = runPrompt.empty() ? "ids" : "text";
  if (format != "ids" && format != "text")
    return fail("--format must be ids or text");
  std::vector<int32_t> stop;
  bool stopGiven = !runStop.empty();
  if (stopGiven) {
    auto s = parseIds(runStop, "--stop-ids");
    if (!s)
      return fail(llvm::toString(s.takeError()));
    stop = *s;
  }
  if (runMaxNew < 0)
    return fail("--max-new-tokens must be >= 0");
  auto speculative = parseSpeculative(runSpeculative, runDevice);
  if (!speculative)
    return fail(llvm::toString(speculative.takeError()));
  auto freeDraft = llvm::make_scope_exit([&] { llmc_model_free(speculative->draft); });
  llmc_model *model = nullptr;
  llmc_load_options loadOptions{};
  loadOptions.device = runDevice.c_str();
  if (llmc_model_load(runArtifact.c_str(), &loadOptions, &model) != LLMC_OK)
    return fail(llmc_last_error());
  auto freeModel = llvm::make_scope_exit([&] { llmc_model_free(model); });
  if ((format == "text" || !runPrompt.empty()) && !llmc_model_has_tokenizer(model))
    return fail(runArtifact + " has no tokenizer: compile with --tokenizer, or use --ids and "
                              "--format ids");
  auto grammar = makeGrammar(model, runJsonSchema, runRegex, runGrammarFile);
  if (!grammar)
    return fail(llvm::toString(grammar.takeError()));
  auto freeGrammar = llvm::make_scope_exit([&] { llmc_grammar_free(*grammar); });
  // Several sequences ("1,2,3;4,5,6"): one batched session.
  if (llvm::StringRef(runIds).contains(';')) {
    if (speculative->mode)
      return fail("--speculative runs one sequence, not a batch (--ids with ';')");
    return runBatch(model, stop, *grammar);
  }
  std::vector<int32_t> prompt;
  if (!runPrompt.empty()) {
    auto ids = tokenizeText(model, runPrompt);
    if (!ids)
      return fail(llvm::toString(ids.takeError()));
    prompt = *ids;
  } else {
    auto ids = parseIds(runIds, "--ids");
    if (!ids)
      return fail(llvm::toString(ids.takeError()));
    prompt = *ids;
  }
  if (prompt.empty())
    return fail("the prompt has no tokens");
  if (!stopGiven && !runIgnoreEos) {
    size_t count = 0;
    (void)llmc_model_stop_tokens(model, nullptr, 0, &count);
    stop.resize(count);
    (void)llmc_model_stop_tokens(model, stop.data(), stop.size(), &count);
  }
  llmc_session_options so{runThreads, 1, runCapacity, nullptr, 0};
  so.draft_model = speculative->draft;
  so.draft_threads = runDraftThreads;
  auto created = createSession(model, so, runCpus);
  if (!created)
    return fail(llvm::toString(created.takeError()));
  llmc_session *session = *created;
  auto freeSession = llvm::make_scope_exit([&] { llmc_session_free(session); });
  std::vector<const char *> stopText = stopStrings();
  llmc_generate_params p = generateParams(stop, stopText);
  p.speculative = speculative->mode;
  p.grammar = *grammar;
  std::vector<int32_t> out(size_t(std::max(runMaxNew.getValue(), 1)));
  size_t count = 0;
  llmc_generate_stats stats;
  Stream st;
  st.model = model;
  st.text = format == "text";
  for (const std::string &s : runStopText)
    st.holdBack = std::max(st.holdBack, s.size() - 1);
  if (llmc_generate(session, prompt.data(), prompt.size(), &p, runStream ? streamToken : nullptr,
                    &st, out.data(), out.size(), &count, &stats) != LLMC_OK)
    return fail(llmc_last_error());
  out.resize(count);
  if (!runStream) {
    if (format == "text")
      llvm::outs() << beforeStop(detokenize(model, out));
    else
      for (size_t i = 0; i < out.size(); ++i)
        llvm::outs() << (i ? "," : "") << out[i];
  } else if (st.text) {
    std::string all = detokenize(model, out);
    llvm::StringRef shown = beforeStop(all);
    if (shown.size() > st.printed)
      llvm::outs() << shown.drop_front(st.printed);
  }
  llvm::outs() << "\n";
  llvm::outs().flush();
  if (p.grammar && !stats.grammar_complete)
    llvm::errs() << llvm::formatv("llmc: note: the text is not complete: generation stopped after "
                                  "{0} tokens, before the grammar's end (--max-new-tokens)\n",
                                  count);
  // Fewer tokens than asked without a stop token: the KV cache filled up.
  if (count < size_t(runMaxNew) && llmc_session_length(session) >= llmc_session_capacity(session))
    llvm::errs() << llvm::formatv("llmc: note: generation stopped after {0} tokens: the KV cache "
                                  "holds {1} positions (llmc run --capacity, llmc compile "
                                  "--max-seq)\n",
                                  count, llmc_session_capacity(session));
  if (runVerbose) {
    llvm::errs() << llvm::formatv("prompt {0} tokens, generated {1}; time to first token {2:f2} "
                                  "ms, {3:f2} ms per token, {4:f1} tokens/s\n",
                                  stats.prompt_tokens, stats.generated_tokens,
                                  stats.time_to_first_token_ms, stats.time_per_output_token_ms,
                                  stats.tokens_per_second);
    if (p.grammar)
      llvm::errs() << llvm::formatv("grammar: {0:f2} ms of {1:f2} ms on token masks and "
                                    "following the grammar ({2:f3} ms per token)\n",
                                    stats.grammar_ms, stats.total_ms,
                                    stats.grammar_ms /
                                        double(std::max<int64_t>(stats.generated_tokens, 1)));
    if (stats.verify_steps)
      llvm::errs() << llvm::formatv(
          "speculative: {0} verification passes, {1} of {2} proposed tokens accepted ({3:f1}%), "
          "{4:f2} tokens per pass{5}\n",
          stats.verify_steps, stats.accepted_tokens, stats.draft_tokens,
          100.0 * double(stats.accepted_tokens) / double(std::max<int64_t>(stats.draft_tokens, 1)),
          double(stats.accepted_tokens + stats.verify_steps) / double(stats.verify_steps),
          speculative->draft ? llvm::formatv("; the draft took {0:f1} of {1:f1} ms",
                                             stats.draft_ms, stats.total_ms)
                                   .str()
                             : std::string());
  }
  return 0;
}
