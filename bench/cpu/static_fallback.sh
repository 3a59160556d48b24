#!/usr/bin/env bash
# A static-cache export whose attention llmc does not recognise (make_onnx_forms.py's
# onnx24-static-unknown-attention form: TensorScatter writes each step's rows into caches of
# fixed length that the model takes and returns, an attention with a learned null key written
# out; before 2026-11-30, with sinks, which llmc now recognises) at a size
# where the cache copies show: 8 layers, hidden 512 (8 heads of 64), MLP 1536, vocab 8192,
# caches of CAPACITY rows (default 2048), random weights, generated into WORK (not committed).
# The same ONNX file compiled by two llmc builds, OLD (before TensorScatter wrote the session's
# cache in place: a copy of each whole cache per layer and step, and the copy back) and NEW
# (./build/bin/llmc), and run by `llmc bench` at two prompt lengths, with onnxruntime on the
# same file as the peer (bench/cpu/ort_decode.py), alternating ROUNDS times. Prints a Markdown
# table for bench/results/. Needs pip's onnx and onnxruntime. OLD_LABEL and NEW_LABEL name
# the two builds in the table when the change timed is another (default: the in-place
# TensorScatter's).
#   OLD=/path/to/old/llmc bench/cpu/static_fallback.sh [WORK] [ROUNDS] [CAPACITY]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-static-fallback}
rounds=${2:-3}
capacity=${3:-2048}
: "${OLD:?set OLD to the llmc binary of a build before the change}"
mkdir -p "$work"
python3 - "$work/model.onnx" "$capacity" <<'PY'
import sys
sys.path.insert(0, "tools/fixtures")
import onnx
import make_onnx_forms as m
m.VOCAB, m.LAYERS, m.HEADS, m.FFN, m.MAX_POS = 8192, 8, 8, 1536, 4096
m.HEAD_DIM, m.HIDDEN, m.CAPACITY = 64, 512, int(sys.argv[2])
m.KEEP_WEIGHTS = False
m.FORMS["onnx24-static-unknown-attention"].update(rotary=m.HEAD_DIM, kv_heads=m.HEADS)
model, *_ = m.build("onnx24-static-unknown-attention")
onnx.save(model, sys.argv[1])
PY
bench/cpu/old_new.sh "$work" "$rounds" "$capacity" '^(KV cache|decode step)' \
  "${OLD_LABEL:-llmc OLD (whole-cache copies)}" "${NEW_LABEL:-llmc NEW (in place)}"
