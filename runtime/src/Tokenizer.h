//===- Tokenizer.h - Hugging Face tokenizer.json, encode and decode -------===//
//
// The BPE tokenizers decoder LLMs ship, read from a tokenizer.json and run
// without Python, matching the `tokenizers` library (checked on a corpus in
// test/unit/TokenizerTest.cpp):
//
// * byte-level BPE (GPT-2, Llama-3, Qwen2): the ByteLevel pre-tokenizer, or
//   Split with the GPT-2 / Llama-3 / Qwen2 patterns followed by ByteLevel;
// * SentencePiece-style BPE (Llama-2, Mistral): Prepend/Replace
//   normalizers or the Metaspace pre-tokenizer, byte fallback, fused unks;
// * added tokens (special or not), found before anything else splits the
//   text (leftmost-longest); TemplateProcessing adds BOS/EOS.
//
// Merges run in rank order over a linked list of symbols (lowest rank
// first, leftmost among equals), as the library does. Anything else a
// tokenizer.json asks for (another model type, a normalizer such as NFC, a
// regex outside the known patterns) is refused at load with its name.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_H
#define LLMC_RUNTIME_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmc {

class Tokenizer {
public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;

  /// Reads a tokenizer.json; false with `error` set when it is malformed or
  /// asks for something unsupported.
  bool load(std::string_view json, std::string &error);

  /// Token ids of `text` (UTF-8); `addSpecial`: the post-processor's
  /// BOS/EOS too.
  std::vector<int32_t> encode(std::string_view text, bool addSpecial = true) const;

  /// The text of `ids` (ids outside the vocabulary are skipped);
  /// `skipSpecial`: leave out special tokens.
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecial = true) const;

  /// Every token's bytes as they stand in generated text, by id: the
  /// decoder's per-token steps (byte-level, Replace, Metaspace, byte
  /// fallback <0xXX> as its one byte), not the ones that look at the whole
  /// text (SentencePiece's Strip of the text's leading space). Special
  /// tokens, and ids no token has, get "" (grammars never allow them).
  std::vector<std::string> tokenBytes() const;

  int64_t vocabSize() const;
  /// The id of a token's text, or -1.
  int32_t tokenId(std::string_view token) const;
  /// Whether `other` gives every id the same token text (a draft model
  /// proposes ids the target must read the same way).
  bool sameVocabulary(const Tokenizer &other) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace llmc

#endif // LLMC_RUNTIME_TOKENIZER_H
