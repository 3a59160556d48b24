#!/usr/bin/env bash
# Times the decode GEMVs (bench/cuda/gemv.cu), the prefill attention
# (bench/cuda/attention.cu) and the decode attention
# (bench/cuda/decode_attention.cu, where the old tree has it) of an earlier
# commit and of this tree in turns on one GPU, so that a kernel change is measured against the code before it in
# the same run (runs on different machines do not compare):
#
#   here:   scripts/ab-kernels.sh pack OLD_REV
#             writes the benchmarks' sources at OLD_REV (runtime/, bench/)
#             to .gpu/ab/old.tar.xz (~0.1 MB)
#   there:  scripts/ab-kernels.sh run [ROUNDS (3)] [GEMV_ROWS (1 8)]
#             (carry: [".gpu/ab/old.tar.xz"]) builds both programs of both
#             trees with the machine's nvcc for its GPU, then runs them
#             old, new, old, new ... ROUNDS times, writing each output to
#             $OUT/ab/ (or ./ab-out) as old-attention-R.md, new-gemv-R.md, ...
#             The programs' own tables then give each round's times; the
#             rounds say how much they vary. With BENCH=here, both sides
#             build this tree's bench/cuda sources (the old side against
#             OLD_REV's runtime/): for a benchmark newer than OLD_REV whose
#             calls OLD_REV's kernels also take (e.g. gemv.cu's quantized
#             GEMVs against 09027eb).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in
pack)
  rev=${2:?usage: ab-kernels.sh pack OLD_REV}
  if ! git -C "$root" rev-parse -q --verify "$rev^{commit}" >/dev/null; then
    echo "ab-kernels: $rev is not a commit of this repository" >&2
    exit 2
  fi
  mkdir -p "$root/.gpu/ab"
  git -C "$root" archive "$rev" runtime bench | xz -6 > "$root/.gpu/ab/old.tar.xz"
  echo "$(git -C "$root" rev-parse --short "$rev") -> .gpu/ab/old.tar.xz" \
       "($(du -k "$root/.gpu/ab/old.tar.xz" | cut -f1) KiB)"
  ;;
run)
  rounds=${2:-3}
  rows=${3:-1 8}
  work=${WORK:-/tmp/ab}
  out=${OUT:-$root/ab-out}/ab
  if [ ! -f "$root/.gpu/ab/old.tar.xz" ]; then
    echo "ab-kernels: no .gpu/ab/old.tar.xz: run 'scripts/ab-kernels.sh pack OLD_REV' where" \
         "the repository is, and carry the file" >&2
    exit 2
  fi
  if ! command -v nvidia-smi >/dev/null; then
    echo "ab-kernels: no nvidia-smi: run needs a machine with an NVIDIA GPU" >&2
    exit 2
  fi
  mkdir -p "$work/old" "$out"
  tar -C "$work/old" -xJf "$root/.gpu/ab/old.tar.xz"
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  if [ "${BENCH:-}" = here ]; then # (this tree's benchmarks over the old runtime)
    rm -rf "$work/old/bench"
    cp -r "$root/bench" "$work/old/bench"
  fi
  for side in old new; do
    src=$([ "$side" = old ] && echo "$work/old" || echo "$root")
    "$nvcc" -std=c++17 -O3 -arch="$arch" -I"$src" "$src/bench/cuda/gemv.cu" \
      -o "$work/$side-gemv" &
    "$nvcc" -std=c++17 -O3 -arch="$arch" -I"$src" "$src/bench/cuda/attention.cu" -lcublas \
      -o "$work/$side-attention" &
    rm -f "$work/$side-decode-attention" # (none from an earlier run)
    if [ -f "$src/bench/cuda/decode_attention.cu" ]; then
      "$nvcc" -std=c++17 -O3 -arch="$arch" -I"$src" "$src/bench/cuda/decode_attention.cu" \
        -o "$work/$side-decode-attention" &
    fi
  done
  wait
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
  for r in $(seq "$rounds"); do
    for side in old new; do
      # shellcheck disable=SC2086 # (rows: one argument each)
      "$work/$side-gemv" $rows > "$out/$side-gemv-$r.md"
      "$work/$side-attention" 4096 8192 > "$out/$side-attention-$r.md"
      if [ -x "$work/$side-decode-attention" ]; then
        "$work/$side-decode-attention" > "$out/$side-decode-attention-$r.md"
      fi
      echo "round $r $side: done"
    done
  done
  ;;
*)
  echo "usage: ab-kernels.sh pack OLD_REV | run [ROUNDS] [GEMV_ROWS]" >&2
  exit 2
  ;;
esac
