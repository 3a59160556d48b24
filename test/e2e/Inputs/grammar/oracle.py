"""Checks llmc's grammars against independent oracles (test/e2e/grammar.test).

  oracle.py regex              llmc grammar --regex P --match against Python's re
  oracle.py schema             llmc grammar --json-schema S --match against the
                               jsonschema library
  oracle.py generate [--draft D] ART...
                               llmc run --json-schema/--regex/--grammar on each
                               artifact, greedy and sampled: every text must
                               validate (jsonschema, re, ast); greedy output the
                               same with speculation (prompt lookup, and draft
                               model D, or the artifact itself)
"""
import ast
import datetime
import itertools
import json
import os
import random
import re
import subprocess
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))

# Formats checked too: the library's draft 2020-12 checkers (date, email,
# uuid, ipv4), and time and date-time (RFC 3339: an offset required) by
# Python's own ISO 8601 readers, since the library's need a package Debian
# lacks.
FORMATS = jsonschema.FormatChecker(jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers)


@FORMATS.checks("time", raises=ValueError)
def _time(value):
    if isinstance(value, str):
        if datetime.time.fromisoformat(value).utcoffset() is None:
            raise ValueError("no offset")
    return True


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value):
    if isinstance(value, str):
        if "T" not in value or datetime.datetime.fromisoformat(value).utcoffset() is None:
            raise ValueError("not an RFC 3339 date-time")
    return True


def validate(instance, schema):
    jsonschema.validate(instance, schema, format_checker=FORMATS)


def llmc_match(option, value, texts):
    """1/0 per text: whether the grammar matches it whole."""
    out = subprocess.run(["llmc", "grammar", option, value, "--match"],
                         input="".join(json.dumps(t) + "\n" for t in texts),
                         capture_output=True, text=True, encoding="utf-8")
    if out.returncode != 0:
        sys.exit("llmc grammar %s %r failed: %s" % (option, value, out.stderr))
    got = out.stdout.split()
    assert len(got) == len(texts), (len(got), len(texts))
    return [g == "1" for g in got]


def mutations(s, alphabet, rng, limit=150):
    """Single deletions, substitutions and insertions of `s`, sampled."""
    out = set()
    for i in range(len(s)):
        out.add(s[:i] + s[i + 1:])
        for c in rng.sample(alphabet, min(4, len(alphabet))):
            out.add(s[:i] + c + s[i + 1:])
    for i in range(len(s) + 1):
        for c in rng.sample(alphabet, min(3, len(alphabet))):
            out.add(s[:i] + c + s[i:])
    out = sorted(out)
    rng.shuffle(out)
    return out[:limit]


# (pattern, texts that match), the texts mutated into near misses.
REGEXES = [
    (r"\d{3}-\d{4}", ["555-0199", "000-0000"]),
    (r"[A-Z][a-z]+ (said|spake) unto [A-Z][a-z]+\.", ["God said unto Moses.", "Aaron spake unto Pharaoh."]),
    (r"(ab|a)*c?", ["", "abaab", "aaac", "c"]),
    (r"[^aeiou\s]{2,4}x+", ["bcx", "zz!xxx", "1234x"]),
    (r"colou?r|gr[ae]y", ["color", "colour", "grey", "gray"]),
    (r"\w+@\w+\.(com|org)", ["a_1@b.com", "me@example.org"]),
    (r"[α-ω]+ und [^a-z]{1,3}", ["αβγ und XY", "ω und €"]),
    (r"(?:\+|-)?\d+(\.\d*)?", ["+12", "-3.", "4.25", "7"]),
    (r"a{2}b{1,}c{0,2}", ["aab", "aabbbcc"]),
    (r"\.\*\?\[\]\(\)", [".*?[]()"]),
    (r"[\]\-a]+", ["]-a", "a"]),
    (r"x{,2}y", ["y", "xxy"]),
    (r"^abc$", ["abc"]),
    (r"a.c", ["abc", "a c", "a€c"]),
    (r"[^\n]*\n?", ["line", "line\n", ""]),
    (r"\s*\S+\s*", [" word\t", "x"]),
    (r"(a|b|)+c", ["c", "abc", "bbac"]),
    (r"\x41\u00e9\t\\", ["A\u00e9\t\\"]),
    (r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){2}", ["0a:FF:19"]),
    (r"x{2,3}?y", ["xxy", "xxxy"]),
]


