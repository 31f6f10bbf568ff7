"""The layouts and scale conventions real MoE backends expect, built from moefuzz's semantic case.

moefuzz hands a kernel semantic weights (separate gate / up / down, linear block scales, dequantization
global scales S_d, activation quantization scales S_q). Backends differ (SPEC.md 1.4, 1.8, 1.9, 3.1):

| helper                         | gives                                                         | used by |
|--------------------------------|---------------------------------------------------------------|---------|
| w13(case, "gate_up")           | codes [E+S, 2I, H/2], scales [E+S, 2I, H/16], [gate; up]      | vLLM, SGLang Triton / cutlass_moe_fp4, DeepSeek |
| w13(case, "up_gate")           | the same with [up; gate]                                      | FlashInfer / TRT-LLM CUTLASS, trtllm-gen |
| w13(case, "interleaved")       | rows 2i = gate row i, 2i+1 = up row i (MXFP4 too)             | gpt-oss checkpoints, triton_kernels matmul_ogs |
| w13_bias(case, order)          | gate and up biases [E+S, 2I] in the same order (expert_bias)  | gpt-oss b1 |
| swizzle_128x4(scales)          | 128x4-swizzled block scales (rows padded to 128, cols to 4)   | CUTLASS / FlashInfer GEMMs |
| linear_from_128x4(sw, m, kb)   | the inverse                                                   | vLLM convert_swizzled_to_linear |
| modelopt_scales(case)          | weight_scale_2 = S_d, input_scale = 1/S_q per projection      | ModelOpt checkpoints, SGLang/vLLM loaders |
| gemm_alphas(case)              | g1_alphas = input_scale * w13 weight_scale_2 = 1/(S_a*S_w) ...| CUTLASS / trtllm epilogues |
| dequantize(w)                  | float32 values e2m1(code) * fl(e4m3(scale) * S_d)             | reference layers (W4A16) |

Every helper takes and returns the case's tensor type (torch or numpy).

Example:
    codes, scales = moefuzz.layouts.w13(case, "up_gate")
    sf = moefuzz.layouts.swizzle_128x4(scales)
"""
from __future__ import annotations

import numpy as np

from . import formats


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _cat(xs, dim):
    if _is_torch(xs[0]):
        import torch

        return torch.cat(xs, dim=dim)
    return np.concatenate(xs, axis=dim)


def _interleave_rows(a, b):
    """[E, N, ...] and [E, N, ...] -> [E, 2N, ...] with row 2i from a and row 2i + 1 from b."""
    if _is_torch(a):
        import torch

        out = torch.stack([a, b], dim=2)
    else:
        out = np.stack([a, b], axis=2)
    return out.reshape((a.shape[0], 2 * a.shape[1]) + tuple(a.shape[2:]))


def _w13_pair(gate, up, order: str):
    if order == "gate_up":
        return _cat([gate, up], 1)
    if order == "up_gate":
        return _cat([up, gate], 1)
    if order == "interleaved":
        return _interleave_rows(gate, up)
    raise ValueError("order must be 'gate_up', 'up_gate' or 'interleaved'")


def w13(case, order: str = "gate_up"):
    """Stacked w13 codes and scales ([E+S, 2I, ...]) of NVFP4 or MXFP4 weights in the given order: "gate_up",
    "up_gate" or "interleaved" (gpt-oss: row 2i gate, row 2i + 1 up; matmul_ogs's fused SwiGLU reads it so)."""
    return (_w13_pair(case.w_gate.codes, case.w_up.codes, order),
            _w13_pair(case.w_gate.scales, case.w_up.scales, order))


def w13_bias(case, order: str = "gate_up"):
    """The gate and up expert biases ([E+S, 2I], recipe expert_bias) in the order of w13(case, order)."""
    if case.b_gate is None:
        raise ValueError("the case has no expert biases (expert_bias)")
    return _w13_pair(case.b_gate, case.b_up, order)


