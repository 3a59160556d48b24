#!/usr/bin/env python3
"""For test/models/models.test: the memory plan made real. For every artifact
`llmc verify --compiled --artifacts DIR` kept (host targets):

- `llmc inspect` prints an arena per entry and one per session (the largest:
  entries run one at a time); the per-entry numbers are the manifest's;
- ALLOC_COUNT (test/e2e/Inputs/alloc_count.c) then checks that creating a
  context allocates exactly the session's arena, and that after one warm-up
  round no prefill or decode call allocates anything, on 1 and on 2 threads;
- and it counts the artifacts whose every entry computes the logits of only
  the positions asked for (the manifest's code.logits_rows), listing the
  others.

Exits non-zero naming the first failure."""
import json
import os
import re
import subprocess
import sys


def main():
    harness, artifacts = sys.argv[1], sys.argv[2]
    checked = calls = 0
    rowsEverywhere, others = 0, []
    for name in sorted(os.listdir(artifacts)):
        art = os.path.join(artifacts, name)
        manifest_path = os.path.join(art, "manifest.json")
        if not os.path.isfile(manifest_path):
            continue
        with open(manifest_path) as f:
            manifest = json.load(f)
        planned = {e: v["arena_bytes"] for e, v in manifest["memory"]["entries"].items()}
        out = subprocess.run(["llmc", "inspect", art], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("%s: llmc inspect failed: %s" % (name, out.stderr.strip()))
        shown = {m.group(1): int(m.group(2))
                 for m in re.finditer(r"^  (\S+)\s+batch .*, arena (\d+) bytes$", out.stdout,
                                      re.M)}
        if shown != planned:
            sys.exit("%s: llmc inspect shows the arenas %s, the manifest plans %s" %
                     (name, shown, planned))
        session = re.search(r"^activations: +(\d+) bytes per session", out.stdout, re.M)
        if not session or int(session.group(1)) != max(planned.values()):
            sys.exit("%s: llmc inspect shows no session arena equal to the largest entry's "
                     "(%d):\n%s" % (name, max(planned.values()), out.stdout))
        for threads in (1, 2):
            run = subprocess.run([harness, os.path.join(art, "libmodel.so"),
                                  os.path.join(art, "weights.bin"), session.group(1),
                                  str(threads)], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit("%s (%d threads): %s%s" % (name, threads, run.stdout, run.stderr))
            m = re.search(r"(\d+) calls after warm-up: 0 allocations", run.stdout)
            if not m or int(m.group(1)) == 0:
                sys.exit("%s (%d threads): no calls checked: %s" % (name, threads, run.stdout))
            calls += int(m.group(1))
        checked += 1
        if all(e["code"]["logits_rows"] for e in manifest["entries"]):
            rowsEverywhere += 1
        else:
            others.append(name)
    print("%d artifacts: each context allocates the arena llmc inspect shows, and %d prefill "
          "and decode calls after warm-up allocated nothing" % (checked, calls))
    print("%d compute only the asked positions' logits; not: %s" %
          (rowsEverywhere, ", ".join(others) or "none"))


if __name__ == "__main__":
    main()
