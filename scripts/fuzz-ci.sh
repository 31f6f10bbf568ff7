#!/usr/bin/env bash
# Fuzzing CI gate (docs/fuzzing.md), run by scripts/test.sh after ctest: build the four libFuzzer
# targets of the fuzz preset (clang, libFuzzer, ASan + UBSan), replay every corpus through them, fuzz
# each target briefly on the correct `cpu` kernel (zero findings allowed), and require
# moe_layer_fuzzer to find the BUGZOO Z1 mutant (routed scale applied twice) within a time limit, and
# run `moefuzz campaign`'s 20 random-time SIGKILL trials (tests/reliability/signals_test.cpp; they need
# these libFuzzer targets and the release build's moefuzz, built here if missing).
# Exit 0 on success, 1 on any failure. Cold on 2 cores: ~4 min build + ~2 min run (docs/fuzzing.md).
#   MOEFUZZ_FUZZ_CI_SECONDS       seconds per target on `cpu` (default 20)
#   MOEFUZZ_FUZZ_CI_KILL_SECONDS  time limit to find mutant/z1-rsf-twice (default 60)
#   MOEFUZZ_FUZZ_CI_JOBS          build jobs and concurrent fuzz runs (default $MOEFUZZ_JOBS or nproc)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
secs="${MOEFUZZ_FUZZ_CI_SECONDS:-20}"
kill_secs="${MOEFUZZ_FUZZ_CI_KILL_SECONDS:-60}"
jobs="${MOEFUZZ_FUZZ_CI_JOBS:-${MOEFUZZ_JOBS:-$(nproc)}}"
targets=(recipe_parser_fuzzer nvfp4_fuzzer routing_fuzzer moe_layer_fuzzer)
start=$SECONDS
stamp() { echo "[fuzz-ci +$((SECONDS - start))s] $*"; }

scripts/install-deps.sh  # clang + libclang-rt-14-dev (libFuzzer, sanitizer runtimes); silent if present
stamp "configure + build (preset fuzz at OSS-Fuzz's -O1 -gline-tables-only, build/fuzz-ci: ${targets[*]})"
# The gate builds the fuzz preset with the flags OSS-Fuzz builds every target with (about a third less
# compile time than the preset's -O2 -g; same arithmetic: -ffp-contract=off and no fast-math either
# way) in its own folder, so a campaign build in build/fuzz keeps its -O2 and is not rebuilt.
ci_flags="-O1 -gline-tables-only -DNDEBUG"
cmake --preset fuzz -B build/fuzz-ci -DCMAKE_C_FLAGS_RELWITHDEBINFO="$ci_flags" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$ci_flags" >/dev/null
# Only the libFuzzer binaries: they also replay (a file argument runs it once), so the sanitized
# <target>_replay runners would be a second link of the same code (~35 s cold on 2 cores).
cmake --build build/fuzz-ci -j"$jobs" --target "${targets[@]}" >/dev/null
bin="$root/build/fuzz-ci/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"  # leak checks belong to the asan suites

