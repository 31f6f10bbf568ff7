#!/usr/bin/env bash
# Copies what kernels/cuda/device_run.sh needs out of a CUDA-enabled main build into one carry
# folder (stripped: the device call carries at most 64 MiB): the CLI, the GPU tests and libfmt.so.9,
# the one shared library they need that the lent H200 image lacks.
# Usage: kernels/cuda/pack_for_device.sh BUILD_DIR CARRY_DIR   (CARRY_DIR under build/: git-ignored)
set -euo pipefail
b=${1:?build dir}; c=${2:?carry dir}
rm -rf "$c"; mkdir -p "$c/lib"
for f in moefuzz gpu_cuda_oracle_test gpu_cuda_gemm_bandwidth_test gpu_cuda_layer_test; do
  strip -o "$c/$f" "$b/bin/$f"
done
cp -L "$(ldd "$b/bin/moefuzz" | awk '/libfmt/ {print $3}')" "$c/lib/"
du -sh "$c"
