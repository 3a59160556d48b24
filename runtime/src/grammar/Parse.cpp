//===- Parse.cpp - GBNF and regular expressions into rule syntax ----------===//
//
// Both readers work on UTF-8 text, keep the offset of what they refuse in
// the message, and build the Node trees of Grammar.h; they share the
// reading of characters, escapes and [classes].
//
//===----------------------------------------------------------------------===//
#include "runtime/src/grammar/Grammar.h"
#include "runtime/src/support/Json.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace llmc::grammar {

Node Node::literal(std::string bytes) {
  Node n;
  n.kind = Literal;
  n.text = std::move(bytes);
  return n;
}

Node Node::ref(std::string name) {
  Node n;
  n.kind = Ref;
  n.text = std::move(name);
  return n;
}

Node Node::cls(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
  Node n;
  n.kind = Class;
  n.ranges = std::move(ranges);
  n.negated = negated;
  return n;
}

Node Node::repeat(Node kid, int min, int max) {
  Node n;
  n.kind = Repeat;
  n.kids.push_back(std::move(kid));
  n.min = min;
  n.max = max;
  return n;
}

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

const Ranges &digitRanges() {
  static const Ranges r = {{'0', '9'}};
  return r;
}
const Ranges &wordRanges() {
  static const Ranges r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  return r;
}
const Ranges &spaceRanges() {
  static const Ranges r = {{'\t', '\r'}, {' ', ' '}};
  return r;
}

/// A cursor over the text with the pieces both syntaxes share.
struct Reader {
  std::string_view s;
  size_t i = 0;
  std::string &error;
  const char *what; // "grammar" or "regex", for messages

  Reader(std::string_view text, std::string &err, const char *w) : s(text), error(err), what(w) {}

  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  bool fail(const std::string &message) {
    if (error.empty())
      error = std::string(what) + " at offset " + std::to_string(i) + ": " + message;
    return false;
  }

  /// One UTF-8 encoded character of the source.
  bool codePoint(uint32_t &cp) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + size_t(len) > s.size())
      return fail("the text is not valid UTF-8");
    cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (int k = 1; k < len; ++k) {
      unsigned char b = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((b >> 6) != 2)
        return fail("the text is not valid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    i += size_t(len);
    return true;
  }

  bool hex(int digits, uint32_t &cp) {
    cp = 0;
    for (int k = 0; k < digits; ++k, ++i) {
      if (done() || !std::isxdigit(static_cast<unsigned char>(s[i])))
        return fail("expected " + std::to_string(digits) + " hex digits after the escape");
      char c = s[i];
      cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                                         : (c | 0x20) - 'a' + 10);
    }
    if (cp > 0x10FFFF)
      return fail("the escape names no Unicode code point");
    return true;
  }

  /// After a backslash: the escaped character. `regex` also allows \f \v and
  /// any escaped punctuation.
  bool escape(bool regex, uint32_t &cp) {
    if (done())
      return fail("the text ends inside an escape");
    char c = s[i++];
    switch (c) {
    case 'n': cp = '\n'; return true;
    case 'r': cp = '\r'; return true;
    case 't': cp = '\t'; return true;
    case 'x': return hex(2, cp);
    case 'u': return hex(4, cp);
    case 'U': return hex(8, cp);
    case '\\': case '"': case '[': case ']': case '-': case '/': case '\'':
      cp = uint32_t(c);
      return true;
    default:
      break;
    }
    if (regex) {
      if (c == 'f') { cp = '\f'; return true; }
      if (c == 'v') { cp = '\v'; return true; }
      if (std::ispunct(static_cast<unsigned char>(c)) || c == ' ') {
        cp = uint32_t(c);
        return true;
      }
    }
    --i;
    return fail(std::string("unknown escape \\") + c);
  }

  /// A class after its '[': ranges up to the closing ']'.
  bool charClass(bool regex, Node &out) {
    Ranges ranges;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++i;
    }
    bool first = true;
    while (true) {
      if (done())
        return fail("the class [ is not closed");
      if (s[i] == ']' && !(regex && first)) {
        ++i;
        break;
      }
      first = false;
      uint32_t lo = 0;
      if (s[i] == '\\') {
        ++i;
        if (regex && !done() && s[i] && std::strchr("dwsDWS", s[i])) {
          char k = s[i++];
          const Ranges &set = k == 'd' || k == 'D' ? digitRanges()
                              : k == 'w' || k == 'W' ? wordRanges()
                                                     : spaceRanges();
          Ranges add = std::isupper(static_cast<unsigned char>(k)) ? codePoints(Node::cls(set, true))
                                                                     : set;
          ranges.insert(ranges.end(), add.begin(), add.end());
          continue;
        }
        if (!escape(regex, lo))
          return false;
      } else if (!codePoint(lo)) {
        return false;
      }
      uint32_t hi = lo;
      if (peek() == '-' && i + 1 < s.size() && s[i + 1] != ']') {
        ++i;
        if (s[i] == '\\') {
          ++i;
          if (!escape(regex, hi))
            return false;
        } else if (!codePoint(hi)) {
          return false;
        }
        if (hi < lo)
          return fail("the class range is backwards");
      }
      ranges.push_back({lo, hi});
    }
    out = Node::cls(std::move(ranges), negated);
    return true;
  }

  /// A postfix repetition on `atom`, if one follows: * + ? {m} {m,} {m,n}.
  /// With `regex`, a '{' that starts no valid bound is left for a literal.
  bool postfix(bool regex, Node &atom) {
    while (!done()) {
      char c = s[i];
      int min, max;
      if (c == '*' || c == '+' || c == '?') {
        ++i;
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
      } else if (c == '{') {
        size_t save = i++;
        auto number = [&](int &v) {
          size_t from = i;
          long long n = 0;
          while (!done() && std::isdigit(static_cast<unsigned char>(s[i])) && n <= 1000000)
            n = n * 10 + (s[i++] - '0');
          v = int(std::min<long long>(n, 1000001));
          return i > from;
        };
        bool okMin = number(min);
        max = min;
        bool valid = okMin;
        if (valid && peek() == ',') {
          ++i;
          if (!number(max))
            max = -1;
        } else if (!okMin && regex && peek() == ',') { // {,n}: Python's {0,n}
          ++i;
          min = 0;
          valid = number(max);
        }
        valid = valid && peek() == '}';
        if (!valid) {
          if (regex) {
            i = save;
            return true; // a literal '{'
          }
          return fail("expected {m}, {m,} or {m,n}");
        }
        ++i;
        if (max >= 0 && max < min)
          return fail("the repetition's maximum is below its minimum");
        if (min > 10000 || max > 10000)
          return fail("repetition bounds past 10000 are not supported");
      } else {
        return true;
      }
      if (regex && peek() == '?')
        ++i; // lazy: the same language
      else if (regex && peek() == '+')
        return fail("possessive repetition is not supported");
      atom = Node::repeat(std::move(atom), min, max);
    }
    return true;
  }
};

