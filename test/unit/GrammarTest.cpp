//===- GrammarTest.cpp - grammars, token masks, and their errors ----------===//
//
// The token masks of constrained generation are built from cached splits
// of the vocabulary (runtime/src/grammar/Matcher.h); here every mask along
// random walks through several grammars is checked against the plain
// definition (a token is allowed when its bytes, fed one by one from the
// state, leave some parse alive), over a byte-level BPE vocabulary (the
// trained example's) and a SentencePiece one with byte fallback (Llama-2's,
// 32000 tokens). Byte-level matching itself is checked against Python's
// `re` and the JSON Schema library in test/e2e/grammar.test.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Tokenizer.h"
#include "runtime/src/grammar/Matcher.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace g = llmc::grammar;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool load(const std::string &path, llmc::Tokenizer &tok) {
  std::string text = readFile(path), error;
  return !text.empty() && tok.load(text, error);
}

std::string kjvTokenizer() { return std::string(LLMC_SOURCE_DIR) + "/examples/kjv-llama/tokenizer.json"; }
std::string llamaTokenizer() {
  return std::string(LLMC_SHARED_DIR) + "/models/ort-genai-tiny-llama-fp16/tokenizer.json";
}

using Kind = g::Syntax;
constexpr Kind Gbnf = Kind::Gbnf, Regex = Kind::Regex, Schema = Kind::JsonSchema;

bool compile(Kind kind, const std::string &text, g::Grammar &out, std::string &error) {
  g::RuleSet rules;
  return g::parse(kind, text, rules, error) && g::build(rules, out, error);
}

struct Case {
  Kind kind;
  const char *text;
};

const Case walkCases[] = {
    {Schema, R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
      "age":{"type":"integer","minimum":0},"tags":{"type":"array","items":{"enum":["a","b c"]},
      "maxItems":3},"ok":{"type":"boolean"}},"required":["name"]})"},
    {Schema, R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"null"},
      {"type":"string","minLength":2,"maxLength":5}]},"minItems":1,"maxItems":4})"},
    {Regex, R"re((\d{3}-\d{4}|[A-Z][a-z]+ [a-z]+)\.)re"},
    {Regex, R"re([α-ω]+ (und|and|ünd) [^a-z\n]{2,6})re"},
    {Gbnf, R"g(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")" | " " factor)g"},
};

/// Random walks through the grammar over the vocabulary; at every state the
/// mask must be exactly the tokens whose bytes keep a parse alive.
void checkWalks(const llmc::Tokenizer &tok, int walks, int steps) {
  std::vector<std::string> bytes = tok.tokenBytes();
  std::mt19937 rng(7);
  int checked = 0;
  for (const Case &c : walkCases) {
    SCOPED_TRACE(c.text);
    g::Grammar grammar;
    std::string error;
    ASSERT_TRUE(compile(c.kind, c.text, grammar, error)) << error;
    g::Matcher m(grammar, bytes);
    std::vector<uint64_t> mask(m.maskWords());
    for (int walk = 0; walk < walks; ++walk) {
      g::StackPool pool;
      g::Stacks at = m.start(pool), next;
      for (int step = 0; step < steps && g::Matcher::canContinue(at); ++step) {
        m.mask(pool, at, mask.data());
        std::vector<int32_t> allowed;
        for (int32_t t = 0; t < int32_t(bytes.size()); ++t) {
          ASSERT_TRUE(m.advanceToken(pool, at, t, next, &error)) << error;
          bool expected = !next.empty();
          bool got = (mask[size_t(t) / 64] >> (t % 64)) & 1;
          ASSERT_EQ(got, expected) << "token " << t << " '" << bytes[size_t(t)] << "' at step "
                                   << step << " of walk " << walk;
          if (expected)
            allowed.push_back(t);
        }
        ASSERT_FALSE(allowed.empty()) << "a live state with no token at step " << step;
        ++checked;
        int32_t pick = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.advanceToken(pool, at, pick, next, &error));
        at.swap(next);
      }
    }
  }
  EXPECT_GE(checked, walks * int(std::size(walkCases)) * 4) << "the walks ended too soon";
}

} // namespace

TEST(Grammar, MasksAreTheTokensThatKeepAParseAliveByteLevelVocab) {
  llmc::Tokenizer tok;
  ASSERT_TRUE(load(kjvTokenizer(), tok));
  checkWalks(tok, 4, 40);
}

TEST(Grammar, MasksAreTheTokensThatKeepAParseAliveSentencePieceVocab) {
  llmc::Tokenizer tok;
  if (!load(llamaTokenizer(), tok))
    GTEST_SKIP() << llamaTokenizer() << " is not here (../shared)";
  checkWalks(tok, 2, 12);
}

// A token's bytes are what it adds to the decoded text after another token.
TEST(Grammar, TokenBytesAreWhatATokenAddsToTheText) {
  for (const std::string &path : {kjvTokenizer(), llamaTokenizer()}) {
    llmc::Tokenizer tok;
    if (!load(path, tok))
      continue;
    std::vector<std::string> bytes = tok.tokenBytes();
    int32_t anchor = tok.encode("a", false).back();
    std::string base = tok.decode({anchor});
    int checked = 0;
    for (int32_t t = 0; t < int32_t(bytes.size()); ++t) {
      if (bytes[size_t(t)].empty())
        continue;
      std::string text = tok.decode({anchor, t});
      if (text.find("\xef\xbf\xbd") != std::string::npos)
        continue; // part of a character: decode shows U+FFFD
      ASSERT_EQ(text, base + bytes[size_t(t)]) << path << " token " << t;
      ++checked;
    }
    EXPECT_GT(checked, int(bytes.size()) / 2) << path;
  }
}

