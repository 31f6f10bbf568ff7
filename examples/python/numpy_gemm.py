"""Grouped expert GEMMs (GEMM1 and GEMM2) in numpy, following the profile's precision contract.

`moefuzz check --kernel py:examples.python.numpy_gemm:gemm` composes them with moefuzz's routing,
quantization, activation and combine. Each expanded row r (token r // slots) multiplies its expert's weights:

    W4A4:  out = fl(alpha * acc),  alpha = fl(fl(1 / S_q(act)) * S_d(weight)),
           acc = sum over 16-blocks of sf_a * sf_w * sum(e2m1(a) * e2m1(w))   (exact terms, SPEC.md 3.2)
    W4A16: out = fl(alpha * acc),  alpha = S_d(weight),  acc = sum of bf16(x) * e2m1(w) * sf_w
    bf16 weights (case.weight_format == "bf16", W16A16): out = acc = sum of bf16(x) * bf16(w)
    MXFP4 weights (case.weight_format == "mxfp4", W4A16): out = acc = sum of bf16(x) * e2m1(w) * 2^(scale - 127)
plus the expert's bias on cases that carry them (expert_bias: y = fl(acc + b), before the rounding point),
then rounded to bf16 where the contract says. The sums are taken in float64 and rounded once to fp32: closer to
the exact value than an fp32 accumulation, which the contract's bound allows.
"""
from __future__ import annotations

import numpy as np

from moefuzz import formats

f32 = np.float32


def _decode_rows(codes, scales):
    """[.., K/2] codes and [.., K/16] E4M3 scales -> float64 [.., K] of e2m1(code) * e4m3(scale) (exact)."""
    vals = formats.e2m1_value(formats.unpack_fp4(codes)).astype(np.float64)
    sf = np.repeat(formats.e4m3_value(scales).astype(np.float64), 16, axis=-1)
    return vals * sf


def _decode_mx_rows(codes, scales):
    """[.., K/2] codes and [.., K/32] E8M0 scales -> float64 [.., K] (exact; the OCP decode: 0xFF = NaN)."""
    vals = formats.e2m1_value(formats.unpack_fp4(codes)).astype(np.float64)
    e = np.asarray(scales).astype(np.int64)
    sf = np.where(e == 255, np.nan, np.ldexp(1.0, e - 127))
    return vals * np.repeat(sf, 32, axis=-1)


def _act_dequant(scale_vec, expert):
    s = scale_vec[0] if scale_vec.shape[0] == 1 else scale_vec[expert]
    return f32(f32(1) / f32(s))


class NumpyGemm:
    name = "numpy-gemm"
    profile = "sglang-cutlass-fp4"
    description = "numpy grouped GEMM1 / GEMM2 on decoded NVFP4, bf16 or MXFP4 weights, float64 sums"
    tensors = "numpy"
    weight_formats = ("nvfp4", "bf16", "mxfp4")
    expert_bias = True

    def _matmul(self, case, topk_ids, a_codes, a_scales, weights, act_scale, bf16_after):
        """weights: [(NvFp4Weights, column offset, bias [E+S, N] or None)]; returns [R, N_total] float32."""
        ids = np.asarray(topk_ids).reshape(-1)
        w4a4 = a_scales is not None
        a = _decode_rows(a_codes, a_scales) if w4a4 else np.asarray(a_codes, dtype=np.float64)
        bf16_weights = case.weight_format == "bf16"  # weights are then float32 arrays [E+S, N, K]
        mx_weights = case.weight_format == "mxfp4"  # weights are then Mxfp4Weights
        n_total = sum((w.shape[1] if bf16_weights else w.codes.shape[1]) for w, _, _ in weights)
        out = np.zeros((ids.shape[0], n_total), dtype=f32)
        with np.errstate(over="ignore", invalid="ignore"):
            for e in np.unique(ids):
                rows = np.nonzero(ids == e)[0]
                a_d = _act_dequant(act_scale, e) if w4a4 else f32(1)
                for w, col, bias in weights:
                    if bf16_weights:
                        wd = np.asarray(w[e], dtype=np.float64)  # [N, K], exact
                        y = (a[rows] @ wd.T).astype(f32)
                    elif mx_weights:
                        wd = _decode_mx_rows(w.codes[e], w.scales[e])  # [N, K], exact
                        y = (a[rows] @ wd.T).astype(f32)
                    else:
                        wd = _decode_rows(w.codes[e], w.scales[e])  # [N, K]
                        acc = (a[rows] @ wd.T).astype(f32)
                        alpha = f32(a_d * f32(w.global_dequant[e]))
                        y = (alpha * acc).astype(f32)
                    if bias is not None:
                        y = (y + np.asarray(bias[e], dtype=f32)).astype(f32)
                    out[np.ix_(rows, np.arange(col, col + wd.shape[0]))] = y
        return formats.round_to_bf16(out) if bf16_after else out

    def gemm1(self, case, topk_ids, a_codes, a_scales):
        return self._matmul(case, topk_ids, a_codes, a_scales,
                            [(case.w_gate, 0, case.b_gate), (case.w_up, case.inter, case.b_up)],
                            case.a1_scale, case.contract["bf16_after_gemm1"])

    def gemm2(self, case, topk_ids, a_codes, a_scales):
        return self._matmul(case, topk_ids, a_codes, a_scales, [(case.w_down, 0, case.b_down)], case.a2_scale,
                            case.contract["bf16_after_gemm2"])


gemm = NumpyGemm()
