//===- tokenizer_fuzzer.cpp - libFuzzer target for the tokenizer ----------===//
//
// Two kinds of input, told apart by the first byte:
//   'J' + a tokenizer.json: loaded (errors are fine, crashes are not); when
//       it loads, a fixed text is encoded and decoded with it.
//   anything else: text, encoded and decoded by each tokenizer.json named in
//       LLMC_FUZZ_TOKENIZERS (colon-separated; ctest gives the shared GPT-2
//       and Llama ones). Every id must lie in the vocabulary; a byte-level
//       tokenizer (GPT-2's: no normalizer, byte-level decoder) must give
//       back valid UTF-8 text exactly (but for the space add_prefix_space
//       puts first).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Tokenizer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Loaded {
  std::string path;
  llmc::Tokenizer tokenizer;
  bool byteLevel = false;
};
std::vector<std::unique_ptr<Loaded>> tokenizers;

bool validUtf8(const std::string &s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size())
      return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2)
        return false;
      cp = cp << 6 | (d & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *list = std::getenv("LLMC_FUZZ_TOKENIZERS");
  std::string paths = list ? list : "";
  for (size_t start = 0; start < paths.size();) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos)
      end = paths.size();
    auto t = std::make_unique<Loaded>();
    t->path = paths.substr(start, end - start);
    std::ifstream in(t->path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::string error;
    if (!in || !t->tokenizer.load(text.str(), error)) {
      std::fprintf(stderr, "tokenizer_fuzzer: %s: %s\n", t->path.c_str(), error.c_str());
      std::exit(2);
    }
    // GPT-2's tokenizer.json: byte-level through and through.
    t->byteLevel = text.str().find("\"normalizer\": null") != std::string::npos &&
                   text.str().find("\"ByteLevel\"") != std::string::npos;
    tokenizers.push_back(std::move(t));
    start = end + 1;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  if (!input.empty() && input[0] == 'J') {
    llmc::Tokenizer t;
    std::string error;
    if (t.load(std::string_view(input).substr(1), error)) {
      std::vector<int32_t> ids = t.encode("Hello, wörld! 123 \xF0\x9F\x98\x80");
      for (int32_t id : ids)
        if (id < 0 || id >= t.vocabSize())
          __builtin_trap();
      (void)t.decode(ids);
    }
    return 0;
  }
  for (const auto &t : tokenizers) {
    std::vector<int32_t> ids = t->tokenizer.encode(input, /*addSpecial=*/false);
    for (int32_t id : ids)
      if (id < 0 || id >= t->tokenizer.vocabSize()) {
        std::fprintf(stderr, "tokenizer_fuzzer: %s: id %d out of range\n", t->path.c_str(), id);
        __builtin_trap();
      }
    std::string back = t->tokenizer.decode(ids, /*skipSpecial=*/false);
    // (A ByteLevel pre-tokenizer with add_prefix_space puts a space first.)
    bool same = back == input || (back.size() == input.size() + 1 && back[0] == ' ' &&
                                  back.compare(1, std::string::npos, input) == 0);
    if (t->byteLevel && validUtf8(input) && !same) {
      std::fprintf(stderr, "tokenizer_fuzzer: %s: the text does not come back\n",
                   t->path.c_str());
      __builtin_trap();
    }
  }
  return 0;
}
