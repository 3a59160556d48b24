//===- llmc.hpp - C++ convenience over llmc.h -----------------------------===//
//
// RAII owners and exceptions-free results over the C API:
//
//   auto model = llmc::Model::load("model.llmc");          // llmc::Result<Model>
//   if (!model) { std::cerr << model.error() << "\n"; return 1; }
//   auto session = model->session();
//   llmc::GenerateOptions opts;
//   opts.params.max_new_tokens = 32;
//   auto out = session->generate(model->tokenize("Once upon a time"), opts,
//                                [](int32_t tok) { return true; });   // keep going
//   std::cout << model->detokenize(*out) << "\n";
//
// Every call that can fail returns llmc::Result<T>: the value, or the
// runtime's message. Objects are movable, not copyable; a Session keeps its
// model alive (as the C API does). Header-only.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LLMC_HPP
#define LLMC_LLMC_HPP

#include "llmc/llmc.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc {

/// A value or the error message of the call that should have made it.
template <typename T> class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  static Result failure(llmc_status status) { return Result(status, llmc_last_error()); }

  explicit operator bool() const { return value_.has_value(); }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  llmc_status status() const { return status_; }
  const std::string &error() const { return error_; }

private:
  Result(llmc_status status, std::string error) : status_(status), error_(std::move(error)) {}
  std::optional<T> value_;
  llmc_status status_ = LLMC_OK;
  std::string error_;
};

/// A grammar the generated text must match (llmc_grammar_create): made by
/// Model::grammar, used through GenerateOptions::grammar.
class Grammar {
public:
  const llmc_grammar *get() const { return g_.get(); }

private:
  friend class Model;
  explicit Grammar(llmc_grammar *g) : g_(g, &llmc_grammar_free) {}
  std::unique_ptr<llmc_grammar, void (*)(llmc_grammar *)> g_;
};

struct GenerateOptions {
  llmc_generate_params params;
  std::vector<int32_t> stopTokens;      // added to params
  std::vector<std::string> stopStrings; // added to params (needs the artifact's tokenizer)
  const Grammar *grammar = nullptr;     // sets params.grammar; must outlive the call
  GenerateOptions() { llmc_generate_params_init(&params); }
};

class Session {
public:
  /// Appends tokens; the logits after the last one ([vocab]).
  Result<std::vector<float>> append(const std::vector<int32_t> &tokens) {
    std::vector<float> logits(static_cast<size_t>(vocab_));
    if (llmc_status s = llmc_session_append(s_.get(), tokens.data(), tokens.size(), logits.data());
        s != LLMC_OK)
      return Result<std::vector<float>>::failure(s);
    return logits;
  }

  /// Resets and generates from `prompt`; `onToken` (optional) sees each
  /// token and returns false to stop.
  Result<std::vector<int32_t>> generate(const std::vector<int32_t> &prompt,
                                        const GenerateOptions &options = {},
                                        std::function<bool(int32_t)> onToken = nullptr,
                                        llmc_generate_stats *stats = nullptr) {
    llmc_generate_params p = options.params;
    std::vector<int32_t> stop(options.stopTokens);
    stop.insert(stop.end(), p.stop_tokens, p.stop_tokens + p.num_stop_tokens);
    p.stop_tokens = stop.data();
    p.num_stop_tokens = stop.size();
    std::vector<const char *> stopText(p.stop_strings, p.stop_strings + p.num_stop_strings);
    for (const std::string &s : options.stopStrings)
      stopText.push_back(s.c_str());
    p.stop_strings = stopText.data();
    p.num_stop_strings = stopText.size();
    if (options.grammar)
      p.grammar = options.grammar->get();
    std::vector<int32_t> out(size_t(p.max_new_tokens > 0 ? p.max_new_tokens : 1));
    size_t count = 0;
    auto trampoline = [](int32_t token, void *user) {
      auto *f = static_cast<std::function<bool(int32_t)> *>(user);
      return (*f)(token) ? 0 : 1;
    };
    if (llmc_status s = llmc_generate(s_.get(), prompt.data(), prompt.size(), &p,
                                      onToken ? +trampoline : nullptr, &onToken, out.data(),
                                      out.size(), &count, stats);
        s != LLMC_OK)
      return Result<std::vector<int32_t>>::failure(s);
    out.resize(count);
    return out;
  }

