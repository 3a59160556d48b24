#!/usr/bin/env bash
# Quantization benchmark: the ~125M Llama of bench/cpu/make_llama_onnx.py
# (random weights, generated into WORK, not committed) compiled by llmc at
# f16, int8 (per channel) and int4 (groups of 32 and of 128), run by
# `llmc bench`; and, when LLAMA_CPP names a llama.cpp source tree with
# llama-bench and llama-quantize built in LLAMA_CPP/build/bin, the same
# weights as llama.cpp F16, Q8_0 and Q4_0 (bench/cpu/onnx_to_gguf.py, then
# llama-quantize), run by llama-bench. ROUNDS rounds alternate every build
# on this shared machine; the table gives medians, and its ratios the median
# of each round's ratio (bandwidth here moves within minutes). Needs a build
# (scripts/build.sh) and a Python with onnx, onnxruntime and numpy.
#   LLAMA_CPP=/path/to/llama.cpp bench/cpu/quant.sh [WORK] [ROUNDS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-quant-bench}
rounds=${2:-3}
cpu=${3:-native}
threads=$(nproc)
python=${PYTHON:-python3}
mkdir -p "$work"
$python bench/cpu/make_llama_onnx.py "$work/llama-125m" >&2
builds="f16:--dtype=f16 int8:--quant=int8 int4:--quant=int4 int4-g128:--quant=int4:g128"
for b in $builds; do
  name=${b%%:*} flags=${b#*:}
  [ -e "$work/llmc-$name.llmc" ] || ./build/bin/llmc compile "$work/llama-125m/model.onnx" \
    -o "$work/llmc-$name.llmc" --max-seq 512 --prefill-buckets 16,64 --cpu "$cpu" $flags 2>/dev/null
done
peers=""
if [ -n "${LLAMA_CPP:-}" ]; then
  bin=$LLAMA_CPP/build/bin
  [ -e "$work/llama-f16.gguf" ] || $python bench/cpu/onnx_to_gguf.py "$work/llama-125m" \
    "$work/llama-f16.gguf" --gguf-py "$LLAMA_CPP/gguf-py" >&2
  for q in Q8_0 Q4_0; do
    [ -e "$work/llama-$q.gguf" ] || "$bin/llama-quantize" "$work/llama-f16.gguf" \
      "$work/llama-$q.gguf" "$q" >/dev/null 2>&1
  done
  peers="F16 Q8_0 Q4_0"
fi
for round in $(seq "$rounds"); do
  for b in $builds; do
    name=${b%%:*}
    ./build/bin/llmc bench "$work/llmc-$name.llmc" --prompt-len 64 --gen 64 --threads "$threads" \
      --json > "$work/llmc-$name-$round.json"
  done
  for q in $peers; do
    f=$work/llama-${q/F16/f16}.gguf
    "$bin/llama-bench" -m "$f" -p 64 -n 64 -t "$threads" -r 3 -o json \
      > "$work/llamacpp-$q-$round.json" 2>/dev/null
  done
done
$python - "$work" "$rounds" "$builds" "$peers" "$cpu" <<'PY'
import glob, json, os, statistics, sys
work, rounds, builds, peers, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
med = statistics.median
rows, perRound = {}, {}
for b in builds:
    name = b.split(":")[0]
    runs = [json.load(open(os.path.join(work, "llmc-%s-%d.json" % (name, r + 1)))) for r in range(rounds)]
    perRound[name] = [r["decode_tokens_per_s"] for r in runs]
    rows[name] = {k: med(r[k] for r in runs) for k in (
        "decode_tokens_per_s", "time_to_first_token_ms", "decode_bandwidth_gbs",
        "machine_read_bandwidth_gbs", "bandwidth_fraction", "decode_bytes_per_token")}
def llama(q):
    tg, pp, perRoundTg = [], [], []
    for r in range(rounds):
        for t in json.load(open(os.path.join(work, "llamacpp-%s-%d.json" % (q, r + 1)))):
            (tg if t["n_gen"] > 0 else pp).append(t["avg_ts"])
            if t["n_gen"] > 0:
                perRoundTg.append(t["avg_ts"])
    return (med(tg) if tg else None), (med(pp) if pp else None), perRoundTg
peer = {q: llama(q) for q in peers}
# Against f16: the median over rounds of each round's ratio (the builds of a
# round run minutes apart at most; this VM's bandwidth moves more than that
# between rounds).
def vsF16(name):
    return med(a / f for a, f in zip(perRound[name], perRound["f16"]))
print("| build | decode tok/s | vs llmc f16 | TTFT ms (64) | MB read/token | decode GB/s | machine GB/s | of bandwidth | llama.cpp tg64 tok/s | llama.cpp pp64 tok/s | vs llama.cpp |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
match = {"f16": "F16", "int8": "Q8_0", "int4": "Q4_0", "int4-g128": None}
for b in builds:
    name = b.split(":")[0]
    r = rows[name]
    q = match[name] if match[name] in peer else None
    tg, pp, tgRounds = peer[q] if q else (None, None, [])
    print("| llmc %s (--cpu %s) | %.1f | %.2fx | %.1f | %.1f | %.1f | %.1f | %.0f%% | %s | %s | %s |" % (
        name, cpu, r["decode_tokens_per_s"], vsF16(name),
        r["time_to_first_token_ms"], r["decode_bytes_per_token"] / 1e6, r["decode_bandwidth_gbs"],
        r["machine_read_bandwidth_gbs"], 100 * r["bandwidth_fraction"],
        "%.1f (%s)" % (tg, q) if tg else "", "%.1f" % pp if pp else "",
        "%.2fx" % med(a / t for a, t in zip(perRound[name], tgRounds)) if tg else ""))
PY
