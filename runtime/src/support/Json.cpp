//===- Json.cpp - a small JSON reader for the runtime ---------------------===//
#include "runtime/src/support/Json.h"

#include <cmath>
#include <cstdlib>

namespace llmc::json {

const Value *Value::get(std::string_view key) const {
  if (kind != Object)
    return nullptr;
  for (const auto &[k, v] : members)
    if (k == key)
      return &v;
  return nullptr;
}

bool Value::isInt() const {
  return kind == Number && std::isfinite(number) && number == std::floor(number) &&
         std::fabs(number) < 9.007199254740992e15;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

namespace {

class Parser {
public:
  Parser(std::string_view text, std::string &error) : s(text), error(error) {}

  bool document(Value &out) {
    skipSpace();
    if (!value(out, 0))
      return false;
    skipSpace();
    if (pos != s.size())
      return fail("unexpected text after the value");
    return true;
  }

private:
  static constexpr int kMaxDepth = 256;

  bool fail(const std::string &what) {
    error = what + " at byte " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool literal(std::string_view word) {
    if (s.substr(pos, word.size()) != word)
      return fail("invalid literal");
    pos += word.size();
    return true;
  }

  bool value(Value &out, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos >= s.size())
      return fail("unexpected end of input");
    char c = s[pos];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = Value::String;
      return string(out.string);
    }
    if (c == 't') {
      out.kind = Value::Bool;
      out.boolean = true;
      return literal("true");
    }
    if (c == 'f') {
      out.kind = Value::Bool;
      out.boolean = false;
      return literal("false");
    }
    if (c == 'n') {
      out.kind = Value::Null;
      return literal("null");
    }
    return number(out);
  }

  bool object(Value &out, int depth) {
    out.kind = Value::Object;
    ++pos;
    skipSpace();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a member name");
      std::string key;
      if (!string(key))
        return false;
      skipSpace();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':'");
      ++pos;
      skipSpace();
      Value v;
      if (!value(v, depth + 1))
        return false;
      out.members.emplace_back(std::move(key), std::move(v));
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool array(Value &out, int depth) {
    out.kind = Value::Array;
    ++pos;
    skipSpace();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      Value v;
      if (!value(v, depth + 1))
        return false;
      out.array.push_back(std::move(v));
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool hex4(uint32_t &out) {
    if (pos + 4 > s.size())
      return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= uint32_t(c - 'A' + 10);
      else
        return fail("invalid \\u escape");
    }
    return true;
  }

  bool string(std::string &out) {
    ++pos; // "
    while (true) {
      if (pos >= s.size())
        return fail("unterminated string");
      char c = s[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo = 0;
          if (s.substr(pos, 2) != "\\u")
            return fail("unpaired surrogate");
          pos += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xDC00 || lo >= 0xE000)
            return fail("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return fail("unpaired surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return fail("invalid escape");
      }
    }
  }

  bool number(Value &out) {
    size_t start = pos;
    if (pos < s.size() && s[pos] == '-')
      ++pos;
    auto digits = [&] {
      size_t d = pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
      return pos > d;
    };
    if (!digits())
      return fail("invalid value");
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("invalid number");
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("invalid number");
    }
    out.kind = Value::Number;
    out.number = std::strtod(std::string(s.substr(start, pos - start)).c_str(), nullptr);
    return true;
  }

  std::string_view s;
  std::string &error;
  size_t pos = 0;
};

} // namespace

bool parse(std::string_view text, Value &out, std::string &error) {
  out = Value();
  return Parser(text, error).document(out);
}

} // namespace llmc::json