/// Sequences separated by '|' (both syntaxes), with the reader's sequence
/// and space.
template <typename P> bool choice(P &p, Node &out, int depth) {
  if (depth > 200)
    return p.fail("groups are nested too deeply");
  out = Node();
  out.kind = Node::Alt;
  while (true) {
    Node seq;
    if (!p.sequence(seq, depth))
      return false;
    out.kids.push_back(std::move(seq));
    p.space();
    if (p.peek() != '|')
      return true;
    ++p.i;
  }
}

// --- GBNF --------------------------------------------------------------------

struct Gbnf : Reader {
  using Reader::Reader;

  static bool nameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  }

  void space() {
    while (!done()) {
      if (std::isspace(static_cast<unsigned char>(s[i]))) {
        ++i;
      } else if (s[i] == '#') {
        while (!done() && s[i] != '\n')
          ++i;
      } else {
        break;
      }
    }
  }

  std::string name() {
    size_t from = i;
    while (!done() && nameChar(s[i]))
      ++i;
    return std::string(s.substr(from, i - from));
  }

  /// Whether a rule definition (`name ::=`) starts here.
  bool atDefinition() {
    size_t save = i;
    bool is = !name().empty();
    if (is) {
      space();
      is = s.substr(i, 3) == "::=";
    }
    i = save;
    return is;
  }

  bool alternatives(Node &out, int depth) { return choice(*this, out, depth); }

  bool sequence(Node &out, int depth) {
    out = Node();
    out.kind = Node::Seq;
    while (true) {
      space();
      if (done() || peek() == '|' || peek() == ')' || atDefinition())
        return true;
      Node atom;
      char c = s[i];
      if (c == '"') {
        ++i;
        std::string bytes;
        while (true) {
          if (done())
            return fail("the literal \" is not closed");
          if (s[i] == '"') {
            ++i;
            break;
          }
          uint32_t cp = 0;
          if (s[i] == '\\') {
            ++i;
            if (!escape(false, cp))
              return false;
          } else if (!codePoint(cp)) {
            return false;
          }
          json::appendUtf8(bytes, cp);
        }
        atom = Node::literal(std::move(bytes));
      } else if (c == '[') {
        ++i;
        if (!charClass(false, atom))
          return false;
      } else if (c == '.') {
        ++i;
        atom = Node::cls({}, true);
      } else if (c == '(') {
        ++i;
        if (!alternatives(atom, depth + 1))
          return false;
        space();
        if (peek() != ')')
          return fail("expected ')'");
        ++i;
      } else if (nameChar(c)) {
        atom = Node::ref(name());
      } else {
        return fail(std::string("unexpected '") + c + "'");
      }
      if (!postfix(false, atom))
        return false;
      out.kids.push_back(std::move(atom));
    }
  }

  bool rules(RuleSet &out) {
    space();
    if (done())
      return fail("the grammar has no rules");
    while (!done()) {
      std::string n = name();
      if (n.empty())
        return fail("expected a rule name");
      space();
      if (s.substr(i, 3) != "::=")
        return fail("expected '::=' after '" + n + "'");
      i += 3;
      Node body;
      if (!alternatives(body, 0))
        return false;
      if (peek() == ')')
        return fail("')' without its '('");
      out.rules.emplace_back(std::move(n), std::move(body));
      space();
    }
    return true;
  }
};

