#!/usr/bin/env bash
# One device call: the GPU verification of the `cuda` kernel against the project's oracle, with
# binaries built HERE (Debian 12, x86-64) by the main CMake build and carried (the lent H200 image
# has no fmt/CLI11/GTest/rapidcheck; only libfmt.so.9 is a shared dependency, carried alongside).
#
# Here:   kernels/cuda/pack_for_device.sh build/cuda2 build/cuda2_carry
# Device: run(command="kernels/cuda/device_run.sh build/cuda2_carry", carry=["build/cuda2_carry"])
# Env:    PROCS (parallel campaign processes, default 13), CASES (total, default 10400), CTIME
#         (campaign time cap per process, s, default 290), SEED0 (first campaign seed, default 1000),
#         STAGES (default "sanity gtest campaign bench")
# Writes $OUT/summary.txt and $OUT/logs.tgz (the device returns at most 8 files).
set -uo pipefail
B=${1:?carry dir}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=/tmp/moefuzz-logs; rm -rf "$L"; mkdir -p "$L"
PROCS=${PROCS:-13}; CTIME=${CTIME:-290}; SEED0=${SEED0:-1000}; CASES=${CASES:-10400}; STAGES=${STAGES:-"sanity gtest campaign bench"}
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
if has campaign; then
  per=$(( (CASES + PROCS - 1) / PROCS ))
  t0=$(date +%s)
  for i in $(seq 0 $((PROCS - 1))); do
    ( timeout $((CTIME + 40)) "$B/moefuzz" check --kernel cuda --cases "$per" --time "$CTIME" --seed $((SEED0 + i)) --out "$L/f$i" \
        --json "$L/c$i.json" >"$L/c$i.log" 2>&1; echo "rc=$?" >>"$L/c$i.log" ) &
    pids+=($!)
  done
fi
for p in "${pids[@]}"; do wait "$p"; done
if has campaign; then
  t1=$(date +%s)
  say "campaign: $PROCS processes x $per cases requested, wall $((t1 - t0)) s"
  python3 - "$L" "$PROCS" <<'EOF' | tee -a "$S"
import json, sys, os, collections
d, n = sys.argv[1], int(sys.argv[2])
cases = uns = 0; fails = collections.Counter(); tal = collections.defaultdict(lambda: [0, 0, 0, 0, 0.0]); missing = []
for i in range(n):
    p = f"{d}/c{i}.json"
    if not os.path.exists(p): missing.append(i); continue
    j = json.load(open(p)); cases += j.get("cases", 0); uns += j.get("unsupported", 0)
    for f in j.get("findings", []): fails[f.get("signature")] += f.get("occurrences", 1)
    for code, t in j.get("invariants", {}).items():
        a = tal[code]; a[0] += t.get("pass", 0); a[1] += t.get("fail", 0); a[2] += t.get("skip", 0); a[3] += t.get("vacuous", 0)
        a[4] = max(a[4], t.get("max_ratio", 0.0))
print(f"campaign total: {cases} cases checked, {uns} drawn outside the domain, findings {dict(fails) or 'none'}, missing json {missing}")
for code in sorted(tal):
    a = tal[code]; print(f"  {code:8s} pass {a[0]:6d} fail {a[1]:4d} skip {a[2]:6d} vacuous {a[3]:5d} max err/bound {a[4]:.3g}")
EOF
  grep -h "cases in" "$L"/c*.log | head -3 | tee -a "$S"
  grep -h "rc=" "$L"/c*.log | sort | uniq -c | tee -a "$S"
fi
if has gtest; then
  grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]|cuda-mutant|OVF|rc=' "$L/gtest_mutants.log" | tee -a "$S"
fi
if has bench; then
  MOEFUZZ_GPU_BENCH=1 timeout 120 "$B/gpu_cuda_gemm_bandwidth_test" >"$L/bench.log" 2>&1
  MOEFUZZ_GPU_BENCH=1 timeout 240 "$B/gpu_cuda_oracle_test" --gtest_filter='*MShape*' >>"$L/bench.log" 2>&1
  grep -E 'cuda-bench|FAILED' "$L/bench.log" | tee -a "$S"
fi
for f in "$L"/f*/*; do [ -e "$f" ] && cp -r "$f" "$L/finding_$(basename "$f")" 2>/dev/null; done
tar czf "$OUT/logs.tgz" -C "$L" . 2>/dev/null
say "done $(date -u +%FT%TZ)"
