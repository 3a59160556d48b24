#!/usr/bin/env bash
# Speculative decoding on the trained example model (examples/kjv-llama,
# 4.2M parameters, tools/train-example/train.py): `llmc bench --speculative`
# runs plain and speculative greedy generation of the same prompt in turns
# and reports the decode speed-up, the acceptance and whether the output is
# the same. Prompts from the held-out chapters (examples/kjv-llama/eval.txt,
# text the model was not trained on), three chapters per task:
#   copy:     a passage (a chapter's first verses, at least 3 and 300
#             characters), a blank line, then its first verse again: the
#             model should go on repeating the passage (input-grounded: the
#             text to produce is in the prompt, as when quoting or editing a
#             given text); the first 3 chapters whose prompt has at most 640
#             characters (~180 tokens);
#   continue: a chapter's first verse: the model writes on.
# The model trained on windows of 256 tokens, so prompt and output stay
# within 256 positions (--gen 64).
# Proposers: prompt lookup; the draft model examples/kjv-llama-draft (0.9M
# parameters, same tokenizer); the model itself compiled --quant int4.
# Needs a build (scripts/build.sh); python3 (standard library).
#   bench/cpu/speculative.sh [WORK] [RUNS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-spec-bench}
runs=${2:-5}
threads=${3:-$(nproc)}
mkdir -p "$work"
llmc=./build/bin/llmc
ex=examples/kjv-llama
compile() { # model out flags...
  local model=$1 out=$2
  shift 2
  [ -e "$out" ] || $llmc compile "$model" -o "$out" --max-seq 512 --prefill-buckets 16,64 \
    --verify-buckets 2,4,8 "$@" 2>/dev/null
}
compile $ex/model.onnx "$work/kjv.llmc"
compile $ex/model.onnx "$work/kjv-int4.llmc" --quant int4
compile examples/kjv-llama-draft/model.onnx "$work/kjv-draft.llmc"
python3 - "$ex/eval.txt" "$work" <<'PY'
import sys
chapters = open(sys.argv[1]).read().split("\n\n")
copies = []
for verses in (c.split("\n") for c in chapters):
    passage = verses[:next((i + 1 for i in range(len(verses))
                            if len("\n".join(verses[:i + 1])) >= 300), len(verses))]
    prompt = "\n".join(passage) + "\n\n" + passage[0] + "\n"
    if len(passage) >= 3 and len(prompt) <= 640 and len(copies) < 3:
        copies.append(prompt)
for n, prompt in enumerate(copies):
    open("%s/copy%d.txt" % (sys.argv[2], n), "w").write(prompt)
for n, c in enumerate((3, 11, 19)):
    open("%s/continue%d.txt" % (sys.argv[2], n), "w").write(chapters[c].split("\n")[0] + "\n")
PY
for task in copy continue; do
  for n in 0 1 2; do
    for spec in prompt-lookup "draft:$work/kjv-draft.llmc" "draft:$work/kjv-int4.llmc"; do
      name=$(basename "${spec#draft:}" .llmc)
      for k in 3 7; do
        $llmc bench "$work/kjv.llmc" --speculative "$spec" --prompt-file "$work/$task$n.txt" \
          --gen 64 --runs "$runs" --threads "$threads" --draft-tokens $k --json \
          > "$work/$task$n-$name-k$k.json" || true
      done
    done
  done
done
python3 - "$work" <<'PY'
import glob, json, os, statistics, sys
print("| task | prompt | proposer | k | acceptance | tokens/pass | plain tok/s "
      "| speculative tok/s | speed-up | same output |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/*-k*.json")):
    r = json.load(open(f))
    head, rest = os.path.basename(f)[:-5].split("-", 1)
    task, n = head[:-1], head[-1]
    proposer, k = rest.rsplit("-k", 1)
    rows.setdefault((task, proposer, k), []).append(r)
    print("| %s | %s | %s | %s | %.0f%% | %.2f | %.0f | %.0f | %.2fx | %s |" % (
        task, n, proposer, k, 100 * r["acceptance_rate"], r["tokens_per_pass"],
        1e3 / r["plain_time_per_output_token_ms"],
        1e3 / r["speculative_time_per_output_token_ms"], r["decode_speedup"],
        "yes" if r["output_identical"] else "NO"))
print()
print("| task | proposer | k | median speed-up of the 3 prompts | all same output |")
print("| --- | --- | --- | --- | --- |")
for (task, proposer, k), rs in sorted(rows.items()):
    print("| %s | %s | %s | %.2fx | %s |" % (
        task, proposer, k, statistics.median(r["decode_speedup"] for r in rs),
        "yes" if all(r["output_identical"] for r in rs) else "NO"))
PY
