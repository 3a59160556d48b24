//===- GrammarApi.cpp - llmc_grammar: grammars over a model's vocabulary ---===//
#include "runtime/src/Session.h"

#include <new>

using llmc::rt::fail;
using llmc::rt::ok;

extern "C" {

llmc_status llmc_grammar_create(const llmc_model *model, int32_t kind, const char *text,
                                size_t len, llmc_grammar **out_grammar) {
  namespace g = llmc::grammar;
  if (!out_grammar)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "out_grammar is null");
  *out_grammar = nullptr;
  if (!model)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the model is null");
  if (!text && len > 0)
    return fail(LLMC_ERROR_INVALID_ARGUMENT, "the grammar text is null");
  if (!model->data->tokenizer)
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "grammars need the artifact's tokenizer (compile with --tokenizer)");
  g::Syntax syntax;
  switch (kind) {
  case LLMC_GRAMMAR_GBNF:
    syntax = g::Syntax::Gbnf;
    break;
  case LLMC_GRAMMAR_REGEX:
    syntax = g::Syntax::Regex;
    break;
  case LLMC_GRAMMAR_JSON_SCHEMA:
    syntax = g::Syntax::JsonSchema;
    break;
  default:
    return fail(LLMC_ERROR_INVALID_ARGUMENT,
                "kind must be LLMC_GRAMMAR_GBNF, LLMC_GRAMMAR_REGEX or LLMC_GRAMMAR_JSON_SCHEMA");
  }
  std::string error;
  g::RuleSet rules;
  bool parsed = g::parse(syntax, std::string_view(text ? text : "", len), rules, error);
  g::Grammar grammar;
  if (!parsed || !g::build(rules, grammar, error))
    return fail(LLMC_ERROR_INVALID_ARGUMENT, error);
  try {
    auto *out = new llmc_grammar;
    out->model = model->data;
    out->matcher =
        std::make_unique<g::Matcher>(std::move(grammar), model->data->tokenizer->tokenBytes());
    *out_grammar = out;
  } catch (const std::bad_alloc &) {
    return fail(LLMC_ERROR_INTERNAL, "out of memory building the grammar");
  }
  return ok();
}

void llmc_grammar_free(llmc_grammar *grammar) { delete grammar; }

} // extern "C"
