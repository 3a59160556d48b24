#!/usr/bin/env bash
# One decode step of llmc's compiled model, kernel by kernel, under Nsight
# Compute (issue 11), on a machine with an NVIDIA GPU and ncu: run after
# bench/cuda/decode.sh (or its PREPARE_ONLY=1), whose WORK holds the compiled
# model.llmc. Profiles `llmc bench --runs 1` (a warm-up and a measured
# generation) twice, generating 1 and 1 + STEPS tokens after the same prompt
# (times and DRAM bytes of every launch), and writes bench/cuda/ncu_table.py's
# table of the launches the longer one adds (2 x STEPS decode steps, whatever
# the prefills launched) to WORK/profile-B-CTX.md:
# each kernel's launches a step, time, bytes and read rate, and its share of
# the step. Under ncu every launch runs alone with its clocks locked, so the
# step's sum is longer than in `llmc bench`; the shares are what it is for.
#   bench/cuda/profile.sh [BATCH (1)] [CONTEXT (128)] [STEPS (2)]   (WORK, LLMC, NCU)
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${1:-1}
ctx=${2:-128}
steps=${3:-2}
work=${WORK:-/tmp/llmc-gpu-bench}
llmc=${LLMC:-}
if [ -z "$llmc" ] && [ -x "$work/llmc/llmc" ]; then llmc="$work/llmc/llmc"; fi
[ -n "$llmc" ] || llmc=build/bin/llmc
ncu=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)}
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then
  echo "profile.sh: no ncu (Nsight Compute): set NCU" >&2
  exit 2
fi
if [ ! -d "$work/model.llmc" ]; then
  echo "profile.sh: no $work/model.llmc: run bench/cuda/decode.sh (PREPARE_ONLY=1 is enough) first" >&2
  exit 2
fi
for gen in 1 $((1 + steps)); do
  "$ncu" --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    "$llmc" bench "$work/model.llmc" --batch "$b" --prompt-len "$ctx" --gen "$gen" --runs 1 \
    > "$work/ncu-$b-$ctx-$gen.csv"
done
# (llmc bench generates twice: a warm-up, then the measured run.)
python3 bench/cuda/ncu_table.py "$work/ncu-$b-$ctx-1.csv" "$work/ncu-$b-$ctx-$((1 + steps)).csv" \
  "$((2 * steps))" | tee "$work/profile-$b-$ctx.md"
