#!/usr/bin/env bash
# Device-memory plugins on the lent GPU (docs/gpu.md, "Device-memory plugins"): the GPU test, then
# `moefuzz check` on the two example device plugins and, for the cost per case, the built-in `cuda`.
# Usage (on the device, from the repository root): scripts/device-plugins.sh CARRY_DIR BUILD_DIR
#   env DP_KERNELS (default: the two plugins and cuda), DP_SECONDS (per check, default 25)
#   CARRY_DIR: what scripts/device-plugins-pack.sh made (bin/, lib/, gpu_device_plugin_test);
#   BUILD_DIR: the build directory the test was compiled in (its MOEFUZZ_BINARY_DIR), linked to CARRY_DIR.
set -uo pipefail
C=$(cd "${1:?carry dir}" && pwd); B=${2:?build dir}
OUT=${OUT:-/tmp/out}; L=/tmp/device-plugins-logs; mkdir -p "$OUT" "$B" "$L"
ln -sfn "$C/bin" "$B/bin"; ln -sfn "$C/lib" "$B/lib"
export LD_LIBRARY_PATH=$C/lib:${LD_LIBRARY_PATH:-}
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$S" 2>&1
start=$(date +%s)
timeout 150 "$C/gpu_device_plugin_test" >"$L/gtest.log" 2>&1; echo "gtest rc=$? $(( $(date +%s) - start )) s" >>"$S"
grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]' "$L/gtest.log" >>"$S"
for k in ${DP_KERNELS:-lib/libmoefuzz_cuda_layer.so lib/libmoefuzz_device_combine.so cuda}; do
  kk=$k; [ "$k" = cuda ] || kk=$C/$k
  n=$(basename "$k" .so)
  start=$(date +%s)
  secs=${DP_SECONDS:-25}
  timeout $((secs + 25)) "$C/bin/moefuzz" check --kernel "$kk" --time "$secs" --seed 21 --json "$L/check_$n.json" >"$L/check_$n.log" 2>&1
  echo "== check $n rc=$? $(( $(date +%s) - start )) s" >>"$S"; tail -n 25 "$L/check_$n.log" >>"$S"
done
for f in unwritten overhang input illegal; do
  timeout 30 "$C/bin/moefuzz" check --kernel "$C/lib/libmoefuzz_faulty_device_$f.so" --cases 1 --seed 5 $([ $f = unwritten ] && echo --invariants CANARY) >"$L/faulty_$f.log" 2>&1
  echo "== faulty $f rc=$?" >>"$S"; grep -m3 -iE 'CANARY|bad-result|device-error|FAIL' "$L/faulty_$f.log" >>"$S"
done
echo "done $(date -u +%FT%TZ)" >>"$S"
tar czf "$OUT/logs.tgz" -C "$L" .  # what comes back: summary.txt and logs.tgz
