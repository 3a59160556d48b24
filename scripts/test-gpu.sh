#!/usr/bin/env bash
# The GPU half of the tests, for a machine with an NVIDIA GPU and the CUDA
# toolkit (CI has no GPU: it runs the same kernel sources on the host
# emulation, and test/cuda/fatbin.sh). Run from anywhere; builds in build-gpu/.
#
#   1. the CUDA execution-model and kernel tests (test/unit/CudaEmuTest.cpp,
#      CudaKernelsTest.cpp, CudaAttentionTest.cpp, CudaQuantTest.cpp, CudaSamplingTest.cpp,
#      CudaOnnxTest.cpp, CudaWgmmaTest.cpp) built
#      with nvcc for this GPU and run on it: the same assertions and float64
#      references as the emulated run, so the emulation and the hardware are
#      held to the same results;
#   2. compute-sanitizer memcheck, racecheck and synccheck over them;
#   3. the fatbin for every target architecture without register spills
#      (SKIP_FATBIN=1 leaves it to CI's cuda.fatbin, which builds the same);
#   4. every fixture scripts/prepare-gpu.sh lists (.gpu/fixtures), compiled
#      here with --target cuda for this GPU (in the background while 1-3 run)
#      by LLMC, else scripts/bundle-llmc.sh's .gpu/llmc.tar.xz, else this
#      tree's build/bin/llmc; each generating on the GPU (greedy tokens
#      against onnxruntime's, or the emulation's of the same compilation),
#      one of them under compute-sanitizer, and on llama-optimum the model
#      ABI's run_rows and the greedy prefill's CUDA graph against
#      run_at_capacity (test/e2e/Inputs/rows_abi.c, greedy_abi.c).
#
# The kernel tests come from .gpu/bin/llmc-cuda-device.xz (prepare-gpu.sh)
# unless REBUILD_TESTS=1; building them needs GoogleTest's source: GTEST_SRC
# (default /usr/src/googletest, from Debian's libgtest-dev, or the copy in
# .gpu/googletest.tar.xz).
# Prints "N passed, N failed" at the end; exits non-zero on any failure.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
mkdir -p "$build"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
arch="${CUDA_ARCH:-native}"
gtest="${GTEST_SRC:-}"
if [ -z "$gtest" ] && [ ! -d /usr/src/googletest/googletest/src ] &&
  [ -f "$root/.gpu/googletest.tar.xz" ]; then
  [ -d "$build/googletest" ] || tar -C "$build" -xJf "$root/.gpu/googletest.tar.xz"
fi
if [ -z "$gtest" ]; then
  for g in "$build/googletest" /usr/src/googletest; do
    [ -d "$g/googletest/src" ] && { gtest="$g"; break; }
  done
fi
passed=0 failed=0
step() { # name, command...
  local name=$1; shift
  echo "=== $name"
  if "$@"; then passed=$((passed + 1)); echo "--- ok: $name"
  else failed=$((failed + 1)); echo "--- FAILED: $name"; fi
}

nvidia-smi -L || { echo "test-gpu: no NVIDIA GPU visible (nvidia-smi)"; exit 1; }
[ -x "$nvcc" ] || { echo "test-gpu: no nvcc (set NVCC)"; exit 1; }
[ -n "$gtest" ] || { echo "test-gpu: no GoogleTest source (set GTEST_SRC)"; exit 1; }
"$nvcc" --version | tail -1

# The fixtures, compiled in the background (several at a time) while the
# kernel tests run.
llmc="${LLMC:-}"
if [ -z "$llmc" ] && [ -f "$root/.gpu/llmc.tar.xz" ]; then
  [ -x "$build/llmc/llmc" ] || tar -C "$build" -xJf "$root/.gpu/llmc.tar.xz"
  llmc="$build/llmc/llmc"
fi
[ -n "$llmc" ] || llmc="$root/build/bin/llmc"
sm="$arch"
[ "$sm" != native ] ||
  sm=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
