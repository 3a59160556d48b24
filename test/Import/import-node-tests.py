#!/usr/bin/env python3
"""Imports every ONNX node-test model with `llmc import` and checks that all
the cases not listed as unclaimed (test/conformance/unclaimed.txt) import.

usage: import-node-tests.py <onnx-node-tests dir> <unclaimed list> <llmc>
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
        if rule is not None:
            refused += 1
        elif rc == 0:
            imported += 1
        else:
            problems.append("%s: %s" % (case, err.splitlines()[0] if err else "failed"))
print("%d imported, %d unclaimed, %d problems" % (imported, refused, len(problems)))
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
