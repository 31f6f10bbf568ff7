"""SGLang's Triton combine, `moe_sum_reduce_triton`, as a moefuzz combine stage.

Upstream: PyPI `sglang` 0.5.10.post1 (--no-deps at run time), function
`sglang.srt.layers.moe.fused_moe_triton.fused_moe_triton_kernels.moe_sum_reduce_triton(input
[T,k,H] bf16, output [T,H] bf16, routed_scaling_factor)`: fp32 sum over the k slots in slot
order, times routed_scaling_factor, one rounding to bf16. The SGLang Triton runner
(moe_runner/triton.py, CUDA) uses it when more than 32 tokens are reduced, unless k == 1 or
k == 2 with rsf == 1 (written directly / torch.add); at <= 32 tokens it uses
moe_sum_reduce_torch_compile (torch.sum into a bf16 output, then out.mul_(rsf)), which this
adapter does not cover (its module imports the server; see UPSTREAM notes).

Flags: routed_scaling_factor = case's rsf when not case.rsf_in_topk, else 1.0 (SGLang's runner
passes the runner config's rsf only where top-k did not fuse it). Claims `sglang-triton`.
The per-slot products bf16(fp32(y) * w) are formed here with torch because SGLang forms them in
the GEMM2 epilogue of fused_moe_kernel (MUL_ROUTED_WEIGHT), not in moe_sum_reduce: that is the
profile's kBf16EpilogueProducts rounding; the upstream kernel under test is the reduction.
Pitfall: routed_scaling_factor is a tl.constexpr, so every distinct rsf value compiles a new
Triton kernel (about a second each): campaigns with many rsf values pay that per value.
Declined: non-CUDA devices (Triton).
"""

from __future__ import annotations

from . import _case, _sglang

_kernels = _sglang.triton_kernels()


class SGLangMoeSumReduce:
    name = "sglang-moe-sum-reduce-triton"
    profile = "sglang-triton"
    description = "SGLang moe_sum_reduce_triton (Triton): fp32 slot sum x rsf -> bf16"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def supports(self, case):
        if _case.cuda_capability(self.device) is None:
            return "moe_sum_reduce_triton is a Triton kernel and needs a CUDA device"
        return None

    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        import torch

        t, slots = topk_ids.shape
        h = gemm2_out.shape[-1]
        dev = torch.device(self.device)
        y = gemm2_out.to(dev, torch.float32).reshape(t, slots, h)
        w = topk_weights.to(dev, torch.float32).reshape(t, slots, 1)
        products = (y * w).to(torch.bfloat16).contiguous()  # GEMM2 epilogue rounding (see above)
        out = torch.empty((t, h), dtype=torch.bfloat16, device=dev)
        rsf = 1.0 if bool(case.rsf_in_topk) else float(case.routed_scaling_factor)
        _kernels.moe_sum_reduce_triton(products, out, rsf)
        return out.to(torch.float32)


kernel = SGLangMoeSumReduce()
