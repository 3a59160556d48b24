//===- Tokenizer.cpp - Hugging Face tokenizer.json, encode and decode -----===//
#include "runtime/src/Tokenizer.h"

#include "runtime/src/support/Json.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <queue>
#include <unordered_map>

namespace llmc {
namespace {

using json::appendUtf8;

#include "runtime/src/support/UnicodeTables.inc"

using json::Value;

// --- UTF-8 and character classes ---------------------------------------------

/// The code point at s[i] and its length; invalid bytes read as U+FFFD of
/// length 1.
uint32_t nextCodePoint(std::string_view s, size_t i, size_t &len) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + size_t(n) > s.size()) {
    len = 1;
    return 0xFFFD;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (int k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + size_t(k)]);
    if ((d >> 6) != 2) {
      len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  len = size_t(n);
  return cp;
}

template <size_t N> bool inRanges(const uint32_t (&table)[N][2], uint32_t cp) {
  size_t lo = 0, hi = N;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cp < table[mid][0])
      hi = mid;
    else if (cp > table[mid][1])
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

bool isLetter(uint32_t cp) { return inRanges(kLetterRanges, cp); }
bool isNumber(uint32_t cp) { return inRanges(kNumberRanges, cp); }
/// Unicode White_Space (what \s means to the regexes tokenizers use).
bool isSpace(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// --- the pre-tokenizer patterns ------------------------------------------------

enum class Pattern { Gpt2, Llama3, Qwen2 };

const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char *kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char *kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/// The pieces `text` splits into under `pattern` (the regex's matches; no
/// text falls between them for these patterns).
std::vector<std::string_view> splitByPattern(std::string_view text, Pattern pattern) {
  // Code points and their byte offsets (plus the end).
  std::vector<uint32_t> cp;
  std::vector<size_t> at;
  for (size_t i = 0; i < text.size();) {
    size_t len;
    cp.push_back(nextCodePoint(text, i, len));
    at.push_back(i);
    i += len;
  }
  at.push_back(text.size());
  size_t n = cp.size();
  auto letter = [&](size_t i) { return i < n && isLetter(cp[i]); };
  auto number = [&](size_t i) { return i < n && isNumber(cp[i]); };
  auto space = [&](size_t i) { return i < n && isSpace(cp[i]); };
  auto newline = [&](size_t i) { return i < n && (cp[i] == '\r' || cp[i] == '\n'); };
  auto other = [&](size_t i) { return i < n && !isSpace(cp[i]) && !isLetter(cp[i]) && !isNumber(cp[i]); };
  auto lower = [](uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  bool llama = pattern != Pattern::Gpt2;
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    // Contractions.
    if (cp[i] == '\'' && i + 1 < n) {
      auto c = [&](size_t k) { return k < n ? (llama ? lower(cp[k]) : cp[k]) : 0u; };
      uint32_t a = c(i + 1), b = c(i + 2);
      if (a == 's' || a == 't' || a == 'm' || a == 'd')
        j = i + 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        j = i + 3;
    }
    if (j == i && !llama) {
      size_t k = cp[i] == ' ' ? i + 1 : i;
      if (letter(k)) { // ' ?\p{L}+'
        for (j = k; letter(j); ++j) {
        }
      } else if (number(k)) { // ' ?\p{N}+'
        for (j = k; number(j); ++j) {
        }
      } else if (other(k)) { // ' ?[^\s\p{L}\p{N}]+'
        for (j = k; other(j); ++j) {
        }
      }
    }
    if (j == i && llama) {
      if (!newline(i) && !letter(i) && !number(i) && letter(i + 1)) { // [^\r\n\p{L}\p{N}]?\p{L}+
        for (j = i + 1; letter(j); ++j) {
        }
      } else if (letter(i)) {
        for (j = i; letter(j); ++j) {
        }
      } else if (number(i)) { // \p{N}{1,3} (Qwen2: \p{N})
        size_t most = pattern == Pattern::Llama3 ? 3 : 1;
        for (j = i; number(j) && j - i < most; ++j) {
        }
      } else {
        size_t k = cp[i] == ' ' ? i + 1 : i;
        if (other(k)) { // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
          for (j = k; other(j); ++j) {
          }
          for (; newline(j); ++j) {
          }
        }
      }
    }
    if (j == i && space(i)) {
      size_t end = i;
      while (space(end))
        ++end;
      if (llama) { // \s*[\r\n]+: up to the last newline of the run
        size_t last = end;
        for (size_t k = i; k < end; ++k)
          if (newline(k))
            last = k;
        if (last != end)
          j = last + 1;
      }
      if (j == i) { // \s+(?!\S), else \s+
        if (end == n || end - i == 1)
          j = end;
        else
          j = end - 1;
      }
    }
    if (j == i) // unreachable for these patterns: every code point is one class
      j = i + 1;
    out.push_back(text.substr(at[i], at[j] - at[i]));
    i = j;
  }
  return out;
}

// --- GPT-2's byte <-> character map ------------------------------------------

struct ByteMap {
  uint32_t toChar[256];
  std::unordered_map<uint32_t, uint8_t> toByte;
  ByteMap() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      toChar[b] = printable ? uint32_t(b) : uint32_t(256 + extra++);
      toByte[toChar[b]] = uint8_t(b);
    }
  }
};

