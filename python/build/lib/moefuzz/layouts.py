"""The layouts and scale conventions real MoE backends expect, built from moefuzz's semantic case.

moefuzz hands a kernel semantic weights (separate gate / up / down, linear block scales, dequantization
global scales S_d, activation quantization scales S_q). Backends differ (SPEC.md 1.4, 1.8, 1.9, 3.1):

| helper                         | gives                                                         | used by |
|--------------------------------|---------------------------------------------------------------|---------|
| w13(case, "gate_up")           | codes [E+S, 2I, H/2], scales [E+S, 2I, H/16], [gate; up]      | vLLM, SGLang Triton / cutlass_moe_fp4, DeepSeek |
| w13(case, "up_gate")           | the same with [up; gate]                                      | FlashInfer / TRT-LLM CUTLASS, trtllm-gen |
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


def w13(case, order: str = "gate_up"):
    """Stacked w13 codes and scales in the given half order ("gate_up" or "up_gate")."""
    if order not in ("gate_up", "up_gate"):
        raise ValueError("order must be 'gate_up' or 'up_gate'")
    first, second = (case.w_gate, case.w_up) if order == "gate_up" else (case.w_up, case.w_gate)
    return _cat([first.codes, second.codes], 1), _cat([first.scales, second.scales], 1)


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
