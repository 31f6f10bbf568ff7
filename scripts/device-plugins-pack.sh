#!/usr/bin/env bash
# Packs what scripts/device-plugins.sh needs out of a CUDA-enabled build (stripped): the CLI, the
# device plugin examples and fixtures, the GPU test and libfmt.so.9 (absent on the lent image).
# Usage: scripts/device-plugins-pack.sh BUILD_DIR CARRY_DIR
set -euo pipefail
b=${1:?build dir}; c=${2:?carry dir}
rm -rf "$c"; mkdir -p "$c/bin" "$c/lib"
strip -o "$c/bin/moefuzz" "$b/bin/moefuzz"
strip -o "$c/gpu_device_plugin_test" "$b/bin/gpu_device_plugin_test"
for f in "$b"/lib/libmoefuzz_cuda_layer.so "$b"/lib/libmoefuzz_device_combine.so "$b"/lib/libmoefuzz_faulty_device_*.so; do
  strip --strip-unneeded -o "$c/lib/$(basename "$f")" "$f"
done
cp -L "$(ldd "$b/bin/moefuzz" | awk '/libfmt/ {print $3}')" "$c/lib/"
du -sh "$c"