def check_regexes():
    rng = random.Random(1)
    total = 0
    for pattern, positives in REGEXES:
        alphabet = sorted(set("".join(positives) + pattern + "aZ9 \n\u00e9\u20ac"))
        texts = list(positives)
        for p in positives:
            texts += mutations(p, alphabet, rng)
        texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
                  for _ in range(100)]
        got = llmc_match("--regex", pattern, texts)
        for text, g in zip(texts, got):
            want = re.fullmatch(pattern, text, re.ASCII) is not None
            if g != want:
                sys.exit("regex %r on %r: llmc says %s, Python's re %s" % (pattern, text, g, want))
        for p in positives:
            assert re.fullmatch(pattern, p, re.ASCII), (pattern, p)
        total += len(texts)
    print("regex: %d patterns, %d texts: llmc and Python's re agree on every one"
          % (len(REGEXES), total))


SCHEMAS = {
    "person": json.load(open(os.path.join(HERE, "person.schema.json"))),
    "list": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"},
                                                  {"type": "string", "minLength": 2, "maxLength": 3}]},
             "minItems": 1, "maxItems": 3},
    "refs": {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"},
                                                                  "y": {"type": "integer"}},
                                 "required": ["x", "y"]}},
             "type": "object",
             "properties": {"from": {"$ref": "#/$defs/point"}, "to": {"$ref": "#/$defs/point"},
                            "label": {"const": "edge"}},
             "required": ["from"]},
    "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "bounds": {"type": "object",
               "properties": {"a": {"type": "integer", "minimum": -37, "maximum": 1205},
                              "b": {"type": "integer", "exclusiveMinimum": 9},
                              "c": {"type": "number", "maximum": -1.5},
                              "d": {"maximum": 3}},
               "required": ["a"]},
    "formats": {"type": "object",
                "properties": {f.replace("-", "_"): {"type": "string", "format": f}
                               for f in ["date", "time", "date-time", "email", "uuid", "ipv4"]},
                "required": ["date", "date_time"]},
    "oneof": {"type": "array", "maxItems": 3, "items": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
         "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"enum": ["square", "box"]},
                                          "side": {"type": "integer"}},
         "required": ["kind"]},
        {"type": "string", "maxLength": 4}, {"enum": [1, 2, None]}]}},
    "pattern": {"type": "object",
                "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
                               "note": {"type": "string", "pattern": "a(b|\"|\\\\)+c"},
                               "tag": {"pattern": "^x[^a-z]?$"}},
                "required": ["id"]},
    "any": {},
}

VALID = {
    "person": [{"name": "Caleb", "tribe": "Judah", "faithful": True},
               {"name": "Eli", "age": 98, "tribe": "Levi", "sons": ["Hophni", "Phinehas"],
                "score": -1.5e3, "faithful": False},
               {"name": "Dan\"\\\u00e9", "tribe": "Dan", "score": None, "faithful": True},
               {"name": "x", "sons": [], "faithful": False, "tribe": "Benjamin", "age": 0}],
    "list": [[1], [None, "ab", 2.5], ["xyz", -0.0, 1e-7]],
    "refs": [{"from": {"x": 1, "y": -2}}, {"from": {"x": 0, "y": 0}, "to": {"x": 3, "y": 4},
                                           "label": "edge"}],
    "map": [{}, {"a": True, "b\n": False}],
    "bounds": [{"a": -37}, {"a": 1205, "b": 10, "c": -2, "d": 3},
               {"a": 0, "b": 123456789, "c": -100}, {"a": -1, "d": -5}, {"a": 999, "b": 1000}],
    "formats": [{"date": "2024-02-28", "date_time": "2024-12-31T23:59:59.5+01:00"},
                {"date": "1999-12-31", "time": "00:00:00Z", "date_time": "2000-01-01T12:30:00Z",
                 "email": "a.b@ex-ample.co.uk", "uuid": "123e4567-e89b-12d3-a456-426614174000",
                 "ipv4": "192.168.0.255"}],
    "oneof": [[{"kind": "circle", "r": 1.5}, {"kind": "box"}, "abc"], [2, None, {"kind": "square", "side": 3}]],
    "pattern": [{"id": "AB-123"}, {"id": "ZZ-000", "note": "xxab\"\\cyy", "tag": "x"},
                {"id": "QQ-999", "note": "abc", "tag": "x\n"}, {"id": "AA-000", "tag": "x\u0001"}],
    "any": [None, 1, "s", [1, {"a": [True]}], {"k": {"l": None}}],
}

