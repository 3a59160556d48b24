#!/usr/bin/env bash
# Runs every libFuzzer target (built by the main build into build/fuzz) for a
# while, as ctest's fuzz.* tests do for 30 s:
#   fuzz/run.sh [seconds per target, default 120]
# A finding stops the run and stays in build/fuzz/findings/<target>/ for a
# regression test; findings are not committed. Seeds: fuzz/corpus/<kind>/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
LLMC_FUZZ_SECONDS=${1:-120} ctest --preset default -R '^fuzz\.'
