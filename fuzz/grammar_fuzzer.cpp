//===- grammar_fuzzer.cpp - libFuzzer target for constrained generation ---===//
//
// The first byte says what the rest is: 'G' a GBNF grammar, 'R' a regular
// expression, anything else a JSON Schema. Errors are fine, crashes and
// hangs are not. A grammar that builds is run over a small vocabulary
// (every byte, and multi-byte tokens of the kinds real vocabularies have):
// for up to 24 steps the token mask must be exactly the tokens whose bytes
// keep a parse alive, and the walk follows one of them.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/grammar/Matcher.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace g = llmc::grammar;

namespace {

std::vector<std::string> vocabulary() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b)
    v.push_back(std::string(1, char(b)));
  for (const char *t : {"\"", "\":", "{\"", "\"}", "\",", "ab", " the", "\xce\xb1", "\xce",
                        "12", "},", "\n  ", "true", "null", "[1", "\\u00", "a{", "((", "+-",
                        "\xe2\x82\xac", "\xf0\x9f\x98", "", "::=", "xyz"})
    v.push_back(t);
  return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096)
    return 0;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1), error;
  g::RuleSet rules;
  g::Syntax syntax = data[0] == 'G'   ? g::Syntax::Gbnf
                     : data[0] == 'R' ? g::Syntax::Regex
                                      : g::Syntax::JsonSchema;
  bool parsed = g::parse(syntax, text, rules, error);
  if (!parsed && error.empty())
    std::abort(); // a refusal must say why
  g::Grammar grammar;
  if (!parsed || !g::build(rules, grammar, error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  static const std::vector<std::string> vocab = vocabulary();
  g::Matcher m(grammar, vocab);
  g::StackPool pool;
  g::Stacks at = m.start(pool), next;
  std::vector<uint64_t> mask(m.maskWords());
  for (int step = 0; step < 24 && g::Matcher::canContinue(at); ++step) {
    m.mask(pool, at, mask.data());
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < int32_t(vocab.size()); ++t) {
      if (!m.advanceToken(pool, at, t, next, &error))
        return 0; // too ambiguous to follow: a clean refusal
      bool alive = !next.empty();
      if (alive != bool((mask[size_t(t) / 64] >> (t % 64)) & 1))
        std::abort(); // the mask disagrees with the definition
      if (alive)
        allowed.push_back(t);
    }
    if (allowed.empty())
      return 0; // a state no token continues (e.g. a class of no byte)
    int32_t pick = allowed[(size_t(step) * 7919 + size) % allowed.size()];
    if (!m.advanceToken(pool, at, pick, next, &error))
      return 0;
    at.swap(next);
  }
  return 0;
}
