"""FlashInfer's DeepSeek-V3 router kernel, `fused_topk_deepseek`, called directly (route stage).

Upstream: PyPI `flashinfer-python` 0.6.7.post3 (--no-deps; needs `apache-tvm-ffi` and nvcc on
the GPU host: the CUDA source csrc/fused_moe/noAuxTcKernels.cu is JIT-compiled on first use into
~/.cache/flashinfer). Function `flashinfer.fused_moe.fused_topk_deepseek(scores, bias, n_group,
topk_group, topk, routed_scaling_factor, topk_values, topk_indices, launch_with_pdl=True)`;
outputs are written in place (fp32 weights, int32 ids). Supported compute capabilities per its
decorator: 89, 90, 100, 103, 120, 121.

Claims `flashinfer-cutlass`: rsf inside the weights (routed_scaling_factor = case's rsf),
weights = s*rsf/(sum+1e-20), tanh sigmoid, lower index wins (SPEC.md 2.1). The kernel has no
renormalize flag: it always normalizes, so renormalize=False cases are declined.
Declined: modes other than sigmoid_grouped, no bias, fused shared experts, non-CUDA devices,
and shapes outside the kernel's checked limits (top_k <= 8, <= 32 experts per group,
<= 128 experts in the selected groups; <= 384 experts with one group).
"""

from __future__ import annotations

from . import _case, _loader

_loader.require("flashinfer-python", "flashinfer", "flashinfer-python==0.6.7.post3 apache-tvm-ffi")

from flashinfer.fused_moe import fused_topk_deepseek as _fused_topk_deepseek  # noqa: E402


class FlashInferFusedTopKDeepSeek:
    name = "flashinfer-fused-topk-deepseek"
    profile = "flashinfer-cutlass"
    description = "FlashInfer fused_topk_deepseek (NoAuxTc CUDA kernel, JIT)"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def supports(self, case):
        cap = _case.cuda_capability(self.device)
        if cap is None:
            return "fused_topk_deepseek needs a CUDA device"
        if cap[0] * 10 + cap[1] not in (89, 90, 100, 103, 120, 121):
            return f"fused_topk_deepseek supports compute capability 89/90/100/103/120/121, not {cap}"
        if case.routing_mode != "sigmoid_grouped":
            return "fused_topk_deepseek implements sigmoid grouped routing only"
        if not _case.uses_correction_bias(case):
            return "fused_topk_deepseek always adds a correction bias"
        if not bool(case.renormalize):
            return "fused_topk_deepseek always renormalizes (it has no renormalize argument)"
        if _case.fused_shared(case):
            return "fused_topk_deepseek has no fused shared-expert slot"
        e = int(case.experts)
        k = int(case.top_k)
        g = int(case.n_group)
        tg = int(case.topk_group)
        if k > 8 or tg > g or tg * g < k:
            return f"top_k={k}, n_group={g}, topk_group={tg} outside the kernel's limits"
        if g > 1 and (e / g > 32 or e / g * tg > 128):
            return "more than 32 experts per group or 128 in the selected groups"
        if g == 1 and e > 384:
            return "more than 384 experts with one group"
        return None

    def route(self, case):
        import torch

        logits = case.router_logits.to(torch.float32)
        bias = _case.correction_bias(case).to(torch.float32)
        t = logits.shape[0]
        k = int(case.top_k)
        weights = torch.empty((t, k), dtype=torch.float32, device=logits.device)
        ids = torch.empty((t, k), dtype=torch.int32, device=logits.device)
        _fused_topk_deepseek(
            logits,
            bias,
            int(case.n_group),
            int(case.topk_group),
            k,
            float(case.routed_scaling_factor),
            weights,
            ids,
        )
        return ids, weights


kernel = FlashInferFusedTopKDeepSeek()
