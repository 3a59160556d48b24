#!/usr/bin/env bash
# The newcomer's first command: installs what is missing, builds llmc, and
# runs it on the bundled example model (examples/tiny-llama, a small
# Llama-architecture decoder with random weights).
#
# It shows the pre-flight report, compiles the model into an artifact
# (llmc compile: ONNX -> passes -> C++ -> build/tiny-llama.llmc), generates
# 32 tokens from it with llmc run, and checks the compiled model against
# onnxruntime's logits and greedy tokens (llmc verify --compiled).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
model=examples/tiny-llama/model.onnx
echo
echo "== llmc check $model"
./build/bin/llmc check "$model"
echo
echo "== llmc compile $model -o build/tiny-llama.llmc"
./build/bin/llmc compile "$model" -o build/tiny-llama.llmc --max-seq 256 --stats
echo
echo "== llmc inspect build/tiny-llama.llmc"
./build/bin/llmc inspect build/tiny-llama.llmc
echo
echo "== llmc run build/tiny-llama.llmc --ids 1,5,9,200,17 --max-new-tokens 32"
./build/bin/llmc run build/tiny-llama.llmc --ids 1,5,9,200,17 --max-new-tokens 32 -v
echo
echo "== llmc verify examples/tiny-llama --compiled (logits and greedy tokens vs onnxruntime)"
./build/bin/llmc verify examples/tiny-llama --compiled
