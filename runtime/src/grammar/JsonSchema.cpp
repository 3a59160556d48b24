//===- JsonSchema.cpp - a JSON Schema as a GBNF grammar -------------------===//
//
// Writes the grammar of the JSON texts that validate against a schema:
// types null, boolean, integer, number, string (minLength, maxLength, or a
// pattern: the regex front end, its characters rewritten as JSON writes
// them), array (items, minItems, maxItems), object (properties in their
// order, required, additionalProperties false or, with no properties, a
// schema for the values of any key); enum, const, anyOf, $ref into the same
// document, type lists, numeric bounds (the integers in range), oneOf where
// the alternatives provably never both match, and {} or true for any JSON
// value. Keywords that constrain the text in ways the grammar would not
// enforce (multipleOf, allOf, other formats, ...) are refused by name, so
// the output always validates.
// Annotations (title, description, default, examples, ...) are ignored.
//
// Whitespace between tokens is bounded (a space, or a newline and up to 20
// spaces or tabs) and numbers have at most 16 digits in each part, so a
// model cannot loop forever inside a value.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/grammar/Grammar.h"
#include "runtime/src/support/Json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace llmc::grammar {

namespace {

using json::Value;

const char *Primitives = R"(ws ::= | " " | "\n" [ \t]{0,20}
json-char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value ws ("," ws json-string ws ":" ws json-value ws)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
)";

/// `v` as compact JSON text.
void writeJson(const Value &v, std::string &out) {
  switch (v.kind) {
  case Value::Null: out += "null"; return;
  case Value::Bool: out += v.boolean ? "true" : "false"; return;
  case Value::Number: {
    char buf[40];
    if (std::floor(v.number) == v.number && std::fabs(v.number) < 1e15)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v.number));
    else
      std::snprintf(buf, sizeof buf, "%.17g", v.number);
    out += buf;
    return;
  }
  case Value::String:
    out += '"';
    for (unsigned char c : v.string) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
    out += '"';
    return;
  case Value::Array:
    out += '[';
    for (size_t i = 0; i < v.array.size(); ++i) {
      if (i)
        out += ',';
      writeJson(v.array[i], out);
    }
    out += ']';
    return;
  case Value::Object:
    out += '{';
    for (size_t i = 0; i < v.members.size(); ++i) {
      if (i)
        out += ',';
      Value key;
      key.kind = Value::String;
      key.string = v.members[i].first;
      writeJson(key, out);
      out += ':';
      writeJson(v.members[i].second, out);
    }
    out += '}';
    return;
  }
}

/// `bytes` as a GBNF "literal".
std::string literal(const std::string &bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

/// A code point as JSON string text writes it (json.dumps' escapes).
std::string jsonEscaped(uint32_t cp) {
  switch (cp) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\b': return "\\b";
  case '\f': return "\\f";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  default: break;
  }
  std::string out;
  if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    return buf;
  }
  json::appendUtf8(out, cp);
  return out;
}

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

/// The regex syntax `n` over a string's characters, rewritten over the JSON
/// text that writes them: characters JSON must escape become their escapes.
Node jsonText(const Node &n) {
  Node out = n;
  switch (n.kind) {
  case Node::Literal: {
    out = Node();
    out.kind = Node::Seq;
    for (size_t i = 0; i < n.text.size();) {
      unsigned char c = static_cast<unsigned char>(n.text[i]);
      size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len && i + k < n.text.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(n.text[i + k]) & 0x3F);
      out.kids.push_back(Node::literal(jsonEscaped(cp)));
      i += len;
    }
    return out;
  }
  case Node::Class: {
    // Characters written as themselves, and the escaped ones one by one.
    Ranges all = codePoints(n), raw;
    out = Node();
    out.kind = Node::Alt;
    for (auto [lo, hi] : all) {
      for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x5C); ++c)
        if (c < 0x20 || c == '"' || c == '\\')
          out.kids.push_back(Node::literal(jsonEscaped(c)));
      // [lo, hi] without 0x00-0x1F, '"' and '\\'.
      uint32_t from = std::max<uint32_t>(lo, 0x20);
      for (uint32_t cut : {uint32_t('"'), uint32_t('\\')}) {
        if (from <= hi && from <= cut && cut <= hi) {
          if (from < cut)
            raw.push_back({from, cut - 1});
          from = cut + 1;
        }
      }
      if (from <= hi)
        raw.push_back({from, hi});
    }
    out.kids.push_back(Node::cls(raw));
    return out;
  }
  case Node::Seq:
  case Node::Alt:
  case Node::Repeat:
    for (Node &k : out.kids)
      k = jsonText(k);
    return out;
  case Node::Ref:
    return out;
  }
  return out;
}

