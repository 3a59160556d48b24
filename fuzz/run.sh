#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 and runs each one for a while.
#   fuzz/run.sh [seconds per target, default 120]
# The seed corpus is fuzz/corpus (committed); new inputs go to
# fuzz/corpus-work (ignored by git). A crash stops the run and leaves its
# input in fuzz/build/crash-* for a regression test; crashes are not committed.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-120}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache > build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j2 >> build.log 2>&1 || { tail -50 build.log; exit 1; }
for target in onnx_reader_fuzzer onnx_import_fuzzer; do
  mkdir -p corpus-work/$target
  echo "== $target for ${seconds}s"
  ./build/$target -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=build/ -print_final_stats=1 corpus-work/$target corpus 2>&1 |
    grep -E '^#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|Done' || true
  findings=$(find build -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' \
             -o -maxdepth 1 -name 'timeout-*' -o -maxdepth 1 -name 'oom-*')
  if [ -n "$findings" ]; then
    echo "$target found failing inputs:"; echo "$findings"
    exit 1
  fi
done
echo "no findings"
