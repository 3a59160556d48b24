//===- Build.cpp - rule syntax into the flat byte grammar -----------------===//
//
// Lowers RuleSet into Grammar (Grammar.h): literals into one byte class
// per byte, code-point classes into UTF-8 byte-range sequences, groups and
// repetitions into helper rules, then checks that the matcher can run it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/grammar/Grammar.h"

#include <algorithm>
#include <functional>
#include <map>

namespace llmc::grammar {

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
using Seq = std::vector<uint32_t>; // elements: a class index, or RuleBit | rule

constexpr size_t MaxElements = 4u << 20;

/// Sorted, merged, surrogates removed; the complement when `negated`.
Ranges normalize(Ranges r, bool negated) {
  std::sort(r.begin(), r.end());
  Ranges merged;
  for (auto [lo, hi] : r) {
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo > hi)
      continue;
    if (!merged.empty() && lo <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, hi);
    else
      merged.push_back({lo, hi});
  }
  if (negated) {
    Ranges out;
    uint32_t next = 0;
    for (auto [lo, hi] : merged) {
      if (lo > next)
        out.push_back({next, lo - 1});
      next = hi + 1;
    }
    if (next <= 0x10FFFF)
      out.push_back({next, 0x10FFFF});
    merged = std::move(out);
  }
  Ranges out;
  for (auto [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.push_back({lo, hi});
      continue;
    }
    if (lo < 0xD800)
      out.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF)
      out.push_back({0xE000, hi});
  }
  return out;
}

int utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t *out) {
  int n = utf8Length(cp);
  if (n == 1) {
    out[0] = uint8_t(cp);
    return;
  }
  for (int k = n - 1; k > 0; --k, cp >>= 6)
    out[k] = uint8_t(0x80 | (cp & 0x3F));
  out[0] = uint8_t((0xF00u >> n) | cp);
}

