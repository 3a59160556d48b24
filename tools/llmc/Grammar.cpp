//===- Grammar.cpp - llmc grammar: check, show and try a grammar ----------===//
//
// The grammars of constrained generation (llmc run --json-schema, --regex,
// --grammar) without a model: whether one parses and can run, the GBNF a
// JSON Schema becomes, and, with --match, whether given texts match it
// whole (each stdin line a JSON string; one 1 or 0 per line).
//
//===----------------------------------------------------------------------===//
#include "tools/llmc/Commands.h"

#include "llmc/llmc.h"

#include "runtime/src/grammar/Matcher.h"
#include "runtime/src/support/Json.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <string>

using namespace mlir;
using namespace mlir::llmc;
namespace cl = llvm::cl;
namespace g = ::llmc::grammar;

namespace {

cl::OptionCategory &cat() { return llmcOptionCategory(); }

cl::SubCommand grammarCmd("grammar",
                          "Check a grammar (a JSON Schema, regex or GBNF), print the GBNF a JSON "
                          "Schema becomes, or match texts against it");
cl::opt<std::string> gJsonSchema("json-schema", cl::desc("A JSON Schema file"),
                                 cl::value_desc("file"), cl::sub(grammarCmd), cl::cat(cat()));
cl::opt<std::string> gRegex("regex", cl::desc("A regular expression"), cl::value_desc("re"),
                            cl::sub(grammarCmd), cl::cat(cat()));
cl::opt<std::string> gGrammar("grammar", cl::desc("A GBNF grammar file"), cl::value_desc("file"),
                              cl::sub(grammarCmd), cl::cat(cat()));
cl::opt<bool> gMatch("match",
                     cl::desc("Read texts from stdin, one JSON string per line, and print 1 "
                              "when the grammar matches the whole text, else 0"),
                     cl::init(false), cl::sub(grammarCmd), cl::cat(cat()));

} // namespace

bool mlir::llmc::grammarCommandGiven() { return bool(grammarCmd); }

int mlir::llmc::runGrammar() {
  auto src = grammarSource(gJsonSchema, gRegex, gGrammar);
  if (!src)
    return fail(llvm::toString(src.takeError()));
  if (src->kind < 0)
    return fail("give one of --json-schema, --regex and --grammar");
  g::Syntax syntax = src->kind == LLMC_GRAMMAR_REGEX  ? g::Syntax::Regex
                     : src->kind == LLMC_GRAMMAR_GBNF ? g::Syntax::Gbnf
                                                      : g::Syntax::JsonSchema;
  std::string error, gbnf;
  g::RuleSet rules;
  bool parsed = g::parse(syntax, src->text, rules, error, &gbnf);
  g::Grammar grammar;
  if (!parsed || !g::build(rules, grammar, error))
    return fail(error);
  if (!gMatch) {
    if (!gbnf.empty())
      llvm::outs() << gbnf;
    else
      llvm::outs() << llvm::formatv("ok: {0} rules ({1} with helpers), {2} elements\n",
                                    rules.rules.size(), grammar.alternatives.size(),
                                    grammar.elements.size());
    return 0;
  }
  g::Matcher matcher(std::move(grammar), {});
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    ::llmc::json::Value v;
    if (!::llmc::json::parse(line, v, error) || v.kind != ::llmc::json::Value::String)
      return fail("stdin line " + std::to_string(n) + ": not a JSON string");
    g::StackPool pool;
    g::Stacks at = matcher.start(pool), next;
    bool ok = true;
    for (char c : v.string) {
      if (!matcher.advance(pool, at, uint8_t(c), next, &error))
        return fail("stdin line " + std::to_string(n) + ": " + error);
      at.swap(next);
      if (at.empty()) {
        ok = false;
        break;
      }
    }
    llvm::outs() << (ok && g::Matcher::canEnd(at) ? "1\n" : "0\n");
  }
  return 0;
}
