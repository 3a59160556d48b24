#!/usr/bin/env bash
# The shared half of the CPU benchmarks that time a change against the llmc
# before it (manual_attention.sh, static_fallback.sh): WORK/model.onnx
# compiled by OLD and by ./build/bin/llmc (--max-seq MAX_SEQ,
# --prefill-buckets 64,1024), then `llmc bench` of each and onnxruntime on
# the same file (bench/cpu/ort_decode.py) at prompts of 64 and 1024 tokens,
# 64 generated, alternating ROUNDS times; prints what `llmc inspect` says of
# each (the lines matching INSPECT) and a Markdown table of medians (and the
# rounds' range), OLD_LABEL and NEW_LABEL naming the two builds. ORT_ARGS:
# more options for ort_decode.py (--head-dim for onnxruntime-genai's exports).
#   OLD=... bench/cpu/old_new.sh WORK ROUNDS MAX_SEQ INSPECT OLD_LABEL NEW_LABEL
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$1 rounds=$2 max_seq=$3 inspect=$4 old_label=$5 new_label=$6
old=${OLD:?set OLD to the llmc binary of a build before the change}
threads=$(nproc)
for which in old new; do
  llmc=$old
  [ "$which" = new ] && llmc=./build/bin/llmc
  "$llmc" compile "$work/model.onnx" -o "$work/$which.llmc" --max-seq "$max_seq" \
    --prefill-buckets 64,1024 2> "$work/$which.log"
done
for round in $(seq "$rounds"); do
  for p in 64 1024; do
    for which in old new; do
      ./build/bin/llmc bench "$work/$which.llmc" --prompt-len "$p" --gen 64 --threads "$threads" \
        --json > "$work/$which-$p-$round.json"
    done
    python3 bench/cpu/ort_decode.py "$work/model.onnx" --prompt-len "$p" --gen 64 \
      --threads "$threads" ${ORT_ARGS:-} > "$work/ort-$p-$round.json" 2>/dev/null
  done
done
for which in old new; do
  echo "$which: $(./build/bin/llmc inspect "$work/$which.llmc" | grep -E "$inspect" | tr -s ' ' | paste -sd ';')"
done
python3 - "$work" "$old_label" "$new_label" <<'PY'
import glob, json, os, statistics, sys
work, old_label, new_label = sys.argv[1:4]
def runs(which, p):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "%s-%d-*.json" % (which, p))))]
print("| prompt | runner | TTFT ms | decode tok/s (rounds) | TPOT ms | vs onnxruntime (decode) |")
print("| --- | --- | --- | --- | --- | --- |")
for p in (64, 1024):
    ort = runs("ort", p)
    ort_tps = statistics.median(o["decode_tokens_per_s"] for o in ort)
    for which, label in (("old", old_label), ("new", new_label),
                         ("ort", "onnxruntime %s" % ort[0]["onnxruntime"])):
        r = runs(which, p)
        med = lambda k: statistics.median(x[k] for x in r)
        tps = sorted(x["decode_tokens_per_s"] for x in r)
        print("| %d | %s | %.1f | %.1f (%.1f .. %.1f) | %.2f | %.2fx |" % (
            p, label, med("time_to_first_token_ms"), med("decode_tokens_per_s"), tps[0], tps[-1],
            med("time_per_output_token_ms"), med("decode_tokens_per_s") / ort_tps))
PY
