#!/usr/bin/env bash
# The newcomer's first command: installs what is missing, builds llmc, and
# runs it on the bundled example model (examples/kjv-llama: a 4.2M-parameter
# Llama trained on the King James Bible by tools/train-example/train.py, its
# tokenizer beside it).
#
# It shows the pre-flight report, compiles the model into an artifact
# (llmc compile: ONNX -> passes -> C++ -> build/kjv-llama.llmc), generates
# text from a prompt with llmc run, and checks the compiled model against
# onnxruntime's logits and greedy tokens (llmc verify --compiled).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
model=examples/kjv-llama/model.onnx
echo
echo "== llmc check $model"
./build/bin/llmc check "$model"
echo
echo "== llmc compile $model -o build/kjv-llama.llmc"
./build/bin/llmc compile "$model" -o build/kjv-llama.llmc --max-seq 256 --stats
echo
echo "== llmc inspect build/kjv-llama.llmc"
./build/bin/llmc inspect build/kjv-llama.llmc
echo
echo "== llmc run build/kjv-llama.llmc --prompt \"And God said\" --max-new-tokens 48"
./build/bin/llmc run build/kjv-llama.llmc --prompt "And God said" --max-new-tokens 48 -v
echo
echo "== llmc verify examples/kjv-llama --compiled (logits and greedy tokens vs onnxruntime)"
./build/bin/llmc verify examples/kjv-llama --compiled
