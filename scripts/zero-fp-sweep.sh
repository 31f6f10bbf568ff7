#!/usr/bin/env bash
# Zero-false-positive sweep: many `moefuzz check` processes in parallel on correct kernels, each with
# its own seed, every cheap invariant, then one summary (cases, findings by signature, per-invariant
# pass/fail/skip/vacuous and the largest error/bound of a passing verdict) per kernel. Used for the
# >= 10^5-cases-per-kernel measurement recorded in docs/oracle.md (run on a many-core host; on the
# device host the `cuda` kernel's processes are spread over the GPUs through CUDA_VISIBLE_DEVICES).
#
#   scripts/zero-fp-sweep.sh MOEFUZZ_BIN OUT_DIR "KERNEL:PROCS ..." SECONDS [SEED0] [SHAPES] [INVARIANTS]
#   e.g. scripts/zero-fp-sweep.sh build/release/bin/moefuzz /tmp/zfp "cpu:10 cpu-trtllm:10" 300 5000
# INVARIANTS is moefuzz check's --invariants (default "all": every cheap invariant); the large tier
# (the expensive invariants) is swept with "DRIFT,OVF", e.g.
#   scripts/zero-fp-sweep.sh build/release/bin/moefuzz /tmp/zfp-large \
#       "cpu:5 cpu-flashinfer:5 cpu-trtllm:5" 3600 9000 small DRIFT,OVF
# Env: GPUS (number of GPUs for `cuda`/`cuda-*` kernels, default 1); CHECK_ARGS (more `moefuzz check`
# options for every process, e.g. CHECK_ARGS="--weight-format mxfp4" sweeps one weight format).
# Writes OUT_DIR/summary.txt (also printed) and OUT_DIR/<kernel>.<i>.{log,json}; a finding's case and
# report land in OUT_DIR/findings/<kernel>.<i>/ (moefuzz check --out). Exit 1 if anything failed.
set -uo pipefail
bin=${1:?moefuzz binary}; out=${2:?output dir}; grid=${3:?"KERNEL:PROCS ..."}; secs=${4:?seconds per process}
seed0=${5:-1}; shapes=${6:-small}; invariants=${7:-all}; gpus=${GPUS:-1}
read -r -a check_args <<<"${CHECK_ARGS:-}"
mkdir -p "$out/findings"
pids=(); seed=$seed0; gpu=0
for cell in $grid; do
  kernel=${cell%%:*}; procs=${cell##*:}
  for ((i = 0; i < procs; i++)); do
    env_gpu=()
    if [[ $kernel == cuda* ]]; then env_gpu=(CUDA_VISIBLE_DEVICES=$((gpu % gpus))); gpu=$((gpu + 1)); fi
    # --time bounds the sampling; `timeout` only guards a hang (a finding is written when it happens).
    ( env "${env_gpu[@]}" timeout $((secs + 120)) "$bin" check -j 1 --kernel "$kernel" --time "$secs" --seed "$seed" \
        --shapes "$shapes" --invariants "$invariants" "${check_args[@]}" --out "$out/findings/$kernel.$i" --json "$out/$kernel.$i.json" \
        >"$out/$kernel.$i.log" 2>&1; echo "rc=$?" >>"$out/$kernel.$i.log" ) &
    pids+=($!); seed=$((seed + 1))
  done
done
for p in "${pids[@]}"; do wait "$p"; done
python3 - "$out" "$grid" "$seed0" "$secs" "$shapes" "$invariants" <<'EOF' | tee "$out/summary.txt"
import collections, glob, json, os, re, sys
out, grid, seed0, secs, shapes, invariants = sys.argv[1:7]
bad = 0
print(f"zero-fp sweep: grid '{grid}', {secs} s per process, seeds from {seed0}, shapes {shapes}, "
      f"invariants {invariants}, check options '{os.environ.get('CHECK_ARGS', '')}'")
for cell in grid.split():
    kernel, procs = cell.split(":")
    cases = uns = 0; fails = collections.Counter(); missing = []; rcs = collections.Counter()
    tal = collections.defaultdict(lambda: [0, 0, 0, 0, 0.0, 0])
    for i in range(int(procs)):
        log = f"{out}/{kernel}.{i}.log"
        m = re.findall(r"rc=(\d+)", open(log).read()) if os.path.exists(log) else []
        rcs[m[-1] if m else "?"] += 1
        p = f"{out}/{kernel}.{i}.json"
        if not os.path.exists(p): missing.append(i); continue
        j = json.load(open(p)); cases += j.get("cases", 0); uns += j.get("unsupported", 0)
        for f in j.get("findings", []): fails[f.get("signature")] += f.get("occurrences", 1)
        for code, t in j.get("invariants", {}).items():
            a = tal[code]; a[0] += t.get("pass", 0); a[1] += t.get("fail", 0); a[2] += t.get("skip", 0); a[3] += t.get("vacuous", 0)
            a[4] = max(a[4], t.get("max_ratio", 0.0)); a[5] += t.get("not_evaluated", 0)
    ok = not fails and not missing and set(rcs) <= {"0"}
    bad |= not ok
    print(f"{kernel}: {cases} cases checked by {procs} processes ({uns} drawn outside the domain), "
          f"findings {dict(fails) or 'none'}, exit codes {dict(rcs)}, missing json {missing or 'none'} -> {'CLEAN' if ok else 'FAILED'}")
    for code in sorted(tal):
        a = tal[code]
        # not-eval: a case the --time deadline ended before this invariant ran (not a verdict)
        print(f"  {code:8s} pass {a[0]:7d} fail {a[1]:4d} skip {a[2]:7d} vacuous {a[3]:5d} not-eval {a[5]:4d} "
              f"max err/bound (pass) {a[4]:.3g}")
sys.exit(1 if bad else 0)
EOF
