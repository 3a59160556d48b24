#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for scripts/test-gpu.sh on a GPU machine
# that has CUDA but cannot build llmc itself (the device tool's machines have
# no MLIR, and carry at most 64 MiB with the tree, too little for ~40 compiled
# artifacts):
#   fixtures/NAME.args    what test-gpu.sh compiles there with --target cuda
#                         (the ONNX file, relative to the tree, then llmc
#                         compile flags), with llmc from .gpu/llmc.tar.xz
#                         (scripts/bundle-llmc.sh) or LLMC;
#   fixtures/NAME.expect  the prompt and the 32 greedy tokens to match:
#                         onnxruntime's (f32, the trained example with an
#                         int8 KV cache, the quantized fixtures) or the
#                         emulation's of the same compilation (f16, bf16,
#                         int8 caches: the emulation held to the hardware);
#   bin/llmc-generate     a small C program that generates through the
#                         runtime's C API (examples/c-app/main.c);
#   bin/llmc-cuda-device.xz  the kernel tests built for ARCH with nvcc
#                         (rebuilt only when their sources changed);
#   googletest.tar.xz     GoogleTest's source (REBUILD_TESTS=1 there).
#   scripts/prepare-gpu.sh [ARCH (default sm_90a: Hopper's, with wgmma)]
# then scripts/bundle-llmc.sh, and with the device tool: carry .gpu and run
# scripts/test-gpu.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
arch="${1:-sm_90a}"
out="$root/.gpu"
llmc="$root/build/bin/llmc"
py="$root/.venv/bin/python3"
[ -x "$llmc" ] || "$root/scripts/build.sh"
rm -rf "$out/fixtures" "$out/artifacts" "$out/googletest" "$out/bin/llmc-cuda-device"
mkdir -p "$out/fixtures" "$out/bin"
tar -C /usr/src -cJf "$out/googletest.tar.xz" googletest

