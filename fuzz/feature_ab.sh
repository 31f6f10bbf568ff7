#!/usr/bin/env bash
# A/B of the semantic-feature counters (docs/perf.md "Fuzzing"): the same target, seeds and time,
# with MOEFUZZ_FEATURES=1 and =0. Every run starts from an EMPTY corpus (the seeds in corpora/ kill
# several mutants by themselves).
#   1. coverage: SECS seconds on `cpu` in fork mode (-ignore_crashes, so findings do not end the run);
#      then the corpus it kept is replayed and the distinct semantic buckets it reaches are counted;
#   2. kills: for each MUTANT=INVARIANTS pair, seconds to the first finding (capped at SECS) with only
#      that mutant's killing invariants selected (so a finding is the mutant, not an open issue).
# Usage: fuzz/feature_ab.sh [SECS=60] [SEEDS="1 2 3"] [TARGET=moe_layer_fuzzer]
#   FUZZ_BIN / REPLAY_BIN override build/fuzz/bin/<TARGET>[_replay]; MUTANTS overrides the list.
# Runs one fuzzer at a time (one core).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-60}"; seeds="${2:-1 2 3}"; target="${3:-moe_layer_fuzzer}"
mutants="${MUTANTS:-mutant/z3-group-mask-zero=STRUCT mutant/z4-raw-logit-weights=STRUCT mutant/z8-duplicate-id-dropped=DUP mutant/e2m1-ties-away=ORACLE}"
bin="${FUZZ_BIN:-$root/build/fuzz/bin/$target}"
replay="${REPLAY_BIN:-$root/build/fuzz/bin/${target}_replay}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
common=(-timeout=30 -max_len=4096 -dict="$root/fuzz/$target.dict")

coverage() {  # coverage FEATURES SEED -> "buckets corpus_files"
  local d="$work/cov.$1.$2"; mkdir -p "$d" "$d.art"
  MOEFUZZ_FEATURES="$1" MOEFUZZ_KERNEL=cpu "$bin" -seed="$2" -max_total_time="$secs" -fork=1 -ignore_crashes=1 \
    "${common[@]}" -artifact_prefix="$d.art/" "$d" > "$work/log" 2>&1 || true
  local b; b=$(MOEFUZZ_KERNEL=cpu "$replay" "$d" 2>&1 | grep -o 'reached [0-9]*' | grep -o '[0-9]*' | tail -n 1)
  echo "${b:-0} buckets, $(ls "$d" | wc -l) inputs, $(ls "$d.art" | wc -l) crashes"
}
kill_time() {  # kill_time FEATURES MUTANT INVARIANTS SEED -> "seconds" or "none"
  local d="$work/kill.$RANDOM"; mkdir -p "$d"
  local t0; t0=$(date +%s.%N)
  if MOEFUZZ_FEATURES="$1" MOEFUZZ_KERNEL="$2" MOEFUZZ_INVARIANTS="$3" "$bin" -seed="$4" -max_total_time="$secs" \
      "${common[@]}" -artifact_prefix="$d/" "$d" > "$work/log" 2>&1; then
    echo "none"
  else
    printf '%.1fs(%s)' "$(echo "$(date +%s.%N) - $t0" | bc)" "$(grep -m1 -o 'check: [A-Z0-9]*' "$work/log" | cut -d' ' -f2)"
  fi
  rm -rf "$d"
}
echo "# $target, ${secs}s per run, seeds: $seeds"
echo "## semantic buckets reached by the corpus kept on cpu: features on | off"
for s in $seeds; do echo "seed $s: on [$(coverage 1 "$s")] off [$(coverage 0 "$s")]"; done
echo "## seconds to first finding, cap ${secs}s: features on | off"
for m in $mutants; do
  for s in $seeds; do
    echo "${m%%=*} (${m#*=}) seed $s: on $(kill_time 1 "${m%%=*}" "${m#*=}" "$s") | off $(kill_time 0 "${m%%=*}" "${m#*=}" "$s")"
  done
done
