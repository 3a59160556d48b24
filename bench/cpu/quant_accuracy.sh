#!/usr/bin/env bash
# Quantization accuracy on the trained example model (examples/kjv-llama):
# `llmc compile --quant <scheme> --eval-text eval.txt` for each scheme, on
# the held-out chapters the model did not train on, and a markdown table of
# what the compiler reports (docs/quantization.md): top-1 agreement, KL
# divergence, perplexity float -> quantized, and the worst layer's error.
# METHOD rtn rounds to nearest; gptq rounds by GPTQ over statistics of
# calibration.txt (chapters the model trained on; 64 pieces of 128 tokens).
# Needs a build (scripts/build.sh); python3 (standard library).
#   bench/cpu/quant_accuracy.sh [WORK] [SEQUENCES] [ACTIVATIONS] [METHOD]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-quant-accuracy}
sequences=${2:-32}
acts=${3:-int8}
method=${4:-rtn}
mkdir -p "$work"
ex=examples/kjv-llama
calibration=""
[ "$method" = gptq ] && calibration="--calibration-text $ex/calibration.txt"
schemes="int8 int8:g128 int4:g128 int4:g128:asym int4:g64 int4:g32 int4:g32:asym"
for q in $schemes; do
  ./build/bin/llmc compile $ex/model.onnx -o "$work/${q//:/-}.llmc" --max-seq 256 --quant "$q" \
    --quant-activations "$acts" --eval-text $ex/eval.txt --eval-seq-len 128 \
    --eval-max-sequences "$sequences" $calibration > "$work/${q//:/-}.log" 2>&1
done
python3 - "$work" "$schemes" "$acts" "$method" <<'PY'
import json, sys
work, schemes, acts, method = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4]
print("| --quant | method | activations | top-1 agreement | mean KL | max KL | perplexity float -> "
      "quantized | change | worst layer error |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for q in schemes:
    m = json.load(open("%s/%s.llmc/manifest.json" % (work, q.replace(":", "-"))))
    e = m["quantization"]["eval"]
    worst = max(e["layers"], key=lambda l: l["relative_error"])
    f, p = e["float_perplexity"], e["quantized_perplexity"]
    print("| %s | %s | %s | %.1f%% | %.4f | %.3f | %.3f -> %.3f | %+.2f%% | %.3f (%s) |" % (
        q, method, acts, 100 * e["top1_agreement"], e["mean_kl"], e["max_kl"], f, p, 100 * (p / f - 1),
        worst["relative_error"], worst["name"]))
PY
