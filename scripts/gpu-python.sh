#!/usr/bin/env bash
# The Python bridge on a GPU host (docs/python.md, docs/gpu.md): the torch and Triton examples, the CUDA fault
# classes, the Triton FP8 dot probe (tests/python/triton_fp8_dot_probe.py), and real upstream MoE kernels
# (examples/python/upstream: sglang and flashinfer installed from their wheels with pip --no-deps). Writes one log and one JSON summary per check,
# and summary.txt, under OUT_DIR (default build/gpu-python). scripts/gpu-host.sh python runs it.
#   Usage: scripts/gpu-python.sh MOEFUZZ_BIN [SECONDS_PER_CHECK] [SEED] [OUT_DIR]
#   Before: pip install --target DIR the wheels of docs/python.md ("Upstream kernels") and put DIR on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bin=${1:?usage: scripts/gpu-python.sh MOEFUZZ_BIN [SECONDS] [SEED] [OUT_DIR]}
secs=${2:-30}
seed=${3:-1}
out=${4:-build/gpu-python}
mkdir -p "$out"
export MOEFUZZ_PYTHONPATH=$PWD/python MOEFUZZ_BRIDGE_STATS=1

check() {  # NAME EXPECTED_EXIT ARGS...
  local name=$1 want=$2
  shift 2
  "$bin" check --seed "$seed" --out "$out/findings-$name" --json "$out/$name.json" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local verdict=ok
  [ "$rc" = "$want" ] || verdict="UNEXPECTED (wanted exit $want)"
  printf '%-34s exit %s  %s  %s\n' "$name" "$rc" "$verdict" \
    "$(grep -m1 -oE '[0-9]+ cases in [0-9.]+s' "$out/$name.log")" >>"$out/summary.txt"
}

: >"$out/summary.txt"
python3 -c 'import sys, torch, triton, numpy; print("python", sys.version.split()[0], "torch", torch.__version__,
  "triton", triton.__version__, "numpy", numpy.__version__, "gpu", torch.cuda.get_device_name(0))' >>"$out/summary.txt" 2>&1

# What this GPU's e4m3 tl.dot keeps (the fp8_mma_accum_bits of the Triton and DeepGEMM profiles, docs/gpu.md).
(cd tests/python && python3 triton_fp8_dot_probe.py) >"$out/triton_fp8_dot_probe.json" 2>&1
echo "triton fp8 dot probe: $(tr -d '\n ' <"$out/triton_fp8_dot_probe.json" | cut -c1-160)" >>"$out/summary.txt"

# Our examples (three in parallel: the GPU is shared, the oracle runs on the CPU cores).
check torch_moe 0 --kernel py:examples.python.torch_moe:layer --time "$secs" &
check triton_routing 0 --kernel py:examples.python.triton_routing:route --time "$secs" &
check triton_combine 0 --kernel py:examples.python.triton_combine:combine --time "$secs" &
wait
check seed_scenario 1 --kernel py:examples.python.seed_scenario:layer --time 10 &
for f in device_assert illegal_address cuda_oom; do
  check "fault_$f" 1 --kernel "py:examples.python.faulty_cuda:$f" --cases 3 --invariants ORACLE,REPEAT &
done
wait

# Real upstream kernels (skipped, and said so, where the package is missing).
for spec in sglang_biased_grouped_topk:kernel sglang_biased_grouped_topk:cutlass_fp4 \
            sglang_fused_topk_deepseek:kernel sglang_fused_topk_native:kernel sglang_moe_sum_reduce:kernel \
            sglang_fused_experts_bf16:kernel sglang_fused_experts_fp8:kernel \
            flashinfer_fused_topk_deepseek:kernel flashinfer_fp4_quantize:kernel; do
  name="upstream_${spec/:/_}"
  check "$name" 0 --kernel "py:examples.python.upstream.$spec" --time "$secs" &
  while [ "$(jobs -r | wc -l)" -ge 4 ]; do sleep 1; done
done
# FlashInfer's fp4_quantize declines sm < 100 in its adapter (it writes nothing there); forced, moefuzz must see it.
MOEFUZZ_UPSTREAM_FP4_ANY_ARCH=1 check upstream_flashinfer_fp4_quantize_forced 1 \
  --kernel py:examples.python.upstream.flashinfer_fp4_quantize:kernel --cases 20 &
wait

# Every upstream finding: shrink its first case and replay the result (the record docs/gpu.md keeps).
for f in "$out"/findings-upstream_*/finding-001-*.moefuzz; do
  [ -e "$f" ] || continue
  name=$(basename "$(dirname "$f")")
  kernel=$(sed -n 's/^# kernel: //p' "$f" | head -n 1)
  forced=0
  [[ $name == *fp4_quantize_forced ]] && forced=1
  MOEFUZZ_UPSTREAM_FP4_ANY_ARCH=$forced "$bin" shrink "$f" --kernel "$kernel" -o "$out/$name.shrunk.moefuzz" \
    >"$out/$name.shrink.log" 2>&1
  MOEFUZZ_UPSTREAM_FP4_ANY_ARCH=$forced "$bin" replay "$out/$name.shrunk.moefuzz" --kernel "$kernel" \
    >>"$out/$name.shrink.log" 2>&1
  echo "$name: shrunk $(grep -m1 'after:' "$out/$name.shrink.log")" >>"$out/summary.txt"
done

# Bridge cost beside the built-in kernel, same seed and cases (CPU only, quiet cores).
for k in cpu py:examples.python.numpy_stages:stages; do
  "$bin" check -j 1 --kernel "$k" --cases 300 --seed 11 --out "$out/bench" 2>&1 | grep -E 'python bridge|cases in' \
    >>"$out/summary.txt"
done
cat "$out/summary.txt"
