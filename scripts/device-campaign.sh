#!/usr/bin/env bash
# One device call (the `device` tool's H200 host; docs/oracle.md and docs/gpu.md record the results):
# the GPU probes, then - all at once - the zero-false-positive sweep (scripts/zero-fp-sweep.sh) over
# the correct kernels with the `cuda` processes spread over the GPUs, and the bound-soundness sweep
# sharded over SOUND_SHARDS processes. Binaries are built HERE and carried (the device image lacks our
# libraries): kernels/cuda/pack_for_device.sh BUILD CARRY, plus oracles_bounds_soundness_test.
#
#   scripts/device-campaign.sh CARRY_DIR SECONDS "GRID" SEED0 [SOUND_CASES] [SOUND_SHARDS]
#   e.g. GPUS=2 scripts/device-campaign.sh build/zfp_carry 480 "cuda:8 cpu:8 cpu-flashinfer:8 cpu-trtllm:7" 10000 100000 2
# Writes $OUT/summary.txt, $OUT/probes.log, $OUT/soundness.txt and $OUT/logs.tgz.
set -uo pipefail
B=${1:?carry dir}; secs=${2:?seconds}; grid=${3:?grid}; seed0=${4:?seed}; sound=${5:-0}; shards=${6:-1}
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; W=/tmp/moefuzz-campaign; rm -rf "$W"; mkdir -p "$W" "$OUT"
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; echo "$(nproc) cpus, $(date -u +%FT%TZ)"; } | tee "$OUT/probes.log"
CUDA_VISIBLE_DEVICES=0 "$B/gpu_cuda_probes_test" 2>&1 | grep -E "cuda-probe|OK|FAILED|Failure|rcp" | tee -a "$OUT/probes.log"
pids=()
if [ "$sound" -gt 0 ]; then
  for ((k = 0; k < shards; k++)); do
    ( MOEFUZZ_SOUNDNESS_CASES=$sound MOEFUZZ_SOUNDNESS_SHARD=$k/$shards timeout $((secs + 60)) \
        "$B/oracles_bounds_soundness_test" >"$W/sound.$k.log" 2>&1; echo "rc=$?" >>"$W/sound.$k.log" ) &
    pids+=($!)
  done
fi
GPUS=${GPUS:-1} bash scripts/zero-fp-sweep.sh "$B/moefuzz" "$W/zfp" "$grid" "$secs" "$seed0" small >"$OUT/summary.txt" 2>&1
echo "zero-fp-sweep rc=$?" >>"$OUT/summary.txt"
for p in "${pids[@]}"; do wait "$p"; done
if [ "$sound" -gt 0 ]; then
  python3 - "$W" "$shards" <<'PY' | tee "$OUT/soundness.txt"
import re, sys
w, n = sys.argv[1], int(sys.argv[2]); cases = elems = 0; mx = 0.0; hist = [0] * 6; dec = [0] * 13; rcs = []
for k in range(n):
    t = open(f"{w}/sound.{k}.log").read(); rcs.append(re.findall(r"rc=(\d+)", t)[-1:])
    m = re.search(r"soundness: (\d+) cases .*?, (\d+) output elements, max error/bound ([0-9.]+)", t)
    if m: cases += int(m[1]); elems += int(m[2]); mx = max(mx, float(m[3]))
    h = re.search(r"histogram: 0:(\d+) \(0,1e-3\]:(\d+) \(1e-3,1e-2\]:(\d+) \(1e-2,0.1\]:(\d+) \(0.1,0.5\]:(\d+) \(0.5,1\]:(\d+)", t)
    if h: hist = [a + int(b) for a, b in zip(hist, h.groups())]
    d = re.search(r"tightness decades:((?: \d+)+)", t)
    if d: dec = [a + int(b) for a, b in zip(dec, d[1].split())]
print(f"soundness: {cases} cases in {n} shards, {elems} output elements, max error/bound {mx}, exit codes {rcs}")
print("error/bound histogram 0 | (0,1e-3] | (1e-3,1e-2] | (1e-2,0.1] | (0.1,0.5] | (0.5,1]:", hist)
print("conditioned bound/|expected| decades 0 | <1e-8 | [1e-8,1e-7) ... [10,100) | >=100:", dec)
PY
fi
cp "$W"/sound.*.log "$W/" 2>/dev/null; tar czf "$OUT/logs.tgz" -C "$W" . 2>/dev/null
echo "done $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
