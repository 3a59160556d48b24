#!/usr/bin/env bash
# One fuzz target for a short while from its seeds (ctest's fuzz.* tests;
# fuzz/run.sh runs them longer). A finding fails the run and stays in
# FUZZ_BUILD/findings/TARGET/ (reproduce: FUZZ_BUILD/TARGET FILE).
#   fuzz/smoke.sh FUZZ_BUILD TARGET SEED_DIR...
# LLMC_FUZZ_SECONDS sets the time (default 30).
set -euo pipefail
build=$1 target=$2
shift 2
seconds=${LLMC_FUZZ_SECONDS:-30}
work=$build/corpus-work/$target
findings=$build/findings/$target
log=$build/$target.log
rm -rf "$work" "$findings"
mkdir -p "$work" "$findings"
if ! "$build/$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$work" "$@" > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "$target: FINDING (input kept in $findings)"
  exit 1
fi
grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
echo "$target: no findings in ${seconds}s"
