#!/usr/bin/env bash
# GPU decode benchmark (issue 11), for a machine with an NVIDIA GPU, nvcc,
# PyTorch and transformers (the device tool's machines have them; they have
# no MLIR, so llmc comes as scripts/bundle-llmc.sh's .gpu/llmc.tar.xz,
# carried):
#   1. the GPU's ceilings: device-to-device copy bandwidth, the fp16
#      matrix-product rate and PyTorch's causal prefill attention
#      (bench/cuda/device_peaks.py), llmc's prefill attention against
#      that matrix-product rate (bench/cuda/attention.cu, built here), and
#      llmc's decode GEMVs at the model's layer shapes against the copy and
#      a streaming read, each tiling variant (bench/cuda/gemv.cu, built
#      here), the decode attention at the model's shapes against a
#      streaming read, at several split counts and settings
#      (bench/cuda/decode_attention.cu, built here), and the argmax and
#      sampling kernels over peaked, random and equal rows, each draw
#      checked against the runtime's sampler (bench/cuda/sampling.cu,
#      built here);
#   2. the model: a Llama of SHAPE (bench/cuda/make_model.py: 1b = hidden
#      2048, 16 layers, 32/8 heads, MLP 8192, vocab 32000; random weights,
#      generated into WORK, never committed);
#   3. llmc compile --target cuda for this GPU's architecture, fp16, the
#      batch sizes BATCHES (default "1 8"), prefill buckets 128 and 4096,
#      4224 positions;
#   4. for each batch size and at contexts 128 and 4096 (a prompt of that
#      many tokens per sequence, then 64 greedy tokens), in turns: llmc
#      bench, llmc bench again under each setting COMPARE lists (settings
#      separated by spaces, each a row of its own: such as LLMC_CUDA_PDL=0,
#      every kernel launched plainly, LLMC_CUDA_CUBLASLT=0, the prefill
#      GEMMs on llmc's own kernels, LLMC_CUDA_WGMMA=1 (the wgmma prefill attention),
#      LLMC_CUDA_DECODE_STAGES=2 or LLMC_CUDA_PREFILL_GRAPHS=0, every
#      prefill launched from the host: what that feature is worth; a setting
#      written ARTIFACT/SETTING times one of the artifacts below instead of
#      the fp16 model: quant-int4/LLMC_CUDA_QGEMV_TC_ROWS=9, the int4
#      model's GEMVs in their SIMT form), transformers
#      eager, torch.compile over a
#      static cache (bench/cuda/torch_decode.py: the same weights), and
#      llmc again on the same model compiled with --quant for each scheme
#      QUANT lists (say "int4 int8": a row each, its bandwidth share over
#      its own bytes per step; each such artifact compiled in step 3), and
#      with --kv-dtype for each cache type KV lists (say "int8": half the
#      cache's bytes, which at batch 8 and context 4096 are half the
#      weights'),
#      onnxruntime-gpu on the same ONNX file in fp16 when ORT_SITE (default
#      /tmp/ort/site: scripts/carry-ort-gpu.sh) holds it
#      (bench/cuda/ort_decode.py); each result printed as it comes; then
#      per batch size, at context 128, a run under LLMC_PROFILE for the
#      host's share of a decode step (DeviceModel.h: events around each
#      replayed graph against the call's time);
#   5. a Markdown table for bench/results/: time to first token, prefill
#      tokens/s, time per decode step, decode tokens/s, and the decode's
#      bytes per step over its time as a share of the measured copy
#      bandwidth.
#   bench/cuda/decode.sh [SHAPE (1b)] [ROUNDS (1)]   (WORK, LLMC, NVCC, BATCHES,
#                                                     COMPARE, QUANT, KV)
# PREPARE_ONLY=1 stops after the model, its compilation, PyTorch's copy of
# its weights and the attention and GEMV programs (no GPU time: it can run beside
# scripts/test-gpu.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
shape=${1:-1b}
rounds=${2:-1}
batches=${BATCHES:-1 8}
work=${WORK:-/tmp/llmc-gpu-bench}
mkdir -p "$work"
# llmc: LLMC, else scripts/bundle-llmc.sh's archive (carried) unpacked into
# WORK, else this tree's build.
llmc=${LLMC:-}
if [ -z "$llmc" ] && [ -f .gpu/llmc.tar.xz ]; then
  [ -x "$work/llmc/llmc" ] || tar -C "$work" -xJf .gpu/llmc.tar.xz
  llmc="$work/llmc/llmc"
fi
[ -n "$llmc" ] || llmc=build/bin/llmc
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export NVCC
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
[ "$arch" != sm_90 ] || arch=sm_90a # (Hopper's wgmma: the prefill attention)
# (7b in half: in f32 its copies would not fit the GPU machines' 64 GB disk)
python3 bench/cuda/make_model.py "$shape" "$work/model" 4224 "$([ "$shape" = 7b ] && echo f16 || echo f32)"
[ -d "$work/model.llmc" ] ||
  "$llmc" compile "$work/model/model.onnx" -o "$work/model.llmc" --target cuda --cuda-arch "$arch" \
    --dtype f16 --max-seq 4224 --prefill-buckets 128,4096 --batch "${batches// /,}" --stats
