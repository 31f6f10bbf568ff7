#!/usr/bin/env bash
# One device call: the GPU verification of the `cuda` kernel against the project's oracle, with
# binaries built HERE (Debian 12, x86-64) by the main CMake build and carried (the lent H200 image
# has no fmt/CLI11/GTest/rapidcheck; only libfmt.so.9 is a shared dependency, carried alongside).
#
# Here:   kernels/cuda/pack_for_device.sh build/cuda2 build/cuda2_carry
# Device: run(command="kernels/cuda/device_run.sh build/cuda2_carry", carry=["build/cuda2_carry"])
# Env:    PROCS (parallel campaign processes, default 13), CTIME (campaign seconds per process,
#         default 290), SEED0 (first campaign seed, default 1000),
#         STAGES (default "sanity gtest campaign bench")
# Writes $OUT/summary.txt and $OUT/logs.tgz (the device returns at most 8 files).
set -uo pipefail
B=${1:?carry dir}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=/tmp/moefuzz-logs; rm -rf "$L"; mkdir -p "$L"
PROCS=${PROCS:-13}; CTIME=${CTIME:-290}; SEED0=${SEED0:-1000}; STAGES=${STAGES:-"sanity gtest campaign bench"}
S=$OUT/summary.txt
say() { echo "$*" | tee -a "$S"; }
has() { [[ " $STAGES " == *" $1 "* ]]; }

say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) | $(nproc) cpus | $(date -u +%FT%TZ)"
if has sanity; then
  "$B/moefuzz" list 2>&1 | grep -i cuda | tee -a "$S"
  ( time "$B/moefuzz" check --kernel cuda --cases 20 --seed 5 --out "$L/sanity" ) >"$L/sanity.log" 2>&1
  say "sanity rc=$? $(grep -E 'cases in|findings' "$L/sanity.log" | tr '\n' ' ')"
fi

pids=()
if has gtest; then  # concurrently with the campaign: mutant kills and the OVF probe past 2^31
  ( MOEFUZZ_GPU_LARGE=1 timeout $((CTIME + 40)) "$B/gpu_cuda_oracle_test" --gtest_filter='*Mutants*:*Ovf*' >"$L/gtest_mutants.log" 2>&1;
    echo "rc=$?" >>"$L/gtest_mutants.log" ) & pids+=($!)
fi
if has campaign; then  # scripts/zero-fp-sweep.sh: one `moefuzz check --kernel cuda` per process, one summary
  bash scripts/zero-fp-sweep.sh "$B/moefuzz" "$L/zfp" "cuda:$PROCS" "$CTIME" "$SEED0" small | tee -a "$S"
fi
for p in "${pids[@]}"; do wait "$p"; done
if has gtest; then
  grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]|cuda-mutant|OVF|rc=' "$L/gtest_mutants.log" | tee -a "$S"
fi
if has bench; then
  MOEFUZZ_GPU_BENCH=1 timeout 120 "$B/gpu_cuda_gemm_bandwidth_test" >"$L/bench.log" 2>&1
  MOEFUZZ_GPU_BENCH=1 timeout 240 "$B/gpu_cuda_oracle_test" --gtest_filter='*MShape*' >>"$L/bench.log" 2>&1
  grep -E 'cuda-bench|FAILED' "$L/bench.log" | tee -a "$S"
fi
tar czf "$OUT/logs.tgz" -C "$L" . 2>/dev/null
say "done $(date -u +%FT%TZ)"
