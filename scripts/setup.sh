#!/usr/bin/env bash
# Installs what llmc needs on Debian 12 (idempotent; silent when all is there).
# Runs apt-get as root, or through sudo; makes the tests' Python environment (.venv).
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ python3 python3-venv
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libprotobuf-dev protobuf-compiler libonnx-dev
  libgtest-dev
)
# For fuzz/run.sh (clang's libFuzzer runtime); small, so installed too.
packages+=(clang-14 libclang-rt-14-dev)
# Test oracles from Debian (the tests' Python sees Debian's Python packages,
# below): the JSON Schema library constrained generation is checked with.
packages+=(python3-jsonschema)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "llmc setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "llmc setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

# The tests' Python: a virtual environment of Debian's python3 holding the
# standard library, the Python packages Debian installed (apt: above), and
# test/requirements.txt; nothing installed by hand (no /usr/local or user
# site-packages), so a test that imports a package setup does not install
# fails here as it would on a fresh machine. Remade when the requirements
# change.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
req="$root/test/requirements.txt"
stamp="$venv/.llmc-requirements"
if [ ! -x "$venv/bin/python3" ] || ! cmp -s "$req" "$stamp"; then
  echo "llmc setup: making the test environment $venv (test/requirements.txt)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  # Debian's packages only: a .pth naming their folder, not
  # --system-site-packages (which would add /usr/local too).
  site=$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo /usr/lib/python3/dist-packages > "$site/debian-packages.pth"
  if grep -qvE '^[[:space:]]*(#|$)' "$req"; then
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check --no-input -r "$req"
  fi
  cp "$req" "$stamp"
fi
