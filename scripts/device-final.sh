#!/usr/bin/env bash
# The second device call of 2026-11-30 (docs/oracle.md, docs/gpu.md): scripts/device-campaign.sh on
# the final binary, with the GPU test suites on the second GPU meanwhile and the M-shape check cost
# split on the quiet GPU afterwards.   Usage: scripts/device-final.sh CARRY_DIR SECONDS GRID SEED0
set -uo pipefail
B=${1:?carry}; secs=${2:?seconds}; grid=${3:?grid}; seed0=${4:?seed}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
( export CUDA_VISIBLE_DEVICES=1
  MOEFUZZ_GPU_LARGE=1 timeout 300 "$B/gpu_cuda_oracle_test" --gtest_filter='*Mutants*:*Ovf*' >/tmp/gt_oracle.log 2>&1; echo "rc=$?" >>/tmp/gt_oracle.log
  timeout 200 "$B/gpu_cuda_layer_test" >/tmp/gt_layer.log 2>&1; echo "rc=$?" >>/tmp/gt_layer.log ) &
gt=$!
GPUS=1 bash scripts/device-campaign.sh "$B" "$secs" "$grid" "$seed0" 100000 4
wait $gt
{ grep -hE '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]|cuda-mutant|OVF|rc=' /tmp/gt_oracle.log /tmp/gt_layer.log; } | tee "$OUT/gtests.txt"
MOEFUZZ_GPU_BENCH=1 CUDA_VISIBLE_DEVICES=0 timeout 80 "$B/gpu_cuda_oracle_test" --gtest_filter='*MShape*' 2>&1 | grep -E 'cuda-bench|OK|FAILED|seconds|M shape' | tee -a "$OUT/gtests.txt"
cp /tmp/gt_oracle.log /tmp/gt_layer.log "$OUT/" 2>/dev/null; echo "final done $(date -u +%FT%TZ)" | tee -a "$OUT/gtests.txt"
