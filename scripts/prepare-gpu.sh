#!/usr/bin/env bash
# Prepares .gpu/ (ignored by git) for scripts/test-gpu.sh on a GPU machine
# that has CUDA but cannot build llmc itself (the device tool's machines have
# no MLIR): the fixtures compiled here with --target cuda for that GPU's
# architecture, each with onnxruntime's prompt and greedy tokens (f32) or the
# emulation's greedy tokens of the same artifact (f16, bf16: the emulation
# held to the hardware), a small C program that generates through the
# runtime's C API (examples/c-app/main.c), the kernel tests built for ARCH
# with nvcc (bin/llmc-cuda-device), and GoogleTest's source.
#   scripts/prepare-gpu.sh [ARCH (default sm_90)]
# then, with the device tool: carry .gpu and run scripts/test-gpu.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
arch="${1:-sm_90}"
out="$root/.gpu"
llmc="$root/build/bin/llmc"
[ -x "$llmc" ] || "$root/scripts/build.sh"
rm -rf "$out"
mkdir -p "$out/artifacts" "$out/bin"
cp -r /usr/src/googletest "$out/googletest"
# The kernel tests built for ARCH with nvcc here, so the GPU machine spends
# no time on them (test-gpu.sh uses .gpu/bin/llmc-cuda-device when present).
kt="$out/kt"
mkdir -p "$kt"
g="/usr/src/googletest/googletest"
g++ -std=c++17 -O2 -I"$g/include" -I"$g" -c "$g/src/gtest-all.cc" -o "$kt/gtest-all.o"
g++ -std=c++17 -O2 -I"$g/include" -c "$g/src/gtest_main.cc" -o "$kt/gtest_main.o"
g++ -std=c++17 -O2 -I"$root" -c "$root/runtime/src/Sampler.cpp" -o "$kt/Sampler.o"
for t in CudaEmuTest CudaKernelsTest CudaQuantTest; do
  /usr/local/cuda/bin/nvcc -std=c++17 -O3 -lineinfo -diag-suppress 177 -arch="$arch" -x cu -I"$root" \
    -I"$g/include" -c "$root/test/unit/$t.cpp" -o "$kt/$t.o"
done
/usr/local/cuda/bin/nvcc -arch="$arch" "$kt"/*.o -lpthread -o "$out/bin/llmc-cuda-device"
rm -rf "$kt"
cc "$root/examples/c-app/main.c" -I"$root/runtime/include" -L"$root/build/lib" -lllmc_runtime \
  -lstdc++ -ldl -lpthread -o "$out/bin/llmc-generate"

# The fixtures the CUDA target compiles (test/models/cuda-emulated*.test).
f32=(gemma-optimum gemma-torch-dynamo llama-genai-fp32 gemma-genai-fp32 llama-genai-int4
     gemma-genai-int4 qwen2-genai-int4 gpt2-optimum gpt2-ort-fused gpt2-torch-dynamo llama-onnx24-static
     llama-optimum llama-torch-dynamo mistral-optimum mistral-torch-dynamo onnx23-gqa-3d
     onnx23-gqa-3d-erf onnx23-mha-float-mask onnx23-mqa-bool-mask onnx24-static-3d
     onnx24-static-4d-mqa phi3-optimum phi3-torch-dynamo qwen2-optimum qwen2-torch-dynamo)
half=(llama-optimum gpt2-optimum gemma-torch-dynamo)
fixture() { [ -d "$root/examples/$1" ] && echo "$root/examples/$1" || echo "$root/test/models/$1"; }
compile() { # fixture dtype archs artifact [llmc compile flags]
  local f=$1 dtype=$2 archs=$3 a=$4
  shift 4
  "$llmc" compile "$(fixture "$f")/model.onnx" -o "$a" --target cuda --cuda-arch "$archs" \
    --dtype "$dtype" --max-seq 64 --prefill-buckets 16 "$@" >/dev/null
}
for f in "${f32[@]}" tiny-llama; do
  compile "$f" f32 "$arch" "$out/artifacts/$f-f32.llmc"
  "$root/.venv/bin/python3" -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(map(str, d['prompt']))); print(','.join(map(str, d['greedy'])))" \
    "$(fixture "$f")/fixture.json" > "$out/artifacts/$f-f32.expect"
done
for f in "${half[@]}"; do
  for dtype in f16 bf16; do
    a="$out/artifacts/$f-$dtype.llmc"
    compile "$f" "$dtype" "$arch" "$a"
    prompt=$("$root/.venv/bin/python3" -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompt'])))" "$(fixture "$f")/fixture.json")
    { echo "$prompt"; "$llmc" run "$a" --device emulated --ids "$prompt" --max-new-tokens 32 --format ids; } > "$a.expect-emulated"
    mv "$a.expect-emulated" "${a%.llmc}.expect"
  done
done
# --kv-dtype int8: the trained example against onnxruntime's greedy tokens
# (as on the CPU and the emulation, test/e2e/kv-cache-int8.test), and two
# fixtures against the emulation's tokens of the same artifact.
compile kjv-llama f32 "$arch" "$out/artifacts/kjv-llama-kv8.llmc" --kv-dtype int8
"$root/.venv/bin/python3" -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(map(str, d['prompt']))); print(','.join(map(str, d['greedy'])))" \
  "$root/examples/kjv-llama/fixture.json" > "$out/artifacts/kjv-llama-kv8.expect"
for f in llama-optimum gemma-torch-dynamo; do
  a="$out/artifacts/$f-kv8.llmc"
  compile "$f" f16 "$arch" "$a" --kv-dtype int8
  prompt=$("$root/.venv/bin/python3" -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompt'])))" "$(fixture "$f")/fixture.json")
  { echo "$prompt"; "$llmc" run "$a" --device emulated --ids "$prompt" --max-new-tokens 32 --format ids; } > "${a%.llmc}.expect"
done
# --quant on the fixtures quantized by the documented rule in NumPy
# (test/models/quant): onnxruntime's greedy tokens on the rounded weights.
for q in llama-optimum-int8:int8 phi3-optimum-int4:int4 qwen2-optimum-int4-g32-asym:int4:g32:asym; do
  f=${q%%:*} scheme=${q#*:}
  model=$("$root/.venv/bin/python3" -c "import json,sys; print(json.load(open(sys.argv[1]))['shared_model'])" \
    "$root/test/models/quant/$f/fixture.json")
  "$llmc" compile "$root/test/models/$model" -o "$out/artifacts/$f.llmc" --target cuda \
    --cuda-arch "$arch" --max-seq 64 --prefill-buckets 16 --quant "$scheme" >/dev/null
  "$root/.venv/bin/python3" -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(map(str, d['prompt']))); print(','.join(map(str, d['greedy'])))" \
    "$root/test/models/quant/$f/fixture.json" > "$out/artifacts/$f.expect"
done
du -sh "$out"