const ByteMap &byteMap() {
  static const ByteMap map;
  return map;
}

/// A byte-level token's text back to its bytes (characters outside the
/// byte map kept as they are).
std::string byteLevelDecode(const std::string &t) {
  std::string bytes;
  for (size_t i = 0; i < t.size();) {
    size_t len;
    uint32_t cp = nextCodePoint(t, i, len);
    auto it = byteMap().toByte.find(cp);
    if (it != byteMap().toByte.end())
      bytes += char(it->second);
    else
      bytes.append(t, i, len);
    i += len;
  }
  return bytes;
}

/// Whether `s` is one UTF-8 character (what tokenizers' Metaspace takes).
bool oneCharacter(const std::string &s) {
  if (s.empty())
    return false;
  size_t len;
  nextCodePoint(s, 0, len);
  return len == s.size();
}

/// `t` with every `from` replaced by `to` (`from` empty: unchanged).
std::string replaceAll(const std::string &t, const std::string &from, const std::string &to) {
  if (from.empty())
    return t;
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (t.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += t[i++];
    }
  }
  return out;
}

/// Whether `t` is a byte-fallback token <0xXX>, and its byte.
bool byteFallbackToken(const std::string &t, unsigned &value) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
         std::sscanf(t.c_str() + 3, "%2X", &value) == 1;
}

std::string byteLevel(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    appendUtf8(out, byteMap().toChar[c]);
  return out;
}

} // namespace

// --- the tokenizer -------------------------------------------------------------

struct Tokenizer::Impl {
  // The model.
  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::string> idToToken;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges; // (a, b) -> (rank, merged)
  int32_t unk = -1;
  bool byteFallback = false, fuseUnk = false, ignoreMerges = false;
  int32_t byteToken[256];

  // Normalizer steps.
  struct Normalize {
    enum Kind { Prepend, Replace } kind;
    std::string a, b;
  };
  std::vector<Normalize> normalizers;

  // Pre-tokenizer steps.
  struct PreTokenize {
    enum Kind { ByteLevel, Split, Metaspace } kind;
    bool addPrefixSpace = false, useRegex = true;
    Pattern pattern = Pattern::Gpt2;
    std::string replacement;
    std::string prependScheme = "always";
    bool split = true;
  };
  std::vector<PreTokenize> preTokenizers;

  // Added tokens, longest first.
  struct Added {
    std::string content;
    int32_t id;
    bool special;
  };
  std::vector<Added> added;
  std::vector<bool> isSpecial;