/// The UTF-8 encodings of [lo, hi] (one length, no surrogates) as
/// sequences of byte ranges: the range is split until, in each piece, every
/// byte position varies over a full range independently of the others.
void utf8Sequences(uint32_t lo, uint32_t hi,
                   std::vector<std::vector<std::pair<uint8_t, uint8_t>>> &out) {
  int n = utf8Length(lo);
  if (utf8Length(hi) != n) {
    uint32_t top = n == 1 ? 0x7F : n == 2 ? 0x7FF : 0xFFFF;
    utf8Sequences(lo, top, out);
    utf8Sequences(top + 1, hi, out);
    return;
  }
  for (int k = 1; k < n; ++k) {
    uint32_t m = (1u << (6 * k)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8Sequences(lo, lo | m, out);
        utf8Sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8Sequences(lo, (hi & ~m) - 1, out);
        utf8Sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int k = 0; k < n; ++k)
    seq.push_back({a[k], b[k]});
  out.push_back(std::move(seq));
}

struct Builder {
  Grammar &g;
  std::string &error;
  std::map<std::string, uint32_t> ids;
  std::vector<std::vector<Seq>> rules; // rule -> alternatives
  std::map<ByteSet, uint32_t> classIds;
  std::map<Ranges, uint32_t> classRules; // multi-byte classes, shared
  size_t elements = 0;

  Builder(Grammar &out, std::string &err) : g(out), error(err) {}

  uint32_t newRule(std::string name) {
    g.names.push_back(std::move(name));
    rules.emplace_back();
    return uint32_t(rules.size() - 1);
  }

  uint32_t byteClass(const ByteSet &set) {
    auto [it, inserted] = classIds.try_emplace(set, uint32_t(g.classes.size()));
    if (inserted)
      g.classes.push_back(set);
    return it->second;
  }

  static ByteSet byteRange(uint8_t lo, uint8_t hi) {
    ByteSet set{};
    for (unsigned b = lo; b <= hi; ++b)
      set[b >> 6] |= uint64_t(1) << (b & 63);
    return set;
  }

  bool grow(size_t n) {
    elements += n;
    if (elements > MaxElements) {
      error = "the grammar is too large (more than " + std::to_string(MaxElements) +
              " elements once repetitions are expanded)";
      return false;
    }
    return true;
  }

  /// The element for a class: one byte class when every code point is
  /// ASCII, else a rule of its UTF-8 byte sequences.
  uint32_t classSymbol(const Node &n) {
    Ranges r = codePoints(n);
    if (r.empty() || r.back().second < 0x80) {
      ByteSet set{};
      for (auto [lo, hi] : r) {
        ByteSet part = byteRange(uint8_t(lo), uint8_t(hi));
        for (int k = 0; k < 4; ++k)
          set[k] |= part[k];
      }
      return byteClass(set);
    }
    if (auto it = classRules.find(r); it != classRules.end())
      return Grammar::RuleBit | it->second;
    std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
    for (auto [lo, hi] : r)
      utf8Sequences(lo, hi, seqs);
    uint32_t rule = newRule("[class]");
    for (const auto &seq : seqs) {
      Seq alt;
      for (auto [lo, hi] : seq)
        alt.push_back(byteClass(byteRange(lo, hi)));
      rules[rule].push_back(std::move(alt));
    }
    classRules[r] = rule;
    return Grammar::RuleBit | rule;
  }

  bool lower(const Node &n, Seq &out, const std::string &owner) {
    switch (n.kind) {
    case Node::Seq:
      for (const Node &k : n.kids)
        if (!lower(k, out, owner))
          return false;
      return true;
    case Node::Literal:
      for (char c : n.text)
        out.push_back(byteClass(byteRange(uint8_t(c), uint8_t(c))));
      return grow(n.text.size());
    case Node::Class:
      out.push_back(classSymbol(n));
      return grow(1);
    case Node::Ref: {
      auto it = ids.find(n.text);
      if (it == ids.end()) {
        error = "rule '" + n.text + "' is used in '" + owner + "' but not defined";
        return false;
      }
      out.push_back(Grammar::RuleBit | it->second);
      return grow(1);
    }
    case Node::Alt: {
      if (n.kids.size() == 1)
        return lower(n.kids[0], out, owner);
      uint32_t rule = newRule(owner);
      for (const Node &k : n.kids) {
        Seq alt;
        if (!lower(k, alt, owner))
          return false;
        rules[rule].push_back(std::move(alt));
      }
      out.push_back(Grammar::RuleBit | rule);
      return grow(1);
    }
    case Node::Repeat: {
      Seq once;
      if (!lower(n.kids[0], once, owner))
        return false;
      uint32_t x;
      if (once.size() == 1) {
        x = once[0];
      } else {
        x = Grammar::RuleBit | newRule(owner);
        rules[x & ~Grammar::RuleBit].push_back(std::move(once));
      }
      if (!grow(size_t(n.min) * 2 + size_t(std::max(n.max - n.min, 1)) * 3))
        return false;
      out.insert(out.end(), size_t(n.min), x);
      if (n.max < 0) { // R ::= x R | ""
        uint32_t r = newRule(owner);
        rules[r] = {{x, Grammar::RuleBit | r}, {}};
        out.push_back(Grammar::RuleBit | r);
      } else if (n.max > n.min) { // R_k ::= x R_{k-1} | "", R_1 ::= x | ""
        uint32_t prev = 0;
        for (int k = 1; k <= n.max - n.min; ++k) {
          uint32_t r = newRule(owner);
          rules[r] = {k == 1 ? Seq{x} : Seq{x, Grammar::RuleBit | prev}, {}};
          prev = r;
        }
        out.push_back(Grammar::RuleBit | prev);
      }
      return true;
    }
    }
    return true;
  }

  bool checks() {
    size_t n = rules.size();
    auto isRule = [](uint32_t e) { return (e & Grammar::RuleBit) != 0; };
    auto ruleOf = [](uint32_t e) { return e & ~Grammar::RuleBit; };
    // Nullable and productive rules, to a fixpoint.
    std::vector<bool> nullable(n, false), productive(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r)
        for (const Seq &alt : rules[r]) {
          bool canEmpty = true, canText = true;
          for (uint32_t e : alt) {
            canEmpty = canEmpty && isRule(e) && nullable[ruleOf(e)];
            if (isRule(e))
              canText = canText && productive[ruleOf(e)];
            else
              canText = canText && g.classes[e] != ByteSet{};
          }
          if (canEmpty && !nullable[r])
            nullable[r] = changed = true;
          if (canText && !productive[r])
            productive[r] = changed = true;
        }
    }
    if (!productive[g.root]) {
      error = "the grammar matches no text: 'root' never finishes (every alternative needs a "
              "rule that does not, or a class that matches nothing)";
      return false;
    }
    // Left recursion: edges r -> s where s can start r's text. A cycle of
    // them makes expansion push forever, unless each edge is a tail call
    // (s ends the alternative: nothing is pushed for it, and the matcher
    // cuts the cycle when it comes back to the same rule and stack, as in
    // a repetition of something that can be empty). Every edge inside a
    // strongly connected component lies on a cycle, so one that is not a
    // tail call there is refused.
    struct Edge {
      uint32_t to;
      bool tail;
    };
    std::vector<std::vector<Edge>> edges(n);
    for (size_t r = 0; r < n; ++r)
      for (const Seq &alt : rules[r])
        for (size_t k = 0; k < alt.size() && isRule(alt[k]); ++k) {
          edges[r].push_back({ruleOf(alt[k]), k + 1 == alt.size()});
          if (!nullable[ruleOf(alt[k])])
            break;
        }
    // Tarjan's components.
    std::vector<int> index(n, -1), low(n, 0), component(n, -1);
    std::vector<uint32_t> stack;
    std::vector<bool> onStack(n, false);
    int counter = 0, components = 0;
    std::function<void(uint32_t)> connect = [&](uint32_t r) {
      index[r] = low[r] = counter++;
      stack.push_back(r);
      onStack[r] = true;
      for (const Edge &e : edges[r]) {
        if (index[e.to] < 0) {
          connect(e.to);
          low[r] = std::min(low[r], low[e.to]);
        } else if (onStack[e.to]) {
          low[r] = std::min(low[r], index[e.to]);
        }
      }
      if (low[r] == index[r]) {
        uint32_t s;
        do {
          s = stack.back();
          stack.pop_back();
          onStack[s] = false;
          component[s] = components;
        } while (s != r);
        ++components;
      }
    };
    for (uint32_t r = 0; r < n; ++r)
      if (index[r] < 0)
        connect(r);
    for (uint32_t r = 0; r < n; ++r)
      for (const Edge &e : edges[r])
        if (!e.tail && component[e.to] == component[r]) {
          error = "rule '" + g.names[r] +
                  "' is left-recursive: it can reach itself before consuming any text; "
                  "rewrite it to recurse on the right";
          return false;
        }
    return true;
  }
};

} // namespace

