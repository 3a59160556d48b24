#!/usr/bin/env python3
"""Imports every ONNX node-test model with `llmc import` and checks that
exactly the cases listed in node-tests-unsupported.txt fail, each with its
listed reason.

usage: import-node-tests.py <onnx-node-tests dir> <unsupported list> <llmc>
"""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

root, listing, llmc = sys.argv[1:4]
expected = []
for line in open(listing):
    line = line.strip()
    if line and not line.startswith("#"):
        prefix, reason = line.split(" ", 1)
        expected.append((prefix, reason))


def run(case):
    r = subprocess.run([llmc, "import", os.path.join(root, case, "model.onnx"), "-o", os.devnull],
                       capture_output=True, text=True)
    return case, r.returncode, r.stderr.strip()


cases = sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "model.onnx")))
problems, imported, refused = [], 0, 0
with ThreadPoolExecutor(max_workers=2) as pool:
    for case, rc, err in pool.map(run, cases):
        rule = next((r for r in expected if case.startswith(r[0])), None)
        if rc == 0 and rule is None:
            imported += 1
        elif rc != 0 and rule is not None and rule[1] in err:
            refused += 1
        elif rc == 0:
            problems.append("%s: imports, but is listed as unsupported (%s)" % (case, rule[1]))
        else:
            problems.append("%s: %s" % (case, err.splitlines()[0] if err else "failed"))
print("%d imported, %d refused as listed, %d problems" % (imported, refused, len(problems)))
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