INVALID_TEXTS = [
    "", "{", "{}", "[]", "null", "[1,]", "{\"name\":\"a\"}", "01", "1.", ".5", "-", "1e", "+1",
    "\"\\x\"", "\"a\nb\"", "[1 2]", "{\"a\":true,}", "truex", "{\"from\":{\"x\":1}}",
    "{\"name\":\"abcdefghijklmn\",\"tribe\":\"Dan\",\"faithful\":true}",
    "{\"name\":\"a\",\"tribe\":\"Gad\",\"faithful\":true}",
    "[\"a\"]", "[1,2,3,4]", "{\"a\":1}", "{\"from\":{\"x\":1,\"y\":2},\"label\":\"node\"}",
]


def ordered(schema, value):
    """`value` with object keys in the schema's property order (llmc writes
    properties in that order)."""
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        keys = [k for k in schema["properties"] if k in value]
        return {k: ordered(schema["properties"][k], value[k]) for k in keys}
    return value


def check_schemas():
    rng = random.Random(2)
    total = accepted = 0
    for name, schema in SCHEMAS.items():
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "llmc-oracle-%s-%d.json"
                            % (name, os.getpid()))
        with open(path, "w") as f:
            json.dump(schema, f)
        valid = []
        for v in VALID[name]:
            validate(v, schema)
            v = ordered(schema.get("$defs") and schema or schema, v)
            valid.append(json.dumps(v, separators=(",", ":"), ensure_ascii=False))
            valid.append(json.dumps(v, separators=(", ", ": ")))
            valid.append(json.dumps(v, indent=2))
        texts = list(valid) + INVALID_TEXTS
        for t in valid:
            texts += mutations(t, sorted(set(t + "{}[],:\" 0e.-n")), rng, limit=120)
        got = llmc_match("--json-schema", path, texts)
        os.unlink(path)
        for text, g in zip(texts, got):
            if text in valid and not g:
                sys.exit("schema %s: llmc rejects the valid %r" % (name, text))
            if g:
                accepted += 1
                try:
                    validate(json.loads(text), schema)
                except Exception as e:  # noqa: BLE001 - any failure is the finding
                    sys.exit("schema %s: llmc accepts %r, which does not validate: %s"
                             % (name, text, e))
        total += len(texts)
    print("schema: %d schemas, %d texts, %d accepted by llmc: every accepted text validates, "
          "every valid one written in property order is accepted" % (len(SCHEMAS), total, accepted))


RANGES = [{"minimum": -37, "maximum": 1205}, {"minimum": 10}, {"exclusiveMaximum": 0},
          {"minimum": 0, "maximum": 0}, {"exclusiveMinimum": 99, "exclusiveMaximum": 1000},
          {"minimum": -5000, "maximum": -4990}, {"minimum": 7.5, "maximum": 20.2}]


def check_ranges():
    """Integer bounds, exhaustively near them: the canonical text of every
    integer is accepted exactly when it validates."""
    total = 0
    for bounds in RANGES:
        schema = dict(bounds, type="integer")
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "llmc-range-%d.json" % os.getpid())
        with open(path, "w") as f:
            json.dump(schema, f)
        ends = [v for v in bounds.values()]
        ints = sorted({i for e in ends for i in range(int(e) - 300, int(e) + 300)} | {0, 1, -1})
        texts = [str(i) for i in ints] + ["-0", "007", "+5", "1.0", "1e2", ""]
        got = llmc_match("--json-schema", path, texts)
        os.unlink(path)
        for text, g in zip(texts, got):
            canonical = text.lstrip("-").isdigit() and str(int(text)) == text
            try:
                validate(json.loads(text), schema)
                valid = True
            except Exception:  # noqa: BLE001
                valid = False
            if g and not valid:
                sys.exit("bounds %s: llmc accepts %r, which does not validate" % (bounds, text))
            if canonical and valid and not g:
                sys.exit("bounds %s: llmc rejects the valid %r" % (bounds, text))
        total += len(texts)
    print("ranges: %d integer bounds, %d texts: llmc accepts every canonical integer that "
          "validates and nothing that does not" % (len(RANGES), total))


