#!/usr/bin/env bash
# One device call (the `device` tool's 2 x H200, 32-core host): libFuzzer campaigns on every correct
# kernel side by side - the three CPU kernels and `cuda` on moe_layer_fuzzer, `cpu` on routing_fuzzer -
# then `moefuzz replay --sanitize` (compute-sanitizer memcheck + racecheck) on a GPU mutant's finding
# and on a seed with the correct `cuda` kernel. Results: docs/fuzzing.md ("H200 campaigns").
# Binaries are built HERE and carried (the device image lacks our libraries):
#   CARRY/moefuzz            release preset (CUDA kernels, for shrinking and replay), stripped
#   CARRY/lib/libfmt.so.9
#   CARRY/fz/<target>        fuzz-gpu preset (libFuzzer coverage, no ASan), stripped
#
#   scripts/device-fuzz-campaigns.sh CARRY SECONDS
# Writes $OUT/<kernel>.<target>.{log,json}, $OUT/sanitize.log and $OUT/findings.tgz.
set -uo pipefail
C=${1:?carry dir}; secs=${2:?seconds per campaign}
export LD_LIBRARY_PATH=$PWD/$C/lib:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}; W=/tmp/moefuzz-fuzz; rm -rf "$W"; mkdir -p "$W" "$OUT"
{ nvidia-smi -L; echo "$(nproc) cpus, $(date -u +%FT%TZ)"; } | tee "$OUT/host.txt"
campaign() {  # KERNEL TARGET WORKERS
  local name="${1//\//_}.$2"
  "$C/moefuzz" campaign --target "$2" --kernel "$1" --bin-dir "$C/fz" --workers "$3" --time "$secs" \
    --out "$W/$name" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1
  echo "rc=$?" >>"$OUT/$name.log"
}
campaign cpu moe_layer 7 & campaign cpu-flashinfer moe_layer 7 & campaign cpu-trtllm moe_layer 7 &
campaign cuda moe_layer 6 & campaign cpu routing 4 &
wait
# A GPU mutant's finding (the nibble swap: the decode of every packed weight) and a correct run, each
# under memcheck and racecheck.
"$C/moefuzz" campaign --target moe_layer --kernel cuda-mutant/fp4-nibble-swap --bin-dir "$C/fz" --workers 2 \
  --time 20 --shrink-time 5 --out "$W/nibble" >"$W/nibble.log" 2>&1
{
  for f in "$W"/nibble/findings/*.moefuzz; do
    echo "== $f (cuda-mutant/fp4-nibble-swap)"; "$C/moefuzz" replay "$f" --sanitize; echo "rc=$?"
  done
  seed=076fa8a940c7ef65a29a064850d8a729ee29d704  # the small DeepSeek-V3-style seed (fuzz/make_corpora.sh)
  echo "== corpora/moe_layer_fuzzer/$seed (cuda)"
  "$C/moefuzz" replay "corpora/moe_layer_fuzzer/$seed" --kernel cuda --sanitize; echo "rc=$?"
} >"$OUT/sanitize.log" 2>&1
tar czf "$OUT/findings.tgz" -C "$W" $(cd "$W" && ls -d */findings 2>/dev/null) 2>/dev/null
for f in "$OUT"/*.log; do echo "== $f"; grep -E "^moefuzz campaign|fork jobs|FINDING|no new findings|^rc=" "$f"; done
grep -E "^==|ERROR SUMMARY|RACECHECK SUMMARY|rc=" "$OUT/sanitize.log"
