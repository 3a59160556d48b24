#!/usr/bin/env bash
# Configures (once) and builds llmc into build/ (binaries in build/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake --preset default > build-configure.log 2>&1 || { cat build-configure.log; exit 1; }
fi
cmake --build --preset default