// --- regular expressions -----------------------------------------------------

struct Regex : Reader {
  using Reader::Reader;

  void space() {} // whitespace is text
  bool alternatives(Node &out, int depth) { return choice(*this, out, depth); }

  bool sequence(Node &out, int depth) {
    out = Node();
    out.kind = Node::Seq;
    while (!done() && peek() != '|' && peek() != ')') {
      Node atom;
      char c = s[i];
      if (c == '(') {
        ++i;
        if (peek() == '?') {
          if (s.substr(i, 2) != "?:")
            return fail("lookaround and named groups are not supported");
          i += 2;
        }
        if (!alternatives(atom, depth + 1))
          return false;
        if (peek() != ')')
          return fail("expected ')'");
        ++i;
      } else if (c == '[') {
        ++i;
        if (!charClass(true, atom))
          return false;
      } else if (c == '.') {
        ++i;
        atom = Node::cls({{'\n', '\n'}}, true);
      } else if (c == '^') {
        if (i != 0)
          return fail("'^' is only supported at the start (the match is always whole)");
        ++i;
        continue;
      } else if (c == '$') {
        if (i + 1 != s.size())
          return fail("'$' is only supported at the end (the match is always whole)");
        ++i;
        continue;
      } else if (c == '*' || c == '+' || c == '?') {
        return fail(std::string("nothing to repeat before '") + c + "'");
      } else if (c == '\\') {
        ++i;
        char k = peek();
        if (k && std::strchr("dwsDWS", k)) {
          ++i;
          const Ranges &set = k == 'd' || k == 'D' ? digitRanges()
                              : k == 'w' || k == 'W' ? wordRanges()
                                                     : spaceRanges();
          atom = Node::cls(set, std::isupper(static_cast<unsigned char>(k)) != 0);
        } else if (k && std::strchr("bBAZzG", k)) {
          return fail(std::string("the anchor \\") + k + " is not supported");
        } else if (k >= '0' && k <= '9') {
          return fail("backreferences are not supported");
        } else {
          uint32_t cp = 0;
          if (!escape(true, cp))
            return false;
          std::string bytes;
          json::appendUtf8(bytes, cp);
          atom = Node::literal(std::move(bytes));
        }
      } else {
        uint32_t cp = 0;
        if (!codePoint(cp))
          return false;
        std::string bytes;
        json::appendUtf8(bytes, cp);
        atom = Node::literal(std::move(bytes));
      }
      if (!postfix(true, atom))
        return false;
      out.kids.push_back(std::move(atom));
    }
    return true;
  }
};

} // namespace

bool parseGbnf(std::string_view text, RuleSet &out, std::string &error) {
  error.clear();
  out = RuleSet();
  Gbnf g(text, error, "grammar");
  return g.rules(out);
}

bool parseRegex(std::string_view pattern, RuleSet &out, std::string &error) {
  error.clear();
  out = RuleSet();
  Regex r(pattern, error, "regex");
  Node body;
  if (!r.alternatives(body, 0))
    return false;
  if (!r.done())
    return r.fail("')' without its '('");
  out.rules.emplace_back("root", std::move(body));
  return true;
}

bool parse(Syntax syntax, std::string_view text, RuleSet &out, std::string &error,
           std::string *gbnf) {
  switch (syntax) {
  case Syntax::Gbnf:
    return parseGbnf(text, out, error);
  case Syntax::Regex:
    return parseRegex(text, out, error);
  case Syntax::JsonSchema: {
    std::string written;
    std::string &g = gbnf ? *gbnf : written;
    return jsonSchemaToGbnf(text, g, error) && parseGbnf(g, out, error);
  }
  }
  error = "unknown grammar syntax";
  return false;
}

} // namespace llmc::grammar
