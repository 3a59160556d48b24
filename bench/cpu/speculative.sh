#!/usr/bin/env bash
# Speculative decoding on the trained example model (examples/kjv-llama,
# 4.2M parameters, tools/train-example/train.py): `llmc bench --speculative`
# runs plain and speculative greedy generation of the same prompt in turns
# and reports the decode speed-up, the acceptance and whether the output is
# the same. Two tasks, prompts taken from the held-out chapters
# (examples/kjv-llama/eval.txt, text the model was not trained on):
#   copy:     a chapter's first verses, then its first verse again: the model
#             goes on repeating the passage (input-grounded, as an edit of a
#             given text is);
#   continue: a chapter's first verse: the model writes on.
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
  [ -e "$out" ] || $llmc compile "$model" -o "$out" --max-seq 1024 --prefill-buckets 16,64 \
    --verify-buckets 2,4,8 "$@" 2>/dev/null
}
compile $ex/model.onnx "$work/kjv.llmc"
compile $ex/model.onnx "$work/kjv-int4.llmc" --quant int4
compile examples/kjv-llama-draft/model.onnx "$work/kjv-draft.llmc"
python3 - "$ex/eval.txt" "$work" <<'PY'
import sys
chapters = open(sys.argv[1]).read().split("\n\n")
ch = chapters[3].split("\n")
open(sys.argv[2] + "/copy.txt", "w").write("\n".join(ch[:10]) + "\n\n" + ch[0] + "\n")
open(sys.argv[2] + "/continue.txt", "w").write(chapters[5].split("\n")[0] + "\n")
PY
for task in copy continue; do
  for spec in prompt-lookup "draft:$work/kjv-draft.llmc" "draft:$work/kjv-int4.llmc"; do
    name=$(basename "${spec#draft:}" .llmc)
    for k in 4 8; do
      $llmc bench "$work/kjv.llmc" --speculative "$spec" --prompt-file "$work/$task.txt" \
        --gen 128 --runs "$runs" --threads "$threads" --draft-tokens $k --json \
        > "$work/$task-$name-k$k.json" || true
    done
  done
done
python3 - "$work" <<'PY'
import glob, json, os, sys
print("| task | proposer | k | acceptance | tokens/pass | plain tok/s | speculative tok/s "
      "| speed-up | same output |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for f in sorted(glob.glob(sys.argv[1] + "/*-k*.json")):
    r = json.load(open(f))
    task, rest = os.path.basename(f)[:-5].split("-", 1)
    proposer, k = rest.rsplit("-k", 1)
    print("| %s | %s | %s | %.0f%% | %.2f | %.0f | %.0f | %.2fx | %s |" % (
        task, proposer, k, 100 * r["acceptance_rate"], r["tokens_per_pass"],
        1e3 / r["plain_time_per_output_token_ms"],
        1e3 / r["speculative_time_per_output_token_ms"], r["decode_speedup"],
        "yes" if r["output_identical"] else "NO"))
PY