# On Hopper the architecture-specific build (wgmma: the prefill attention,
# and the CudaWgmma tests), for the fixtures and the kernel tests alike.
[ "$sm" != sm_90 ] || sm=sm_90a
compile_fixture() { # NAME: .gpu/fixtures/NAME.args -> $build/artifacts/NAME.llmc
  cd "$root" &&
    # shellcheck disable=SC2046
    "$llmc" compile $(cat ".gpu/fixtures/$1.args") -o "$build/artifacts/$1.llmc" --target cuda \
      --cuda-arch "$sm" --max-seq 64 --prefill-buckets 16 > "$build/artifacts/$1.log" 2>&1 ||
    echo "compiling $1 failed: $(tail -3 "$build/artifacts/$1.log")"
}
export -f compile_fixture
export root build llmc sm
compiling=""
if [ -d "$root/.gpu/fixtures" ]; then
  rm -rf "$build/artifacts"
  mkdir -p "$build/artifacts"
  ls "$root/.gpu/fixtures" | sed -n 's/\.args$//p' |
    xargs -P "$(nproc)" -I{} bash -c 'compile_fixture {}' > "$build/compile.log" 2>&1 &
  compiling=$!
fi

build_tests() {
  local g="$gtest/googletest"
  if [ ! -f "$build/libgtest.a" ]; then
    g++ -std=c++17 -O2 -I"$g/include" -I"$g" -c "$g/src/gtest-all.cc" -o "$build/gtest-all.o" &&
      g++ -std=c++17 -O2 -I"$g/include" -c "$g/src/gtest_main.cc" -o "$build/gtest_main.o" &&
      ar rcs "$build/libgtest.a" "$build/gtest-all.o" "$build/gtest_main.o" || return 1
  fi
  # (The sampling kernel's tests compare it with the runtime's sampler.)
  g++ -std=c++17 -O2 -I"$root" -c "$root/runtime/src/Sampler.cpp" -o "$build/Sampler.o" || return 1
  local objects=("$build/Sampler.o")
  for t in CudaEmuTest CudaKernelsTest CudaAttentionTest CudaQuantTest CudaSamplingTest CudaOnnxTest CudaWgmmaTest; do
    "$nvcc" -std=c++17 -O3 -lineinfo -diag-suppress 177 -arch="$sm" -x cu -I"$root" -I"$g/include" -c \
      "$root/test/unit/$t.cpp" -o "$build/$t.o" || return 1
    objects+=("$build/$t.o")
  done
  "$nvcc" -arch="$sm" "${objects[@]}" "$build/libgtest.a" -lpthread -o "$build/llmc-cuda-device"
}

if [ -f "$root/.gpu/bin/llmc-cuda-device.xz" ] && [ -z "${REBUILD_TESTS:-}" ]; then
  # Built by scripts/prepare-gpu.sh where the tree is (no nvcc time here).
  xz -dc "$root/.gpu/bin/llmc-cuda-device.xz" > "$build/llmc-cuda-device"
  chmod +x "$build/llmc-cuda-device"
  echo "=== the kernel tests prepared in .gpu/bin for $(cat "$root/.gpu/bin/llmc-cuda-device.xz.arch" 2>/dev/null) (REBUILD_TESTS=1 builds them here)"
else
  step "build the kernel tests with nvcc (-arch=$sm)" build_tests
fi
if [ -x "$build/llmc-cuda-device" ]; then
  step "kernel tests on the GPU" "$build/llmc-cuda-device"
  cs=$(command -v compute-sanitizer ||
    ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
      2>/dev/null | head -1 || true)
  if [ -n "$cs" ]; then
    step "compute-sanitizer memcheck" "$cs" --tool memcheck --error-exitcode 1 \
      "$build/llmc-cuda-device"
    # (the kernels with shared memory, barriers or warp-collective operations)
    shared_filter='Cuda*Attention*:CudaRmsNorm*:CudaArgmax*:CudaSample*:CudaGemm*:CudaGemv*:CudaQuantGemm*:CudaTensorCore*:CudaWgmma*:CudaEmu.*'
    step "compute-sanitizer racecheck (shared memory hazards)" "$cs" --tool racecheck \
      --racecheck-report hazard --error-exitcode 1 "$build/llmc-cuda-device" \
      --gtest_filter="$shared_filter"
    step "compute-sanitizer synccheck (barriers and warp-collective operations)" "$cs" \
      --tool synccheck --error-exitcode 1 "$build/llmc-cuda-device" --gtest_filter="$shared_filter"
  else
    echo "test-gpu: compute-sanitizer not found"; failed=$((failed + 1))
  fi
