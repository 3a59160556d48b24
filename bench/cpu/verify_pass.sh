#!/usr/bin/env bash
# What a verification pass of speculative decoding costs against a decode
# step (bench/cpu/verify_pass.c: 1, 2, 3, 4, 5 and 8 tokens appended with
# their logits at the same position, rolled back, in turns, medians), on the
# trained example (examples/kjv-llama, 4.2M parameters: its weights stay in
# the L3 cache, so a pass of k rows does nearly k times a decode step's
# FLOPs against its memory time) and, when given, another ONNX model such as
# the decode benchmark's 125M Llama (bench/cpu/make_llama_onnx.py).
# Needs a build (scripts/build.sh) and a C compiler.
#   bench/cpu/verify_pass.sh [WORK] [ROUNDS] [MODEL.onnx]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-verify-bench}
rounds=${2:-300}
mkdir -p "$work"
cc -O2 -I runtime/include bench/cpu/verify_pass.c build/lib/libllmc_runtime.a -lstdc++ -lm \
  -ldl -lpthread -o "$work/verify_pass"
models=(examples/kjv-llama/model.onnx ${3:+"$3"})
for model in "${models[@]}"; do
  art="$work/$(basename "$(dirname "$model")").llmc"
  [ -e "$art" ] || ./build/bin/llmc compile "$model" -o "$art" --max-seq 512 \
    --prefill-buckets 16,64 --verify-buckets 2,4,8 2>/dev/null
  echo "$model, 100 tokens cached:"
  "$work/verify_pass" "$art" 100 "$rounds" 0
done