def swizzle_128x4(scales):
    """[..., M, Kb] linear block scales -> flat 128x4-swizzled layout per leading index (SPEC.md 1.8): rows
    padded to a multiple of 128, columns to a multiple of 4, padding 0. Returns [..., Mp * Kbp]."""
    torch_in = _is_torch(scales)
    if torch_in:
        import torch

        dev, dtype = scales.device, scales.dtype
        a = scales.view(torch.uint8).cpu().numpy()
    else:
        a = np.asarray(scales)
    *lead, m, kb = a.shape
    mp, kbp = -(-m // 128) * 128, -(-kb // 4) * 4
    pad = np.zeros(tuple(lead) + (mp, kbp), dtype=a.dtype)
    pad[..., :m, :kb] = a
    n = len(lead)
    t = pad.reshape(tuple(lead) + (mp // 128, 4, 32, kbp // 4, 4))
    t = t.transpose(tuple(range(n)) + (n + 0, n + 3, n + 2, n + 1, n + 4))
    out = np.ascontiguousarray(t).reshape(tuple(lead) + (mp * kbp,))
    if torch_in:
        return torch.from_numpy(out).to(dev).view(dtype)
    return out


def linear_from_128x4(swizzled, m: int, kb: int):
    """Inverse of swizzle_128x4 for one [M, Kb] matrix per leading index."""
    torch_in = _is_torch(swizzled)
    if torch_in:
        import torch

        dev, dtype = swizzled.device, swizzled.dtype
        a = swizzled.view(torch.uint8).cpu().numpy()
    else:
        a = np.asarray(swizzled)
    *lead, _ = a.shape
    mp, kbp = -(-m // 128) * 128, -(-kb // 4) * 4
    n = len(lead)
    t = a.reshape(tuple(lead) + (mp // 128, kbp // 4, 32, 4, 4))
    t = t.transpose(tuple(range(n)) + (n + 0, n + 3, n + 2, n + 1, n + 4))
    out = np.ascontiguousarray(t).reshape(tuple(lead) + (mp, kbp))[..., :m, :kb]
    out = np.ascontiguousarray(out)
    if torch_in:
        return torch.from_numpy(out).to(dev).view(dtype)
    return out


def dequantize(w):
    """float32 values of NvFp4Weights w: e2m1(code) * fl(e4m3(scale) * S_d), shape [E+S, N, K] (SPEC.md 1.7)."""
    if _is_torch(w.codes):
        import torch

        dev = w.codes.device
        codes = w.codes.cpu().numpy()
        scales = w.scales.view(torch.uint8).cpu().numpy()
        g = w.global_dequant.cpu().numpy()
        return torch.from_numpy(_dequantize_np(codes, scales, g)).to(dev)
    return _dequantize_np(w.codes, w.scales, w.global_dequant)


def _dequantize_np(codes, scales, g):
    vals = formats.e2m1_value(formats.unpack_fp4(codes))  # [E, N, K]
    block = (formats.e4m3_value(scales) * g.astype(np.float32)[:, None, None]).astype(np.float32)  # fl(sf * S_d)
    return (vals * np.repeat(block, 16, axis=-1)).astype(np.float32)


def modelopt_scales(case) -> dict:
    """ModelOpt checkpoint scalars per expert (dequantization convention, SPEC.md 1.4 / 1.9):
    {"w13_weight_scale_2": S_d of gate (w1), "w2_weight_scale_2": S_d of down,
     "w13_input_scale": 1/S_q(a1), "w2_input_scale": 1/S_q(a2)} as float32 tensors."""
    return {
        "w13_weight_scale_2": case.w_gate.global_dequant,
        "w2_weight_scale_2": case.w_down.global_dequant,
        "w13_input_scale": 1.0 / case.a1_scale,
        "w2_input_scale": 1.0 / case.a2_scale,
    }


def gemm_alphas(case) -> dict:
    """GEMM epilogue alphas of CUTLASS / trtllm paths: g1_alphas = 1/(S_q(a1) * S_q(w13)) = w13_input_scale *
    w13_weight_scale_2, g2_alphas likewise for FC2, as float32 per expert (SPEC.md 1.9)."""
    s = modelopt_scales(case)
    return {"g1_alphas": s["w13_input_scale"] * s["w13_weight_scale_2"],
            "g2_alphas": s["w2_input_scale"] * s["w2_weight_scale_2"]}


def ids_as(ids, dtype: str):
    """topk_ids as "int32" or "int64" in the same tensor type."""
    if _is_torch(ids):
        import torch

        return ids.to(torch.int32 if dtype == "int32" else torch.int64)
    return np.asarray(ids).astype(np.int32 if dtype == "int32" else np.int64)