/// `n` as a GBNF expression.
std::string gbnf(const Node &n) {
  switch (n.kind) {
  case Node::Literal:
    return literal(n.text);
  case Node::Class: {
    if (n.ranges.empty())
      return n.negated ? "[\\x00-\\U0010FFFF]" : "[^\\x00-\\U0010FFFF]";
    std::string out = n.negated ? "[^" : "[";
    char buf[32];
    for (auto [lo, hi] : n.ranges) {
      std::snprintf(buf, sizeof buf, "\\U%08x-\\U%08x", lo, hi);
      out += buf;
    }
    return out + "]";
  }
  case Node::Seq: {
    std::string out = "(\"\"";
    for (const Node &k : n.kids)
      out += " " + gbnf(k);
    return out + ")";
  }
  case Node::Alt: {
    std::string out = "(";
    for (size_t i = 0; i < n.kids.size(); ++i)
      out += (i ? " | " : "") + gbnf(n.kids[i]);
    return out + ")";
  }
  case Node::Repeat:
    return "(" + gbnf(n.kids[0]) + "){" + std::to_string(n.min) + "," +
           (n.max >= 0 ? std::to_string(n.max) : "") + "}";
  case Node::Ref:
    return n.text;
  }
  return "\"\"";
}

/// The texts a string format allows, as an anchored regex (a subset where
/// the format is looser: years 0001-9999, no February 29, no leap second,
/// lowercase e-mail domains), or null.
const char *formatPattern(const std::string &format) {
  static const char *const Date =
      "(?:000[1-9]|00[1-9]\\d|0[1-9]\\d{2}|[1-9]\\d{3})-"
      "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|"
      "(?:0[13578]|1[02])-31)";
  static const char *const Time = "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,6})?"
                                  "(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)";
  static const std::string dateTime = std::string("^") + Date + "T" + Time + "$",
                           date = std::string("^") + Date + "$",
                           time = std::string("^") + Time + "$";
  if (format == "date")
    return date.c_str();
  if (format == "time")
    return time.c_str();
  if (format == "date-time")
    return dateTime.c_str();
  if (format == "email")
    return "^[A-Za-z0-9._%+-]{1,32}@[a-z0-9-]{1,32}(?:\\.[a-z0-9-]{1,16}){0,3}\\.[a-z]{2,8}$";
  if (format == "uuid")
    return "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";
  if (format == "ipv4")
    return "^(?:(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1\\d\\d|"
           "[1-9]?\\d)$";
  return nullptr;
}

struct Converter {
  const Value &document;
  std::string &error;
  std::string rules;
  std::map<std::string, std::string> refs; // "$ref" -> its rule
  int counter = 0;

  Converter(const Value &doc, std::string &err) : document(doc), error(err) {}

  bool fail(const std::string &where, const std::string &message) {
    if (error.empty())
      error = "JSON Schema" + (where.empty() ? std::string() : " at " + where) + ": " + message;
    return false;
  }

  std::string fresh(const std::string &hint) { return hint + "-" + std::to_string(++counter); }

  void define(const std::string &name, const std::string &body) {
    rules += name + " ::= " + body + "\n";
  }

  bool resolve(const std::string &ref, const std::string &where, const Value *&out) {
    if (ref.empty() || ref[0] != '#')
      return fail(where, "only references into the same document (\"#...\") are supported, not '" +
                             ref + "'");
    out = &document;
    size_t i = 1;
    if (i < ref.size() && ref[i] != '/')
      return fail(where, "the reference '" + ref + "' is not a JSON pointer");
    while (i < ref.size()) {
      size_t j = ref.find('/', i + 1);
      std::string part = ref.substr(i + 1, (j == std::string::npos ? ref.size() : j) - i - 1);
      for (size_t k; (k = part.find("~1")) != std::string::npos;)
        part.replace(k, 2, "/");
      for (size_t k; (k = part.find("~0")) != std::string::npos;)
        part.replace(k, 2, "~");
      const Value *next = nullptr;
      if (out->kind == Value::Object)
        next = out->get(part);
      if (!next)
        return fail(where, "the reference '" + ref + "' names nothing in the document");
      out = next;
      i = j == std::string::npos ? ref.size() : j;
    }
    return true;
  }