# The kernel tests built for ARCH with nvcc here, so the GPU machine spends
# no time on them (test-gpu.sh uses them when present); only when a source
# they build from (or this script, which says how) is newer than the last
# build for this ARCH.
tests="$out/bin/llmc-cuda-device.xz"
if [ ! -f "$tests" ] || [ "$(cat "$tests.arch" 2>/dev/null)" != "$arch" ] ||
  [ "$root/scripts/prepare-gpu.sh" -nt "$tests" ] ||
  [ -n "$(find "$root/test/unit" "$root/runtime/src" -newer "$tests" \
    \( -name 'Cuda*Test.cpp' -o -name '*.h' -o -name 'Sampler.cpp' \) -print -quit)" ]; then
  kt="$out/kt"
  mkdir -p "$kt"
  g="/usr/src/googletest/googletest"
  g++ -std=c++17 -O2 -I"$g/include" -I"$g" -c "$g/src/gtest-all.cc" -o "$kt/gtest-all.o"
  g++ -std=c++17 -O2 -I"$g/include" -c "$g/src/gtest_main.cc" -o "$kt/gtest_main.o"
  g++ -std=c++17 -O2 -I"$root" -c "$root/runtime/src/Sampler.cpp" -o "$kt/Sampler.o"
  # (--no-compress: the device code as it is, which xz -9e packs into less
  # than half of what it makes of nvcc's compressed fatbins: the binary is
  # most of what a device call carries)
  for t in CudaEmuTest CudaKernelsTest CudaAttentionTest CudaQuantTest CudaSamplingTest CudaOnnxTest CudaWgmmaTest; do
    /usr/local/cuda/bin/nvcc -std=c++17 -O3 -lineinfo --no-compress -diag-suppress 177 \
      -arch="$arch" -x cu -I"$root" -I"$g/include" -c "$root/test/unit/$t.cpp" -o "$kt/$t.o"
  done
  /usr/local/cuda/bin/nvcc -arch="$arch" --no-compress "$kt"/*.o -lpthread -o "$kt/llmc-cuda-device"
  xz -9e -T1 -c "$kt/llmc-cuda-device" > "$tests"
  echo "$arch" > "$tests.arch"
  rm -rf "$kt"
fi
cc "$root/examples/c-app/main.c" -I"$root/runtime/include" -L"$root/build/lib" -lllmc_runtime \
  -lstdc++ -lm -ldl -lpthread -o "$out/bin/llmc-generate"

fixture() { [ -d "$root/examples/$1" ] && echo "examples/$1" || echo "test/models/$1"; }
# fixture.json's prompt (and greedy tokens), comma-separated, one per line.
prompt() { "$py" -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompt'])))" "$1"; }
oracle() { "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(map(str, d['prompt']))); print(','.join(map(str, d['greedy'])))" "$1"; }
# NAME, then the model (relative to the tree) and llmc compile's flags.
args() {
  local name=$1
  shift
  echo "$*" > "$out/fixtures/$name.args"
}
# NAME FIXTURE: the emulation's tokens of the artifact NAME.args describes
# (compiled here for the emulation only: the generated source does not
# depend on the architecture).
emulated() {
  local name=$1 f=$2 tmp p
  tmp=$(mktemp -d)
  # shellcheck disable=SC2046
  "$llmc" compile $(cat "$out/fixtures/$name.args") -o "$tmp/a.llmc" --target cuda \
    --cuda-arch none --max-seq 64 --prefill-buckets 16 >/dev/null
  p=$(prompt "$root/$(fixture "$f")/fixture.json")
  { echo "$p"; "$llmc" run "$tmp/a.llmc" --device emulated --ids "$p" --max-new-tokens 32 \
      --format ids; } > "$out/fixtures/$name.expect"
  rm -rf "$tmp"
}

# The fixtures the CUDA target compiles (test/models/cuda-emulated*.test; the
# last three are the fallback, cuda-emulated-fallback.test: two with host
# steps, the static-cache one on the device through generic kernels).
f32=(gemma-optimum gemma-torch-dynamo llama-genai-fp32 gemma-genai-fp32 llama-genai-int4
     gemma-genai-int4 qwen2-genai-int4 gpt2-optimum gpt2-ort-fused gpt2-torch-dynamo llama-onnx24-static
     llama-optimum llama-torch-dynamo mistral-optimum mistral-torch-dynamo onnx23-gqa-3d
     onnx23-gqa-3d-erf onnx23-mha-float-mask onnx23-mqa-bool-mask onnx23-pointwise-mlp onnx23-manual-attention
     onnx23-stateless-manual-attention onnx24-static-3d
     onnx24-static-4d-mqa phi3-optimum phi3-torch-dynamo qwen2-optimum qwen2-torch-dynamo tiny-llama
     genai-gqa-window-cache mistral-genai-fp32 phi3-genai-fp32 qwen2-genai-fp32 mistral-genai-int4
     phi3-genai-int4
     onnx23-unknown-attention onnx24-static-unknown-attention onnx23-stateless-unknown-attention)
half=(llama-optimum gpt2-optimum gemma-torch-dynamo mistral-optimum qwen2-optimum phi3-optimum
      llama-genai-fp32)
for f in "${f32[@]}"; do
  args "$f-f32" "$(fixture "$f")/model.onnx" --dtype f32
  oracle "$root/$(fixture "$f")/fixture.json" > "$out/fixtures/$f-f32.expect"
done
for f in "${half[@]}"; do
  for dtype in f16 bf16; do
    args "$f-$dtype" "$(fixture "$f")/model.onnx" --dtype "$dtype"
    emulated "$f-$dtype" "$f"
  done
done
# --kv-dtype int8: the trained example against onnxruntime's greedy tokens
# (as on the CPU and the emulation, test/e2e/kv-cache-int8.test), and two
# fixtures against the emulation's tokens of the same artifact.
args kjv-llama-kv8 examples/kjv-llama/model.onnx --kv-dtype int8
oracle "$root/examples/kjv-llama/fixture.json" > "$out/fixtures/kjv-llama-kv8.expect"
for f in llama-optimum gemma-torch-dynamo; do
  args "$f-kv8" "$(fixture "$f")/model.onnx" --dtype f16 --kv-dtype int8
  emulated "$f-kv8" "$f"
done
# --quant on the fixtures quantized by the documented rule in NumPy
# (test/models/quant): onnxruntime's greedy tokens on the rounded weights.
for q in llama-optimum-int8:int8 phi3-optimum-int4:int4 qwen2-optimum-int4-g32-asym:int4:g32:asym; do
  f=${q%%:*} scheme=${q#*:}
  model=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['shared_model'])" \
    "$root/test/models/quant/$f/fixture.json")
  args "$f" "test/models/$model" --quant "$scheme"
  oracle "$root/test/models/quant/$f/fixture.json" > "$out/fixtures/$f.expect"
done
# The two exports made by others (../shared/models, which the device tool
# does not carry: copied into fixtures/shared): onnxruntime's fused GPT-2
# with i32 token ids, and genai's fp16 Llama; onnxruntime's greedy tokens.
for f in ort-genai-tiny-gpt2-fp32:past.onnx ort-genai-tiny-llama-fp16:model.onnx; do
  name=${f%%:*} file=${f#*:}
  mkdir -p "$out/fixtures/shared/$name"
  cp "$root/../shared/models/$name/$file"* "$out/fixtures/shared/$name/"
  args "shared-$name" ".gpu/fixtures/shared/$name/$file"
  oracle "$root/test/models/shared/shared-$name/fixture.json" > "$out/fixtures/shared-$name.expect"
done
du -sh "$out"
# What one device call carries: the tree (tracked files and untracked ones
# git does not ignore) and the paths test-gpu.sh's call names (docs/cuda.md).
# Over the tool's 64 MiB the call is refused, so say it here, before any
# device time is spent. (The kernel tests' binary is most of it: a test
# that builds a launcher for every row count builds 24 kernels.)
carried=$(cd "$root" && { git ls-files -z; git ls-files -z --others --exclude-standard; } |
  xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
for p in fixtures bin googletest.tar.xz llmc.tar.xz; do
  [ -e "$out/$p" ] && carried=$((carried + $(du -sb "$out/$p" | cut -f1)))
done
echo "prepare-gpu: a device call carries $((carried / 1048576)) MiB of the 64 the tool allows"
if [ "$carried" -gt $((64 * 1048576)) ]; then
  echo "prepare-gpu: over the device tool's 64 MiB: the call would be refused" >&2
  exit 1
fi