  // Post-processor: ids before and after the sequence.
  std::vector<int32_t> prefixIds, suffixIds;

  // Decoder steps.
  struct Decode {
    enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
    std::string a, b;
    int start = 0, stop = 0;
    bool prependFirst = true;
  };
  std::vector<Decode> decoders;

  bool loadModel(const Value &m, std::string &error);
  bool loadNormalizer(const Value &n, std::string &error);
  bool loadPreTokenizer(const Value &p, std::string &error);
  bool loadPostProcessor(const Value &p, std::string &error);
  bool loadDecoder(const Value &d, std::string &error);

  std::string normalize(std::string s) const;
  void preTokenize(std::string_view s, bool first, std::vector<std::string> &words) const;
  void bpe(const std::string &word, std::vector<int32_t> &out) const;
};

namespace {

std::string typeOf(const Value *v) { return v && v->get("type") ? v->get("type")->asString() : ""; }

} // namespace

bool Tokenizer::Impl::loadModel(const Value &m, std::string &error) {
  if (typeOf(&m) != "BPE") {
    error = "tokenizer.json: model type '" + typeOf(&m) + "' is not supported (BPE is)";
    return false;
  }
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Value *v = m.get(key); v && v->kind == Value::String && !v->string.empty()) {
      error = std::string("tokenizer.json: BPE ") + key + " is not supported";
      return false;
    }
  if (const Value *d = m.get("dropout"); d && d->kind == Value::Number && d->number > 0) {
    error = "tokenizer.json: BPE dropout is not supported";
    return false;
  }
  const Value *vocabV = m.get("vocab");
  if (!vocabV || vocabV->kind != Value::Object) {
    error = "tokenizer.json: the model has no vocab";
    return false;
  }
  for (const auto &[token, id] : vocabV->members) {
    if (!id.isInt() || id.number < 0 || id.number > 1e8) {
      error = "tokenizer.json: vocab id of '" + token + "' is not a valid id";
      return false;
    }
    vocab[token] = int32_t(id.number);
    if (idToToken.size() <= size_t(id.number))
      idToToken.resize(size_t(id.number) + 1);
    idToToken[size_t(id.number)] = token;
  }
  const Value *mergesV = m.get("merges");
  if (mergesV && mergesV->kind == Value::Array) {
    int32_t rank = 0;
    for (const Value &mv : mergesV->array) {
      std::string a, b;
      if (mv.kind == Value::String) {
        size_t sp = mv.string.find(' ', 1);
        if (sp == std::string::npos) {
          error = "tokenizer.json: merge '" + mv.string + "' is not 'a b'";
          return false;
        }
        a = mv.string.substr(0, sp), b = mv.string.substr(sp + 1);
      } else if (mv.kind == Value::Array && mv.array.size() == 2) {
        a = mv.array[0].asString(), b = mv.array[1].asString();
      } else {
        error = "tokenizer.json: a merge is neither 'a b' nor [a, b]";
        return false;
      }
      auto ia = vocab.find(a), ib = vocab.find(b), im = vocab.find(a + b);
      if (ia == vocab.end() || ib == vocab.end() || im == vocab.end()) {
        error = "tokenizer.json: merge '" + a + " " + b + "' uses tokens outside the vocab";
        return false;
      }
      uint64_t key = (uint64_t(uint32_t(ia->second)) << 32) | uint32_t(ib->second);
      merges.emplace(key, std::make_pair(rank++, im->second)); // the first rank wins
    }
  }
  if (const Value *u = m.get("unk_token"); u && u->kind == Value::String) {
    auto it = vocab.find(u->string);
    unk = it == vocab.end() ? -1 : it->second;
  }
  byteFallback = m.get("byte_fallback") && m.get("byte_fallback")->boolean;
  fuseUnk = m.get("fuse_unk") && m.get("fuse_unk")->boolean;
  ignoreMerges = m.get("ignore_merges") && m.get("ignore_merges")->boolean;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = vocab.find(name);
    byteToken[b] = it == vocab.end() ? -1 : it->second;
  }
  return true;
}

