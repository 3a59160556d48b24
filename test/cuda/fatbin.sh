#!/usr/bin/env bash
# Builds the kernel instances in test/cuda/instances/ (the kernels in the
# forms models use) with SASS for sm_80, sm_86, sm_89 and sm_90a and PTX for
# compute_90 (what llmc's CUDA artifacts carry), then reads ptxas's report:
# every kernel is built for every architecture, none spills registers to
# local memory, and ptxas reports no performance loss (serialised wgmma).
#
# One nvcc run per translation unit and target, each cached: its key is a
# SHA-256 of nvcc's and ptxas's versions, the flags, and the path and contents
# of every file `nvcc -M` lists for that target (the CUDA, C++ and llmc
# headers alike), so a run whose inputs are all unchanged is read back
# instead of compiled again (all of them: 13.5 minutes of one core of a
# 2-core VM, 25 beside lit; all read back: 20-40 s), and a changed kernel
# header rebuilds only the units that include it. The cache holds ptxas's
# report and the output's size, not the binaries. LLMC_FATBIN_CACHE names
# its folder (default ${XDG_CACHE_HOME:-~/.cache}/llmc-fatbin);
# LLMC_FATBIN_CACHE=off compiles everything.
# Usage: fatbin.sh NVCC SOURCE_ROOT OUT_DIR
set -euo pipefail
nvcc=$1 root=$(cd "$2" && pwd) out=$3
if [ ! -x "$nvcc" ]; then
  echo "SKIPPED: no CUDA compiler ($nvcc)"
  exit 77
fi
ptxas=$(dirname "$nvcc")/ptxas
cache=${LLMC_FATBIN_CACHE:-}
if [ -z "$cache" ]; then
  if [ -n "${XDG_CACHE_HOME:-}" ]; then cache=$XDG_CACHE_HOME/llmc-fatbin
  elif [ -n "${HOME:-}" ]; then cache=$HOME/.cache/llmc-fatbin
  else cache=off
  fi
fi
mkdir -p "$out"
# (a folder that cannot be made: no cache)
[ "$cache" = off ] || mkdir -p "$cache" 2>/dev/null || cache=off
log=$out/ptxas.log
: >"$log"
archs=(80 86 89 90a)
units=("$root"/test/cuda/instances/*.cu)
versions=$("$nvcc" --version; "$ptxas" --version)
hits=0 builds=0

# Compiles unit $1 for target $2 (an architecture, or "ptx" for compute_90's
# PTX), appending ptxas's report to $log; reads it from the cache when the
# same inputs were compiled before.
compile() {
  local unit=$1 target=$2 arch mode outFile key entry= deps tmp
  if [ "$target" = ptx ]; then
    arch=(-arch=compute_90) mode=(-ptx)
    outFile=$out/$(basename "$unit" .cu).compute_90.ptx
  else
    arch=(-gencode "arch=compute_$target,code=sm_$target") mode=(-cubin -Xptxas -v)
    outFile=$out/$(basename "$unit" .cu).sm_$target.cubin
  fi
  local flags=(-std=c++17 -O3 "${arch[@]}" "${mode[@]}")
  if [ "$cache" != off ]; then
    # nvcc -M for this target lists what its device pass includes too.
    deps=$("$nvcc" -M -I"$root" -std=c++17 "${arch[@]}" "$unit" 2>/dev/null |
           sed -e 's/^[^:]*://' -e 's/\\$//' | tr -s ' \n' '\n\n' | sed '/^$/d' | sort -u) || deps=
    if [ -n "$deps" ]; then
      # (paths within the source tree relative to it: a clone elsewhere
      # shares the entries)
      key=$({ echo "$versions"; echo "${flags[*]}"; echo "${unit#"$root"/}";
              while read -r f; do echo "${f#"$root"/}"; sha256sum <"$f"; done <<<"$deps"; } |
            sha256sum | cut -c1-64)
      entry=$cache/$key
      if [ -s "$entry/ptxas.log" ] && [ -s "$entry/size" ]; then
        cat "$entry/ptxas.log" >>"$log"
        touch "$entry"
        hits=$((hits + 1))
        return 0
      fi
    fi
  fi
  local unitLog=$out/unit.log
  if ! "$nvcc" -I"$root" "${flags[@]}" "$unit" -o "$outFile" >"$unitLog" 2>&1; then
    cat "$unitLog"
    echo "FAIL: nvcc could not build $(basename "$unit") for $target"
    exit 1
  fi
  test -s "$outFile"
  cat "$unitLog" >>"$log"
  builds=$((builds + 1))
  if [ -n "$entry" ]; then
    # Written aside and renamed, so a run beside this one reads whole entries.
    # (a cache that cannot be written only costs the next run this one)
    if tmp=$(mktemp -d "$cache/new.XXXXXX" 2>/dev/null); then
      cp "$unitLog" "$tmp/ptxas.log"
      # (an empty report, as -ptx gives, is still a result)
      [ -s "$tmp/ptxas.log" ] || echo "(no ptxas report)" >"$tmp/ptxas.log"
      stat -c %s "$outFile" >"$tmp/size"
      { rm -rf "$entry" && mv "$tmp" "$entry"; } || rm -rf "$tmp"
    fi
  fi
  rm -f "$outFile"
}

for unit in "${units[@]}"; do
  for a in "${archs[@]}"; do compile "$unit" "$a"; done
  compile "$unit" ptx
done
echo "$builds nvcc runs, $hits read from the cache ($cache)"
# Keep the cache to the newest 200 entries (8 versions of every unit).
if [ "$cache" != off ]; then
  ls -1t "$cache" | tail -n +201 | while read -r old; do rm -rf "${cache:?}/$old"; done
fi

status=0
counts=()
for a in "${archs[@]}"; do
  n=$(grep -c "Compiling entry function .* for 'sm_$a'" "$log" || true)
  counts+=("$n")
  echo "sm_$a: $n kernels"
  if [ "$n" -eq 0 ]; then echo "FAIL: no kernel built for sm_$a"; status=1; fi
done
if [ "$(printf '%s\n' "${counts[@]}" | sort -u | wc -l)" -ne 1 ]; then
  echo "FAIL: the architectures got different kernel counts: ${counts[*]}"
  status=1
fi
# "Function properties for K" is followed by "N bytes stack frame, S bytes
# spill stores, L bytes spill loads".
spills=$(awk '/Compiling entry function/ { fn = $0 }
              /spill stores/ && ($5 != 0 || $9 != 0) { print fn; print "    " $0 }' "$log")
if [ -n "$spills" ]; then
  echo "FAIL: kernels that spill registers:"
  echo "$spills"
  status=1
fi
# ptxas's "Potential Performance Loss" notes (C7520: wgmma serialised
# because it sits on a path ptxas takes for divergent, as every Hopper
# attention instance did from fb84f3e until the warpgroup index was
# broadcast from lane 0).
losses=$(grep "Potential Performance Loss" "$log" || true)
if [ -n "$losses" ]; then
  echo "FAIL: ptxas reports performance losses:"
  echo "$losses"
  status=1
fi
[ $status -eq 0 ] && echo "fatbin: ${counts[0]} kernels x ${#archs[@]} architectures + PTX, no spills, no serialised wgmma"
exit $status