std::vector<std::pair<uint32_t, uint32_t>> codePoints(const Node &n) {
  return normalize(n.ranges, n.negated);
}

bool build(const RuleSet &rs, Grammar &g, std::string &error) {
  error.clear();
  g = Grammar();
  Builder b(g, error);
  for (const auto &[name, body] : rs.rules) {
    if (b.ids.count(name)) {
      error = "rule '" + name + "' is defined twice";
      return false;
    }
    b.ids[name] = b.newRule(name);
  }
  auto root = b.ids.find("root");
  if (root == b.ids.end()) {
    error = "the grammar has no 'root' rule";
    return false;
  }
  g.root = root->second;
  for (size_t r = 0; r < rs.rules.size(); ++r) {
    const auto &[name, body] = rs.rules[r];
    const std::vector<Node> single = {body};
    const std::vector<Node> &alts = body.kind == Node::Alt ? body.kids : single;
    for (const Node &alt : alts) {
      Seq seq;
      if (!b.lower(alt, seq, name))
        return false;
      b.rules[r].push_back(std::move(seq));
    }
  }
  if (!b.checks())
    return false;
  g.alternatives.resize(b.rules.size());
  for (size_t r = 0; r < b.rules.size(); ++r)
    for (const Seq &alt : b.rules[r]) {
      g.alternatives[r].push_back(uint32_t(g.elements.size()));
      g.elements.insert(g.elements.end(), alt.begin(), alt.end());
      g.elements.push_back(Grammar::End);
    }
  return true;
}

} // namespace llmc::grammar