bool Tokenizer::Impl::loadNormalizer(const Value &n, std::string &error) {
  std::string type = typeOf(&n);
  if (n.kind == Value::Null)
    return true;
  if (type == "Sequence") {
    if (const Value *list = n.get("normalizers"))
      for (const Value &step : list->array)
        if (!loadNormalizer(step, error))
          return false;
    return true;
  }
  if (type == "Prepend") {
    normalizers.push_back({Normalize::Prepend, n.get("prepend") ? n.get("prepend")->asString() : "", ""});
    return true;
  }
  if (type == "Replace") {
    const Value *pattern = n.get("pattern");
    if (!pattern || !pattern->get("String")) {
      error = "tokenizer.json: only string patterns are supported in the Replace normalizer";
      return false;
    }
    normalizers.push_back({Normalize::Replace, pattern->get("String")->asString(),
                           n.get("content") ? n.get("content")->asString() : ""});
    return true;
  }
  error = "tokenizer.json: normalizer '" + type + "' is not supported";
  return false;
}

bool Tokenizer::Impl::loadPreTokenizer(const Value &p, std::string &error) {
  std::string type = typeOf(&p);
  if (p.kind == Value::Null)
    return true;
  if (type == "Sequence") {
    if (const Value *list = p.get("pretokenizers"))
      for (const Value &step : list->array)
        if (!loadPreTokenizer(step, error))
          return false;
    return true;
  }
  PreTokenize step;
  if (type == "ByteLevel") {
    step.kind = PreTokenize::ByteLevel;
    step.addPrefixSpace = p.get("add_prefix_space") && p.get("add_prefix_space")->boolean;
    step.useRegex = !p.get("use_regex") || p.get("use_regex")->boolean;
  } else if (type == "Split") {
    step.kind = PreTokenize::Split;
    const Value *pattern = p.get("pattern");
    std::string regex = pattern && pattern->get("Regex") ? pattern->get("Regex")->asString() : "";
    if (regex == kGpt2Pattern)
      step.pattern = Pattern::Gpt2;
    else if (regex == kLlama3Pattern)
      step.pattern = Pattern::Llama3;
    else if (regex == kQwen2Pattern)
      step.pattern = Pattern::Qwen2;
    else {
      error = "tokenizer.json: the Split pre-tokenizer's pattern is not one llmc knows (GPT-2, "
              "Llama-3, Qwen2): " + regex;
      return false;
    }
    std::string behavior = p.get("behavior") ? p.get("behavior")->asString() : "";
    if (behavior != "Isolated" || (p.get("invert") && p.get("invert")->boolean)) {
      error = "tokenizer.json: only Isolated, non-inverted Split is supported";
      return false;
    }
  } else if (type == "Metaspace") {
    step.kind = PreTokenize::Metaspace;
    step.replacement = p.get("replacement") ? p.get("replacement")->asString() : "\xe2\x96\x81";
    if (!oneCharacter(step.replacement)) {
      error = "tokenizer.json: the Metaspace pre-tokenizer's replacement must be one character";
      return false;
    }
    if (const Value *scheme = p.get("prepend_scheme"))
      step.prependScheme = scheme->asString();
    else if (const Value *add = p.get("add_prefix_space"))
      step.prependScheme = add->boolean ? "always" : "never";
    step.split = !p.get("split") || p.get("split")->boolean;
  } else {
    error = "tokenizer.json: pre-tokenizer '" + type + "' is not supported";
    return false;
  }
  preTokenizers.push_back(step);
  return true;
}

