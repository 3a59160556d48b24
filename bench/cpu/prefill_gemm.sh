#!/usr/bin/env bash
# The compiled model's prefill GEMM (runtime/src/model/kernels/Packed.h)
# against this machine's peak FMA rate: bench/cpu/packed_gemm.cpp built for
# AVX2 (x86-64-v3) and, where the CPU has it, AVX-512 (x86-64-v4, with its
# 12 x 32 tile and its 256-bit 6 x 16 one), on 1 and on all cores, for 64-
# and 512-row prefills. Prints Markdown tables.
#   bench/cpu/prefill_gemm.sh [WORK]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-prefill-gemm}
mkdir -p "$work"
isas=x86-64-v3
grep -q avx512f /proc/cpuinfo && isas="$isas x86-64-v4"
for isa in $isas; do
  ${CXX:-c++} -std=c++17 -O2 -march=$isa -pthread -I. bench/cpu/packed_gemm.cpp \
    -o "$work/packed-gemm-$isa"
done
for threads in 1 $(nproc); do
  for isa in $isas; do
    "$work/packed-gemm-$isa" "$threads" 64 512
    echo
  done
  if [ "${isas#* }" = x86-64-v4 ]; then # the AVX-512 build's 256-bit tile
    NARROW=1 "$work/packed-gemm-x86-64-v4" "$threads" 64 512
    echo
  fi
done
