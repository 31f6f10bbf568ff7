#!/usr/bin/env bash
# moefuzz on a machine with NVIDIA GPUs: the `cuda` kernel's tests, checks, fuzz campaigns and
# benchmarks, the device-memory plugin examples and the Python/GPU examples, one command each
# (docs/gpu.md). Run it from the repository root of a checkout.
#
#   scripts/gpu-host.sh [--build DIR] [--out DIR] COMMAND [ARGS]
#
# --build DIR (default build/release): a release-preset build tree made on this host
#   (`scripts/gpu-host.sh build`), or a folder made by `scripts/gpu-host.sh pack` on another machine
#   for a GPU host without moefuzz's build dependencies (same bin/ and lib/ layout).
# --out DIR (default build/gpu-host): logs, JSON summaries and findings, one folder per command.
#
# Commands (exit 0 when everything passed, 1 when something failed, 2 on bad usage):
#   build                      configure and build the release preset here (scripts/build.sh)
#   pack DEST [FUZZ_BUILD]     copy the stripped binaries of --build (CLI, GPU tests, benchmarks,
#                              example plugins) and the shared libraries a bare image may lack into
#                              DEST; FUZZ_BUILD (a fuzz-gpu preset build, e.g. build/fuzz-gpu) adds its
#                              libFuzzer targets as DEST/fuzz/
#   info                       the GPUs, and the CUDA kernels moefuzz sees (`moefuzz list`)
#   tests [--no-large]         every GPU test (ctest label gpu), with the tiers past 2^31 elements
#                              (MOEFUZZ_GPU_LARGE=1, ~7 GB of device memory) unless --no-large; a
#                              test that skips for lack of a GPU is a failure here
#   check [GRID] [SECONDS] [SEED0]
#                              the zero-false-positive sweep (scripts/zero-fp-sweep.sh): one
#                              `moefuzz check` per process, GRID "KERNEL:PROCS ..." (default
#                              "cuda:8"), `cuda` processes spread over the GPUs; default 300 s, seed 1000
#   sanitize [FILE...]         `moefuzz replay --kernel cuda --sanitize` (compute-sanitizer memcheck and
#                              racecheck) on recipe files (default: a small DeepSeek-V3-style seed of
#                              corpora/moe_layer_fuzzer)
#   fuzz [SECONDS] [GRID]      `moefuzz campaign` per cell of GRID "KERNEL:WORKERS[:TARGET] ..." (default
#                              "cuda:4", target moe_layer), side by side, with the libFuzzer targets of
#                              DIR/fuzz (pack) or build/fuzz-gpu/bin (the fuzz-gpu preset)
#   plugins [SECONDS]          the device-memory plugin examples: their GPU test, `moefuzz check` on
#                              both example plugins and on `cuda` (default 25 s each), the faulty ones
#   bench [FILTER]             moefuzz_cuda_bench, and the M-shape CPU kernel and oracle benchmarks of
#                              moefuzz_bench (the cost split of a GPU check; the oracle with its GEMM
#                              dots on the CPU and on the GPU); FILTER: a --benchmark_filter
#   soundness [CASES] [SHARDS] the oracle's bound-soundness sweep (CPU) sharded over processes
#                              (default 100000 cases, nproc shards)
#   python [SECONDS] [SEED]    scripts/gpu-python.sh: the torch/Triton examples and upstream kernels
#   all                        info, tests, check (120 s), sanitize, plugins, bench, in that order
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
die() { echo "scripts/gpu-host.sh: $*" >&2; exit 2; }

build=build/release out=build/gpu-host
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=${2:?--build DIR}; shift 2 ;;
    --out) out=${2:?--out DIR}; shift 2 ;;
    -h | --help) usage ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || usage
