#!/usr/bin/env bash
# Decode benchmark: a ~125M-parameter Llama (bench/cpu/make_llama_bench.py,
# random weights, generated into WORK, not committed) compiled by llmc and
# run by `llmc bench`, against onnxruntime on the same ONNX file in the same
# run (bench/cpu/ort_decode.py), alternating ROUNDS times on a shared
# machine. Prints a Markdown table for bench/results/. Needs a build
# (scripts/build.sh) and pip's torch, transformers, optimum, onnxruntime.
#   bench/cpu/decode.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-bench}
rounds=${2:-3}
threads=$(nproc)
mkdir -p "$work"
python3 bench/cpu/make_llama_bench.py "$work/llama-125m" >&2
for build in avx2-f32 avx512-f32 avx2-f16 avx512-f16; do
  cpu=${build%-*} dtype=${build#*-}
  if [ "$cpu" = avx512 ] && ! grep -q avx512f /proc/cpuinfo; then continue; fi
  ./build/bin/llmc compile "$work/llama-125m/model.onnx" -o "$work/llama-125m-$build.llmc" \
    --max-seq 512 --prefill-buckets 16,64,128 --cpu "$cpu" --dtype "$dtype" 2>/dev/null
done
for round in $(seq "$rounds"); do
  for a in "$work"/llama-125m-*.llmc; do
    ./build/bin/llmc bench "$a" --prompt-len 64 --gen 64 --threads "$threads" --json \
      > "$work/llmc-$(basename "$a" .llmc)-$round.json"
  done
  python3 bench/cpu/ort_decode.py "$work/llama-125m/model.onnx" --prompt-len 64 --gen 64 \
    --threads "$threads" > "$work/ort-$round.json" 2>/dev/null
done
python3 - "$work" "$rounds" <<'PY'
import glob, json, statistics, sys, os
work, rounds = sys.argv[1], int(sys.argv[2])
ort = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "ort-*.json")))]
ort_tps = statistics.median(o["decode_tokens_per_s"] for o in ort)
ort_ttft = statistics.median(o["time_to_first_token_ms"] for o in ort)
print("| build | decode tok/s | TPOT ms | TTFT ms (64 tokens) | decode GB/s | machine GB/s | of bandwidth | vs onnxruntime |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for build in ("avx2-f32", "avx512-f32", "avx2-f16", "avx512-f16"):
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "llmc-llama-125m-%s-[0-9]*.json" % build)))]
    if not runs:
        continue
    med = lambda k: statistics.median(r[k] for r in runs)
    cpu, dtype = build.split("-")
    print("| llmc --cpu %s --dtype %s | %.1f | %.2f | %.1f | %.1f | %.1f | %.0f%% | %.2fx |" % (
        cpu, dtype, med("decode_tokens_per_s"), med("time_per_output_token_ms"),
        med("time_to_first_token_ms"), med("decode_bandwidth_gbs"),
        med("machine_read_bandwidth_gbs"), 100 * med("bandwidth_fraction"),
        med("decode_tokens_per_s") / ort_tps))
print("| onnxruntime %s | %.1f | %.2f | %.1f | | | | 1.00x |" % (
    ort[0]["onnxruntime"], ort_tps, 1e3 / ort_tps, ort_ttft))
PY