bool Tokenizer::Impl::loadPostProcessor(const Value &p, std::string &error) {
  std::string type = typeOf(&p);
  if (p.kind == Value::Null || type == "ByteLevel")
    return true;
  if (type == "Sequence") {
    if (const Value *list = p.get("processors"))
      for (const Value &step : list->array)
        if (!loadPostProcessor(step, error))
          return false;
    return true;
  }
  if (type != "TemplateProcessing") {
    error = "tokenizer.json: post-processor '" + type + "' is not supported";
    return false;
  }
  const Value *single = p.get("single");
  const Value *specials = p.get("special_tokens");
  if (!single || single->kind != Value::Array) {
    error = "tokenizer.json: TemplateProcessing has no 'single' template";
    return false;
  }
  bool afterSequence = false;
  for (const Value &piece : single->array) {
    if (piece.get("Sequence")) {
      afterSequence = true;
      continue;
    }
    const Value *special = piece.get("SpecialToken");
    std::string name = special && special->get("id") ? special->get("id")->asString() : "";
    const Value *entry = specials ? specials->get(name) : nullptr;
    const Value *ids = entry ? entry->get("ids") : nullptr;
    if (!ids || ids->kind != Value::Array) {
      error = "tokenizer.json: TemplateProcessing names an unknown special token '" + name + "'";
      return false;
    }
    for (const Value &id : ids->array)
      (afterSequence ? suffixIds : prefixIds).push_back(int32_t(id.asInt()));
  }
  return true;
}

bool Tokenizer::Impl::loadDecoder(const Value &d, std::string &error) {
  std::string type = typeOf(&d);
  if (d.kind == Value::Null)
    return true;
  if (type == "Sequence") {
    if (const Value *list = d.get("decoders"))
      for (const Value &step : list->array)
        if (!loadDecoder(step, error))
          return false;
    return true;
  }
  Decode step;
  if (type == "ByteLevel") {
    step.kind = Decode::ByteLevel;
  } else if (type == "Replace") {
    const Value *pattern = d.get("pattern");
    if (!pattern || !pattern->get("String")) {
      error = "tokenizer.json: only string patterns are supported in the Replace decoder";
      return false;
    }
    step.kind = Decode::Replace;
    step.a = pattern->get("String")->asString();
    step.b = d.get("content") ? d.get("content")->asString() : "";
  } else if (type == "ByteFallback") {
    step.kind = Decode::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = Decode::Fuse;
  } else if (type == "Strip") {
    step.kind = Decode::Strip;
    step.a = d.get("content") ? d.get("content")->asString() : " ";
    step.start = int(d.get("start") ? d.get("start")->asInt() : 0);
    step.stop = int(d.get("stop") ? d.get("stop")->asInt() : 0);
  } else if (type == "Metaspace") {
    step.kind = Decode::Metaspace;
    step.a = d.get("replacement") ? d.get("replacement")->asString() : "\xe2\x96\x81";
    if (!oneCharacter(step.a)) {
      error = "tokenizer.json: the Metaspace decoder's replacement must be one character";
      return false;
    }
    std::string scheme = d.get("prepend_scheme") ? d.get("prepend_scheme")->asString() : "always";
    if (const Value *add = d.get("add_prefix_space"); add && !d.get("prepend_scheme"))
      scheme = add->boolean ? "always" : "never";
    step.prependFirst = scheme != "never";
  } else {
    error = "tokenizer.json: decoder '" + type + "' is not supported";
    return false;
  }
  decoders.push_back(step);
  return true;
}

std::string Tokenizer::Impl::normalize(std::string s) const {
  for (const Normalize &n : normalizers) {
    if (n.kind == Normalize::Prepend) {
      if (!s.empty())
        s = n.a + s;
    } else if (!n.a.empty()) {
      std::string out;
      for (size_t i = 0; i < s.size();) {
        if (s.compare(i, n.a.size(), n.a) == 0) {
          out += n.b;
          i += n.a.size();
        } else {
          out += s[i++];
        }
      }
      s = std::move(out);
    }
  }
  return s;
}

