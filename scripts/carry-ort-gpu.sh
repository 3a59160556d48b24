#!/usr/bin/env bash
# onnxruntime-gpu for the GPU benchmark's onnxruntime row
# (bench/cuda/ort_decode.py) on the device tool's machines: their
# onnxruntime has no CUDA provider, they cannot download, and one call
# carries at most 64 MiB together with the tree (~35 MiB), while the wheel is
# ~250 MB. So it travels in parts, one call each, back to back (the machine
# stays warm between calls and keeps /tmp):
#
#   here:   scripts/carry-ort-gpu.sh pack [VERSION]
#             downloads the CPython PYVER (3.12, the machines' python3) wheel
#             of onnxruntime-gpu (CUDA 13 builds), drops its TensorRT
#             provider, packs the rest as tar.xz and cuts it into
#             .gpu/ort/part-NN of PART_MIB (25) MiB; prints the calls
#   there:  scripts/carry-ort-gpu.sh receive      (carry: [".gpu/ort/part-NN"])
#             keeps the carried part in /tmp/ort/parts
#           scripts/carry-ort-gpu.sh install
#             joins the parts into /tmp/ort/site (what bench/cuda/decode.sh
#             and ort_decode.py take as ORT_SITE) and prints onnxruntime's
#             providers, which must name CUDAExecutionProvider
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.gpu/ort"
there=/tmp/ort
case "${1:-}" in
pack)
  version=${2:-}
  pyver=${PYVER:-3.12}
  part=${PART_MIB:-25}
  rm -rf "$out" && mkdir -p "$out/whl" "$out/tree"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$out/whl" "onnxruntime-gpu${version:+==$version}"
  (cd "$out/tree" && python3 -m zipfile -e "$out"/whl/*.whl .)
  rm -f "$out"/tree/onnxruntime/capi/libonnxruntime_providers_tensorrt.so
  tar -C "$out/tree" -cf - . | xz -T0 -6 | split -b "${part}M" -d - "$out/part-"
  rm -rf "$out/whl" "$out/tree"
  n=$(ls "$out"/part-* | wc -l)
  echo "onnxruntime-gpu in $n parts of at most $part MiB in $out; one device call each:"
  for p in "$out"/part-*; do
    echo "  carry [\".gpu/ort/$(basename "$p")\"]: scripts/carry-ort-gpu.sh receive"
  done
  echo "then: scripts/carry-ort-gpu.sh install (in the last part's call, after receive)"
  ;;
receive)
  mkdir -p "$there/parts"
  cp "$root"/.gpu/ort/part-* "$there/parts/"
  ls "$there/parts"
  ;;
install)
  rm -rf "$there/site" && mkdir -p "$there/site"
  cat "$there"/parts/part-* | xz -d | tar -C "$there/site" -xf -
  PYTHONPATH="$there/site" python3 -c \
    'import onnxruntime as o; print(o.__version__, o.get_available_providers())'
  ;;
*)
  sed -n '2,20p' "$0" >&2
  exit 2
  ;;
esac
