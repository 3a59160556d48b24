//===- Grammar.h - grammars for constrained generation --------------------===//
//
// Constrained generation (llmc_grammar in llmc.h) turns a GBNF grammar, a
// regular expression or a JSON Schema into one representation: rules over
// bytes, whose text is UTF-8. The front ends parse into an abstract syntax
// (RuleSet: named rules of sequences, alternatives, repetitions, literals,
// code-point classes and references); `build` lowers it into a flat
// Grammar: each rule a list of alternatives, each alternative a run of
// elements ending in End, each element a byte class or a rule reference.
// Code-point classes become alternatives of UTF-8 byte-range sequences, and
// repetitions helper rules (right-recursive, so no stack grows with a
// repeat count). `build` refuses what the matcher could not run: undefined
// or twice-defined rules, no `root`, left recursion (a rule that can reach
// itself before consuming a byte would expand forever), a root that matches
// no text, and repetition bounds past 10000.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_GRAMMAR_GRAMMAR_H
#define LLMC_RUNTIME_GRAMMAR_GRAMMAR_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::grammar {

// --- the abstract syntax the front ends produce -----------------------------

struct Node {
  enum Kind { Seq, Alt, Literal, Class, Ref, Repeat } kind = Seq;
  std::vector<Node> kids;  // Seq, Alt: the parts; Repeat: kids[0]
  std::string text;        // Literal: its bytes; Ref: the rule's name
  // Class: inclusive code-point ranges, matched (or, negated, excluded).
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;
  int min = 0, max = -1; // Repeat: bounds, max -1 unbounded

  static Node literal(std::string bytes);
  static Node ref(std::string name);
  static Node cls(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated = false);
  static Node repeat(Node kid, int min, int max);
};

/// A class node's code points: sorted, merged, the complement when negated,
/// without surrogates.
std::vector<std::pair<uint32_t, uint32_t>> codePoints(const Node &n);

struct RuleSet {
  std::vector<std::pair<std::string, Node>> rules; // definition order; one is "root"
};

/// GBNF (llama.cpp's grammar format): `name ::= body` rules, `#` comments;
/// bodies of "literals", [classes], [^negated], `.` (any character),
/// references, ( groups ), `|`, and the postfixes * + ? {m} {m,} {m,n}.
/// Escapes \n \r \t \\ \" \] \[ \- \xHH \uHHHH \UHHHHHHHH.
bool parseGbnf(std::string_view text, RuleSet &out, std::string &error);

/// A regular expression, matched against the whole generated text:
/// literals, `.` (any character but a newline), [classes] with ranges and
/// negation, \d \w \s \D \W \S, escapes as in GBNF plus \f \v and escaped
/// punctuation, groups ( ) and (?: ), `|`, and * + ? {m} {m,} {m,n} (a lazy
/// `?` after one changes nothing here). ^ at the start and $ at the end are
/// accepted (the match is always whole). Backreferences, lookaround and
/// other anchors are refused by name.
bool parseRegex(std::string_view pattern, RuleSet &out, std::string &error);

/// A JSON Schema (the subset in docs/runtime.md) as GBNF text whose root
/// matches the JSON texts that validate against it.
bool jsonSchemaToGbnf(std::string_view schema, std::string &gbnf, std::string &error);

enum class Syntax { Gbnf, Regex, JsonSchema };

/// `text` in `syntax` into rule syntax (the three readers above); for a
/// JSON Schema, `gbnf` (when given) receives the GBNF it became.
bool parse(Syntax syntax, std::string_view text, RuleSet &out, std::string &error,
           std::string *gbnf = nullptr);

// --- the flat grammar the matcher runs --------------------------------------

using ByteSet = std::array<uint64_t, 4>;

struct Grammar {
  static constexpr uint32_t End = 0xFFFFFFFFu;  // an alternative's end
  static constexpr uint32_t RuleBit = 0x80000000u; // RuleBit | rule: a reference
  std::vector<uint32_t> elements; // else: an index into classes
  std::vector<ByteSet> classes;
  std::vector<std::vector<uint32_t>> alternatives; // per rule: where each starts
  std::vector<std::string> names;                  // per rule, for messages
  uint32_t root = 0;

  static bool isRule(uint32_t e) { return e != End && (e & RuleBit); }
  bool matches(uint32_t e, uint8_t byte) const {
    return (classes[e][byte >> 6] >> (byte & 63)) & 1;
  }
};

bool build(const RuleSet &rules, Grammar &out, std::string &error);

} // namespace llmc::grammar

#endif // LLMC_RUNTIME_GRAMMAR_GRAMMAR_H