fi
[ -n "${SKIP_FATBIN:-}" ] ||
  step "fatbin for sm_80/86/89/90 + PTX, no spills" "$root/test/cuda/fatbin.sh" "$nvcc" "$root" \
    "$build/fatbin"

# The fixtures compiled above: each generates 32 greedy tokens on the GPU
# through the runtime's C API, to equal onnxruntime's (f32, the trained
# example with an int8 KV cache, the quantized fixtures) or the emulation's
# of the same compilation (f16, bf16, fixtures with int8 KV caches). One of
# them runs under compute-sanitizer too.
generate_matches() { # artifact expect
  local prompt want got
  prompt=$(sed -n 1p "$2"); want=$(sed -n 2p "$2")
  got=$("$root/.gpu/bin/llmc-generate" "$1" "$prompt" 32 2>/dev/null | head -1)
  [ "$got" = "$want" ] || { echo "  got  $got"; echo "  want $want"; return 1; }
}
if [ -n "$compiling" ]; then
  wait "$compiling"
  cat "$build/compile.log"
  for e in "$root"/.gpu/fixtures/*.expect; do
    name=$(basename "$e" .expect)
    step "$name on the GPU: greedy tokens" generate_matches "$build/artifacts/$name.llmc" "$e"
  done
  a="$build/artifacts/llama-optimum-f32.llmc"
  if [ -n "${cs:-}" ] && [ -d "$a" ]; then
    step "compute-sanitizer memcheck on llama-optimum" "$cs" --tool memcheck --error-exitcode 1 \
      "$root/.gpu/bin/llmc-generate" "$a" 56,4,119 8
    step "compute-sanitizer racecheck on llama-optimum" "$cs" --tool racecheck --error-exitcode 1 \
      "$root/.gpu/bin/llmc-generate" "$a" 56,4,119 8
  fi
  # A prefill's logits on only the asked positions (model ABI run_rows: one
  # position a sequence, or chunks) against every position's, and a greedy
  # prefill captured as a CUDA graph at its second run and replayed at other
  # positions (read on the device), each against run_at_capacity on a twin
  # context: the emulation's checks of test/e2e/logits-rows.test and
  # cuda-target.test, on the GPU (llama-optimum in f32: the row and chunk
  # paths agree to within 1e-5 there; entries prefill_b1_s16 and decode_b1).
  abi_check() { # program args...
    local p=$1; shift
    cc -I"$root/runtime/include" "$root/test/e2e/Inputs/$p.c" -ldl -lm -o "$build/$p" &&
      "$build/$p" "$@"
  }
  if [ -d "$a" ]; then
    step "run_rows on the GPU (llama-optimum f32)" abi_check rows_abi "$a/libmodel.so" \
      "$a/weights.bin" 0
    step "greedy prefill graphs on the GPU (llama-optimum f32)" abi_check greedy_abi \
      "$a/libmodel.so" "$a/weights.bin" 0 1 6 12
  fi
  # In f16 with a 128-token bucket (entry 1): its prefill GEMMs on cuBLASLt,
  # captured with them; two chunks, the second past the entry's end; the
  # row and chunk paths' logits within f16's rounding (5e-3 of their scale).
  h="$build/artifacts/llama-optimum-f16-128.llmc"
  step "compile llama-optimum f16 with a 128-token bucket" "$llmc" compile \
    "$root/test/models/llama-optimum/model.onnx" -o "$h" --target cuda --cuda-arch "$sm" \
    --dtype f16 --max-seq 256 --prefill-buckets 16,128
  [ ! -d "$h" ] || step "run_rows and prefill graphs on the GPU (llama-optimum f16, cuBLASLt)" \
    abi_check rows_abi "$h/libmodel.so" "$h/weights.bin" 1 5e-3
else
  echo "test-gpu: no .gpu/fixtures (run scripts/prepare-gpu.sh where llmc builds)"; failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
