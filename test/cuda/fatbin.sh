#!/usr/bin/env bash
# Builds test/cuda/Instances.cu into one fatbin with SASS for sm_80, sm_86,
# sm_89 and sm_90a and PTX for compute_90 (what llmc's CUDA artifacts carry),
# then reads ptxas's report: every kernel is built for every architecture,
# none spills registers to local memory, and ptxas reports no performance
# loss (serialised wgmma).
# Usage: fatbin.sh NVCC SOURCE_ROOT OUT_DIR
set -euo pipefail
nvcc=$1 root=$2 out=$3
if [ ! -x "$nvcc" ]; then
  echo "SKIPPED: no CUDA compiler ($nvcc)"
  exit 77
fi
mkdir -p "$out"
log=$out/ptxas.log
archs=(80 86 89 90a)
gencode=()
for a in "${archs[@]}"; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); done
gencode+=(-gencode "arch=compute_90,code=compute_90")
if ! "$nvcc" -std=c++17 -O3 -I"$root" -fatbin "${gencode[@]}" -Xptxas -v \
    "$root/test/cuda/Instances.cu" -o "$out/kernels.fatbin" >"$log" 2>&1; then
  cat "$log"
  echo "FAIL: nvcc could not build the fatbin"
  exit 1
fi
test -s "$out/kernels.fatbin"
status=0
counts=()
for a in "${archs[@]}"; do
  n=$(grep -c "Compiling entry function .* for 'sm_$a'" "$log" || true)
  counts+=("$n")
  echo "sm_$a: $n kernels"
  if [ "$n" -eq 0 ]; then echo "FAIL: no kernel built for sm_$a"; status=1; fi
done
if [ "$(printf '%s\n' "${counts[@]}" | sort -u | wc -l)" -ne 1 ]; then
  echo "FAIL: the architectures got different kernel counts: ${counts[*]}"
  status=1
fi
# "Function properties for K" is followed by "N bytes stack frame, S bytes
# spill stores, L bytes spill loads".
spills=$(awk '/Compiling entry function/ { fn = $0 }
              /spill stores/ && ($5 != 0 || $9 != 0) { print fn; print "    " $0 }' "$log")
if [ -n "$spills" ]; then
  echo "FAIL: kernels that spill registers:"
  echo "$spills"
  status=1
fi
# ptxas's "Potential Performance Loss" notes (C7520: wgmma serialised
# because it sits on a path ptxas takes for divergent, as every Hopper
# attention instance did from fb84f3e until the warpgroup index was
# broadcast from lane 0).
losses=$(grep "Potential Performance Loss" "$log" || true)
if [ -n "$losses" ]; then
  echo "FAIL: ptxas reports performance losses:"
  echo "$losses"
  status=1
fi
[ $status -eq 0 ] && echo "fatbin: ${counts[0]} kernels x ${#archs[@]} architectures + PTX, no spills, no serialised wgmma"
exit $status