void Tokenizer::Impl::preTokenize(std::string_view s, bool first,
                                  std::vector<std::string> &words) const {
  std::vector<std::string> pieces{std::string(s)};
  for (const PreTokenize &p : preTokenizers) {
    std::vector<std::string> next;
    for (std::string &piece : pieces) {
      if (p.kind == PreTokenize::ByteLevel) {
        if (p.addPrefixSpace && (piece.empty() || piece[0] != ' '))
          piece = " " + piece;
        if (p.useRegex)
          for (std::string_view part : splitByPattern(piece, Pattern::Gpt2))
            next.push_back(byteLevel(part));
        else
          next.push_back(byteLevel(piece));
      } else if (p.kind == PreTokenize::Split) {
        for (std::string_view part : splitByPattern(piece, p.pattern))
          next.emplace_back(part);
      } else { // Metaspace
        std::string replaced;
        for (char c : piece) {
          if (c == ' ')
            replaced += p.replacement;
          else
            replaced += c;
        }
        bool prepend = p.prependScheme == "always" || (p.prependScheme == "first" && first);
        if (prepend && replaced.compare(0, p.replacement.size(), p.replacement) != 0)
          replaced = p.replacement + replaced;
        if (!p.split) {
          next.push_back(replaced);
          continue;
        }
        // Each word keeps the replacement that precedes it.
        size_t start = 0;
        for (size_t i = p.replacement.size(); i <= replaced.size(); ++i)
          if (i == replaced.size() || replaced.compare(i, p.replacement.size(), p.replacement) == 0) {
            if (i > start)
              next.push_back(replaced.substr(start, i - start));
            start = i;
          }
      }
    }
    pieces = std::move(next);
  }
  for (std::string &piece : pieces)
    if (!piece.empty())
      words.push_back(std::move(piece));
}

void Tokenizer::Impl::bpe(const std::string &word, std::vector<int32_t> &out) const {
  if (ignoreMerges)
    if (auto it = vocab.find(word); it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  // Symbols: one per character (or per byte, through byte fallback).
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> sym;
  bool lastUnk = false;
  for (size_t i = 0; i < word.size();) {
    size_t len;
    nextCodePoint(word, i, len);
    std::string ch = word.substr(i, len);
    i += len;
    auto it = vocab.find(ch);
    if (it != vocab.end()) {
      sym.push_back({it->second, 0, 0, true});
      lastUnk = false;
      continue;
    }
    bool bytesOk = byteFallback;
    for (unsigned char c : ch)
      bytesOk = bytesOk && byteToken[c] >= 0;
    if (bytesOk) {
      for (unsigned char c : ch)
        sym.push_back({byteToken[c], 0, 0, true});
      lastUnk = false;
      continue;
    }
    if (unk < 0)
      continue; // no way to say it: dropped, as the library does without an unk
    if (fuseUnk && lastUnk)
      continue;
    sym.push_back({unk, 0, 0, true});
    lastUnk = true;
  }
  int n = int(sym.size());
  for (int k = 0; k < n; ++k)
    sym[size_t(k)].prev = k - 1, sym[size_t(k)].next = k + 1 < n ? k + 1 : -1;
  // Lowest rank first, leftmost among equals; stale entries are skipped.
  struct Candidate {
    int32_t rank;
    int pos;
    int32_t left, right, merged;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int pos) {
    if (pos < 0 || sym[size_t(pos)].next < 0)
      return;
    const Symbol &a = sym[size_t(pos)], &b = sym[size_t(a.next)];
    auto it = merges.find((uint64_t(uint32_t(a.id)) << 32) | uint32_t(b.id));
    if (it != merges.end())
      queue.push({it->second.first, pos, a.id, b.id, it->second.second});
  };
  for (int k = 0; k + 1 < n; ++k)
    consider(k);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Symbol &a = sym[size_t(c.pos)];
    if (!a.alive || a.id != c.left || a.next < 0 || sym[size_t(a.next)].id != c.right)
      continue;
    Symbol &b = sym[size_t(a.next)];
    a.id = c.merged;
    b.alive = false;
    a.next = b.next;
    if (b.next >= 0)
      sym[size_t(b.next)].prev = c.pos;
    consider(a.prev);
    consider(c.pos);
  }
  for (int k = 0; k >= 0 && k < n; k = sym[size_t(k)].next)
    out.push_back(sym[size_t(k)].id);
}

