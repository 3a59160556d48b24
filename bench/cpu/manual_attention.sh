#!/usr/bin/env bash
# A hand-written attention (MatMul, a Where mask, the softmax written out as
# Exp / ReduceMax / ReduceSum, past/present IO: make_onnx_forms.py's
# "manual" form, as test/models/onnx23-manual-attention; or FORM, another
# of its past/present forms: onnx23-sinks-attention, the same with
# gpt-oss's attention sinks) at a size where the difference shows: 8
# layers, hidden 512 (8 heads of 64), MLP 1536, vocab 8192, random weights,
# generated into WORK (not committed). The same ONNX file compiled by two
# llmc builds, OLD (one that does not recognise that attention, so compiles
# it through the fallback: reference kernels over the model's own
# past/present IO) and NEW (./build/bin/llmc), and run by `llmc bench` at
# two prompt lengths, with onnxruntime on the same file as the peer
# (bench/cpu/ort_decode.py), alternating ROUNDS times. Prints a Markdown
# table for bench/results/. Needs pip's onnx and onnxruntime.
#   [FORM=...] OLD=/path/to/old/llmc bench/cpu/manual_attention.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-manual-attention}
rounds=${2:-3}
: "${OLD:?set OLD to the llmc binary of a build before the change}"
mkdir -p "$work"
python3 - "$work/model.onnx" "${FORM:-onnx23-manual-attention}" <<'PY'
import sys
sys.path.insert(0, "tools/fixtures")
import onnx
import make_onnx_forms as m
m.VOCAB, m.LAYERS, m.HEADS, m.FFN, m.MAX_POS = 8192, 8, 8, 1536, 4096
m.HEAD_DIM, m.HIDDEN = 64, 512
m.KEEP_WEIGHTS = False
form = sys.argv[2]
m.FORMS[form].update(rotary=m.HEAD_DIM, kv_heads=m.HEADS)  # (no repeat_kv)
model, *_ = m.build(form)
onnx.save(model, sys.argv[1])
PY
bench/cpu/old_new.sh "$work" "$rounds" 2048 '^(structure|decode step)' "llmc OLD (fallback)" "llmc NEW (recognised)"
