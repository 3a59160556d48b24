#!/usr/bin/env bash
# KV cache benchmark: decode at long context with f16 and int8 caches. The
# ~125M Llama of bench/cpu/make_llama_onnx.py (rope tables of 4096 positions,
# random weights, 12 layers, 4
# key-value heads of 64: 12 KiB of f16 cache per token; generated into WORK,
# not committed) compiled by llmc at f16 and at int4 (groups of 32, f16
# compute), each with its caches in f16 and in int8 (--kv-dtype int8), run
# by `llmc bench` after prompts of CONTEXTS tokens; and, when LLAMA_CPP names
# a llama.cpp source tree with llama-bench and llama-quantize built in
# LLAMA_CPP/build/bin, the same weights as F16 and Q4_0 with f16 and q8_0
# caches (-ctk/-ctv) at the same depths (-d). ROUNDS rounds alternate every
# build on this shared machine; the table gives medians. Needs a build
# (scripts/build.sh) and a Python with onnx and numpy.
#   LLAMA_CPP=/path/to/llama.cpp bench/cpu/kv_cache.sh [WORK] [ROUNDS] [CONTEXTS] [CPU]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-kv-bench}
rounds=${2:-3}
contexts=${3:-128,1024,4000}
cpu=${4:-native}
threads=$(nproc)
python=${PYTHON:-python3}
gen=32
mkdir -p "$work"
$python bench/cpu/make_llama_onnx.py "$work/llama-125m" 4096 >&2
builds="f16:--dtype=f16 f16-kv8:--dtype=f16,--kv-dtype=int8 int4:--dtype=f16,--quant=int4 int4-kv8:--dtype=f16,--quant=int4,--kv-dtype=int8"
for b in $builds; do
  name=${b%%:*} flags=${b#*:}
  [ -e "$work/llmc-$name.llmc" ] || ./build/bin/llmc compile "$work/llama-125m/model.onnx" \
    -o "$work/llmc-$name.llmc" --max-seq 4096 --prefill-buckets 128,1024 --cpu "$cpu" \
    ${flags//,/ } 2>/dev/null
done
peers=""
if [ -n "${LLAMA_CPP:-}" ]; then
  bin=$LLAMA_CPP/build/bin
  [ -e "$work/llama-f16.gguf" ] || $python bench/cpu/onnx_to_gguf.py "$work/llama-125m" \
    "$work/llama-f16.gguf" --gguf-py "$LLAMA_CPP/gguf-py" >&2
  [ -e "$work/llama-Q4_0.gguf" ] || "$bin/llama-quantize" "$work/llama-f16.gguf" \
    "$work/llama-Q4_0.gguf" Q4_0 >/dev/null 2>&1
  peers="F16:f16 F16:q8_0 Q4_0:f16 Q4_0:q8_0"
fi
for round in $(seq "$rounds"); do
  for c in ${contexts//,/ }; do
    for b in $builds; do
      name=${b%%:*}
      ./build/bin/llmc bench "$work/llmc-$name.llmc" --prompt-len "$c" --gen "$gen" --runs 1 \
        --threads "$threads" --json > "$work/llmc-$name-$c-$round.json"
    done
    for p in $peers; do
      q=${p%%:*} kv=${p#*:}
      "$bin/llama-bench" -m "$work/llama-${q/F16/f16}.gguf" -p 0 -n "$gen" -d "$c" -ctk "$kv" \
        -ctv "$kv" -fa 1 -t "$threads" -r 1 -o json > "$work/llamacpp-$q-$kv-$c-$round.json" 2>/dev/null
    done
  done
done
$python - "$work" "$contexts" "$builds" "$peers" "$cpu" <<'PY'
import glob, json, os, statistics, sys
work, contexts, builds, peers, cpu = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
med = statistics.median
def llmc(name, c):
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(work, "llmc-%s-%s-[0-9]*.json" % (name, c))))]
    return {k: med(r[k] for r in runs) for k in ("decode_tokens_per_s", "decode_bytes_per_token", "bandwidth_fraction")}
def llama(p, c):
    q, kv = p.split(":")
    tg = [t["avg_ts"] for f in sorted(glob.glob(os.path.join(work, "llamacpp-%s-%s-%s-[0-9]*.json" % (q, kv, c)))) for t in json.load(open(f))]
    return med(tg) if tg else None
print("| build | context | decode tok/s | vs f16 cache | MB read/token | of bandwidth | llama.cpp tg%d tok/s (same weights and cache type) | vs llama.cpp |" % 32)
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
peer_of = {"f16": "F16:f16", "f16-kv8": "F16:q8_0", "int4": "Q4_0:f16", "int4-kv8": "Q4_0:q8_0"}
for c in contexts:
    for b in builds:
        name = b.split(":")[0]
        r = llmc(name, c)
        base = llmc(name.replace("-kv8", ""), c)["decode_tokens_per_s"]
        p = peer_of[name] if peer_of[name] in peers else None
        tg = llama(p, c) if p else None
        print("| llmc %s (--cpu %s) | %s | %.1f | %.2fx | %.1f | %.0f%% | %s | %s |" % (
            name, cpu, c, r["decode_tokens_per_s"], r["decode_tokens_per_s"] / base,
            r["decode_bytes_per_token"] / 1e6, 100 * r["bandwidth_fraction"],
            "%.1f (%s)" % (tg, p) if tg else "", "%.2fx" % (r["decode_tokens_per_s"] / tg) if tg else ""))
PY
