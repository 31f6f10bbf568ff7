"""What Triton's e4m3 `tl.dot` keeps on this GPU: the accumulator model behind `fp8_mma_accum_bits`.

The `sglang-triton` and `vllm` profiles bound their FP8 GEMMs with a tensor-core model (docs/oracle.md, "FP8
block-scaled GEMM" (a)): each step adds up to 32 products and its accumulator, aligned to the largest addend and
truncated to f bits below that addend's leading bit (f = kHopperFp8MmaAccumBits, core/fp8_accum_bits.h). The C++ probe
(tests/gpu/fp8_mma_probe_test.cpp) measures one `mma.sync` e4m3; Triton on Hopper emits `wgmma` for a 64-row tile,
which this probe measures through `tl.dot` itself, the instruction the upstream Triton MoE kernels run.

Each row of one 64 x 64 tile is an experiment (B is constant along N, so every column of a row holds the same
sum): a large product 2^16 beside a small one 2^(16-j) in the same 32-product step or in a later one, or the
large value in the fp32 accumulator operand instead. `bits_kept` is the largest j for which 2^16 + 2^(16-j) comes
out exact for every j' <= j (the small addend's leading bit survives alignment); `dropped` says how a lost
negative addend is rounded (toward zero or toward -inf).

    python tests/python/triton_fp8_dot_probe.py      # prints the measurement as JSON (needs a GPU, torch, Triton)

tests/python/test_gpu_kernels.py asserts that the device keeps at least the bits the profiles assume.
"""
from __future__ import annotations

import json

BIG_EXP = 16  # the large product 2^16 = a 2^8 times b 2^8 (both exact in e4m3)
MAX_J = 25    # 2^(16-25) = 2^-9, the smallest e4m3 subnormal (times b = 1)


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def dot_tile(a_ptr, b_ptr, c_ptr, out_ptr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
        m = tl.arange(0, BM)
        n = tl.arange(0, BN)
        k = tl.arange(0, K)
        a = tl.load(a_ptr + m[:, None] * K + k[None, :])
        b = tl.load(b_ptr + k[:, None] * BN + n[None, :])
        c = tl.load(c_ptr + m[:, None] * BN + n[None, :])
        acc = tl.dot(a, b, c)
        tl.store(out_ptr + m[:, None] * BN + n[None, :], acc)

    return dot_tile


def measure(device="cuda"):
    import torch

    kernel = _kernel()
    BM = BN = 64
    rows = []  # (kind, j, k_small, sign, K)

    def run(experiments, K):
        a = torch.zeros(BM, K, dtype=torch.float32)
        b = torch.ones(K, BN, dtype=torch.float32)
        c = torch.zeros(BM, BN, dtype=torch.float32)
        b[0, :] = 2.0 ** 8  # the large product sits at k = 0: a[r, 0] 2^8 times b 2^8
        expected = []
        for r, (kind, j, k_small, sign) in enumerate(experiments):
            small = sign * 2.0 ** (BIG_EXP - j)
            if kind == "products":
                a[r, 0] = 2.0 ** 8
                a[r, k_small] = small
            else:  # the large value is the accumulator operand
                c[r, :] = 2.0 ** BIG_EXP
                a[r, k_small] = small
            expected.append(2.0 ** BIG_EXP + small)
        a8 = a.to(torch.float8_e4m3fn).to(device)
        b8 = b.to(torch.float8_e4m3fn).to(device)
        assert torch.equal(a8.float().cpu(), a) and torch.equal(b8.float().cpu(), b), "probe operands not exact"
        out = torch.empty(BM, BN, dtype=torch.float32, device=device)
        compiled = kernel[(1,)](a8, b8.contiguous(), c.to(device), out, K=K, BM=BM, BN=BN, num_warps=4)
        got = out[:, 0].double().cpu().tolist()
        ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
        instr = "wgmma" if "wgmma" in ptx else ("mma.sync" if "mma.sync" in ptx else "unknown")
        return got[: len(experiments)], expected, instr

    # 1. Same step: the small product at k = 1 (same 32-product step as k = 0), j = 8..25, both signs.
    same = [("products", j, 1, s) for j in range(8, MAX_J + 1) for s in (1, -1)]
    got, exp, instr = run(same, 32)
    kept_products = _bits_kept(same, got, exp)
    dropped = _dropped_rounding(same, got, exp)
    # 2. The large value in the accumulator operand c, the small product anywhere in the step.
    acc = [("acc", j, 1, s) for j in range(8, MAX_J + 1) for s in (1, -1)]
    got_a, exp_a, _ = run(acc, 32)
    kept_acc = _bits_kept(acc, got_a, exp_a)
    # 3. Which K positions share the large product's step: j = 20 (lost inside one step if f < 20), the small
    #    product at k = 1, 15, 16, 31, 32, 63, 64, 127 of a K = 128 dot.
    positions = [1, 15, 16, 31, 32, 63, 64, 127]
    steps = [("products", 20, k, 1) for k in positions]
    got_s, exp_s, _ = run(steps, 128)
    exact_at = {k: g == e for k, g, e in zip(positions, got_s, exp_s)}
    return {
        "instruction": instr,
        "bits_kept_products": kept_products,
        "bits_kept_accumulator": kept_acc,
        "lost_negative_addend": dropped,
        "small_product_at_k_exact_j20": exact_at,
    }


def _bits_kept(experiments, got, expected):
    kept = 7  # j < 8 is not probed (the small product would exceed e4m3's 448)
    for j in range(8, MAX_J + 1):
        ok = all(g == e for (kind, jj, k, s), g, e in zip(experiments, got, expected) if jj == j)
        if not ok:
            break
        kept = j
    return kept


def _dropped_rounding(experiments, got, expected):
    for (kind, j, k, s), g, e in zip(experiments, got, expected):
        if s < 0 and g != e:
            return "toward zero" if g > e else "toward -inf"
    return "none lost"


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