  /// The rule (or expression) for the texts `s` allows.
  bool schema(const Value &s, const std::string &where, int depth, std::string &out) {
    if (depth > 64)
      return fail(where, "the schema is nested too deeply");
    if (s.kind == Value::Bool) {
      if (!s.boolean)
        return fail(where, "the schema false matches nothing");
      out = "json-value";
      return true;
    }
    if (s.kind != Value::Object)
      return fail(where, "a schema must be an object or a boolean");
    static const std::set<std::string> ignored = {
        "title", "description", "$schema", "$id", "$comment", "default", "examples",
        "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
    static const std::set<std::string> known = {
        "type", "enum", "const", "anyOf", "oneOf", "$ref", "properties", "required",
        "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern", "format"};
    for (const auto &[key, value] : s.members)
      if (!ignored.count(key) && !known.count(key))
        return fail(where, "the keyword '" + key + "' is not supported");
    if (const Value *ref = s.get("$ref")) {
      if (s.members.size() > 1)
        for (const auto &[key, value] : s.members)
          if (key != "$ref" && !ignored.count(key))
            return fail(where, "'$ref' beside other keywords ('" + key + "') is not supported");
      std::string target = ref->asString();
      if (auto it = refs.find(target); it != refs.end()) {
        out = it->second;
        return true;
      }
      const Value *resolved = nullptr;
      if (!resolve(target, where, resolved))
        return false;
      std::string name = fresh("ref");
      refs[target] = name;
      std::string body;
      if (!schema(*resolved, target, depth + 1, body))
        return false;
      define(name, body);
      out = name;
      return true;
    }
    if (const Value *e = s.get("enum")) {
      if (e->kind != Value::Array || e->array.empty())
        return fail(where, "'enum' must be a non-empty array");
      std::string body;
      for (const Value &v : e->array) {
        std::string text;
        writeJson(v, text);
        body += (body.empty() ? "" : " | ") + literal(text);
      }
      out = "(" + body + ")";
      return true;
    }
    if (const Value *c = s.get("const")) {
      std::string text;
      writeJson(*c, text);
      out = literal(text);
      return true;
    }
    const Value *any = s.get("anyOf");
    std::string which = "anyOf";
    if (const Value *one = s.get("oneOf")) {
      if (any)
        return fail(where, "'oneOf' beside 'anyOf' is not supported");
      any = one, which = "oneOf";
      if (one->kind == Value::Array)
        for (size_t i = 0; i < one->array.size(); ++i)
          for (size_t j = i + 1; j < one->array.size(); ++j)
            if (!disjoint(one->array[i], one->array[j]))
              return fail(where, "'oneOf' alternatives " + std::to_string(i) + " and " +
                                     std::to_string(j) +
                                     " may both match a value (only alternatives of different "
                                     "types, or objects told apart by a required const or enum "
                                     "property, are supported; or use anyOf)");
    }
    if (any) {
      if (any->kind != Value::Array || any->array.empty())
        return fail(where, "'" + which + "' must be a non-empty array");
      std::string body;
      for (size_t i = 0; i < any->array.size(); ++i) {
        std::string alt;
        if (!schema(any->array[i], where + "/" + which + "/" + std::to_string(i), depth + 1,
                    alt))
          return false;
        body += (body.empty() ? "" : " | ") + alt;
      }
      out = "(" + body + ")";
      return true;
    }
    std::vector<std::string> types;
    if (const Value *t = s.get("type")) {
      if (t->kind == Value::String) {
        types.push_back(t->string);
      } else if (t->kind == Value::Array && !t->array.empty()) {
        for (const Value &v : t->array)
          types.push_back(v.asString());
      } else {
        return fail(where, "'type' must be a type name or a non-empty list of them");
      }
    } else if (s.get("properties") || s.get("additionalProperties") || s.get("required")) {
      types.push_back("object");
    } else if (s.get("items") || s.get("minItems") || s.get("maxItems")) {
      types.push_back("array");
    } else if (s.get("minLength") || s.get("maxLength") || s.get("pattern")) {
      types.push_back("string");
    } else if (s.get("minimum") || s.get("maximum") || s.get("exclusiveMinimum") ||
               s.get("exclusiveMaximum")) {
      types.push_back("number");
    } else {
      out = "json-value";
      return true;
    }
    std::string body;
    for (const std::string &type : types) {
      std::string alt;
      if (!typed(s, type, where, depth, alt))
        return false;
      body += (body.empty() ? "" : " | ") + alt;
    }
    out = types.size() == 1 ? body : "(" + body + ")";
    return true;
  }

  /// The JSON types of the values a schema validates (bits: null, boolean,
  /// number, string, array, object; integer counts as number), from its
  /// type, const or enum, following $ref; all when it cannot tell.
  unsigned kinds(const Value &s, int depth = 0) {
    const unsigned all = 63;
    auto of = [](const std::string &t) -> unsigned {
      return t == "null" ? 1 : t == "boolean" ? 2 : t == "integer" || t == "number" ? 4
             : t == "string" ? 8 : t == "array" ? 16 : t == "object" ? 32 : 63;
    };
    auto valueKind = [](const Value &v) -> unsigned {
      return v.kind == Value::Null ? 1 : v.kind == Value::Bool ? 2 : v.kind == Value::Number ? 4
             : v.kind == Value::String ? 8 : v.kind == Value::Array ? 16 : 32;
    };
    if (s.kind != Value::Object || depth > 16)
      return all;
    if (const Value *ref = s.get("$ref")) {
      const Value *target;
      std::string saved = error;
      bool ok = resolve(ref->asString(), "", target);
      error = saved;
      return ok ? kinds(*target, depth + 1) : all;
    }
    if (const Value *c = s.get("const"))
      return valueKind(*c);
    if (const Value *e = s.get("enum"); e && e->kind == Value::Array) {
      unsigned k = 0;
      for (const Value &v : e->array)
        k |= valueKind(v);
      return k;
    }
    if (const Value *t = s.get("type")) {
      if (t->kind == Value::String)
        return of(t->string);
      unsigned k = 0;
      for (const Value &v : t->array)
        k |= of(v.asString());
      return k;
    }
    return all; // keywords such as properties constrain objects only: others pass
  }

  /// The values a property's schema allows when it is a const or an enum.
  static const Value *constants(const Value &s, std::vector<std::string> &out) {
    out.clear();
    if (s.kind != Value::Object)
      return nullptr;
    if (const Value *c = s.get("const")) {
      out.emplace_back();
      writeJson(*c, out.back());
      return c;
    }
    if (const Value *e = s.get("enum"); e && e->kind == Value::Array && !e->array.empty()) {
      for (const Value &v : e->array) {
        out.emplace_back();
        writeJson(v, out.back());
      }
      return e;
    }
    return nullptr;
  }

  /// Whether no value validates against both schemas: their types differ,
  /// their const/enum values differ, or the only type they share is object
  /// and both require a property whose const/enum values differ.
  bool disjoint(const Value &a, const Value &b) {
    unsigned shared = kinds(a) & kinds(b);
    if (shared == 0)
      return true;
    std::vector<std::string> va, vb;
    if (constants(a, va) && constants(b, vb)) {
      for (const std::string &x : va)
        if (std::find(vb.begin(), vb.end(), x) != vb.end())
          return false;
      return true;
    }
    if (shared != 32)
      return false;
    const Value *pa = a.get("properties"), *pb = b.get("properties");
    const Value *ra = a.get("required"), *rb = b.get("required");
    if (!pa || !pb || !ra || !rb || ra->kind != Value::Array || rb->kind != Value::Array)
      return false;
    for (const Value &name : ra->array) {
      bool inB = false;
      for (const Value &n : rb->array)
        inB = inB || (n.kind == Value::String && n.string == name.string);
      const Value *sa = pa->get(name.string), *sb = pb->get(name.string);
      if (!inB || !sa || !sb || !constants(*sa, va) || !constants(*sb, vb))
        continue;
      bool shared = false;
      for (const std::string &x : va)
        shared = shared || std::find(vb.begin(), vb.end(), x) != vb.end();
      if (!shared)
        return true;
    }
    return false;
  }

  bool count(const Value &s, const char *key, const std::string &where, int &out) {
    out = -1;
    const Value *v = s.get(key);
    if (!v)
      return true;
    if (!v->isInt() || v->number < 0 || v->number > 10000)
      return fail(where, std::string("'") + key + "' must be an integer in 0 .. 10000");
    out = int(v->number);
    return true;
  }

  bool typed(const Value &s, const std::string &type, const std::string &where, int depth,
             std::string &out) {
    bool bounded = false;
    for (const char *k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (const Value *v = s.get(k)) {
        if (type != "integer" && type != "number")
          return fail(where, std::string("'") + k + "' applies to numbers, not to " + type);
        if (v->kind != Value::Number)
          return fail(where, std::string("'") + k + "' must be a number");
        bounded = true;
      }
    if (type == "null" || type == "boolean") {
      out = "json-" + type;
    } else if ((type == "integer" || type == "number") && !bounded) {
      out = "json-" + type;
    } else if (type == "number" && s.members.size() && s.get("minimum") &&
               s.get("minimum")->number == 0 && !s.get("maximum") &&
               !s.get("exclusiveMinimum") && !s.get("exclusiveMaximum")) {
      out = fresh("nonnegative");
      define(out, "(\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?");
    } else if (type == "integer" || type == "number") {
      // Bounds: the integers between them (for a number, a subset of what
      // validates: the grammar writes no fraction there).
      return integerRange(s, where, out);
    } else if (type == "string") {
      int lo, hi;
      if (!count(s, "minLength", where, lo) || !count(s, "maxLength", where, hi))
        return false;
      if (const Value *format = s.get("format")) {
        const char *re = formatPattern(format->asString());
        if (!re)
          return fail(where, "the format '" + format->asString() +
                                 "' is not supported (date, time, date-time, email, uuid, ipv4)");
        if (s.get("pattern"))
          return fail(where, "'format' beside 'pattern' is not supported");
        Value anchored;
        anchored.kind = Value::String;
        anchored.string = re;
        return patterned(anchored, lo >= 0 || hi >= 0, where, out);
      }
      if (const Value *pattern = s.get("pattern"))
        return patterned(*pattern, lo >= 0 || hi >= 0, where, out);
      if (lo < 0 && hi < 0) {
        out = "json-string";
        return true;
      }
      lo = std::max(lo, 0);
      if (hi >= 0 && hi < lo)
        return fail(where, "'maxLength' is below 'minLength'");
      out = fresh("string");
      define(out, "\"\\\"\" json-char{" + std::to_string(lo) + "," +
                      (hi >= 0 ? std::to_string(hi) : "") + "} \"\\\"\"");
    } else if (type == "array") {
      return array(s, where, depth, out);
    } else if (type == "object") {
      return object(s, where, depth, out);
    } else {
      return fail(where, "unknown type '" + type + "'");
    }
    return true;
  }

  /// The integers the bounds of `s` allow, at most 16 digits, as decimal
  /// text without leading zeros: per digit count, the classic split of a
  /// range of equal-length numbers into digit classes.
  bool integerRange(const Value &s, const std::string &where, std::string &out) {
    const double limit = 9999999999999999.0; // 16 digits
    double lo = -limit, hi = limit;
    if (const Value *v = s.get("minimum"))
      lo = std::max(lo, std::ceil(v->number));
    if (const Value *v = s.get("exclusiveMinimum"))
      lo = std::max(lo, std::floor(v->number) + 1);
    if (const Value *v = s.get("maximum"))
      hi = std::min(hi, std::floor(v->number));
    if (const Value *v = s.get("exclusiveMaximum"))
      hi = std::min(hi, std::ceil(v->number) - 1);
    if (lo > hi)
      return fail(where, "the bounds hold no integer of at most 16 digits");
    std::vector<std::string> alts;
    if (hi >= 0)
      naturals(int64_t(std::max(lo, 0.0)), int64_t(hi), alts);
    if (lo < 0) {
      std::vector<std::string> negative;
      naturals(int64_t(std::max(-hi, 1.0)), int64_t(-lo), negative);
      for (const std::string &n : negative)
        alts.push_back("\"-\" " + n);
    }
    std::string body;
    for (const std::string &a : alts)
      body += (body.empty() ? "" : " | ") + ("(" + a + ")");
    out = fresh("integer");
    define(out, body);
    return true;
  }

  /// GBNF alternatives for the naturals in [a, b] written without leading
  /// zeros.
  static void naturals(int64_t a, int64_t b, std::vector<std::string> &alts) {
    std::string sa = std::to_string(a), sb = std::to_string(b);
    for (size_t d = sa.size(); d <= sb.size(); ++d) {
      std::string from = d == sa.size() ? sa : "1" + std::string(d - 1, '0');
      std::string to = d == sb.size() ? sb : std::string(d, '9');
      if (d == 1 && from != sa)
        from = "0";
      sameLength(from, to, "", alts);
    }
  }

  /// Equal-length decimal strings from..to (from <= to), after `prefix`.
  static void sameLength(const std::string &from, const std::string &to, const std::string &prefix,
                         std::vector<std::string> &alts) {
    size_t n = from.size();
    auto digit = [](char lo, char hi) {
      return lo == hi ? "\"" + std::string(1, lo) + "\"" : "[" + std::string(1, lo) + "-" + hi + "]";
    };
    auto join = [](const std::string &a, const std::string &b) {
      return a.empty() ? b : b.empty() ? a : a + " " + b;
    };
    if (n == 0) {
      alts.push_back(prefix.empty() ? "\"\"" : prefix);
      return;
    }
    std::string restFrom = from.substr(1), restTo = to.substr(1);
    if (from[0] == to[0]) {
      sameLength(restFrom, restTo, join(prefix, digit(from[0], from[0])), alts);
      return;
    }
    bool fullFrom = restFrom.find_first_not_of('0') == std::string::npos,
         fullTo = restTo.find_first_not_of('9') == std::string::npos;
    std::string any = n > 1 ? "[0-9]{" + std::to_string(n - 1) + "}" : "";
    char lo = fullFrom ? from[0] : char(from[0] + 1), hi = fullTo ? to[0] : char(to[0] - 1);
    if (!fullFrom)
      sameLength(restFrom, std::string(n - 1, '9'), join(prefix, digit(from[0], from[0])), alts);
    if (lo <= hi)
      alts.push_back(join(join(prefix, digit(lo, hi)), any));
    if (!fullTo)
      sameLength(std::string(n - 1, '0'), restTo, join(prefix, digit(to[0], to[0])), alts);
  }

  /// A string whose text `pattern` finds (as JSON Schema and Python's
  /// re.search do: anywhere, unless anchored by ^ and $).
  bool patterned(const Value &pattern, bool lengths, const std::string &where, std::string &out) {
    if (pattern.kind != Value::String)
      return fail(where, "'pattern' must be a string");
    if (lengths)
      return fail(where, "'pattern' beside 'minLength' or 'maxLength' is not supported");
    const std::string &re = pattern.string;
    RuleSet rules;
    std::string why;
    if (!parseRegex(re, rules, why))
      return fail(where, "'pattern': " + why);
    size_t slashes = 0;
    for (size_t i = re.size() - (re.empty() ? 0 : 1); i-- > 0 && re[i] == '\\';)
      ++slashes;
    bool start = !re.empty() && re[0] == '^',
         end = !re.empty() && re.back() == '$' && slashes % 2 == 0;
    out = fresh("pattern");
    define(out, std::string("\"\\\"\" ") + (start ? "" : "json-char* ") +
                    gbnf(jsonText(rules.rules[0].second)) + (end ? "" : " json-char*") +
                    " \"\\\"\"");
    return true;
  }

  bool array(const Value &s, const std::string &where, int depth, std::string &out) {
    int lo, hi;
    if (!count(s, "minItems", where, lo) || !count(s, "maxItems", where, hi))
      return false;
    lo = std::max(lo, 0);
    if (hi >= 0 && hi < lo)
      return fail(where, "'maxItems' is below 'minItems'");
    std::string item = "json-value";
    if (const Value *items = s.get("items"))
      if (!schema(*items, where + "/items", depth + 1, item))
        return false;
    out = fresh("array");
    std::string more = "(\",\" ws " + item + " ws)";
    auto bound = [](int n) { return n < 0 ? std::string() : std::to_string(n); };
    if (hi == 0)
      define(out, "\"[\" ws \"]\"");
    else if (lo == 0)
      define(out, "\"[\" ws (" + item + " ws " + more + "{0," + bound(hi < 0 ? -1 : hi - 1) +
                      "})? \"]\"");
    else
      define(out, "\"[\" ws " + item + " ws " + more + "{" + std::to_string(lo - 1) + "," +
                      bound(hi < 0 ? -1 : hi - 1) + "} \"]\"");
    return true;
  }

  bool object(const Value &s, const std::string &where, int depth, std::string &out) {
    const Value *props = s.get("properties");
    const Value *extra = s.get("additionalProperties");
    if (props && props->kind != Value::Object)
      return fail(where, "'properties' must be an object");
    std::set<std::string> required;
    if (const Value *r = s.get("required")) {
      if (r->kind != Value::Array)
        return fail(where, "'required' must be an array of names");
      for (const Value &name : r->array) {
        if (name.kind != Value::String)
          return fail(where, "'required' must be an array of names");
        if (!props || !props->get(name.string))
          return fail(where, "the required property '" + name.string +
                                 "' is not among 'properties' (only listed properties are "
                                 "generated)");
        required.insert(name.string);
      }
    }
    bool closed = !extra || (extra->kind == Value::Bool && !extra->boolean);
    if (props && !props->members.empty()) {
      if (extra && !closed && !(extra->kind == Value::Bool && extra->boolean))
        return fail(where, "'additionalProperties' with a schema beside 'properties' is not "
                           "supported");
    } else if (!closed || !extra) {
      // A map: any keys, values of the additionalProperties schema.
      std::string value = "json-value";
      if (extra && extra->kind == Value::Object)
        if (!schema(*extra, where + "/additionalProperties", depth + 1, value))
          return false;
      out = fresh("map");
      std::string kv = "json-string ws \":\" ws " + value + " ws";
      define(out, "\"{\" ws (" + kv + " (\",\" ws " + kv + ")*)? \"}\"");
      return true;
    }
    // Properties in their order, each optional one free to be left out:
    // first-i starts the object at property i, rest-i goes on after one.
    std::string base = fresh("object");
    size_t n = props ? props->members.size() : 0;
    std::vector<std::string> kv(n);
    for (size_t i = 0; i < n; ++i) {
      const auto &[name, sub] = props->members[i];
      std::string value;
      if (!schema(sub, where + "/properties/" + name, depth + 1, value))
        return false;
      Value key;
      key.kind = Value::String;
      key.string = name;
      std::string text;
      writeJson(key, text);
      kv[i] = literal(text) + " ws \":\" ws " + value + " ws";
    }
    auto first = [&](size_t i) { return base + "-first" + std::to_string(i); };
    auto rest = [&](size_t i) { return base + "-rest" + std::to_string(i); };
    define(first(n), "\"\"");
    define(rest(n), "\"\"");
    for (size_t i = n; i-- > 0;) {
      bool req = required.count(props->members[i].first) > 0;
      define(rest(i), req ? "\",\" ws " + kv[i] + " " + rest(i + 1)
                          : "(\",\" ws " + kv[i] + ")? " + rest(i + 1));
      define(first(i), req ? kv[i] + " " + rest(i + 1)
                           : kv[i] + " " + rest(i + 1) + " | " + first(i + 1));
    }
    out = base;
    define(out, "\"{\" ws " + first(0) + " \"}\"");
    return true;
  }
};

} // namespace

bool jsonSchemaToGbnf(std::string_view text, std::string &gbnf, std::string &error) {
  error.clear();
  Value doc;
  std::string why;
  if (!json::parse(text, doc, why)) {
    error = "JSON Schema: not valid JSON: " + why;
    return false;
  }
  Converter c(doc, error);
  std::string top;
  if (!c.schema(doc, "", 0, top))
    return false;
  gbnf = "root ::= " + top + "\n" + c.rules + Primitives;
  return true;
}

} // namespace llmc::grammar
