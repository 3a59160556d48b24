// The C++ convenience header (llmc/llmc.hpp) in use: load, generate with a
// streaming callback, print the tokens (or the text, when the artifact has a
// tokenizer and the prompt is given as text); with a regular expression,
// the text matches it.
//
//   c++ -std=c++17 main.cpp -I<llmc>/include -L<llmc>/lib -lllmc_runtime -ldl -lpthread
//   ./a.out model.llmc --ids 1,2,3 16
//   ./a.out model.llmc --text "Once upon a time" 16
//   ./a.out model.llmc --text "Call" 16 "[0-9]{3}-[0-9]{4}"
#include <llmc/llmc.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

int main(int argc, char **argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0]
              << " model.llmc (--ids 1,2,3 | --text TEXT) [max_new [regex]]\n";
    return 2;
  }
  auto model = llmc::Model::load(argv[1]);
  if (!model) {
    std::cerr << "load: " << model.error() << "\n";
    return 1;
  }
  std::string mode = argv[2];
  std::vector<int32_t> prompt;
  if (mode == "--text") {
    if (!model->hasTokenizer()) {
      std::cerr << "this artifact has no tokenizer\n";
      return 1;
    }
    prompt = model->tokenize(argv[3]);
  } else {
    std::stringstream ss(argv[3]);
    for (std::string id; std::getline(ss, id, ',');)
      prompt.push_back(std::atoi(id.c_str()));
  }
  auto session = model->session();
  if (!session) {
    std::cerr << "session: " << session.error() << "\n";
    return 1;
  }
  llmc::GenerateOptions options;
  options.params.max_new_tokens = argc > 4 ? std::atoi(argv[4]) : 16;
  std::optional<llmc::Result<llmc::Grammar>> grammar;
  if (argc > 5) {
    grammar = model->grammar(LLMC_GRAMMAR_REGEX, argv[5]);
    if (!*grammar) {
      std::cerr << "grammar: " << grammar->error() << "\n";
      return 1;
    }
    options.grammar = &**grammar;
  }
  size_t seen = 0;
  auto out = session->generate(prompt, options, [&](int32_t) { return ++seen > 0; });
  if (!out) {
    std::cerr << "generate: " << out.error() << "\n";
    return 1;
  }
  if (mode == "--text") {
    std::cout << model->detokenize(*out) << "\n";
  } else {
    for (size_t i = 0; i < out->size(); ++i)
      std::cout << (i ? "," : "") << (*out)[i];
    std::cout << "\n";
  }
  std::cerr << seen << " tokens seen by the callback\n";
  return 0;
}
