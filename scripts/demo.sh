#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds, then shows moefuzz at work:
#   1. `moefuzz check` on the default kernel (cpu) for about a minute, fixed seed;
#   2. `moefuzz mutants` (the kill matrix, short budget) with the upstream-style baseline checkers;
#   3. `moefuzz drift` for cpu against the Z13 mutant (bf16 combine accumulator), with a plot.
# Everything lands under build/demo/ (cleared at each run, so re-running is idempotent).
#
# Exit status: 0 when every step ran. A step that exits 1 found something (a finding, a kill matrix
# that is not green, a kernel that drifts): that is a result, not a demo failure, so it is reported
# in the summary and the demo goes on. The drift step is *expected* to exit 1 (the mutant drifts).
# Exit 2 (bad usage or input) or a crash of any step fails the demo.
# MOEFUZZ_DEMO_SECONDS (default 60) sets the check budget.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
bin=build/release/bin/moefuzz
demo=build/demo
seconds="${MOEFUZZ_DEMO_SECONDS:-60}"
rm -rf "$demo"
mkdir -p "$demo"

declare -a summary=()
# Runs one step; exit 0/1 are results, anything else stops the demo.
step() {
  local title="$1"
  shift
  echo
  echo "== $title"
  echo "\$ $*"
  local rc=0
  "$@" || rc=$?
  if [[ $rc -gt 1 ]]; then
    echo "demo: '$title' failed with exit $rc" >&2
    exit "$rc"
  fi
  summary+=("$title: exit $rc$([[ $rc -eq 1 ]] && echo ' (found something: see above)' || echo ' (all held)')")
}

echo "== moefuzz list"
"$bin" list

step "check: cpu kernel, ${seconds}s, seed 1" \
  "$bin" check --kernel cpu --time "$seconds" --seed 1 --out "$demo/check" --json "$demo/check-summary.json"
step "mutants: kill matrix (3 s per mutant) with baseline checkers" \
  "$bin" mutants --time 3 --correct-cases 10 --baselines --json "$demo/kill-matrix.json"
step "drift: cpu vs mutant/z13-bf16-truncated-combine over 64 layers (the mutant is expected to FAIL)" \
  "$bin" drift --kernel cpu --kernel mutant/z13-bf16-truncated-combine --layers 64 --out "$demo/drift"

echo
echo "== summary"
for line in "${summary[@]}"; do echo "  $line"; done
echo "  check summary (JSON):   $demo/check-summary.json"
if compgen -G "$demo/check/*.txt" >/dev/null; then
  echo "  check findings:         $demo/check/ (each .txt report ends with a REPRO line)"
fi
echo "  kill matrix (JSON):     $demo/kill-matrix.json"
echo "  drift data:             $demo/drift/drift.csv"
[[ -f "$demo/drift/drift.svg" ]] && echo "  drift plot:             $demo/drift/drift.svg"
echo "  user guide:             docs/checking.md"
exit 0
