"""What a Python kernel receives: one MoE layer invocation (moefuzz.Case) in the tensor type and on the
device the kernel asked for. docs/python.md lists every field.

Example (a routing stage):
    def route(self, case):
        logits = case.router_logits                      # [T, E] float32
        w, ids = torch.topk(torch.softmax(logits, -1), case.top_k)
        if case.renormalize: w = w / w.sum(-1, keepdim=True)
        if case.rsf_in_topk: w = w * case.routed_scaling_factor_f32
        return ids.to(torch.int32), w
"""
from __future__ import annotations

import numpy as np

from . import formats


class NvFp4Weights:
    """One projection of every expert, stacked: codes [E+S, N, K/2] (uint8, two E2M1 codes a byte, low nibble
    = even column), scales [E+S, N, K/16] (E4M3: torch.float8_e4m3fn, or uint8 bits in numpy) in the linear
    layout, and global_dequant [E+S] float32 (S_d: value = e2m1(code) * fl(e4m3(scale) * S_d))."""

    def __init__(self, codes, scales, global_dequant):
        self.codes = codes
        self.scales = scales
        self.global_dequant = global_dequant

    def __repr__(self):
        return f"NvFp4Weights(codes={tuple(self.codes.shape)}, scales={tuple(self.scales.shape)})"


class Mxfp4Weights:
    """One MXFP4 projection of every expert, stacked (weight_format "mxfp4", gpt-oss's checkpoint layout): codes
    [E+S, N, K/2] (uint8, two E2M1 codes a byte, low nibble = even column, like gpt-oss *.blocks) and scales
    [E+S, N, K/32] (uint8 E8M0 bytes, like *.scales): value = e2m1(code) * 2^(scale - 127), scale 0xFF = NaN."""

    def __init__(self, codes, scales):
        self.codes = codes
        self.scales = scales

    def __repr__(self):
        return f"Mxfp4Weights(codes={tuple(self.codes.shape)}, scales={tuple(self.scales.shape)})"


class Fp8BlockWeights:
    """One FP8 block-scaled projection of every expert, stacked (weight_format "fp8_block", the DeepSeek-V3 FP8
    checkpoint layout): codes [E+S, N, K] (E4M3: torch.float8_e4m3fn, or uint8 bits in numpy) and scales
    [E+S, ceil(N/128), ceil(K/128)] float32, one per 128x128 block, a MULTIPLIER (`weight_scale_inv`):
    value = e4m3(code) * scale[n // 128, k // 128]."""

    def __init__(self, codes, scales):
        self.codes = codes
        self.scales = scales

    def __repr__(self):
        return f"Fp8BlockWeights(codes={tuple(self.codes.shape)}, scales={tuple(self.scales.shape)})"


class TensorConverter:
    """Turns wire arrays (numpy views of the received bytes) into the kernel's tensors: numpy arrays (bf16 as
    float32 values) or torch tensors on `device`. Each is a copy, made once per content (the worker caches it):
    the received bytes stay untouched, so a kernel that writes its inputs in place is caught."""

    def __init__(self, kind: str, device: str):
        self.kind = kind
        self.device = device
        if kind == "torch":
            import torch

            self.torch = torch

    def __call__(self, wire_dtype: str, arr: np.ndarray):
        arr = arr.copy()
        if self.kind == "numpy":
            if wire_dtype == "bf16":
                return formats.bf16_bits_to_float(arr)
            return arr
        torch = self.torch
        if wire_dtype == "bf16":
            t = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
        elif wire_dtype == "e4m3":
            t = torch.from_numpy(arr).view(torch.float8_e4m3fn)
        else:
            t = torch.from_numpy(arr)
        return t.to(self.device) if self.device != "cpu" else t


_CONFIG_FIELDS = (
    "profile", "recipe_profile", "tokens", "hidden", "inter", "experts", "top_k", "n_group", "topk_group",
    "shared_experts", "slots", "hash_vocab", "routing_mode", "hash_score", "renormalize", "correction_bias",
    "routed_scaling_factor", "routed_scaling_factor_f32", "rsf_in_topk", "shared_fusion", "act_format", "weight_format",
    "fp8_scales",
    "act_scales", "swiglu_limit", "swiglu_alpha", "swiglu_beta", "tactic", "contract",
)


