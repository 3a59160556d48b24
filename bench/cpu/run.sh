#!/usr/bin/env bash
# The reference CPU GEMM against a naive loop and onnxruntime's MatMul, on
# LLM-shaped problems; prints one table (paste it into bench/results/ with
# the machine). Needs a build (scripts/build.sh) and pip's onnxruntime.
#   bench/cpu/run.sh [M,N,K ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(1,4096,4096 1,11008,4096 64,4096,4096 512,512,512)
cmake --build build --target llmc-bench-gemm >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
./build/bin/llmc-bench-gemm "${shapes[@]}" > build/bench-gemm.txt
python3 bench/cpu/ort_matmul.py "${shapes[@]}" > build/bench-ort.txt
head -1 build/bench-gemm.txt
printf '%-18s %10s %10s %12s %10s %12s\n' "M,N,K" "llmc ms" "llmc GF/s" "llmc/naive" "ort GF/s" "llmc/ort"
tail -n +3 build/bench-gemm.txt | while read -r shape ms gf naive ratio; do
  read -r _ ort_ms ort_gf < <(grep "^$shape " build/bench-ort.txt)
  printf '%-18s %10s %10s %12s %10s %12.2f\n' "$shape" "$ms" "$gf" "$ratio" "$ort_gf" \
    "$(python3 -c "print($gf / $ort_gf)")"
done
