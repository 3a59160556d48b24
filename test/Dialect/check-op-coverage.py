#!/usr/bin/env python3
"""Fails unless every llm operation appears in each of the given test files.

usage: check-op-coverage.py LLMOps.h.inc roundtrip.mlir invalid.mlir
"""
import re
import sys

ops = sorted(set(re.findall(r'StringLiteral\("(llm\.[a-z0-9_.]+)"\)', open(sys.argv[1]).read())))
if not ops:
    sys.exit("no operations found in " + sys.argv[1])
missing = []
for path in sys.argv[2:]:
    text = open(path).read()
    for op in ops:
        # the op in custom ("llm.x ") or generic ("\"llm.x\"") form
        if not re.search(r'(?<![\w.])' + re.escape(op) + r'(?![\w.])', text):
            missing.append("%s: %s" % (path.split("/")[-1], op))
if missing:
    print("operations without a test:\n  " + "\n  ".join(missing))
    sys.exit(1)
print("%d operations covered in %d files" % (len(ops), len(sys.argv) - 2))
