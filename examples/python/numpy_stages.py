"""Routing, SiLU*mul and combine stages written in numpy, following the claimed profile's contract.

A correct reference: `moefuzz check --kernel py:examples.python.numpy_stages:stages` passes (moefuzz's own
pipeline computes the quantization and the GEMMs in between). It is also the base of the Python mutants in
examples/python/mutants.py, and it runs wherever numpy does (CI has no torch).

Semantics (SPEC.md 2.1-2.5, 3.3, 3.6), in fp32 like production kernels:
  route      scores (softmax / sigmoid + correction bias with group selection / hash table), top-k by value
             with the lower index winning ties, renormalize with the profile's epsilon, x rsf when the
             contract puts it in top-k, fused shared experts E+j with weight 1/rsf (x rsf in top-k)
  activation gate * sigmoid(alpha * gate) * (clamp(up) + beta), rounded to bf16 where the contract says
  combine    sum over slots of y * w in the contract's accumulation, x rsf when top-k did not apply it
"""
from __future__ import annotations

import numpy as np

from moefuzz import formats

f32 = np.float32


def _softmax(x: np.ndarray) -> np.ndarray:
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp((x - m).astype(f32))
    return (e * (f32(1) / np.sum(e, axis=-1, keepdims=True, dtype=f32))).astype(f32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (f32(1) / (f32(1) + np.exp(-x))).astype(f32)


def _sqrt_softplus(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.sqrt(np.maximum(x, f32(0)) + np.log1p(np.exp(-np.abs(x)))).astype(f32)


def _top(values: np.ndarray, excluded: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values: excluded never first, NaN below -inf, lower index wins ties."""
    idx = np.arange(values.shape[0])
    nan = np.isnan(values)
    key = np.where(nan, f32(0), -values)
    return np.lexsort((idx, key, nan, excluded))[:k]


class NumpyStages:
    name = "numpy-stages"
    profile = "sglang-cutlass-fp4"
    description = "numpy routing, SiLU*mul and combine that follow the claimed profile"
    tensors = "numpy"

    # ---- route ----------------------------------------------------------------------------------------
    def scores(self, case, x: np.ndarray) -> np.ndarray:
        if case.routing_mode == "softmax" or (case.routing_mode == "hash" and case.hash_score == "softmax"):
            return _softmax(x)
        if case.routing_mode == "sigmoid_grouped" or case.hash_score == "sigmoid":
            return _sigmoid(x)
        return _sqrt_softplus(x)

    def select(self, case, t: int, score: np.ndarray) -> np.ndarray:
        E, k = case.experts, case.top_k
        if case.routing_mode == "hash":
            return np.asarray(case.hash_table[case.token_ids[t]], dtype=np.int64)
        excluded = np.zeros(E, dtype=bool)
        sel = score
        if case.routing_mode == "sigmoid_grouped":
            if case.correction_bias:
                sel = (score + case.e_score_correction_bias).astype(f32)
            groups, per = case.n_group, E // case.n_group
            if groups > 1:
                g = np.where(np.isnan(sel), -np.inf, sel).astype(f32).reshape(groups, per)
                top2 = np.sort(g, axis=1)[:, ::-1]
                gscore = (top2[:, 0] + top2[:, 1]).astype(f32) if case.correction_bias and per >= 2 else top2[:, 0]
                keep = _top(gscore, np.zeros(groups, dtype=bool), case.topk_group)
                excluded = np.ones(groups, dtype=bool)
                excluded[keep] = False
                excluded = np.repeat(excluded, per)
        return _top(sel, excluded, k)

    def normalize(self, case, w: np.ndarray) -> np.ndarray:
        if not case.renormalize:
            return w
        denom = f32(np.sum(w, dtype=f32) + f32(case.contract["renorm_epsilon"]))
        return np.zeros_like(w) if denom == 0 else (w / denom).astype(f32)

    def scale(self, case, w: np.ndarray) -> np.ndarray:
        return (w * f32(case.routed_scaling_factor_f32)).astype(f32) if case.rsf_in_topk else w

    def routed_weights(self, case, w: np.ndarray) -> np.ndarray:
        return self.scale(case, self.normalize(case, w))

    def route(self, case):
        T, E, k, slots = case.tokens, case.experts, case.top_k, case.slots
        rsf = f32(case.routed_scaling_factor_f32)
        ids = np.zeros((T, slots), dtype=np.int32)
        weights = np.zeros((T, slots), dtype=f32)
        for t in range(T):
            score = self.scores(case, case.router_logits[t])
            sel = self.select(case, t, score)
            ids[t, :k] = sel
            weights[t, :k] = self.routed_weights(case, score[sel].astype(f32))
            for j in range(slots - k):  # fused shared experts (SPEC.md 2.4)
                ids[t, k + j] = E + j
                sw = f32(1)
                if case.contract["shared_fused_weight_inv_rsf"]:
                    sw = f32(f32(1) / rsf)
                    if case.rsf_in_topk:
                        sw = f32(sw * rsf)
                weights[t, k + j] = sw
        if case.contract["routing_weight_dtype"] == "bf16":
            weights = formats.round_to_bf16(weights)
        return ids, weights

    # ---- activation -----------------------------------------------------------------------------------
    def activation(self, case, gemm1_out):
        I = case.inter
        gate, up = gemm1_out[:, :I], gemm1_out[:, I:]
        L = f32(case.swiglu_limit)
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isinf(L) and case.swiglu_alpha == 1.0 and case.swiglu_beta == 0.0:
                v = (gate / (f32(1) + np.exp(-gate))).astype(f32) * up
            else:
                g = np.minimum(gate, L)
                lin = np.maximum(np.minimum(up, L), -L)
                sig = (f32(1) / (f32(1) + np.exp(-(f32(case.swiglu_alpha) * g)))).astype(f32)
                v = (g * sig).astype(f32) * (lin + f32(case.swiglu_beta)).astype(f32)
        v = v.astype(f32)
        return formats.round_to_bf16(v) if case.contract["bf16_after_activation"] else v

    # ---- combine --------------------------------------------------------------------------------------
    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        T, S, H = case.tokens, case.slots, case.hidden
        y = gemm2_out.reshape(T, S, H)
        mode = case.contract["combine"]
        acc = np.zeros((T, H), dtype=f32)
        with np.errstate(over="ignore", invalid="ignore"):
            for s in range(S):
                w = topk_weights[:, s:s + 1].astype(f32)
                if mode == "bf16_products":
                    term = formats.round_to_bf16((y[:, s, :] * formats.round_to_bf16(w)).astype(f32))
                elif mode in ("bf16_atomics", "bf16_epilogue_products"):
                    term = formats.round_to_bf16((w * y[:, s, :]).astype(f32))
                else:
                    term = (w * y[:, s, :]).astype(f32)
                acc = (acc + term).astype(f32)
                if mode == "bf16_atomics":
                    acc = formats.round_to_bf16(acc)
            if not case.rsf_in_topk:
                acc = (acc * f32(case.routed_scaling_factor_f32)).astype(f32)
        return formats.round_to_bf16(acc) if case.contract["bf16_output"] else acc


stages = NumpyStages()
