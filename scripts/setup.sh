#!/usr/bin/env bash
# Installs what llmc needs on Debian 12 (idempotent; silent when all is there).
# Runs apt-get as root, or through sudo.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libprotobuf-dev protobuf-compiler libonnx-dev
  libgtest-dev
)
# For fuzz/run.sh (clang's libFuzzer runtime); small, so installed too.
packages+=(clang-14 libclang-rt-14-dev)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "llmc setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "llmc setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
