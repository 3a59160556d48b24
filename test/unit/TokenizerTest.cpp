//===- TokenizerTest.cpp - llmc's tokenizer against the tokenizers library -===//
//
// test/unit/Inputs/tokenizers/<name>/cases.json (tools/fixtures/
// gen_tokenizer_cases.py) holds the ids the `tokenizers` library gives a
// corpus of strings and its decoding of them, for GPT-2 and Llama-2 (the
// shared models' tokenizer.json) and for Llama-3-, Qwen2- and Metaspace-style
// tokenizers trained for the test.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Tokenizer.h"
#include "runtime/src/support/Json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace {

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TokenizerCases : public ::testing::TestWithParam<const char *> {};

TEST_P(TokenizerCases, MatchTheTokenizersLibrary) {
  std::string dir = std::string(LLMC_SOURCE_DIR) + "/test/unit/Inputs/tokenizers/" + GetParam();
  llmc::json::Value manifest;
  std::string error;
  ASSERT_TRUE(llmc::json::parse(readFile(dir + "/cases.json"), manifest, error)) << error;
  std::string where = manifest.get("tokenizer")->asString();
  std::string path = where.rfind("shared:", 0) == 0
                         ? std::string(LLMC_SHARED_DIR) + "/" + where.substr(7)
                         : dir + "/" + where;
  std::string text = readFile(path);
  if (text.empty())
    GTEST_SKIP() << path << " is not here (../shared)";
  llmc::Tokenizer tok;
  ASSERT_TRUE(tok.load(text, error)) << error;
  int checked = 0;
  for (const llmc::json::Value &c : manifest.get("cases")->array) {
    std::string input = c.get("text")->string;
    std::vector<int32_t> want;
    for (const llmc::json::Value &id : c.get("ids")->array)
      want.push_back(int32_t(id.asInt()));
    EXPECT_EQ(tok.encode(input), want) << GetParam() << ": encode(\"" << input << "\")";
    EXPECT_EQ(tok.decode(want), c.get("decoded")->string)
        << GetParam() << ": decode of \"" << input << "\"";
    ++checked;
  }
  EXPECT_GT(checked, 15);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenizerCases,
                         ::testing::Values("gpt2", "llama2", "llama3-style", "qwen2-style",
                                           "metaspace-style"));

TEST(Tokenizer, RefusesWhatItDoesNotSupport) {
  llmc::Tokenizer tok;
  std::string error;
  EXPECT_FALSE(tok.load("{", error));
  EXPECT_NE(error.find("tokenizer.json"), std::string::npos) << error;
  EXPECT_FALSE(tok.load(R"({"model": {"type": "WordPiece", "vocab": {}}})", error));
  EXPECT_EQ(error, "tokenizer.json: model type 'WordPiece' is not supported (BPE is)");
  EXPECT_FALSE(tok.load(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                            "normalizer": {"type": "NFKC"}})",
                        error));
  EXPECT_EQ(error, "tokenizer.json: normalizer 'NFKC' is not supported");
  EXPECT_FALSE(tok.load(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})",
                        error));
  EXPECT_EQ(error, "tokenizer.json: merge 'a b' uses tokens outside the vocab");
  // The library's Metaspace replacement is one character (a Rust char).
  EXPECT_FALSE(tok.load(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                            "decoder": {"type": "Metaspace", "replacement": ""}})",
                        error));
  EXPECT_EQ(error, "tokenizer.json: the Metaspace decoder's replacement must be one character");
  EXPECT_FALSE(tok.load(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                            "pre_tokenizer": {"type": "Metaspace", "replacement": "ab"}})",
                        error));
  EXPECT_EQ(error,
            "tokenizer.json: the Metaspace pre-tokenizer's replacement must be one character");
}

} // namespace