cmd=$1
shift
[[ $build == /* ]] || build=$PWD/$build
bin=$build/bin
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin  # compute-sanitizer, nvidia-smi on CUDA images

need() {  # FILE...: the binaries a command runs
  for f in "$@"; do [[ -x $f ]] || die "$f not found: build it (scripts/gpu-host.sh build) or pass --build DIR"; done
}
gpu_count() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }
logdir() { mkdir -p "$out/$1" && echo "$out/$1"; }
stamp() { echo "== $* ($(date -u +%FT%TZ))"; }

cmd_build() {
  scripts/build.sh release || return 1
  build/release/bin/moefuzz list | grep -q '^ *cuda ' ||
    { echo "build/release has no CUDA kernels: nvcc was not found (cmake/Cuda.cmake)"; return 1; }
}

cmd_pack() {
  local dest=${1:?usage: pack DEST [FUZZ_BUILD]} fuzz=${2:-}
  need "$bin/moefuzz"
  rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib" || return 1
  local f
  for f in "$bin"/moefuzz "$bin"/gpu_*_test "$bin"/moefuzz_cuda_bench "$bin"/moefuzz_bench \
           "$bin"/oracles_bounds_soundness_test; do
    [[ -x $f ]] && strip -o "$dest/bin/$(basename "$f")" "$f"
  done
  for f in "$build"/lib/*.so; do strip --strip-unneeded -o "$dest/lib/$(basename "$f")" "$f"; done
  if [[ -n $fuzz ]]; then
    mkdir -p "$dest/fuzz"
    for f in "$fuzz"/bin/*_fuzzer; do strip -o "$dest/fuzz/$(basename "$f")" "$f"; done
  fi
  # Shared libraries of ours that a CUDA image without the build dependencies lacks (the CUDA
  # runtime is linked statically; glibc and libstdc++ are everywhere).
  ldd "$dest"/bin/* 2>/dev/null | awk '/lib(fmt|benchmark|gtest|rapidcheck)/ {print $3}' | sort -u |
    while read -r lib; do cp -L "$lib" "$dest/lib/"; done
  du -sh "$dest"
}

cmd_info() {
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU"
  echo "$(nproc) CPU cores"
  need "$bin/moefuzz"
  "$bin/moefuzz" list | grep -E '^ *cuda' || { echo "moefuzz lists no cuda kernel: a build without nvcc"; return 1; }
}

cmd_tests() {
  local large=1 d t rc=0 n=0
  [[ ${1:-} == --no-large ]] && large=0
  d=$(logdir tests)
  [[ $(gpu_count) -gt 0 ]] || { echo "tests: no GPU (nvidia-smi -L lists none)"; return 1; }
  for t in "$bin"/gpu_*_test; do
    [[ -x $t ]] || continue
    n=$((n + 1))
    stamp "$(basename "$t")"
    MOEFUZZ_GPU_LARGE=$large "$t" >"$d/$(basename "$t").log" 2>&1 || rc=1
    grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]|^\[cuda|no CUDA GPU' "$d/$(basename "$t").log"
    if grep -q 'no CUDA GPU present\|built without nvcc' "$d/$(basename "$t").log"; then
      echo "$(basename "$t"): skipped for lack of a GPU or of CUDA in the build"
      rc=1
    fi
  done
  [[ $n -gt 0 ]] || { echo "tests: no gpu_*_test in $bin"; return 1; }
  return $rc
}

cmd_check() {
  local grid=${1:-cuda:8} secs=${2:-300} seed0=${3:-1000} d
  need "$bin/moefuzz"
  d=$(logdir check)
  GPUS=$(($(gpu_count) > 0 ? $(gpu_count) : 1)) scripts/zero-fp-sweep.sh "$bin/moefuzz" "$d" "$grid" "$secs" "$seed0"
}

cmd_sanitize() {
  local files=("$@") f rc=0 d
  # Default: the small DeepSeek-V3-style seed (fuzz/make_corpora.sh); model-size layers take long under memcheck.
  [[ ${#files[@]} -gt 0 ]] || files=(corpora/moe_layer_fuzzer/076fa8a940c7ef65a29a064850d8a729ee29d704)
  need "$bin/moefuzz"
  d=$(logdir sanitize)
  for f in "${files[@]}"; do
    stamp "$f"
    "$bin/moefuzz" replay "$f" --kernel cuda --sanitize >"$d/$(basename "$f").log" 2>&1 || rc=1
    grep -E 'replay --sanitize|ERROR SUMMARY|RACECHECK SUMMARY|unsupported|outside' "$d/$(basename "$f").log"
  done
  return $rc
}

cmd_fuzz() {
  local secs=${1:-300} grid=${2:-cuda:4} fz=$build/fuzz cell kernel workers target name d rc=0 pids=() names=()
  [[ -d $fz ]] || fz=$PWD/build/fuzz-gpu/bin
  need "$bin/moefuzz" "$fz/moe_layer_fuzzer"
  d=$(logdir fuzz)
  for cell in $grid; do  # KERNEL:WORKERS[:TARGET]
    IFS=: read -r kernel workers target <<<"$cell"
    target=${target:-moe_layer}
    name=${kernel//\//_}.$target
    names+=("$name")
    "$bin/moefuzz" campaign --target "$target" --kernel "$kernel" --bin-dir "$fz" --workers "${workers:-1}" \
      --time "$secs" --out "$d/$name" --json "$d/$name.json" >"$d/$name.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  for name in "${names[@]}"; do
    stamp "campaign $name"
    tail -n 8 "$d/$name.log"
  done
  return $rc
}

cmd_plugins() {
  local secs=${1:-25} d k rc=0 f
  need "$bin/moefuzz" "$bin/gpu_device_plugin_test"
  d=$(logdir plugins)
  stamp gpu_device_plugin_test
  "$bin/gpu_device_plugin_test" >"$d/gtest.log" 2>&1 || rc=1
  grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) *\]' "$d/gtest.log"
  for k in "$build/lib/libmoefuzz_cuda_layer.so" "$build/lib/libmoefuzz_device_combine.so" cuda; do
    stamp "check --kernel $k --time $secs"
    "$bin/moefuzz" check --kernel "$k" --time "$secs" --seed 21 --out "$d/findings-$(basename "$k" .so)" \
      --json "$d/$(basename "$k" .so).json" >"$d/$(basename "$k" .so).log" 2>&1 || rc=1
    grep -E 'cases in|finding' "$d/$(basename "$k" .so).log"
  done
  # Each faulty example must be a finding (exit 1) of its class (docs/plugins.md).
  for f in unwritten overhang input illegal; do
    stamp "faulty device plugin: $f"
    local only=()
    [[ $f == unwritten ]] && only=(--invariants CANARY)  # the poison is CANARY's to see
    "$bin/moefuzz" check --kernel "$build/lib/libmoefuzz_faulty_device_$f.so" --cases 1 --seed 5 "${only[@]}" \
      --out "$d/findings-faulty-$f" >"$d/faulty_$f.log" 2>&1
    local code=$?
    [[ $code == 1 ]] || { echo "expected exit 1 (a finding), got $code"; rc=1; }
    grep -m3 -iE 'CANARY|bad-result|device-error' "$d/faulty_$f.log"
  done
  return $rc
}

cmd_bench() {
  local filter=${1:-} d rc=0
  need "$bin/moefuzz_cuda_bench"
  d=$(logdir bench)
  "$bin/moefuzz_cuda_bench" ${filter:+--benchmark_filter="$filter"} --benchmark_out="$d/cuda_bench.json" \
    --benchmark_out_format=json | tee "$d/cuda_bench.txt" || rc=1
  if [[ -z $filter && -x $bin/moefuzz_bench ]]; then
    "$bin/moefuzz_bench" --benchmark_filter='BM_CpuLayer/M|BM_OracleLayer/M|BM_OracleDots/M' \
      --benchmark_out="$d/cpu_oracle_bench.json" --benchmark_out_format=json | tee "$d/cpu_oracle_bench.txt" || rc=1
  fi
  return $rc
}

cmd_soundness() {
  local cases=${1:-100000} shards=${2:-$(nproc)} d k rc=0 pids=()
  need "$bin/oracles_bounds_soundness_test"
  d=$(logdir soundness)
  for ((k = 0; k < shards; k++)); do
    MOEFUZZ_SOUNDNESS_CASES=$cases MOEFUZZ_SOUNDNESS_SHARD=$k/$shards "$bin/oracles_bounds_soundness_test" \
      >"$d/shard.$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  python3 - "$d" "$shards" <<'EOF'
import re, sys
d, n = sys.argv[1], int(sys.argv[2])
cases = elems = 0; worst = 0.0; hist = [0] * 6; dec = [0] * 13
for k in range(n):
    t = open(f"{d}/shard.{k}.log").read()
    m = re.search(r"soundness: (\d+) cases .*?, (\d+) output elements, max error/bound ([0-9.]+)", t)
    if m: cases += int(m[1]); elems += int(m[2]); worst = max(worst, float(m[3]))
    h = re.search(r"histogram: 0:(\d+) \(0,1e-3\]:(\d+) \(1e-3,1e-2\]:(\d+) \(1e-2,0.1\]:(\d+) \(0.1,0.5\]:(\d+) \(0.5,1\]:(\d+)", t)
    if h: hist = [a + int(b) for a, b in zip(hist, h.groups())]
    s = re.search(r"tightness decades:((?: \d+)+)", t)
    if s: dec = [a + int(b) for a, b in zip(dec, s[1].split())]
print(f"soundness: {cases} cases in {n} shards, {elems} output elements, max error/bound {worst}")
print("error/bound histogram 0 | (0,1e-3] | (1e-3,1e-2] | (1e-2,0.1] | (0.1,0.5] | (0.5,1]:", hist)
print("conditioned bound/|expected| decades 0 | <1e-8 | [1e-8,1e-7) ... [10,100) | >=100:", dec)
EOF
  return $rc
}

cmd_python() {
  need "$bin/moefuzz"
  scripts/gpu-python.sh "$bin/moefuzz" "${1:-40}" "${2:-1}" "$(logdir python)"
}

cmd_all() {
  local rc=0 step
  for step in info tests "check cuda:$((2 * $(gpu_count) > 0 ? 2 * $(gpu_count) : 1)) 120" sanitize plugins bench; do
    stamp "scripts/gpu-host.sh $step"
    # shellcheck disable=SC2086 # the step's words are its arguments
    cmd_$step || { echo "FAILED: $step"; rc=1; }
  done
  return $rc
}

case $cmd in
  build | pack | info | tests | check | sanitize | fuzz | plugins | bench | soundness | python | all) "cmd_$cmd" "$@" ;;
  *) die "unknown command '$cmd' (scripts/gpu-host.sh --help)" ;;
esac
exit $(($? == 0 ? 0 : 1))