Tokenizer::Tokenizer() : impl(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;

bool Tokenizer::load(std::string_view text, std::string &error) {
  impl = std::make_unique<Impl>();
  Value root;
  if (!json::parse(text, root, error)) {
    error = "tokenizer.json: " + error;
    return false;
  }
  const Value *model = root.get("model");
  if (!model || !impl->loadModel(*model, error))
    return error.empty() ? (error = "tokenizer.json: no model", false) : false;
  Value null;
  auto part = [&](const char *key) -> const Value & {
    const Value *v = root.get(key);
    return v ? *v : null;
  };
  if (!impl->loadNormalizer(part("normalizer"), error) ||
      !impl->loadPreTokenizer(part("pre_tokenizer"), error) ||
      !impl->loadPostProcessor(part("post_processor"), error) ||
      !impl->loadDecoder(part("decoder"), error))
    return false;
  if (const Value *added = root.get("added_tokens"); added && added->kind == Value::Array)
    for (const Value &a : added->array) {
      const Value *content = a.get("content"), *id = a.get("id");
      if (!content || !id || !id->isInt() || id->number < 0 || id->number > 1e8) {
        error = "tokenizer.json: an added token lacks content or a valid id";
        return false;
      }
      for (const char *flag : {"lstrip", "rstrip", "single_word"})
        if (a.get(flag) && a.get(flag)->boolean) {
          error = "tokenizer.json: added token '" + content->string + "' uses " + flag +
                  ", which is not supported";
          return false;
        }
      bool special = a.get("special") && a.get("special")->boolean;
      impl->added.push_back({content->string, int32_t(id->number), special});
      size_t i = size_t(id->number);
      if (impl->idToToken.size() <= i)
        impl->idToToken.resize(i + 1);
      impl->idToToken[i] = content->string;
      impl->vocab[content->string] = int32_t(i);
    }
  std::stable_sort(impl->added.begin(), impl->added.end(),
                   [](const Impl::Added &a, const Impl::Added &b) {
                     return a.content.size() > b.content.size();
                   });
  impl->isSpecial.assign(impl->idToToken.size(), false);
  for (const Impl::Added &a : impl->added)
    if (a.special)
      impl->isSpecial[size_t(a.id)] = true;
  return true;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecial) const {
  std::vector<int32_t> ids;
  if (addSpecial)
    ids = impl->prefixIds;
  // Added tokens first: leftmost, longest.
  size_t start = 0, i = 0;
  bool first = true;
  auto flush = [&](size_t end) {
    if (end > start) {
      std::vector<std::string> words;
      impl->preTokenize(impl->normalize(std::string(text.substr(start, end - start))), first,
                        words);
      for (const std::string &w : words)
        impl->bpe(w, ids);
    }
    first = false;
  };
  while (i < text.size()) {
    const Impl::Added *hit = nullptr;
    for (const Impl::Added &a : impl->added)
      if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    flush(i);
    ids.push_back(hit->id);
    i += hit->content.size();
    start = i;
  }
  flush(text.size());
  if (addSpecial)
    ids.insert(ids.end(), impl->suffixIds.begin(), impl->suffixIds.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecial) const {
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= impl->idToToken.size())
      continue;
    if (skipSpecial && impl->isSpecial[size_t(id)])
      continue;
    tokens.push_back(impl->idToToken[size_t(id)]);
  }
  for (const Impl::Decode &d : impl->decoders) {
    switch (d.kind) {
    case Impl::Decode::ByteLevel:
      for (std::string &t : tokens)
        t = byteLevelDecode(t);
      break;
    case Impl::Decode::Replace:
      for (std::string &t : tokens)
        t = replaceAll(t, d.a, d.b);
      break;
    case Impl::Decode::ByteFallback: {
      std::vector<std::string> out;
      std::string pending; // bytes of consecutive <0xXX> tokens
      auto flushBytes = [&] {
        if (pending.empty())
          return;
        // Valid UTF-8 as it is; otherwise one U+FFFD per byte.
        bool valid = true;
        for (size_t i = 0; i < pending.size() && valid;) {
          size_t len;
          uint32_t cp = nextCodePoint(pending, i, len);
          valid = !(cp == 0xFFFD && len == 1 && pending.compare(i, 3, "\xef\xbf\xbd") != 0);
          i += len;
        }
        if (valid) {
          out.push_back(pending);
        } else {
          for (size_t k = 0; k < pending.size(); ++k)
            out.push_back("\xef\xbf\xbd");
        }
        pending.clear();
      };
      for (std::string &t : tokens) {
        unsigned value;
        if (byteFallbackToken(t, value)) {
          pending += char(value);
          continue;
        }
        flushBytes();
        out.push_back(std::move(t));
      }
      flushBytes();
      tokens = std::move(out);
      break;
    }
    case Impl::Decode::Fuse: {
      std::string all;
      for (const std::string &t : tokens)
        all += t;
      tokens = {all};
      break;
    }
    case Impl::Decode::Strip:
      for (std::string &t : tokens) {
        int s = 0;
        while (s < d.start && !t.empty() && t.compare(0, d.a.size(), d.a) == 0) {
          t.erase(0, d.a.size());
          ++s;
        }
        int e = 0;
        while (e < d.stop && t.size() >= d.a.size() &&
               t.compare(t.size() - d.a.size(), d.a.size(), d.a) == 0) {
          t.erase(t.size() - d.a.size());
          ++e;
        }
      }
      break;
    case Impl::Decode::Metaspace:
      for (size_t k = 0; k < tokens.size(); ++k) {
        std::string out = replaceAll(tokens[k], d.a, " ");
        if (k == 0 && d.prependFirst && !out.empty() && out[0] == ' ')
          out.erase(0, 1);
        tokens[k] = std::move(out);
      }
      break;
    }
  }
  std::string text;
  for (const std::string &t : tokens)
    text += t;
  return text;
}