  void reset() { llmc_session_reset(s_.get()); }
  int64_t length() const { return llmc_session_length(s_.get()); }
  llmc_session *get() const { return s_.get(); }

private:
  friend class Model;
  Session(llmc_session *s, int64_t vocab) : s_(s, &llmc_session_free), vocab_(vocab) {}
  std::unique_ptr<llmc_session, void (*)(llmc_session *)> s_;
  int64_t vocab_;
};

class Model {
public:
  static Result<Model> load(const std::string &path, bool verifyWeights = false) {
    llmc_load_options options{verifyWeights ? 1 : 0};
    llmc_model *m = nullptr;
    if (llmc_status s = llmc_model_load(path.c_str(), &options, &m); s != LLMC_OK)
      return Result<Model>::failure(s);
    return Model(m);
  }

  llmc_model_info info() const {
    llmc_model_info i{};
    llmc_model_get_info(m_.get(), &i);
    return i;
  }

  /// A batch-1 session; `capacity` 0 is the compiled KV-cache capacity;
  /// `draft`: a smaller model with the same vocabulary for speculative
  /// decoding (LLMC_SPECULATIVE_DRAFT), which must outlive the session.
  Result<Session> session(int32_t threads = 0, int64_t capacity = 0,
                          const Model *draft = nullptr) {
    llmc_session_options options{threads, 1, capacity};
    options.draft_model = draft ? draft->m_.get() : nullptr;
    llmc_session *s = nullptr;
    if (llmc_status st = llmc_session_create(m_.get(), &options, &s); st != LLMC_OK)
      return Result<Session>::failure(st);
    return Session(s, info().vocab);
  }

  bool hasTokenizer() const { return llmc_model_has_tokenizer(m_.get()) != 0; }

  /// A grammar over this model's vocabulary: `kind` LLMC_GRAMMAR_GBNF,
  /// LLMC_GRAMMAR_REGEX or LLMC_GRAMMAR_JSON_SCHEMA.
  Result<Grammar> grammar(int32_t kind, std::string_view text) const {
    llmc_grammar *g = nullptr;
    if (llmc_status s = llmc_grammar_create(m_.get(), kind, text.data(), text.size(), &g);
        s != LLMC_OK)
      return Result<Grammar>::failure(s);
    return Grammar(g);
  }

  /// Token ids of `text` (empty when the artifact has no tokenizer).
  std::vector<int32_t> tokenize(std::string_view text, bool addSpecial = true) const {
    size_t n = 0;
    (void)llmc_tokenize(m_.get(), text.data(), text.size(), addSpecial, nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    if (llmc_tokenize(m_.get(), text.data(), text.size(), addSpecial, ids.data(), ids.size(),
                      &n) != LLMC_OK)
      return {};
    return ids;
  }

  std::string detokenize(const std::vector<int32_t> &ids) const {
    size_t n = 0;
    (void)llmc_detokenize(m_.get(), ids.data(), ids.size(), nullptr, 0, &n);
    std::string text(n + 1, '\0');
    if (llmc_detokenize(m_.get(), ids.data(), ids.size(), text.data(), text.size(), &n) != LLMC_OK)
      return {};
    text.resize(n);
    return text;
  }

  std::vector<int32_t> stopTokens() const {
    size_t n = 0;
    (void)llmc_model_stop_tokens(m_.get(), nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    (void)llmc_model_stop_tokens(m_.get(), ids.data(), ids.size(), &n);
    return ids;
  }

  llmc_model *get() const { return m_.get(); }

private:
  explicit Model(llmc_model *m) : m_(m, &llmc_model_free) {}
  std::unique_ptr<llmc_model, void (*)(llmc_model *)> m_;
};

} // namespace llmc

#endif // LLMC_LLMC_HPP
