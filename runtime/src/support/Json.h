//===- Json.h - a small JSON reader for the runtime -----------------------===//
//
// manifest.json and tokenizer.json are read by the runtime, which links no
// LLVM: this is a strict RFC 8259 reader (objects, arrays, strings with
// escapes and surrogate pairs, numbers, literals) into a plain value tree,
// with errors that give the byte offset. Nesting is limited so hostile
// input cannot exhaust the stack.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SUPPORT_JSON_H
#define LLMC_RUNTIME_SUPPORT_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  // Members in file order (duplicates kept; lookups take the first).
  std::vector<std::pair<std::string, Value>> members;

  const Value *get(std::string_view key) const;
  bool isInt() const;
  int64_t asInt(int64_t dflt = 0) const { return kind == Number ? int64_t(number) : dflt; }
  std::string asString(std::string dflt = "") const { return kind == String ? string : dflt; }
};

/// Parses `text`; on failure returns false and sets `error`.
bool parse(std::string_view text, Value &out, std::string &error);

/// Appends code point `cp` (<= 0x10FFFF) to `out` as UTF-8 (also what the
/// tokenizer uses).
void appendUtf8(std::string &out, uint32_t cp);

} // namespace llmc::json

#endif // LLMC_RUNTIME_SUPPORT_JSON_H
