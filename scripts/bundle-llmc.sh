#!/usr/bin/env bash
# Packs an llmc that runs where no MLIR or LLVM is installed (the device
# tool's GPU machines: they have CUDA, a C++ compiler and Python, not
# Debian's libmlir-19-dev) into .gpu/llmc/ (ignored by git):
#   bin/llmc            MLIR, LLVM and protobuf linked in (cmake preset
#                       "static", build-static/)
#   lib/llmc/           the model support libraries and headers llmc compile
#                       builds artifacts with (cmake --install's layout)
#   lib/*.so*           the shared libraries it still needs beyond glibc and
#                       the C++ runtime
#   llmc                a wrapper that runs bin/llmc with them
# and the folder as .gpu/llmc.tar.xz. Then, with the device tool: carry
# .gpu/llmc.tar.xz, unpack it there and run llmc/llmc compile ... --target
# cuda (nvcc builds libmodel.so for that GPU); bench/cuda/decode.sh does.
#   scripts/bundle-llmc.sh [OUT (default .gpu/llmc)]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/.gpu/llmc}"
cd "$root"
if [ ! -f build-static/build.ninja ]; then
  cmake --preset static > build-static-configure.log 2>&1 || { cat build-static-configure.log; exit 1; }
fi
cmake --build --preset static
rm -rf "$out"
cmake --install build-static --prefix "$out" > /dev/null
# Shared libraries beyond glibc, the C++ runtime and the loader.
ldd "$out/bin/llmc" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cat > "$out/llmc" <<'WRAP'
#!/bin/sh
here="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/llmc" "$@"
WRAP
chmod +x "$out/llmc"
strip "$out/bin/llmc"
"$out/llmc" --version
# What the device tool carries (the working tree and carried paths share
# 64 MiB): the folder as one archive, ~5 MB.
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
