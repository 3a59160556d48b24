#!/usr/bin/env python3
"""For test/models/models.test: runs `llmc run --ids <prompt> --max-new-tokens
32 --format ids` on every artifact `llmc verify --compiled --artifacts DIR`
kept, with the compiled KV-cache capacity and with `--capacity` of exactly
prompt + 32 positions (an artifact whose capacity is fixed must refuse it),
and compares the printed ids with the fixture's
"greedy" tokens (onnxruntime's); and once more with `--speculative
prompt-lookup` (drafts from the text so far, verified in one prefill pass,
the rest rolled back) and with `--speculative draft:OTHER` (OTHER: the next
artifact with the same vocabulary and at least its capacity, a different
random model, so most of its proposals are rejected and rolled back; the
artifact itself where there is none), which must print the same tokens.
Exits non-zero naming the first mismatch."""
import json
import os
import re
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


def manifest(art):
    with open(os.path.join(art, "manifest.json")) as f:
        return json.load(f)


def capacity(art):
    m = manifest(art)
    caches = m.get("caches") or []
    return caches[0]["capacity"] if caches else m["options"]["max_seq"]


def draft_for(art, arts):
    """The next artifact after `art` (in turn) with its vocabulary and at
    least its capacity; else `art` itself (a draft that always agrees still
    runs the draft's catch-up and rollback)."""
    vocab, cap = manifest(art)["vocab"], capacity(art)
    i = arts.index(art)
    for other in arts[i + 1:] + arts[:i]:
        if manifest(other)["vocab"] == vocab and capacity(other) >= cap:
            return other
    return art


def speculate(fx, art, how, totals):
    """llmc run --speculative `how`: must print onnxruntime's greedy tokens."""
    out = subprocess.run(["llmc", "run", art, "--ids", ",".join(map(str, fx["prompt"])),
                          "--max-new-tokens", str(len(fx["greedy"])), "--format", "ids",
                          "--ignore-eos", "--speculative", how, "-v"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("%s: llmc run --speculative %s failed: %s" % (fx["name"], how,
                                                               out.stderr.strip()))
    got = [int(x) for x in out.stdout.strip().split(",")]
    if got != fx["greedy"]:
        sys.exit("%s: llmc run --speculative %s printed %s, onnxruntime %s" %
                 (fx["name"], how, got, fx["greedy"]))
    m = re.search(r"(\d+) of (\d+) proposed tokens accepted", out.stderr)
    if m:
        totals[0] += int(m.group(1))
        totals[1] += int(m.group(2))


def main():
    artifacts, roots = sys.argv[1], sys.argv[2:]
    checked = fixed = 0
    lookup, drafted = [0, 0], [0, 0]
    todo = [fx for fx in fixtures(roots) if "greedy" in fx]
    arts = [os.path.join(artifacts, fx["name"] + ".llmc") for fx in todo]
    for fx, art in zip(todo, arts):
        flexible = manifest(art)["memory"]["kv_cache_capacity_flexible"]
        # At the compiled capacity, and with a cache of exactly the positions
        # the run needs (--capacity: the session allocates less) where the
        # artifact takes one (not a static cache the model keeps itself:
        # there, the clear refusal is checked).
        needed = len(fx["prompt"]) + len(fx["greedy"])
        if not flexible:
            out = subprocess.run(["llmc", "run", art, "--ids", "1", "--capacity", str(needed)],
                                 capture_output=True, text=True)
            if out.returncode == 0 or "takes only its compiled" not in out.stderr:
                sys.exit("%s: a fixed-capacity artifact took --capacity %d: %s" %
                         (fx["name"], needed, out.stderr.strip()))
            fixed += 1
        for capacity in (0, needed) if flexible else (0,):
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
        speculate(fx, art, "prompt-lookup", lookup)
        draft = draft_for(art, arts)
        speculate(fx, art, "draft:" + draft, drafted)
        checked += 1
    print("%d artifacts: llmc run printed onnxruntime's greedy tokens for every one, "
          "at the compiled capacity and at the one the run needs (%d of fixed capacity: "
          "refused it), with --speculative prompt-lookup (%s of %d proposed tokens "
          "accepted), and with --speculative draft:<another artifact> (%s of %d accepted, "
          "%s rejected)" % (checked, fixed, "some" if lookup[0] else "none", lookup[1],
                            "some" if drafted[0] else "none", drafted[1],
                            "some" if drafted[0] < drafted[1] else "none"))


if __name__ == "__main__":
    main()