std::vector<std::string> Tokenizer::tokenBytes() const {
  std::vector<std::string> out(impl->idToToken.size());
  for (size_t id = 0; id < out.size(); ++id) {
    if (impl->isSpecial[id] || impl->idToToken[id].empty())
      continue;
    std::string t = impl->idToToken[id];
    for (const Impl::Decode &d : impl->decoders) {
      unsigned value;
      switch (d.kind) {
      case Impl::Decode::ByteLevel:
        t = byteLevelDecode(t);
        break;
      case Impl::Decode::Replace:
        t = replaceAll(t, d.a, d.b);
        break;
      case Impl::Decode::Metaspace:
        t = replaceAll(t, d.a, " ");
        break;
      case Impl::Decode::ByteFallback:
        if (byteFallbackToken(t, value))
          t = std::string(1, char(value));
        break;
      case Impl::Decode::Fuse:
      case Impl::Decode::Strip:
        break;
      }
    }
    out[id] = std::move(t);
  }
  return out;
}

int64_t Tokenizer::vocabSize() const { return int64_t(impl->idToToken.size()); }

int32_t Tokenizer::tokenId(std::string_view token) const {
  auto it = impl->vocab.find(std::string(token));
  return it == impl->vocab.end() ? -1 : it->second;
}

bool Tokenizer::sameVocabulary(const Tokenizer &other) const {
  return impl->idToToken == other.impl->idToToken;
}

} // namespace llmc
