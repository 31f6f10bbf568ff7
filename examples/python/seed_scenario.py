"""The seed scenario of BUGZOO.md: routed_scaling_factor applied twice across two Python kernels.

A hash-routing top-k (DeepSeek-V4 hash layers, SGLang HashTopK with apply_routed_scaling_factor_on_output)
fuses routed_scaling_factor into the weights, and the expert runner's sum-reduce (SGLang moe_sum_reduce with
routed_scaling_factor) multiplies it again: every output is rsf^2 times the routed sum (x6.25 for rsf 2.5).
Each kernel passes its own unit test; the layer is wrong. The same class shipped in SGLang's Marlin NVFP4 path.

    moefuzz check --kernel py:examples.python.seed_scenario:layer --time 20     # exit 1, SCALE1: applied 2x

It is written in numpy so that it runs anywhere; the torch version reads the same.
"""
from __future__ import annotations

import numpy as np

f32 = np.float32


def bf16(x):
    u = np.asarray(x, dtype=f32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(f32)


def hash_topk(router_logits, token_ids, tid2eid, routed_scaling_factor, apply_routed_scaling_factor_on_output):
    """sqrt(softplus) scores, experts from the token-id table, weights renormalized (and x rsf if asked)."""
    x = router_logits.astype(f32)
    scores = np.sqrt(np.maximum(x, f32(0)) + np.log1p(np.exp(-np.abs(x)))).astype(f32)
    ids = tid2eid[token_ids].astype(np.int32)
    w = np.take_along_axis(scores, ids.astype(np.int64), axis=1)
    w = (w / (np.sum(w, axis=1, keepdims=True, dtype=f32) + f32(1e-20))).astype(f32)
    if apply_routed_scaling_factor_on_output:
        w = (w * f32(routed_scaling_factor)).astype(f32)
    return ids, w


def moe_sum_reduce(expert_out, topk_weights, routed_scaling_factor):
    """sum_k bf16(y_k * bf16(w_k)) in fp32, x routed_scaling_factor, to bf16."""
    acc = np.zeros(expert_out.shape[0:1] + expert_out.shape[2:], dtype=f32)
    for s in range(expert_out.shape[1]):
        acc = (acc + bf16(expert_out[:, s, :] * bf16(topk_weights[:, s:s + 1]))).astype(f32)
    return bf16(acc * f32(routed_scaling_factor))


class SeedScenario:
    name = "seed-scenario"
    profile = "sglang-cutlass-fp4"   # NVFP4 ModelOpt path: should_fuse_routed_scaling_factor_in_topk = True
    description = "hash top-k that fuses rsf + a sum-reduce that scales again (BUGZOO seed scenario)"
    tensors = "numpy"

    def supports(self, case):
        if case.routing_mode != "hash" or case.hash_score != "sqrt_softplus":
            return "hash routing with sqrt(softplus) scores only"
        if case.shared_fusion == "fused":
            return "no fused shared experts"
        return None

    def route(self, case):
        return hash_topk(case.router_logits, case.token_ids, case.hash_table, case.routed_scaling_factor_f32,
                         apply_routed_scaling_factor_on_output=True)

    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        y = gemm2_out.reshape(case.tokens, case.slots, case.hidden)
        return moe_sum_reduce(y, topk_weights, case.routed_scaling_factor_f32)


layer = SeedScenario()
