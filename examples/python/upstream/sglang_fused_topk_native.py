"""SGLang's torch softmax top-k, `fused_topk_torch_native`, as a moefuzz route stage.

Upstream: PyPI `sglang` 0.5.10.post1 (--no-deps at run time), function
`sglang.srt.layers.moe.topk.fused_topk_torch_native(hidden_states, gating_output, topk,
renormalize, correction_bias=None, scoring_func="softmax")` -> (fp32 weights, ids): softmax over
fp32 logits, torch.topk, optional w/sum (no epsilon). SGLang uses it as `fused_topk_native`
(select_experts with torch_native=True, the path without sgl_kernel's topk_softmax).

Claims `sglang-triton` (softmax routing never multiplies rsf in top-k; the Triton runner
applies it in moe_sum_reduce). torch.topk breaks ties in an unspecified order while the profile
says lower index wins: exact ties are a profile question, not a kernel bug.
Declined: routing modes other than softmax; fused shared experts (this function has no slot).
"""

from __future__ import annotations

from . import _case, _sglang

_topk = _sglang.topk()


class SGLangFusedTopKNative:
    name = "sglang-fused-topk-native"
    profile = "sglang-triton"
    description = "SGLang fused_topk_torch_native softmax top-k (torch)"
    tensors = "torch"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def supports(self, case):
        mode = case.routing_mode
        if mode != "softmax":
            return f"fused_topk_torch_native is the softmax top-k (case: {mode})"
        if _case.fused_shared(case):
            return "fused_topk_torch_native has no fused shared-expert slot"
        return None

    def route(self, case):
        import torch

        logits = case.router_logits
        with torch.no_grad():
            weights, ids = _topk.fused_topk_torch_native(
                logits,  # hidden_states: used only for its token count
                logits,
                int(case.top_k),
                bool(case.renormalize),
            )
        return ids, weights


kernel = SGLangFusedTopKNative()
