#!/usr/bin/env bash
# What weights.bin's per-tensor checksums add to llmc_model_load: a ~470M
# Llama (bench/cpu/make_big_onnx.py, generated into WORK, not committed)
# compiled by llmc, loaded ROUNDS times with and without the checks,
# alternating (bench/cpu/load_bench.cpp). Prints a Markdown table for
# bench/results/. Needs a build and pip's onnx, onnxruntime, numpy.
#   bench/cpu/load_checksum.sh [WORK] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-big}
rounds=${2:-7}
[ -f "$work/model.onnx" ] || python3 bench/cpu/make_big_onnx.py "$work" >&2
[ -f "$work/big.llmc/manifest.json" ] ||
  ./build/bin/llmc compile "$work/model.onnx" -o "$work/big.llmc" --max-seq 48 \
    --prefill-buckets 16 2>/dev/null
cmake --build build --target llmc-bench-load > /dev/null
./build/bin/llmc-bench-load "$work/big.llmc" "$rounds"
