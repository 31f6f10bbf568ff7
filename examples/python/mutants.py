"""Python mutants: the numpy reference stages (numpy_stages.py) with one real bug each, from BUGZOO.md.
Each declares the invariants expected to kill it; the kill matrix runs them in CI:

    moefuzz mutants --mutant py:examples.python.mutants:rsf_twice --mutant py:examples.python.mutants:rsf_never ...
"""
from __future__ import annotations

import numpy as np

from examples.python.numpy_stages import NumpyStages, f32


class RsfTwice(NumpyStages):
    """Z1: the top-k fuses routed_scaling_factor and the sum-reduce applies it again (x rsf^2)."""
    name = "py-mutant/rsf-twice"
    expected_killers = ["SCALE1"]

    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        out = super().combine(case, gemm2_out, topk_ids, topk_weights)
        if case.rsf_in_topk:
            out = (out * f32(case.routed_scaling_factor_f32)).astype(f32)
        return out


class RsfNever(NumpyStages):
    """Z2: each side assumes the other applies routed_scaling_factor, so nobody does."""
    name = "py-mutant/rsf-never"
    expected_killers = ["SCALE1"]

    def scale(self, case, w):
        return w


class RenormIgnored(NumpyStages):
    """Z4-class: the renormalize flag is ignored (the weights are always renormalized)."""
    name = "py-mutant/renorm-ignored"
    expected_killers = ["ORACLE", "STRUCT", "SCALE1"]

    def normalize(self, case, w):
        denom = f32(np.sum(w, dtype=f32) + f32(case.contract["renorm_epsilon"]))
        return np.zeros_like(w) if denom == 0 else (w / denom).astype(f32)


class GateUpSwapped(NumpyStages):
    """Z-w13 class: SiLU applied to the up half (w13 read as [up; gate] under a [gate; up] contract)."""
    name = "py-mutant/gate-up-swapped"
    expected_killers = ["ORACLE", "PARAM"]

    def activation(self, case, gemm1_out):
        I = case.inter
        swapped = np.concatenate([gemm1_out[:, I:], gemm1_out[:, :I]], axis=1)
        return super().activation(case, swapped)


class WeightsDropped(NumpyStages):
    """WEIGHT1 class: the combine sums expert outputs without their routing weights."""
    name = "py-mutant/weights-dropped"
    expected_killers = ["WEIGHT1", "ORACLE", "SCALE1"]

    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        ones = np.where(np.isnan(topk_weights), topk_weights, f32(1)).astype(f32)
        return super().combine(case, gemm2_out, topk_ids, ones)


class BatchNormalized(NumpyStages):
    """BATCH class: the routing weights are divided by the batch's largest weight sum, so one token's output
    depends on the other tokens."""
    name = "py-mutant/batch-normalized"
    expected_killers = ["BATCH", "ORACLE", "STRUCT", "SCALE1"]

    def route(self, case):
        ids, w = super().route(case)
        sums = np.sum(w[:, :case.top_k], axis=1, dtype=f32)
        top = f32(np.max(sums)) if sums.size else f32(1)
        if case.tokens > 1 and np.isfinite(top) and top > 0:
            w[:, :case.top_k] = (w[:, :case.top_k] / top * sums[0]).astype(f32)
        return ids, w


rsf_twice = RsfTwice()
rsf_never = RsfNever()
renorm_ignored = RenormIgnored()
gate_up_swapped = GateUpSwapped()
weights_dropped = WeightsDropped()
batch_normalized = BatchNormalized()