# The other artifacts of the same model: NAME:FLAG:VALUE, each a row of its own.
variants=()
for q in ${QUANT:-}; do variants+=("quant-$q:--quant:$q"); done
for k in ${KV:-}; do variants+=("kv-$k:--kv-dtype:$k"); done
for v in ${variants[@]+"${variants[@]}"}; do
  IFS=: read -r name flag value <<<"$v"
  [ -d "$work/model-$name.llmc" ] ||
    "$llmc" compile "$work/model/model.onnx" -o "$work/model-$name.llmc" --target cuda \
      --cuda-arch "$arch" --dtype f16 "$flag" "$value" --max-seq 4224 \
      --prefill-buckets 128,4096 --batch "${batches// /,}" --stats
done
python3 bench/cuda/torch_decode.py "$work/model" --mode convert
ort_site=${ORT_SITE:-/tmp/ort/site}
[ ! -d "$ort_site" ] || python3 bench/cuda/ort_decode.py "$work/model" --convert
[ -x "$work/attention" ] ||
  "$NVCC" -std=c++17 -O3 -arch="$arch" -I. bench/cuda/attention.cu -lcublas -o "$work/attention"
[ -x "$work/gemv" ] || "$NVCC" -std=c++17 -O3 -arch="$arch" -I. bench/cuda/gemv.cu -o "$work/gemv"
[ -x "$work/decode_attention" ] ||
  "$NVCC" -std=c++17 -O3 -arch="$arch" -I. bench/cuda/decode_attention.cu \
    -o "$work/decode_attention"
[ -x "$work/sampling" ] ||
  "$NVCC" -std=c++17 -O3 -arch="$arch" -I. bench/cuda/sampling.cu runtime/src/Sampler.cpp \
    -o "$work/sampling"
[ -z "${PREPARE_ONLY:-}" ] || exit 0

nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader |
  tee "$work/gpu.txt"
python3 bench/cuda/device_peaks.py | tee "$work/peaks.json"
"$work/attention" | tee "$work/attention.md"
"$work/gemv" | tee "$work/gemv.md"
"$work/decode_attention" | tee "$work/decode_attention.md"
"$work/sampling" | tee "$work/sampling.md"
for round in $(seq "$rounds"); do
  for b in $batches; do
    for ctx in 128 4096; do
      "$llmc" bench "$work/model.llmc" --batch "$b" --prompt-len "$ctx" --gen 64 --runs 3 --json |
        python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))" |
        tee "$work/llmc-$b-$ctx-$round.json"
      i=0
      for setting in ${COMPARE:-}; do
        i=$((i + 1))
        model=model
        case "$setting" in */*) model=model-${setting%%/*} setting=${setting#*/} ;; esac
        env "$setting" "$llmc" bench "$work/$model.llmc" --batch "$b" --prompt-len "$ctx" \
          --gen 64 --runs 3 --json |
          python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))" |
          tee "$work/llmc-compare$i-$b-$ctx-$round.json"
      done
      for v in ${variants[@]+"${variants[@]}"}; do
        name=${v%%:*}
        "$llmc" bench "$work/model-$name.llmc" --batch "$b" --prompt-len "$ctx" --gen 64 \
          --runs 3 --json | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)))" |
          tee "$work/llmc-$name-$b-$ctx-$round.json"
      done
      for mode in eager compile; do
        python3 bench/cuda/torch_decode.py "$work/model" --mode "$mode" --batch "$b" \
          --prompt-len "$ctx" --gen 64 --runs 3 | tee "$work/torch-$mode-$b-$ctx-$round.json"
      done
      if [ -d "$ort_site" ]; then
        PYTHONPATH="$ort_site" python3 bench/cuda/ort_decode.py "$work/model" --batch "$b" \
          --prompt-len "$ctx" --gen 64 --runs 3 | tee "$work/ort-$b-$ctx-$round.json"
      fi
    done
  done
done
# The host's share of a decode step (issue 11: under 5% at batch 1):
# LLMC_PROFILE times each replayed graph between two events and each call
# by the host's clock (runtime/src/model/cuda/DeviceModel.h); a run of its
# own, so the events stay out of the timed runs above.
for b in $batches; do
  LLMC_PROFILE=1 "$llmc" bench "$work/model.llmc" --batch "$b" --prompt-len 128 --gen 64 \
    --runs 1 --json 2>&1 >/dev/null | grep "llmc profile" | tee "$work/profile-$b.txt" || true
