#!/usr/bin/env bash
# Time to first token (the prefill) of 64- and 512-token prompts on the
# ~125M Llama, llmc against its peers in the same run, ROUNDS rounds that
# alternate every build and peer on this shared machine; medians.
#   - llmc f32 and f16 (--cpu native, and avx2 where the CPU has AVX-512),
#     compiled from bench/cpu/make_llama_onnx.py's model (torch-free);
#   - llama.cpp, when LLAMA_CPP names a llama.cpp tree with llama-bench
#     built in LLAMA_CPP/build/bin: the same weights as GGUF F32 and F16
#     (bench/cpu/onnx_to_gguf.py), `llama-bench -p 64,512 -n 0`; and when
#     LLAMA_CPP_AVX2 names a llama-bench built for AVX2 only (cmake
#     -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF), it is the peer of
#     llmc's --cpu avx2 builds;
#   - onnxruntime (f32; it has no f16 CPU kernels for this graph), on the
#     export it runs best (bench/cpu/make_llama_bench.py, optimum; needs
#     torch, transformers, optimum), with llmc on that same file beside it.
# Needs a build (scripts/build.sh) and a Python with onnx, onnxruntime and
# numpy (PYTHON). Prints a Markdown table for bench/results/.
#   LLAMA_CPP=/path/to/llama.cpp bench/cpu/ttft.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-ttft}
rounds=${2:-3}
threads=$(nproc)
python=${PYTHON:-python3}
mkdir -p "$work"
$python bench/cpu/make_llama_onnx.py "$work/llama-125m" >&2
builds="native-f32 native-f16"
grep -q avx512f /proc/cpuinfo && builds="$builds avx2-f32 avx2-f16"
for b in $builds; do
  [ -e "$work/llmc-$b.llmc" ] || ./build/bin/llmc compile "$work/llama-125m/model.onnx" \
    -o "$work/llmc-$b.llmc" --max-seq 1024 --prefill-buckets 64,512 --cpu "${b%-*}" \
    --dtype "${b#*-}" 2>/dev/null
done
ort=""
if $python -c "import torch, transformers, optimum" 2>/dev/null; then
  $python bench/cpu/make_llama_bench.py "$work/llama-125m-optimum" >&2
  [ -e "$work/llmc-ort-form.llmc" ] || ./build/bin/llmc compile \
    "$work/llama-125m-optimum/model.onnx" -o "$work/llmc-ort-form.llmc" --max-seq 1024 \
    --prefill-buckets 64,512 --cpu native 2>/dev/null
  ort=1
fi
peers=""
if [ -n "${LLAMA_CPP:-}" ]; then
  for t in f32 f16; do
    [ -e "$work/llama-$t.gguf" ] || $python bench/cpu/onnx_to_gguf.py "$work/llama-125m" \
      "$work/llama-$t.gguf" --gguf-py "$LLAMA_CPP/gguf-py" --type $t >&2
  done
  peers="f32 f16"
fi
for round in $(seq "$rounds"); do
  for p in 64 512; do
    for b in $builds ${ort:+ort-form}; do
      ./build/bin/llmc bench "$work/llmc-$b.llmc" --prompt-len $p --gen 2 --threads "$threads" \
        --json > "$work/llmc-$b-$p-$round.json"
    done
    if [ -n "$ort" ]; then
      $python bench/cpu/ort_decode.py "$work/llama-125m-optimum/model.onnx" --prompt-len $p \
        --gen 2 --threads "$threads" > "$work/ort-$p-$round.json" 2>/dev/null
    fi
  done
  for t in $peers; do
    "$LLAMA_CPP/build/bin/llama-bench" -m "$work/llama-$t.gguf" -p 64,512 -n 0 -t "$threads" \
      -r 3 -o json > "$work/llamacpp-$t-$round.json" 2>/dev/null
    if [ -n "${LLAMA_CPP_AVX2:-}" ]; then
      "$LLAMA_CPP_AVX2" -m "$work/llama-$t.gguf" -p 64,512 -n 0 -t "$threads" -r 3 -o json \
        > "$work/llamacpp-avx2-$t-$round.json" 2>/dev/null
    fi
  done
done
$python - "$work" "$builds" "$ort" "$peers" <<'PY'
import glob, json, os, statistics, sys
work, builds, ort, peers = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4].split()
med = statistics.median
def llmc(b, p):
    return med(json.load(open(f))["time_to_first_token_ms"]
               for f in glob.glob(os.path.join(work, "llmc-%s-%d-[0-9]*.json" % (b, p))))
def llamacpp(t, p):
    runs = []
    for f in glob.glob(os.path.join(work, "llamacpp-%s-[0-9]*.json" % t)):
        if "avx2" in os.path.basename(f) and not t.startswith("avx2"):
            continue
        for r in json.load(open(f)):
            if r["n_prompt"] == p and r["n_gen"] == 0:
                runs.append(1e3 * p / r["avg_ts"])
    return med(runs) if runs else None
print("| build | TTFT 64 ms | TTFT 512 ms | llama.cpp 64 ms | llama.cpp 512 ms | vs llama.cpp (64 / 512) |")
print("| --- | --- | --- | --- | --- | --- |")
for b in builds:
    t64, t512 = llmc(b, 64), llmc(b, 512)
    isa, dtype = b.split("-")
    peer = "avx2-" + dtype if isa == "avx2" and llamacpp("avx2-" + dtype, 64) else dtype
    c64, c512 = (llamacpp(peer, 64), llamacpp(peer, 512)) if dtype in peers else (None, None)
    ratio = "%.2fx / %.2fx" % (c64 / t64, c512 / t512) if c64 else ""
    which = " (%s)" % ("AVX2 build" if peer.startswith("avx2") else "native build")
    print("| llmc %s | %.1f | %.1f | %s | %s | %s |" % (
        b, t64, t512, "%.1f%s" % (c64, which) if c64 else "",
        "%.1f" % c512 if c512 else "", ratio))
if ort:
    o64 = med(json.load(open(f))["time_to_first_token_ms"] for f in glob.glob(os.path.join(work, "ort-64-*.json")))
    o512 = med(json.load(open(f))["time_to_first_token_ms"] for f in glob.glob(os.path.join(work, "ort-512-*.json")))
    l64, l512 = llmc("ort-form", 64), llmc("ort-form", 512)
    print()
    print("| f32, optimum export | TTFT 64 ms | TTFT 512 ms |")
    print("| --- | --- | --- |")
    print("| llmc (native) | %.1f | %.1f |" % (l64, l512))
    print("| onnxruntime | %.1f | %.1f |" % (o64, o512))
    print("| llmc vs onnxruntime | %.2fx | %.2fx |" % (o64 / l64, o512 / l512))
PY
