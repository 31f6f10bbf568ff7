"""A Triton combine (weighted sum-reduce) kernel that applies routed_scaling_factor, as the vLLM and SGLang
Triton runners do when the top-k does not (SPEC.md 2.3, 3.6): out = bf16(rsf * sum_s bf16(y_s * bf16(w_s))),
fp32 sum in slot order.

    moefuzz check --kernel py:examples.python.triton_combine:combine --time 20
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _sum_reduce(y, w, out, H, S: tl.constexpr, BLOCK_H: tl.constexpr, SCALE, APPLY_SCALE: tl.constexpr):
    t = tl.program_id(0)
    hb = tl.program_id(1)
    offs = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = offs < H
    acc = tl.zeros([BLOCK_H], dtype=tl.float32)
    for s in tl.static_range(S):
        ws = tl.load(w + t * S + s).to(tl.bfloat16).to(tl.float32)
        ys = tl.load(y + (t * S + s) * H + offs, mask=mask, other=0.0)
        acc += (ys * ws).to(tl.bfloat16).to(tl.float32)
    if APPLY_SCALE:
        acc = acc * SCALE
    tl.store(out + t * H + offs, acc.to(tl.bfloat16), mask=mask)


class TritonCombine:
    name = "triton-combine"
    profile = "vllm"
    description = "Triton weighted sum-reduce with routed_scaling_factor (bf16 products, fp32 slot-order sum)"
    tensors = "torch"
    device = "cuda"

    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        T, S, H = case.tokens, case.slots, case.hidden
        out = torch.empty(T, H, dtype=torch.bfloat16, device=gemm2_out.device)
        block = 128
        _sum_reduce[(T, triton.cdiv(H, block))](gemm2_out.contiguous(), topk_weights.contiguous(), out, H, S=S,
                                               BLOCK_H=block, SCALE=case.routed_scaling_factor_f32,
                                               APPLY_SCALE=not case.rsf_in_topk)
        return out


combine = TritonCombine()
