#!/usr/bin/env bash
# The GPU half of the tests, for a machine with an NVIDIA GPU and the CUDA
# toolkit (CI has no GPU: it runs the same kernel sources on the host
# emulation, and test/cuda/fatbin.sh). Run from anywhere; builds in build-gpu/.
#
#   1. the CUDA execution-model and kernel tests (test/unit/CudaEmuTest.cpp,
#      CudaKernelsTest.cpp, CudaQuantTest.cpp) built with nvcc for this GPU and run on it: the
#      same assertions and float64 references as the emulated run, so the
#      emulation and the hardware are held to the same results;
#   2. compute-sanitizer memcheck and racecheck over them;
#   3. the fatbin for every target architecture without register spills
#      (SKIP_FATBIN=1 leaves it to CI's cuda.fatbin, which builds the same);
#   4. every fixture scripts/prepare-gpu.sh compiled with --target cuda,
#      generating on the GPU (greedy tokens against onnxruntime's), one of
#      them under compute-sanitizer.
#
# GoogleTest is built from source: GTEST_SRC (default /usr/src/googletest,
# from Debian's libgtest-dev; the device tool carries a copy in .gpu/).
# Prints "N passed, N failed" at the end; exits non-zero on any failure.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
mkdir -p "$build"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
arch="${CUDA_ARCH:-native}"
gtest="${GTEST_SRC:-}"
if [ -z "$gtest" ]; then
  for g in "$root/.gpu/googletest" /usr/src/googletest; do
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
  for t in CudaEmuTest CudaKernelsTest CudaQuantTest; do
    "$nvcc" -std=c++17 -O3 -lineinfo -diag-suppress 177 -arch="$arch" -x cu -I"$root" -I"$g/include" -c \
      "$root/test/unit/$t.cpp" -o "$build/$t.o" || return 1
    objects+=("$build/$t.o")
  done
  "$nvcc" -arch="$arch" "${objects[@]}" "$build/libgtest.a" -lpthread -o "$build/llmc-cuda-device"
}

if [ -x "$root/.gpu/bin/llmc-cuda-device" ] && [ -z "${REBUILD_TESTS:-}" ]; then
  # Built by scripts/prepare-gpu.sh where the tree is (no nvcc time here).
  cp "$root/.gpu/bin/llmc-cuda-device" "$build/llmc-cuda-device"
  echo "=== the kernel tests prepared in .gpu/bin (REBUILD_TESTS=1 builds them here)"
else
  step "build the kernel tests with nvcc (-arch=$arch)" build_tests
fi
if [ -x "$build/llmc-cuda-device" ]; then
  step "kernel tests on the GPU" "$build/llmc-cuda-device"
  if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    cs="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
    step "compute-sanitizer memcheck" "$cs" --tool memcheck --error-exitcode 1 \
      "$build/llmc-cuda-device"
    step "compute-sanitizer racecheck (shared memory hazards)" "$cs" --tool racecheck \
      --racecheck-report hazard --error-exitcode 1 "$build/llmc-cuda-device" \
      --gtest_filter='Cuda*Attention*:CudaRmsNorm*:CudaArgmax*:CudaSample*:CudaGemm*:CudaQuantGemm*:CudaEmu.*'
  else
    echo "test-gpu: compute-sanitizer not found"; failed=$((failed + 1))
  fi
fi
[ -n "${SKIP_FATBIN:-}" ] ||
  step "fatbin for sm_80/86/89/90 + PTX, no spills" "$root/test/cuda/fatbin.sh" "$nvcc" "$root" \
    "$build/fatbin"

# The fixtures compiled with --target cuda by scripts/prepare-gpu.sh: each
# generates 32 greedy tokens on the GPU through the runtime's C API, to
# equal onnxruntime's (f32, and the trained example with an int8 KV cache)
# or the emulation's of the same artifact (f16, bf16, fixtures with int8 KV
# caches). One of them runs under compute-sanitizer too.
generate_matches() { # artifact expect
  local prompt want got
  prompt=$(sed -n 1p "$2"); want=$(sed -n 2p "$2")
  got=$("$root/.gpu/bin/llmc-generate" "$1" "$prompt" 32 2>/dev/null | head -1)
  [ "$got" = "$want" ] || { echo "  got  $got"; echo "  want $want"; return 1; }
}
if [ -d "$root/.gpu/artifacts" ]; then
  for a in "$root"/.gpu/artifacts/*.llmc; do
    step "$(basename "$a" .llmc) on the GPU: greedy tokens" generate_matches "$a" "${a%.llmc}.expect"
  done
  if [ -n "${cs:-}" ] && [ -d "$root/.gpu/artifacts/llama-optimum-f32.llmc" ]; then
    step "compute-sanitizer memcheck on llama-optimum" "$cs" --tool memcheck --error-exitcode 1 \
      "$root/.gpu/bin/llmc-generate" "$root/.gpu/artifacts/llama-optimum-f32.llmc" 56,4,119 8
    step "compute-sanitizer racecheck on llama-optimum" "$cs" --tool racecheck --error-exitcode 1 \
      "$root/.gpu/bin/llmc-generate" "$root/.gpu/artifacts/llama-optimum-f32.llmc" 56,4,119 8
  fi
else
  echo "test-gpu: no .gpu/artifacts (run scripts/prepare-gpu.sh where llmc builds)"; failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