def check_dates():
    """Every day of years 0000-0001 and 2023-2024 as a date: llmc accepts it
    exactly when Python's date reader does (but February 29, left out)."""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "llmc-date-%d.json" % os.getpid())
    with open(path, "w") as f:
        json.dump({"type": "string", "format": "date"}, f)
    texts = ["%04d-%02d-%02d" % (y, m, d) for y in (0, 1, 2023, 2024, 9999)
             for m in range(0, 14) for d in range(0, 33)]
    got = llmc_match("--json-schema", path, [json.dumps(t) for t in texts])
    os.unlink(path)
    for text, g in zip(texts, got):
        try:
            datetime.date.fromisoformat(text)
            valid = True
        except ValueError:
            valid = False
        if g != valid and not (valid and text[5:] == "02-29"):
            sys.exit("date %r: llmc says %s, Python %s" % (text, g, valid))
    print("dates: %d texts: llmc accepts exactly the valid dates (but February 29)" % len(texts))


def arithmetic(text):
    """Whether `text` is what arith.gbnf describes, as Python reads it."""
    tree = ast.parse(text, mode="eval")
    allowed = (ast.Expression, ast.BinOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div)
    return all(isinstance(n, allowed) for n in ast.walk(tree)) and text == text.strip()


def generate(artifacts, draft=None):
    person = SCHEMAS["person"]
    schema_file = os.path.join(HERE, "person.schema.json")
    regexes = [r"[A-Z][a-z]{1,8} (said|spake) unto [A-Z][a-z]{1,8}\.",
               r"\d{3}-\d{4}( ext\. \d{1,3})?",
               r"(yes|no|maybe), [a-z ]{2,20}!"]
    for art in artifacts:
        counts = {"json-schema": 0, "regex": 0, "grammar": 0}
        runs = [("json-schema", schema_file, None), ("grammar", os.path.join(HERE, "arith.gbnf"), None)]
        runs += [("regex", r, None) for r in regexes]
        for (kind, value, _), mode in itertools.product(runs, ["greedy", 1, 2, 3]):
            cmd = ["llmc", "run", art, "--prompt", "And he said", "--max-new-tokens", "450",
                   "--format", "text", "--" + kind, value]
            if mode != "greedy":
                cmd += ["--temperature", "1", "--seed", str(mode)]
            out = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8",
                                 errors="surrogateescape")
            if out.returncode != 0:
                sys.exit("%s failed: %s" % (" ".join(cmd), out.stderr))
            text = out.stdout[:-1] if out.stdout.endswith("\n") else out.stdout
            try:
                if kind == "json-schema":
                    validate(json.loads(text), person)
                elif kind == "regex":
                    assert re.fullmatch(value, text, re.ASCII), "no match"
                else:
                    assert arithmetic(text), "not the grammar's arithmetic"
            except Exception as e:  # noqa: BLE001
                sys.exit("%s: the text %r does not validate: %s" % (" ".join(cmd), text, e))
            counts[kind] += 1
        # Speculative greedy decoding keeps the constrained output.
        for kind, value, _ in runs:
            base = ["llmc", "run", art, "--prompt", "And he said", "--max-new-tokens", "450",
                    "--format", "ids", "--" + kind, value]
            plain = subprocess.run(base, capture_output=True, text=True, check=True).stdout
            for how in ["prompt-lookup"] + (["draft:" + (draft or art)]):
                spec = subprocess.run(base + ["--speculative", how], capture_output=True,
                                      text=True, check=True).stdout
                if plain != spec:
                    sys.exit("%s: --speculative %s changed the output:\n%s\n%s"
                             % (" ".join(base), how, plain, spec))
        print("%s: %d constrained generations, greedy and sampled, all valid (json-schema %d, "
              "regex %d, grammar %d); speculative greedy output the same (prompt lookup, "
              "draft model)"
              % (os.path.basename(art), sum(counts.values()), counts["json-schema"],
                 counts["regex"], counts["grammar"]))


if __name__ == "__main__":
    if sys.argv[1] == "regex":
        check_regexes()
    elif sys.argv[1] == "schema":
        check_schemas()
        check_ranges()
        check_dates()
    else:
        args = sys.argv[2:]
        draft = None
        if args[0] == "--draft":
            draft, args = args[1], args[2:]
        generate(args, draft)
