#!/usr/bin/env bash
# GPU decode benchmark (issue 11), for a machine with an NVIDIA GPU, nvcc,
# PyTorch and transformers (the device tool's machines have them; they have
# no MLIR, so llmc comes as scripts/bundle-llmc.sh's .gpu/llmc.tar.xz,
# carried):
#   1. the GPU's ceilings: device-to-device copy bandwidth and the fp16
#      matrix-product rate (bench/cuda/device_peaks.py);
#   2. the model: a Llama of SHAPE (bench/cuda/make_model.py: 1b = hidden
#      2048, 16 layers, 32/8 heads, MLP 8192, vocab 32000; random weights,
#      generated into WORK, never committed);
#   3. llmc compile --target cuda for this GPU's architecture, fp16, prefill
#      buckets 128 and 4096, 4224 positions;
#   4. at contexts 128 and 4096 (prompt of that many tokens, then 64 greedy
#      tokens), in turns: llmc bench, transformers eager, and torch.compile
#      over a static cache (bench/cuda/torch_decode.py: the same weights);
#   5. a Markdown table for bench/results/: time to first token, time per
#      output token, tokens/s, and the decode's bytes per token over its
#      time as a share of the measured copy bandwidth.
#   bench/cuda/decode.sh [SHAPE (1b)] [ROUNDS (1)]      (WORK, LLMC, NVCC)
set -euo pipefail
cd "$(dirname "$0")/../.."
shape=${1:-1b}
rounds=${2:-1}
work=${WORK:-/tmp/llmc-gpu-bench}
mkdir -p "$work"
# llmc: LLMC, else scripts/bundle-llmc.sh's archive (carried) unpacked into
# WORK, else this tree's build.
llmc=${LLMC:-}
if [ -z "$llmc" ] && [ -f .gpu/llmc.tar.xz ]; then
  tar -C "$work" -xJf .gpu/llmc.tar.xz
  llmc="$work/llmc/llmc"
fi
[ -n "$llmc" ] || llmc=build/bin/llmc
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export NVCC
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader |
  tee "$work/gpu.txt"
python3 bench/cuda/device_peaks.py | tee "$work/peaks.json"
python3 bench/cuda/make_model.py "$shape" "$work/model" 4224
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
[ -d "$work/model.llmc" ] ||
  "$llmc" compile "$work/model/model.onnx" -o "$work/model.llmc" --target cuda --cuda-arch "$arch" \
    --dtype f16 --max-seq 4224 --prefill-buckets 128,4096 --stats
for round in $(seq "$rounds"); do
  for ctx in 128 4096; do
    "$llmc" bench "$work/model.llmc" --prompt-len "$ctx" --gen 64 --runs 3 --json \
      > "$work/llmc-$ctx-$round.json"
    for mode in eager compile; do
      python3 bench/cuda/torch_decode.py "$work/model" --mode "$mode" --prompt-len "$ctx" \
        --gen 64 --runs 3 > "$work/torch-$mode-$ctx-$round.json"
    done
  done
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
peaks = json.load(open(work + "/peaks.json"))
gpu = open(work + "/gpu.txt").read().strip()
print("GPU: %s; copy %.0f GB/s (read + written), fp16 matmul %.0f TFLOP/s; torch %s" % (
    gpu, peaks["copy_gbs"], peaks["fp16_matmul_tflops"], peaks["torch"]))
print()
print("| context | runner | TTFT ms | ms / token | tokens/s | bandwidth share | time / llmc's |")
print("| --- | --- | --- | --- | --- | --- | --- |")
tpots = {}
for ctx in (128, 4096):
    ours = [json.load(open("%s/llmc-%d-%d.json" % (work, ctx, r))) for r in range(1, rounds + 1)]
    per_token_bytes = ours[0]["decode_bytes_per_token"]
    rows = [("llmc", statistics.median(o["time_to_first_token_ms"] for o in ours),
             statistics.median(o["time_per_output_token_ms"] for o in ours))]
    for mode in ("eager", "compile"):
        t = [json.load(open("%s/torch-%s-%d-%d.json" % (work, mode, ctx, r)))
             for r in range(1, rounds + 1)]
        rows.append(("torch " + mode, statistics.median(x["ttft_ms"] for x in t),
                     statistics.median(x["tpot_ms"] for x in t)))
    for name, ttft, tpot in rows:
        share = per_token_bytes / (tpot / 1e3) / (peaks["copy_gbs"] * 1e9)
        print("| %d | %s | %.1f | %.3f | %.0f | %.0f%% | %.2fx |" % (
            ctx, name, ttft, tpot, 1e3 / tpot, 100 * share, tpot / rows[0][2]))
    tpots[ctx] = rows[0][2]
print()
print("llmc's time per token at context 4096 over 128: %.2fx (target <= 1.3x)" % (
    tpots[4096] / tpots[128]))
PY