TEST(Grammar, ErrorsNameTheProblem) {
  struct Bad {
    Kind kind;
    const char *text, *message;
  } bad[] = {
      {Gbnf, "root ::= a\na ::= a \"x\" | \"y\"", "'a' is left-recursive"},
      {Gbnf, "root ::= a \"y\"\na ::= \"x\"? a \"z\" | \"w\"", "'a' is left-recursive"},
      {Gbnf, "root ::= b \"y\"\nb ::= c \"v\" | \"w\"\nc ::= \"x\"* b", "left-recursive"},
      {Gbnf, "root ::= item\n", "rule 'item' is used in 'root' but not defined"},
      {Gbnf, "start ::= \"x\"", "no 'root' rule"},
      {Gbnf, "root ::= \"x\"\nroot ::= \"y\"", "'root' is defined twice"},
      {Gbnf, "root ::= \"a\" root", "matches no text"},
      {Gbnf, "root ::= \"abc", "is not closed"},
      {Gbnf, "root ::= [a-", "is not closed"},
      {Gbnf, "root ::= [z-a]", "backwards"},
      {Gbnf, "root ::= \"a\"{3,2}", "maximum is below its minimum"},
      {Gbnf, "root ::= \"a\"{20000}", "past 10000"},
      {Gbnf, "root ::= \"\\q\"", "unknown escape \\q"},
      {Gbnf, "root ::= ( \"a\"", "expected ')'"},
      {Gbnf, "root ::= \"a\" )", "')' without its '('"},
      {Gbnf, "", "no rules"},
      {Regex, "(a", "expected ')'"},
      {Regex, "a)", "')' without its '('"},
      {Regex, "*a", "nothing to repeat"},
      {Regex, "(a)\\1", "backreferences"},
      {Regex, "(?=a)b", "lookaround"},
      {Regex, "a\\bb", "anchor \\b"},
      {Regex, "a^b", "'^' is only supported at the start"},
      {Regex, "[^\\x00-\\U0010FFFF]", "matches no text"},
      {Schema, "{", "not valid JSON"},
      {Schema, R"({"type":"string","format":"hostname"})", "the format 'hostname' is not supported"},
      {Schema, R"({"type":"string","multipleOf":2})", "keyword 'multipleOf' is not supported"},
      {Schema, R"({"type":"string","pattern":"a(b"})", "'pattern': regex at offset 3"},
      {Schema, R"({"type":"string","pattern":"a","maxLength":3})", "beside 'minLength' or"},
      {Schema, R"({"oneOf":[{"type":"string"},{"maxLength":3}]})", "alternatives 0 and 1 may both"},
      {Schema, R"({"oneOf":[{"properties":{"k":{"const":1}},"required":["k"]},{"properties":{"k":{"const":2}},"required":["k"]}]})",
       "may both match"},
      {Schema, R"({"allOf":[{"type":"string"}]})", "keyword 'allOf' is not supported"},
      {Schema, R"({"type":"integer","minimum":5,"maximum":4})", "hold no integer"},
      {Schema, R"({"type":"integer","exclusiveMaximum":1e20,"minimum":1e17})", "hold no integer"},
      {Schema, R"({"type":"string","minimum":1})", "'minimum' applies to numbers, not to string"},
      {Schema, R"({"type":"integer","maximum":"3"})", "'maximum' must be a number"},
      {Schema, R"({"type":"strin"})", "unknown type 'strin'"},
      {Schema, R"({"type":"object","properties":{"a":{}},"required":["b"]})",
       "required property 'b' is not among 'properties'"},
      {Schema, R"({"type":"array","minItems":3,"maxItems":2})", "'maxItems' is below"},
      {Schema, R"({"$ref":"#/$defs/missing"})", "names nothing"},
      {Schema, R"({"$ref":"http://example.com/s.json"})", "same document"},
      {Schema, "false", "matches nothing"},
      {Schema, R"({"enum":[]})", "non-empty array"},
  };
  for (const Bad &b : bad) {
    g::Grammar grammar;
    std::string error;
    EXPECT_FALSE(compile(b.kind, b.text, grammar, error)) << b.text;
    EXPECT_NE(error.find(b.message), std::string::npos)
        << "for " << b.text << "\n  got: " << error << "\n  expected it to contain: " << b.message;
  }
}

// Nesting is limited, not the C++ stack: a deeply nested text is refused
// with a message, and a deeply nested grammar source too.
TEST(Grammar, DeepNestingIsAnErrorNotACrash) {
  g::Grammar grammar;
  std::string error;
  ASSERT_TRUE(compile(Gbnf, "root ::= \"(\" root \")\" | \"x\"", grammar, error)) << error;
  g::Matcher m(grammar, {});
  g::StackPool pool;
  g::Stacks at = m.start(pool), next;
  bool refused = false;
  for (int i = 0; i < 100000 && !refused; ++i) {
    refused = !m.advance(pool, at, '(', next, &error);
    at.swap(next);
  }
  EXPECT_TRUE(refused);
  EXPECT_NE(error.find("nesting deeper than"), std::string::npos) << error;
  std::string deep(5000, '(');
  EXPECT_FALSE(compile(Regex, deep + "a" + std::string(5000, ')'), grammar, error));
  EXPECT_NE(error.find("nested too deeply"), std::string::npos) << error;
}
