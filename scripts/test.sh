#!/usr/bin/env bash
# Runs every test: builds llmc if needed, then the lit suite (FileCheck) and
# the GoogleTest units through ctest. Tests that read ../shared/models are
# reported as unsupported when that folder is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --preset default