# Each file runs once on `cpu`; a finding aborts, so libFuzzer exits non-zero. corpora/regressions/
# must pass on `cpu` too (zero false positives); that each still kills its `# kernel:` is checked by
# ctest (fuzz_replay.moe_layer_fuzzer --regressions, drivers_regressions_test).
stamp "replay corpora on cpu (sanitized)"
for t in "${targets[@]}"; do
  files=("$root/corpora/$t"/*)
  [ "$t" = moe_layer_fuzzer ] && files+=("$root/corpora/regressions"/*.moefuzz)
  MOEFUZZ_KERNEL=cpu "$bin/$t" -timeout=60 -rss_limit_mb=2048 "${files[@]}" > "$work/$t.replay.log" 2>&1 ||
    { tail -n 60 "$work/$t.replay.log"; stamp "FAIL: replay of corpora for $t"; exit 1; }
  echo "  $t: $(grep -c '^Executed ' "$work/$t.replay.log") inputs replayed, 0 findings"
done

# The target's libFuzzer settings from fuzz/<target>.options (ClusterFuzz's `key = value` lines under
# [libfuzzer], as `moefuzz campaign` reads them), a relative dict resolved in fuzz/.
options() {
  sed -n '/^\[libfuzzer\]/,/^\[/p' "$root/fuzz/$1.options" | grep -E '^[a-z_]+ *=' |
    sed -E 's/^([a-z_]+) *= *(.*)$/-\1=\2/; s|^-dict=([^/].*)$|-dict='"$root"'/fuzz/\1|'
}

# fuzz TARGET KERNEL SECONDS LOG [SEEDS]: new inputs go to a scratch corpus, never into corpora/.
fuzz() {
  local t="$1" kernel="$2" s="$3" log="$4" seeds="${5-$root/corpora/$1}"
  mkdir -p "$work/$t.corpus.$kernel_tag" "$work/$t.artifacts.$kernel_tag"
  # shellcheck disable=SC2046  # one flag per line, none with spaces
  MOEFUZZ_KERNEL="$kernel" MOEFUZZ_FINDINGS_DIR="$work/$t.artifacts.$kernel_tag" \
    "$bin/$t" -max_total_time="$s" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 $(options "$t") \
    -artifact_prefix="$work/$t.artifacts.$kernel_tag/" "$work/$t.corpus.$kernel_tag" $seeds > "$log" 2>&1
}

stamp "fuzz each target ${secs}s on cpu ($jobs at a time)"
kernel_tag=cpu
pids=(); names=(); failed=0
for t in "${targets[@]}"; do
  fuzz "$t" cpu "$secs" "$work/$t.cpu.log" &
  pids+=($!); names+=("$t")
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    for i in "${!pids[@]}"; do
      if ! wait "${pids[$i]}"; then failed=1; echo "== ${names[$i]} on cpu: FINDING"; tail -n 60 "$work/${names[$i]}.cpu.log"; fi
    done
    pids=(); names=()
  fi
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; echo "== ${names[$i]} on cpu: FINDING"; tail -n 60 "$work/${names[$i]}.cpu.log"; fi
done
for t in "${targets[@]}"; do
  printf '  %-22s %s | %s\n' "$t" "$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.cpu.log" | grep -o '[0-9]*$') execs" \
    "$(grep -o 'moefuzz-features: .*' "$work/$t.cpu.log" | tail -n 1)"
done
[ "$failed" = 0 ] || { stamp "FAIL: a target found a problem in the correct cpu kernel"; exit 1; }

# From an EMPTY corpus: the seeds alone would kill it, and the point is that fuzzing finds it.
stamp "moe_layer_fuzzer must find mutant/z1-rsf-twice within ${kill_secs}s (empty corpus)"
kernel_tag=z1
t0=$SECONDS
if fuzz moe_layer_fuzzer mutant/z1-rsf-twice "$kill_secs" "$work/z1.log" ""; then
  tail -n 20 "$work/z1.log"; stamp "FAIL: mutant/z1-rsf-twice survived ${kill_secs}s of fuzzing"; exit 1
fi
grep -q 'CHECK FAILED' "$work/z1.log" || { tail -n 40 "$work/z1.log"; stamp "FAIL: the z1 run crashed without a finding"; exit 1; }
stamp "z1 found after $((SECONDS - t0))s: $(grep -m1 -o 'check: .*' "$work/z1.log")"
# The release build's CLI runs the campaigns; the test binary kills them at random times.
trials="$root/build/release/bin/reliability_signals_test"
[ -x "$trials" ] && [ -x "$root/build/release/bin/moefuzz" ] || scripts/build.sh release >/dev/null
filter='ReliabilityTest.CampaignSigkill*'
stamp "campaign SIGKILL trials ($filter)"
MOEFUZZ_FUZZ_BIN_DIR="$bin" "$trials" --gtest_filter="$filter" > "$work/campaign-sigkill.log" 2>&1 &&
  grep -q '^\[  PASSED  \] 1 test' "$work/campaign-sigkill.log" && ! grep -q 'SKIPPED' "$work/campaign-sigkill.log" ||
  { tail -n 60 "$work/campaign-sigkill.log"; stamp "FAIL: campaign SIGKILL trials"; exit 1; }
stamp "PASS"
