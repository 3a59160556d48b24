#!/usr/bin/env bash
# The newcomer's first command: installs what is missing, builds llmc, and
# runs it on the bundled example model (examples/tiny-llama, a small
# Llama-architecture decoder with random weights).
#
# llmc can so far check, import and run models on its reference CPU
# executor (compilation to an artifact is still being built; see README.md),
# so this shows the pre-flight report, the start of the imported IR, and a
# prefill plus 8 greedy decode steps compared with onnxruntime's logits.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
model=examples/tiny-llama/model.onnx
echo
echo "== llmc check $model"
./build/bin/llmc check "$model"
echo
echo "== llmc import $model (first 25 lines)"
./build/bin/llmc import "$model" -o build/tiny-llama.mlir
head -n 25 build/tiny-llama.mlir | cut -c1-200
echo "... (whole IR in build/tiny-llama.mlir)"
echo
echo "== llmc verify examples/tiny-llama (prefill + 8 decode steps on the CPU executor)"
./build/bin/llmc verify examples/tiny-llama -v
