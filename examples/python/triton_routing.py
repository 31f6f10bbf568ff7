"""A Triton softmax top-k routing kernel (Mixtral / Qwen3-MoE style, SPEC.md 2.2): one program per token,
softmax in fp32, k rounds of argmax with the lower index winning ties, renormalization, and routed_scaling_factor
when the claimed profile fuses it into top-k.

    moefuzz check --kernel py:examples.python.triton_routing:route --time 20
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_topk(logits, ids_out, w_out, E: tl.constexpr, K: tl.constexpr, SLOTS: tl.constexpr,
                  BLOCK: tl.constexpr, RENORM: tl.constexpr, SCALE, EPS):
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    valid = offs < E
    x = tl.load(logits + t * E + offs, mask=valid, other=float("-inf"))
    m = tl.max(x, axis=0)
    p = tl.where(valid, tl.exp(x - m), 0.0)
    p = p / tl.sum(p, axis=0)
    avail = tl.where(valid, p, -1.0)  # probabilities are >= 0: -1 marks taken / padding
    total = 0.0
    for s in tl.static_range(K):
        best = tl.max(avail, axis=0)
        idx = tl.min(tl.where(avail == best, offs, BLOCK), axis=0)  # lower index wins ties
        tl.store(ids_out + t * SLOTS + s, idx)
        tl.store(w_out + t * SLOTS + s, best)
        total += best
        avail = tl.where(offs == idx, -1.0, avail)
    if RENORM:
        for s in tl.static_range(K):
            w = tl.load(w_out + t * SLOTS + s)
            tl.store(w_out + t * SLOTS + s, w / (total + EPS) * SCALE)
    else:
        for s in tl.static_range(K):
            w = tl.load(w_out + t * SLOTS + s)
            tl.store(w_out + t * SLOTS + s, w * SCALE)


class TritonSoftmaxTopK:
    name = "triton-softmax-topk"
    profile = "flashinfer-cutlass"
    description = "Triton softmax top-k, one program per token"
    tensors = "torch"
    device = "cuda"

    def supports(self, case):
        if case.routing_mode != "softmax":
            return "softmax routing only"
        if case.slots != case.top_k:
            return "no fused shared experts"
        if case.experts > 4096:
            return "at most 4096 experts (one block per token)"
        return None

    def route(self, case):
        T, E, k = case.tokens, case.experts, case.top_k
        ids = torch.empty(T, k, dtype=torch.int32, device=case.router_logits.device)
        w = torch.empty(T, k, dtype=torch.float32, device=case.router_logits.device)
        scale = case.routed_scaling_factor_f32 if case.rsf_in_topk else 1.0
        _softmax_topk[(T,)](case.router_logits, ids, w, E=E, K=k, SLOTS=k, BLOCK=triton.next_power_of_2(E),
                            RENORM=bool(case.renormalize), SCALE=scale, EPS=case.contract["renorm_epsilon"])
        return ids, w


route = TritonSoftmaxTopK()
