#!/usr/bin/env bash
# One device call for the decode-bandwidth work (issue #5): the GEMM bandwidth of every tactic and
# every stream-tactic tile variant on the DeepSeek-V3 decode shapes (with the copy ceiling measured
# in the same run and each output compared bit for bit with tactic 0), then the correctness of the
# stream tactic (tactic 2): the layer test (own double-precision host reference) on tactic 2 for
# every variant, `moefuzz check --tactic 2` against the project's oracle (TACTIC sweeps all
# tactics), and compute-sanitizer memcheck + racecheck on a few tactic-2 layers.
#
# Here:   kernels/cuda/pack_for_device.sh build/gpuB build/gpuB_carry
# Device: run(command="kernels/cuda/device_bw_run.sh build/gpuB_carry", carry=["build/gpuB_carry"])
# Env:    VARIANTS (stream variants benched, default "0 1 2 3 4 5 6"), CTIME (correctness stage cap, s, default 200)
# Writes $OUT/summary.txt and $OUT/logs.tgz.
set -uo pipefail
B=${1:?carry dir}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
L=/tmp/moefuzz-bw-logs; rm -rf "$L"; mkdir -p "$L"
VARIANTS=${VARIANTS:-"0 1 2 3 4 5 6"}; CTIME=${CTIME:-200}
S=$OUT/summary.txt
say() { echo "$*" | tee -a "$S"; }
T0=$(date +%s)

say "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader) | $(nproc) cpus | $(date -u +%FT%TZ)"
"$B/moefuzz" list 2>&1 | grep -i "cuda " | head -3 | tee -a "$S"
(cuobjdump -res-usage "$B/gpu_cuda_gemm_bandwidth_test" 2>&1 | grep -A1 -E "grouped_gemm" | grep -E "REG|Function" | sed 's/_ZN7moefuzz4cuda[^ ]*grouped_gemm/gg/' >"$L/res_usage.txt") || true

# --- 1. Bandwidth (GPU alone) -------------------------------------------------------------------
bench() {  # label, env...
  local label=$1; shift
  ( env "$@" MOEFUZZ_GPU_BENCH=1 timeout $BT "$B/gpu_cuda_gemm_bandwidth_test" >"$L/bench_$label.log" 2>&1; echo "rc=$?" >>"$L/bench_$label.log" )
  grep -E '\[cuda-bench\] +[0-9]|copy ceiling|FAILED|rc=' "$L/bench_$label.log" | grep -v 'rc=0' | sed "s/^/[$label] /" | tee -a "$S"
}
BT=60; bench base MOEFUZZ_BENCH_TACTICS=0,1   # the old tactics first, in their own process
BT=90; bench v0 MOEFUZZ_BENCH_TACTICS=2 MOEFUZZ_CUDA_STREAM_VARIANT=0 MOEFUZZ_BENCH_COPY=0
if grep -q 'rc=124' "$L/bench_v0.log"; then
  say "base bench timed out (hang?): variant benches skipped"
else
  BT=60
  for v in $VARIANTS; do
    [ "$v" = 0 ] && continue
    [ $(( $(date +%s) - T0 )) -gt 200 ] && { say "deadline: v$v bench skipped"; continue; }
    bench "v$v" MOEFUZZ_BENCH_TACTICS=2 MOEFUZZ_CUDA_STREAM_VARIANT=$v MOEFUZZ_BENCH_COPY=0
  done
  [ $(( $(date +%s) - T0 )) -lt 200 ] && bench repeat MOEFUZZ_BENCH_TACTICS=0,2 MOEFUZZ_CUDA_STREAM_VARIANT=0
fi
say "bench stages done at +$(( $(date +%s) - T0 )) s"
left=$(( 440 - ($(date +%s) - T0) )); [ "$CTIME" -gt "$left" ] && CTIME=$left; [ "$CTIME" -lt 40 ] && CTIME=40
say "correctness stage cap: $CTIME s"

# --- 2. Correctness of tactic 2 (parallel; GPU shared) -------------------------------------------
pids=()
( MOEFUZZ_GPU_TACTIC=2 MOEFUZZ_GPU_CASES=240 MOEFUZZ_CUDA_STREAM_VARIANT=0 timeout "$CTIME" "$B/gpu_cuda_layer_test" \
    --gtest_filter='*RandomLayers*' >"$L/layer_v0.log" 2>&1; echo "rc=$?" >>"$L/layer_v0.log" ) & pids+=($!)
