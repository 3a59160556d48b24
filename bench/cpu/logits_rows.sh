#!/usr/bin/env bash
# Logits only where needed (model ABI run_rows): prefill of the decode
# benchmark's 125M Llama (bench/cpu/make_llama_onnx.py: no PyTorch needed)
# with every position's final norm and lm_head against the prompt's last
# position's only, in the same process, alternating, medians
# (bench/cpu/logits_rows.c). Needs a build and pip's onnx.
#   bench/cpu/logits_rows.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-bench}
rounds=${2:-7}
threads=$(nproc)
mkdir -p "$work"
python3 bench/cpu/make_llama_onnx.py "$work/llama-125m-onnx" >&2
cc -O2 -I runtime/include bench/cpu/logits_rows.c -ldl -o "$work/logits_rows"
for cpu in avx2 avx512; do
  if [ "$cpu" = avx512 ] && ! grep -q avx512f /proc/cpuinfo; then continue; fi
  art="$work/llama-125m-onnx-$cpu.llmc"
  ./build/bin/llmc compile "$work/llama-125m-onnx/model.onnx" -o "$art" --max-seq 512 \
    --prefill-buckets 16,64,128 --cpu "$cpu" 2>/dev/null
  # Entries: prefill 16, 64, 128, decode. A prompt filling the 64 bucket,
  # and one of 100 tokens in the 128 bucket (28 rows of padding).
  echo "--cpu $cpu: $("$work/logits_rows" "$art/libmodel.so" "$art/weights.bin" 1 64 "$threads" "$rounds" 3)"
  echo "--cpu $cpu: $("$work/logits_rows" "$art/libmodel.so" "$art/weights.bin" 2 100 "$threads" "$rounds" 3)"
done