done
python3 - "$work" "$rounds" "$batches" "${COMPARE:-}" "${variants[*]+"${variants[*]}"}" <<'PY'
import json, os, statistics, sys
work, rounds, batches = sys.argv[1], int(sys.argv[2]), [int(b) for b in sys.argv[3].split()]
compare, variants = sys.argv[4].split(), [v.split(":") for v in sys.argv[5].split()]
peaks = json.load(open(work + "/peaks.json"))
gpu = open(work + "/gpu.txt").read().strip()
print("GPU: %s; copy %.0f GB/s (read + written), fp16 matmul %.0f TFLOP/s, PyTorch causal "
      "attention (S 4096, head_dim 128) %.0f TFLOP/s; torch %s" % (
          gpu, peaks["copy_gbs"], peaks["fp16_matmul_tflops"],
          peaks["sdpa_causal_s4096_d128_tflops"], peaks["torch"]))
print()
print("| batch | context | runner | TTFT ms | prefill tokens/s | ms / step | decode tokens/s "
      "| bandwidth share | step time / llmc's |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def runs(name):
    out = []
    for r in range(1, rounds + 1):
        path = "%s/%s-%d.json" % (work, name, r)
        if os.path.exists(path) and os.path.getsize(path):
            out.append(json.load(open(path)))
    return out


tpots, step_bytes_at = {}, {}
for b in batches:
    for ctx in (128, 4096):
        ours = runs("llmc-%d-%d" % (b, ctx))
        if not ours:
            continue
        step_bytes = ours[0]["decode_bytes_per_step"]
        rows = [("llmc", statistics.median(o["time_to_first_token_ms"] for o in ours),
                 statistics.median(o["time_per_output_token_ms"] for o in ours))]
        own_bytes = {} # a row's bytes per step where they are not the fp16 model's
        flags = {tag: "%s %s" % (flag, value) for tag, flag, value in variants}
        for i, setting in enumerate(compare, 1):
            other = runs("llmc-compare%d-%d-%d" % (i, b, ctx))
            if other:
                tag, _, env = setting.rpartition("/")
                name = "llmc%s, %s" % (" " + flags.get(tag, tag) if tag else "", env)
                rows.append((name, statistics.median(o["time_to_first_token_ms"] for o in other),
                             statistics.median(o["time_per_output_token_ms"] for o in other)))
                own_bytes[name] = other[0]["decode_bytes_per_step"]
        for tag, flag, value in variants:
            other = runs("llmc-%s-%d-%d" % (tag, b, ctx))
            if other:
                name = "llmc %s %s" % (flag, value)
                tpot = statistics.median(o["time_per_output_token_ms"] for o in other)
                rows.append((name, statistics.median(o["time_to_first_token_ms"] for o in other),
                             tpot))
                own_bytes[name] = other[0]["decode_bytes_per_step"]
                tpots[b, ctx, name] = tpot
        for mode in ("eager", "compile"):
            t = runs("torch-%s-%d-%d" % (mode, b, ctx))
            if t:
                rows.append(("torch " + mode, statistics.median(x["ttft_ms"] for x in t),
                             statistics.median(x["tpot_ms"] for x in t)))
        t = runs("ort-%d-%d" % (b, ctx))
        if t:
            rows.append(("onnxruntime-gpu", statistics.median(x["ttft_ms"] for x in t),
                         statistics.median(x["tpot_ms"] for x in t)))
        for name, ttft, tpot in rows:
            share = own_bytes.get(name, step_bytes) / (tpot / 1e3) / (peaks["copy_gbs"] * 1e9)
            print("| %d | %d | %s | %.1f | %.0f | %.3f | %.0f | %.0f%% | %.2fx |" % (
                b, ctx, name, ttft, b * ctx / (ttft / 1e3), tpot, b * 1e3 / tpot, 100 * share,
                tpot / rows[0][2]))
        tpots[b, ctx] = rows[0][2]
        step_bytes_at[b, ctx] = step_bytes
print()
# The cache's bytes a step grow with the context; read at the copy
# bandwidth on top of the step at 128, they alone set the least ratio a
# runner can reach (the 1B model's fp16 cache adds 1.04 GB a step at batch
# 8 from context 128 to 4096).
for b in batches:
    if (b, 128) in tpots and (b, 4096) in tpots:
        floor = 1 + (step_bytes_at[b, 4096] - step_bytes_at[b, 128]) / (
            peaks["copy_gbs"] * 1e9) * 1e3 / tpots[b, 128]
        print("batch %d: llmc's time per step at context 4096 over 128: %.2fx (target <= 1.3x; "
              "the cache's extra bytes at the copy bandwidth alone: %.2fx)" % (
                  b, tpots[b, 4096] / tpots[b, 128], floor))
    for tag, flag, value in variants:
        name = "llmc %s %s" % (flag, value)
        if (b, 128, name) in tpots and (b, 4096, name) in tpots:
            print("batch %d, %s: context 4096 over 128: %.2fx" % (
                b, name, tpots[b, 4096, name] / tpots[b, 128, name]))
for b in batches:
    path = "%s/profile-%d.txt" % (work, b)
    if os.path.exists(path) and os.path.getsize(path):
        line = open(path).read().strip().split(": ", 1)[-1]
        print("batch %d, context 128, LLMC_PROFILE (target: host overhead under 5%% at batch 1): %s"
              % (b, line))
PY