( MOEFUZZ_GPU_CASES=150 timeout "$CTIME" "$B/gpu_cuda_layer_test" --gtest_filter='*RandomLayers*' >"$L/layer_mixed.log" 2>&1;
  echo "rc=$?" >>"$L/layer_mixed.log" ) & pids+=($!)
for v in $VARIANTS; do
  [ "$v" = 0 ] && continue
  ( MOEFUZZ_GPU_TACTIC=2 MOEFUZZ_GPU_CASES=60 MOEFUZZ_CUDA_STREAM_VARIANT=$v timeout "$CTIME" "$B/gpu_cuda_layer_test" \
      --gtest_filter='*RandomLayers*' >"$L/layer_v$v.log" 2>&1; echo "rc=$?" >>"$L/layer_v$v.log" ) & pids+=($!)
done
for i in 0 1 2 3; do
  ( timeout $((CTIME + 20)) "$B/moefuzz" check --kernel cuda --tactic 2 --cases 400 --time $((CTIME - 20)) --seed $((7000 + i)) \
      --out "$L/f$i" --json "$L/c$i.json" >"$L/check$i.log" 2>&1; echo "rc=$?" >>"$L/check$i.log" ) & pids+=($!)
done
( MOEFUZZ_GPU_TACTIC=2 MOEFUZZ_GPU_CASES=10 timeout "$CTIME" compute-sanitizer --tool memcheck "$B/gpu_cuda_layer_test" \
    --gtest_filter='*RandomLayers*' >"$L/memcheck.log" 2>&1; echo "rc=$?" >>"$L/memcheck.log" ) & pids+=($!)
( MOEFUZZ_GPU_TACTIC=2 MOEFUZZ_GPU_CASES=4 timeout "$CTIME" compute-sanitizer --tool racecheck "$B/gpu_cuda_layer_test" \
    --gtest_filter='*RandomLayers*' >"$L/racecheck.log" 2>&1; echo "rc=$?" >>"$L/racecheck.log" ) & pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done

for f in "$L"/layer_*.log; do
  say "$(basename "$f" .log): $(grep -hE '^\[cuda\]|^\[ *(OK|FAILED|SKIPPED) *\]|rc=|Failure|error' "$f" | grep -v progress | head -6 | tr '\n' ' ' | cut -c1-600) | $(grep -h progress "$f" | tail -1)"
done
for i in 0 1 2 3; do
  say "check$i: $(grep -hE 'cases in|finding|FAIL|rc=' "$L/check$i.log" | head -5 | tr '\n' ' ' | cut -c1-400)"
done
python3 - "$L" <<'EOF' | tee -a "$S"
import json, sys, os, collections
d = sys.argv[1]; cases = 0; tal = collections.defaultdict(lambda: [0, 0]); fails = collections.Counter()
for i in range(4):
    p = f"{d}/c{i}.json"
    if not os.path.exists(p): print(f"check{i}: no json"); continue
    j = json.load(open(p)); cases += j.get("cases", 0)
    for f in j.get("findings", []): fails[f.get("signature")] += f.get("occurrences", 1)
    for code, t in j.get("invariants", {}).items():
        tal[code][0] += t.get("pass", 0); tal[code][1] += t.get("fail", 0)
print(f"moefuzz check --tactic 2: {cases} cases; findings {dict(fails) or 'none'}")
print("  " + ", ".join(f"{c} {a[0]}/{a[1]}" for c, a in sorted(tal.items())))
EOF
say "memcheck: $(grep -hE 'ERROR SUMMARY|^\[cuda\]|rc=' "$L/memcheck.log" | tr '\n' ' ')"
say "racecheck: $(grep -hE 'RACECHECK SUMMARY|hazard|^\[cuda\]|rc=' "$L/racecheck.log" | head -4 | tr '\n' ' ')"
say "res-usage: $(tr '\n' ' ' <"$L/res_usage.txt" | cut -c1-1500)"
for f in "$L"/f*/*; do [ -e "$f" ] && cp -r "$f" "$L/finding_$(basename "$f")" 2>/dev/null; done
tar czf "$OUT/logs.tgz" -C "$L" . 2>/dev/null
say "done at +$(( $(date +%s) - T0 )) s $(date -u +%FT%TZ)"
