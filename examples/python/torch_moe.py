"""A PyTorch MoE layer written the way inference engines write it (top-k, grouped GEMMs on dequantized NVFP4
weights, SiLU*mul, weighted sum-reduce), checked stage by stage against moefuzz's exact oracle.

    moefuzz check --kernel py:examples.python.torch_moe:layer --time 20         # exit 0: no findings

It implements route, gemm1, activation, gemm2 and combine on `device` (cuda when available); moefuzz computes
the NVFP4 activation quantization between them under the claimed profile, so every stage is checked where it
happens. The contract it follows is the claimed profile's (case.contract): rounding points, combine
accumulation, where routed_scaling_factor goes, renormalization epsilon.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                    dtype=torch.float64)


def bf16(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> nearest bf16 value, kept in fp32."""
    return x.to(torch.bfloat16).to(torch.float32)


def decode_nvfp4(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """[.., K/2] packed E2M1 codes and [.., K/16] E4M3 scales -> float64 [.., K] e2m1(code) * e4m3(scale)."""
    lut = E2M1.to(codes.device)
    nib = torch.stack([codes & 0xF, codes >> 4], dim=-1).flatten(-2).long()
    sf = scales.view(torch.float8_e4m3fn).to(torch.float64).repeat_interleave(16, dim=-1)
    return lut[nib] * sf


def top_lower_index_first(values: torch.Tensor, excluded: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest of each row: excluded never before the rest, NaN below -inf, ties to the lower
    index (two stable sorts: by value, then by the (excluded, NaN) class)."""
    nan = torch.isnan(values)
    by_value = torch.sort(torch.where(nan, torch.full_like(values, float("-inf")), values), dim=-1,
                          descending=True, stable=True).indices
    rank = (excluded.long() * 2 + nan.long()).gather(-1, by_value)
    return by_value.gather(-1, torch.sort(rank, dim=-1, stable=True).indices)[..., :k]


class TorchMoE:
    name = "torch-moe"
    profile = "sglang-cutlass-fp4"
    description = "PyTorch top-k, grouped GEMMs on dequantized NVFP4, SiLU*mul and sum-reduce"
    tensors = "torch"
    device = "cuda" if torch.cuda.is_available() else "cpu"

    # ---- routing (SPEC.md 2) ----------------------------------------------------------------------------
    def route(self, case):
        logits = case.router_logits.float()
        T, E, k, slots = case.tokens, case.experts, case.top_k, case.slots
        mode, c = case.routing_mode, case.contract
        if mode == "softmax" or (mode == "hash" and case.hash_score == "softmax"):
            scores = torch.softmax(logits, dim=-1)
        elif mode == "sigmoid_grouped" or case.hash_score == "sigmoid":
            scores = torch.sigmoid(logits)
        else:
            scores = torch.sqrt(F.softplus(logits))
        if mode == "hash":
            ids = case.hash_table[case.token_ids.long()].long()
        else:
            sel = scores
            excluded = torch.zeros_like(scores, dtype=torch.bool)
            if mode == "sigmoid_grouped":
                if case.correction_bias:
                    sel = scores + case.e_score_correction_bias
                G, per = case.n_group, E // case.n_group
                if G > 1:
                    g = torch.nan_to_num(sel, nan=float("-inf")).view(T, G, per)
                    two = torch.sort(g, dim=-1, descending=True).values
                    gscore = two[..., 0] + two[..., 1] if case.correction_bias and per >= 2 else two[..., 0]
                    keep = top_lower_index_first(gscore, torch.zeros_like(gscore, dtype=torch.bool), case.topk_group)
                    gmask = torch.ones(T, G, dtype=torch.bool, device=logits.device).scatter(1, keep, False)
                    excluded = gmask.repeat_interleave(per, dim=1)
            ids = top_lower_index_first(sel, excluded, k)
        w = torch.gather(scores, 1, ids)
        if case.renormalize:
            denom = w.sum(dim=-1, keepdim=True) + c["renorm_epsilon"]
            w = torch.where(denom == 0, torch.zeros_like(w), w / denom)
        rsf = torch.tensor(case.routed_scaling_factor_f32, dtype=torch.float32)
        if case.rsf_in_topk:
            w = w * rsf
        if slots > k:  # fused shared experts E + j (SPEC.md 2.4)
            sw = torch.tensor(1.0, dtype=torch.float32)
            if c["shared_fused_weight_inv_rsf"]:
                sw = 1.0 / rsf
                if case.rsf_in_topk:
                    sw = sw * rsf
            shared_ids = torch.arange(E, E + slots - k, device=ids.device).expand(T, -1)
            ids = torch.cat([ids, shared_ids], dim=1)
            w = torch.cat([w, sw.to(w.device).expand(T, slots - k)], dim=1)
        if c["routing_weight_dtype"] == "bf16":
            w = bf16(w)
        return ids.to(torch.int32), w.float()

    # ---- expert GEMMs (SPEC.md 3.2, 3.5) ----------------------------------------------------------------
    def _grouped_gemm(self, case, topk_ids, a_codes, a_scales, projections, act_scale, round_bf16):
        ids = topk_ids.reshape(-1).long()
        w4a4 = a_scales is not None
        a = decode_nvfp4(a_codes, a_scales) if w4a4 else a_codes.to(torch.float64)
        n_total = sum(w.codes.shape[1] for w, _ in projections)
        out = torch.zeros(ids.numel(), n_total, dtype=torch.float32, device=a.device)
        for e in torch.unique(ids).tolist():
            rows = (ids == e).nonzero().squeeze(1)
            s = act_scale[0] if act_scale.numel() == 1 else act_scale[e]
            a_d = (1.0 / s.float()) if w4a4 else torch.tensor(1.0, device=a.device)
            for w, col in projections:
                acc = (a[rows] @ decode_nvfp4(w.codes[e], w.scales[e]).T).float()
                alpha = a_d * w.global_dequant[e].float()
                out[rows, col:col + w.codes.shape[1]] = alpha * acc
        return bf16(out) if round_bf16 else out

    def gemm1(self, case, topk_ids, a_codes, a_scales):
        return self._grouped_gemm(case, topk_ids, a_codes, a_scales, [(case.w_gate, 0), (case.w_up, case.inter)],
                                  case.a1_scale, case.contract["bf16_after_gemm1"])

    def gemm2(self, case, topk_ids, a_codes, a_scales):
        return self._grouped_gemm(case, topk_ids, a_codes, a_scales, [(case.w_down, 0)], case.a2_scale,
                                  case.contract["bf16_after_gemm2"])

    # ---- SiLU * mul (SPEC.md 3.3) -----------------------------------------------------------------------
    def activation(self, case, gemm1_out):
        gate, up = gemm1_out[:, :case.inter], gemm1_out[:, case.inter:]
        L = case.swiglu_limit
        if L == float("inf") and case.swiglu_alpha == 1.0 and case.swiglu_beta == 0.0:
            v = gate / (1.0 + torch.exp(-gate)) * up
        else:
            g = torch.clamp(gate, max=L)
            lin = torch.clamp(up, min=-L, max=L)
            v = g * (1.0 / (1.0 + torch.exp(-(case.swiglu_alpha * g)))) * (lin + case.swiglu_beta)
        return bf16(v) if case.contract["bf16_after_activation"] else v

    # ---- combine (SPEC.md 3.6) --------------------------------------------------------------------------
    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        T, S, H = case.tokens, case.slots, case.hidden
        y = gemm2_out.view(T, S, H)
        mode = case.contract["combine"]
        acc = torch.zeros(T, H, dtype=torch.float32, device=y.device)
        for s in range(S):
            w = topk_weights[:, s:s + 1].float()
            if mode == "bf16_products":
                term = bf16(y[:, s] * bf16(w))
            elif mode in ("bf16_atomics", "bf16_epilogue_products"):
                term = bf16(w * y[:, s])
            else:
                term = w * y[:, s]
            acc = acc + term
            if mode == "bf16_atomics":
                acc = bf16(acc)
        if not case.rsf_in_topk:
            acc = acc * torch.tensor(case.routed_scaling_factor_f32, dtype=torch.float32)
        return bf16(acc) if case.contract["bf16_output"] else acc


layer = TorchMoE()
