#!/usr/bin/env bash
# A hand-written attention (MatMul, a Where mask, the softmax written out as
# Exp / ReduceMax / ReduceSum, past/present IO: make_onnx_forms.py's
# "manual" form, as test/models/onnx23-manual-attention) at a size where
# the difference shows: 8 layers, hidden 512 (8 heads of 64), MLP 1536,
# vocab 8192, random weights, generated into WORK (not committed). The same
# ONNX file compiled by two llmc builds, OLD (one that does not recognise
# that attention, so compiles it through the fallback: reference kernels
# over the model's own past/present IO) and NEW (./build/bin/llmc), and run
# by `llmc bench` at two prompt lengths, with onnxruntime on the same file
# as the peer (bench/cpu/ort_decode.py), alternating ROUNDS times. Prints a
# Markdown table for bench/results/. Needs pip's onnx and onnxruntime.
#   OLD=/path/to/old/llmc bench/cpu/manual_attention.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-manual-attention}
rounds=${2:-3}
old=${OLD:?set OLD to the llmc binary of a build before the change}
threads=$(nproc)
mkdir -p "$work"
python3 - "$work/model.onnx" <<'PY'
import sys
sys.path.insert(0, "tools/fixtures")
import onnx
import make_onnx_forms as m
m.VOCAB, m.LAYERS, m.HEADS, m.FFN, m.MAX_POS = 8192, 8, 8, 1536, 4096
m.HEAD_DIM, m.HIDDEN = 64, 512
m.KEEP_WEIGHTS = False
m.FORMS["onnx23-manual-attention"].update(rotary=m.HEAD_DIM, kv_heads=m.HEADS)  # (no repeat_kv)
model, *_ = m.build("onnx23-manual-attention")
onnx.save(model, sys.argv[1])
PY
for which in old new; do
  llmc=$old
  [ "$which" = new ] && llmc=./build/bin/llmc
  "$llmc" compile "$work/model.onnx" -o "$work/$which.llmc" --max-seq 2048 \
    --prefill-buckets 64,1024 2> "$work/$which.log"
done
for round in $(seq "$rounds"); do
  for p in 64 1024; do
    for which in old new; do
      ./build/bin/llmc bench "$work/$which.llmc" --prompt-len "$p" --gen 64 --threads "$threads" \
        --json > "$work/$which-$p-$round.json"
    done
    python3 bench/cpu/ort_decode.py "$work/model.onnx" --prompt-len "$p" --gen 64 \
      --threads "$threads" > "$work/ort-$p-$round.json" 2>/dev/null
  done
done
for which in old new; do
  echo "$which: $(./build/bin/llmc inspect "$work/$which.llmc" | grep -E '^(structure|decode step)' | tr -s ' ' | paste -sd ';')"
done
python3 - "$work" <<'PY'
import glob, json, os, statistics, sys
work = sys.argv[1]
def runs(which, p):
    return [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "%s-%d-*.json" % (which, p))))]
print("| prompt | runner | TTFT ms | decode tok/s | TPOT ms | vs onnxruntime (decode) |")
print("| --- | --- | --- | --- | --- | --- |")
for p in (64, 1024):
    ort = runs("ort", p)
    ort_tps = statistics.median(o["decode_tokens_per_s"] for o in ort)
    for which, label in (("old", "llmc OLD (fallback)"), ("new", "llmc NEW (recognised)"),
                         ("ort", "onnxruntime %s" % ort[0]["onnxruntime"])):
        r = runs(which, p)
        med = lambda k: statistics.median(x[k] for x in r)
        print("| %d | %s | %.1f | %.1f | %.2f | %.2fx |" % (
            p, label, med("time_to_first_token_ms"), med("decode_tokens_per_s"),
            med("time_per_output_token_ms"), med("decode_tokens_per_s") / ort_tps))
PY
