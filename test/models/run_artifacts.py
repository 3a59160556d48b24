#!/usr/bin/env python3
"""For test/models/models.test: runs `llmc run --ids <prompt> --max-new-tokens
32 --format ids` on every artifact `llmc verify --compiled --artifacts DIR`
kept, with the compiled KV-cache capacity and with `--capacity` of exactly
prompt + 32 positions, and compares the printed ids with the fixture's
"greedy" tokens (onnxruntime's). Exits non-zero naming the first mismatch."""
import json
import os
import subprocess
import sys


def fixtures(roots):
    """As `llmc verify` finds them: ROOT/fixture.json, else ROOT/*/fixture.json."""
    for root in roots:
        if os.path.isfile(os.path.join(root, "fixture.json")):
            dirs = [root]
        else:
            dirs = [os.path.join(root, d) for d in sorted(os.listdir(root))]
        for d in dirs:
            path = os.path.join(d, "fixture.json")
            if os.path.isfile(path):
                with open(path) as f:
                    yield json.load(f)


def main():
    artifacts, roots = sys.argv[1], sys.argv[2:]
    checked = 0
    for fx in fixtures(roots):
        if "greedy" not in fx:
            continue
        art = os.path.join(artifacts, fx["name"] + ".llmc")
        # At the compiled capacity, and with a cache of exactly the positions
        # the run needs (--capacity: the session allocates less).
        for capacity in (0, len(fx["prompt"]) + len(fx["greedy"])):
            out = subprocess.run(["llmc", "run", art, "--ids", ",".join(map(str, fx["prompt"])),
                                  "--max-new-tokens", str(len(fx["greedy"])), "--format", "ids",
                                  "--ignore-eos", "--capacity", str(capacity)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit("%s (capacity %d): llmc run failed: %s" %
                         (fx["name"], capacity, out.stderr.strip()))
            got = [int(x) for x in out.stdout.strip().split(",")]
            if got != fx["greedy"]:
                sys.exit("%s (capacity %d): llmc run printed %s, onnxruntime %s" %
                         (fx["name"], capacity, got, fx["greedy"]))
        checked += 1
    print("%d artifacts: llmc run printed onnxruntime's greedy tokens for every one, "
          "at the compiled capacity and at the one the run needs" % checked)


if __name__ == "__main__":
    main()
