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
# Python packages the tests take from Debian (test/requirements-debian.txt:
# PyPI may be out of reach), shown to the tests' Python below.
root="$(cd "$(dirname "$0")/.." && pwd)"
debianReq="$root/test/requirements-debian.txt"
mapfile -t debianPython < <(grep -vE '^[[:space:]]*(#|$)' "$debianReq")
packages+=("${debianPython[@]}")

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
# standard library, test/requirements.txt, and links to the files of the
# Debian packages test/requirements-debian.txt names (in .venv/debian-packages,
# on the path through a .pth); nothing else from the system's or the user's
# site-packages, so a test that imports a package setup does not install
# fails here as it would on a fresh machine. Remade when either list changes.
venv="$root/.venv"
req="$root/test/requirements.txt"
stamp="$venv/.llmc-requirements"
if [ ! -x "$venv/bin/python3" ] || ! cat "$req" "$debianReq" | cmp -s - "$stamp"; then
  echo "llmc setup: making the test environment $venv (test/requirements*.txt)"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  if grep -qvE '^[[:space:]]*(#|$)' "$req"; then
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check --no-input -r "$req"
  fi
  mkdir -p "$venv/debian-packages"
  for p in "${debianPython[@]}"; do
    dpkg -L "$p" | grep -E '^/usr/lib/python3/dist-packages/[^/]+$' |
      while read -r f; do ln -sf "$f" "$venv/debian-packages/"; done
  done
  site=$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$venv/debian-packages" > "$site/debian-packages.pth"
  cat "$req" "$debianReq" > "$stamp"
fi
