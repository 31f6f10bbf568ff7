"""SGLang's torch DeepSeek router, `biased_grouped_topk_impl`, as a moefuzz route stage.

Upstream: PyPI `sglang` 0.5.10.post1 (installed with --no-deps at run time; never vendored),
function `sglang.srt.layers.moe.topk.biased_grouped_topk_impl`, which the package decorates with
`torch.compile(dynamic=True, backend=get_compiler_backend())` (inductor on CUDA). SGLang runs it
on CUDA when FlashInfer's fused_topk_deepseek and sgl_kernel's moe_fused_gate do not apply
(e.g. a non-power-of-two expert count) and on every platform without those kernels.

Call: biased_grouped_topk_impl(hidden_states, router_logits, correction_bias, topk,
renormalize, num_expert_group, topk_group, num_fused_shared_experts, routed_scaling_factor,
apply_routed_scaling_factor_on_output) -> (topk_weights fp32 [T,k], topk_ids int32 [T,k]).

Flags: apply_routed_scaling_factor_on_output = case.rsf_in_topk, i.e.
* `kernel` claims `sglang-triton`: apply=False (SGLang's Triton runner scales in moe_sum_reduce);
* `cutlass_fp4` claims `sglang-cutlass-fp4`: apply=True (ModelOptNvFp4FusedMoEMethod fuses rsf).
Known upstream behaviour the adapters do NOT hide: with renormalize=False the function never
multiplies rsf even when apply=True (docs/profiles.md, route_02/route_16).

Declined: routing modes other than sigmoid_grouped; no correction bias (SGLang then uses
grouped_topk with softmax scores); more than one fused shared expert (SGLang draws the shared
slot's id with torch.randint among them).
"""

from __future__ import annotations

from . import _case, _sglang

_topk = _sglang.topk()  # ImportError with an install hint when sglang is absent


class SGLangBiasedGroupedTopK:
    description = "SGLang biased_grouped_topk_impl (torch.compile) DeepSeek sigmoid grouped top-k"
    tensors = "torch"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def __init__(self, profile: str, name: str):
        self.profile = profile
        self.name = name
        self.upstream = f"sglang {_sglang.version()} sglang.srt.layers.moe.topk.biased_grouped_topk_impl"

    def supports(self, case):
        mode = case.routing_mode
        if mode != "sigmoid_grouped":
            return f"biased_grouped_topk_impl implements sigmoid grouped routing only (case: {mode})"
        if not _case.uses_correction_bias(case):
            return ("SGLang routes grouped top-k without a correction bias through grouped_topk "
                    "(softmax scores), not biased_grouped_topk_impl")
        if _case.fused_shared(case) > 1:
            return ("SGLang gives the fused shared slot a random id among several shared experts "
                    "(torch.randint); only one fused shared expert is deterministic")
        return None

    def route(self, case):
        import torch

        logits = case.router_logits
        bias = _case.correction_bias(case)
        top_k = int(case.top_k)
        shared = _case.fused_shared(case)
        with torch.no_grad():
            weights, ids = _topk.biased_grouped_topk_impl(
                logits,  # hidden_states: used only for its token count
                logits,
                bias,
                top_k + shared,
                bool(case.renormalize),
                int(case.n_group),
                int(case.topk_group),
                num_fused_shared_experts=shared,
                routed_scaling_factor=float(case.routed_scaling_factor),
                apply_routed_scaling_factor_on_output=bool(case.rsf_in_topk),
            )
        return ids, weights


kernel = SGLangBiasedGroupedTopK("sglang-triton", "sglang-biased-grouped-topk")
cutlass_fp4 = SGLangBiasedGroupedTopK("sglang-cutlass-fp4", "sglang-biased-grouped-topk-fp4")
