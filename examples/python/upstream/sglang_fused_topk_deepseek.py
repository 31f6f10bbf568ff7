"""SGLang's CUDA DeepSeek router dispatch, `biased_grouped_topk_gpu`, as a moefuzz route stage.

Upstream: PyPI `sglang` 0.5.10.post1 + `flashinfer-python` 0.6.7.post3 (the version that sglang
pins), both installed with --no-deps at run time. Function
`sglang.srt.layers.moe.topk.biased_grouped_topk_gpu`; on CUDA, for the shapes FlashInfer accepts,
it calls FlashInfer's `fused_topk_deepseek` (CUDA kernel `NoAuxTc`, csrc/fused_moe/noAuxTcKernels.cu,
JIT-compiled with nvcc on first use) with `scaling_factor = routed_scaling_factor if
apply_routed_scaling_factor_on_output else 1.0` and `renormalize` passed positionally as
FlashInfer's 9th argument (launch_with_pdl): the kernel always renormalizes.

Flags: apply_routed_scaling_factor_on_output = case.rsf_in_topk:
* `kernel` claims `sglang-triton` (apply=False: rsf applied later by moe_sum_reduce);
* `cutlass_fp4` claims `sglang-cutlass-fp4` (apply=True: rsf fused in the top-k weights).
What the adapter does NOT hide: renormalize=False still returns renormalized weights; the
kernel's sigmoid is 0.5*tanh(0.5x)+0.5 and its sum has +1e-20 (SPEC.md 2.1), which differs from
the sglang-triton profile's fields (renorm epsilon 0) in the underflow corner.

Declined (SGLang would take sgl_kernel's moe_fused_gate, which is not installed): expert count
not a power of two, top_k > 8, topk_group > n_group or topk_group*n_group < top_k, more than 32
experts per group or more than 128 experts in the selected groups (n_group > 1), more than 384
experts (n_group == 1), any fused shared expert; non-CUDA devices; modes other than
sigmoid_grouped with a correction bias.
"""

from __future__ import annotations

from . import _case, _loader, _sglang

_loader.require("flashinfer-python", "flashinfer", "flashinfer-python==0.6.7.post3 apache-tvm-ffi")
_topk = _sglang.topk()


def _power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


class SGLangFusedTopKDeepSeek:
    description = "SGLang biased_grouped_topk_gpu -> FlashInfer fused_topk_deepseek (NoAuxTc CUDA kernel)"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def __init__(self, profile: str, name: str):
        self.profile = profile
        self.name = name

    def supports(self, case):
        if not getattr(_topk, "_is_cuda", False) or getattr(_topk, "fused_topk_deepseek", None) is None:
            return ("SGLang takes the FlashInfer kernel only on CUDA with flashinfer importable "
                    "(topk.fused_topk_deepseek is None here)")
        if case.routing_mode != "sigmoid_grouped":
            return "fused_topk_deepseek implements sigmoid grouped routing only"
        if not _case.uses_correction_bias(case):
            return "SGLang calls biased_grouped_topk only with a correction bias"
        if _case.fused_shared(case):
            return "SGLang sends fused shared experts to sgl_kernel moe_fused_gate (not installed)"
        e = int(case.experts)
        k = int(case.top_k)
        g = int(case.n_group)
        tg = int(case.topk_group)
        if not _power_of_two(e):
            return f"experts={e} is not a power of two: SGLang uses moe_fused_gate / the torch path"
        if k > 8 or tg > g or tg * g < k:
            return f"top_k={k}, n_group={g}, topk_group={tg} outside FlashInfer's NoAuxTc limits"
        per_group = e // g
        if g > 1 and (per_group > 32 or per_group * tg > 128):
            return f"{per_group} experts per group x {tg} groups outside NoAuxTc limits (<=32, <=128)"
        if g == 1 and e > 384:
            return f"experts={e} > 384 with one group: outside NoAuxTc limits"
        return None

    def route(self, case):
        import torch

        logits = case.router_logits
        bias = _case.correction_bias(case)
        with torch.no_grad():
            weights, ids = _topk.biased_grouped_topk_gpu(
                logits,
                logits,
                bias.to(torch.float32),  # must match the logits' dtype (fp32 here)
                int(case.top_k),
                bool(case.renormalize),
                int(case.n_group),
                int(case.topk_group),
                num_fused_shared_experts=0,
                routed_scaling_factor=float(case.routed_scaling_factor),
                apply_routed_scaling_factor_on_output=bool(case.rsf_in_topk),
            )
        return ids, weights


kernel = SGLangFusedTopKDeepSeek("sglang-triton", "sglang-fused-topk-deepseek")
cutlass_fp4 = SGLangFusedTopKDeepSeek("sglang-cutlass-fp4", "sglang-fused-topk-deepseek-fp4")