class Case:
    """One layer invocation. Configuration fields are plain Python values; tensors are the kernel's type.

    `renormalize` is what the kernel must do (hash routing always normalizes non-softmax scores).
    `contract` is the claimed profile's fields (w13_order, rsf_in_topk, routing_weight_dtype, renorm_epsilon,
    bf16_after_gemm1 / _activation / _gemm2, bf16_output, combine, ...), as `moefuzz list` shows them.

    Inputs: hidden_states [T, H] (torch.bfloat16, or float32 values in numpy with the bits in
    hidden_states_bits), router_logits [T, E] float32, e_score_correction_bias [E] or None (used for selection when
    the flag correction_bias is set), token_ids [T] int32 or None,
    hash_table [vocab, k] int32 or None, a1_scale / a2_scale float32 [1] or [E+S] (activation global
    QUANTIZATION scales S_q). Weights (semantic, routed experts 0..E-1 then shared E..E+S-1): w_gate, w_up
    [E+S, I, H] and w_down [E+S, H, I] as NvFp4Weights, or, when weight_format is "bf16" (a kernel that lists
    "bf16" in its weight_formats), as bf16 tensors of those shapes (torch.bfloat16, or float32 values in numpy),
    or, when it is "mxfp4" (a kernel that lists "mxfp4"), as Mxfp4Weights, or, when it is "fp8_block" (a kernel
    that lists "fp8_block"; act_format is then "fp8_group": the kernel quantizes its activations per token and
    128 columns itself), as Fp8BlockWeights. Expert biases (recipe expert_bias, gpt-oss's b1 and b2; a kernel
    that sets expert_bias = True): b_gate, b_up [E+S, I] and b_down [E+S, H] float32 (bf16 values), added to each
    GEMM's fp32 accumulator before its rounding point (b_down before the routing weight); None otherwise.
    `device` is where torch tensors live.
    """

    def __init__(self, config: dict, inputs: dict, weights: dict, convert: TensorConverter, hidden_bits=None):
        """inputs / weights: {name: tensor already converted by `convert`}; hidden_bits: the bf16 bits."""
        for f in _CONFIG_FIELDS:
            setattr(self, f, config.get(f))
        if self.swiglu_limit is None:
            self.swiglu_limit = float("inf")
        self.device = convert.device
        self.tensors = convert.kind
        get = lambda d, name: d.get(name)  # noqa: E731
        self.hidden_states = get(inputs, "hidden_states")
        self.hidden_states_bits = hidden_bits
        self.router_logits = get(inputs, "router_logits")
        self.e_score_correction_bias = get(inputs, "e_score_correction_bias")
        self.token_ids = get(inputs, "token_ids")
        self.hash_table = get(inputs, "hash_table")
        self.a1_scale = get(inputs, "a1_scale")
        self.a2_scale = get(inputs, "a2_scale")
        self.w_gate = self.w_up = self.w_down = None
        for proj in ("w_gate", "w_up", "w_down"):
            if proj + ".codes" in weights:
                setattr(self, proj, NvFp4Weights(get(weights, proj + ".codes"), get(weights, proj + ".scales"),
                                                 get(weights, proj + ".global_dequant")))
            elif proj + ".fp8_codes" in weights:
                setattr(self, proj, Fp8BlockWeights(get(weights, proj + ".fp8_codes"), get(weights, proj + ".fp8_scales")))
            elif proj + ".mx_codes" in weights:
                setattr(self, proj, Mxfp4Weights(get(weights, proj + ".mx_codes"), get(weights, proj + ".mx_scales")))
            elif proj in weights:
                setattr(self, proj, get(weights, proj))
        # Expert biases (recipe expert_bias; None otherwise): float32 holding bf16 values.
        self.b_gate = get(weights, "b_gate")
        self.b_up = get(weights, "b_up")
        self.b_down = get(weights, "b_down")

    @property
    def total_experts(self) -> int:
        return self.experts + self.shared_experts

    def __repr__(self):
        return (f"Case(T={self.tokens}, H={self.hidden}, I={self.inter}, E={self.experts}, k={self.top_k}, "
                f"routing={self.routing_mode}, rsf={self.routed_scaling_factor}, profile={self.profile})")
