"""SGLang's unquantized (bf16) Triton fused MoE as a whole moefuzz layer: top-k, both grouped GEMMs,
the activation and the combine, in the order SGLang's runner calls them.

Upstream: PyPI `sglang` 0.5.10.post1 (--no-deps at run time). The layer replays the CUDA path of
`sglang.srt.layers.moe.fused_moe_triton.fused_moe.fused_experts_impl` (an orchestration of upstream
kernels; fused_moe.py itself imports the server and sgl_kernel, so its steps are called here):
  1. top-k: `topk.fused_topk_torch_native` (softmax, optional renormalize, no rsf: the Triton runner
     applies rsf in the reduce, `should_fuse_routed_scaling_factor_in_topk` is false unquantized);
  2. `fused_moe_triton_kernels.invoke_fused_moe_kernel(hidden, w13 [E, 2I, H], ...)`, bf16 compute,
     `mul_routed_weight=False`, top_k = k: GEMM1 rows [T*k, 2I] = bf16(fp32 acc);
  3. `act_and_mul_triton` (the path fused_experts_impl takes when `filter_expert` is set, i.e. with
     expert parallelism): h = bf16(bf16(silu(g)) * u); or, for gpt-oss's SwiGLU (a clamp with up + 1:
     fused_experts_impl's `gemm1_alpha` path), the stand-in `gpt_oss_swiglu` below on interleaved w13 rows;
  4. `invoke_fused_moe_kernel(h, w2 [E, H, I], ...)`, `mul_routed_weight=True`, top_k = 1:
     y = bf16(fp32 acc * w) per (token, slot);
  5. combine as fused_experts_impl on CUDA: k == 1 and rsf == 1 -> GEMM2 writes the output; k == 2 and
     rsf == 1 -> torch.add of the two slots; otherwise `moe_sum_reduce_triton(y, out, rsf)`
     (fp32 slot sum x rsf, one rounding).
Stand-ins (our code): `moe_align_block_size` (an sgl_kernel CUDA op; the torch version below builds
the same layout: each expert's flattened (token, slot) indices in order, padded to BLOCK_SIZE_M with
the sentinel T*k, one expert id per block); for <= 32 tokens SGLang reduces with
`moe_sum_reduce_torch_compile` and for > 32 with sgl_kernel's `moe_sum_reduce`, both replaced by the
Triton reduce SGLang uses on its other platforms (same contract: fp32 sum x rsf, one rounding).

Expert biases (recipe expert_bias, gpt-oss): b1 and b2 go to invoke_fused_moe_kernel's `bias` argument,
which adds them to the fp32 accumulator before the routing weight and the one bf16 rounding (as
fused_experts_impl passes them). gpt-oss's activation `_swiglu_gpt_oss_sigmoid_alpha` is a torch.compile'd
function inside fused_moe.py (not importable here); `gpt_oss_swiglu` computes the same formula on the bf16
GEMM1 rows in fp32 with one rounding, as Inductor's generated kernel does.

Claims `sglang-triton`; weight_formats bf16 (the layer reads bf16 weights: `weight_format bf16`
recipes); expert_bias. Tactics: the two default Triton configs of `fused_moe_triton_config.get_default_config`
for bf16 (tactic 0: BLOCK 64x64x32, GROUP 8; tactic 1: the small-M config 16x32x64, GROUP 1).
Declined: routing other than softmax, shared experts, a SwiGLU clamp other than gpt-oss's (the limit-only
path clamps silu(gate), another formula), non-CUDA devices.
"""

from __future__ import annotations

from . import _case, _sglang

_kernels = _sglang.triton_kernels()
_topk = _sglang.topk()

_CONFIGS = (
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
    {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
)


def align_block_size(topk_ids, block_m: int, num_experts: int):
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) in the layout fused_moe_kernel reads."""
    import torch

    flat = topk_ids.reshape(-1).to(torch.int64)
    sentinel = flat.numel()
    sorted_ids, experts = [], []
    for e in range(num_experts):
        rows = torch.nonzero(flat == e, as_tuple=False).reshape(-1)
        if rows.numel() == 0:
            continue
        blocks = (rows.numel() + block_m - 1) // block_m
        padded = torch.full((blocks * block_m,), sentinel, dtype=torch.int64, device=flat.device)
        padded[: rows.numel()] = rows
        sorted_ids.append(padded)
        experts.extend([e] * blocks)
    total = sum(int(s.numel()) for s in sorted_ids)
    # The grid covers the worst case (as the upstream op allocates it); blocks past the total return.
    capacity = sentinel + num_experts * (block_m - 1)
    out = torch.full((max(capacity, total),), sentinel, dtype=torch.int32, device=flat.device)
    if sorted_ids:
        out[:total] = torch.cat(sorted_ids).to(torch.int32)
    expert_ids = torch.full(((out.numel() + block_m - 1) // block_m,), -1, dtype=torch.int32, device=flat.device)
    if experts:
        expert_ids[: len(experts)] = torch.tensor(experts, dtype=torch.int32, device=flat.device)
    return out, expert_ids, torch.tensor([total], dtype=torch.int32, device=flat.device)


def is_gpt_oss_swiglu(case) -> bool:
    """Whether the case's SwiGLU is gpt-oss's (clamp at a finite limit, up + 1): the `gemm1_alpha` path."""
    return case.swiglu_limit != float("inf") and case.swiglu_beta == 1.0


def outside_fused_experts(case, gpt_oss_ok=False):
    """Why fused_experts_impl's Triton path (this adapter's steps 1-5) does not compute `case`, or None.
    `gpt_oss_ok`: the caller runs gpt-oss's SwiGLU path (step 3's alternative)."""
    if case.routing_mode != "softmax":
        return f"the layer routes with fused_topk_torch_native, the softmax top-k (case: {case.routing_mode})"
    if int(case.shared_experts or 0):
        return "shared experts are outside fused_experts (the model adds them)"
    plain = case.swiglu_limit == float("inf") and case.swiglu_alpha == 1.0 and case.swiglu_beta == 0.0
    if not plain and not (gpt_oss_ok and is_gpt_oss_swiglu(case)):
        return "a SwiGLU clamp other than gpt-oss's takes fused_moe.py's other clamp path (silu(gate) clamped)"
    return None


def gpt_oss_swiglu(x, alpha: float, limit: float):
    """Stand-in for fused_moe.py's torch.compile'd `_swiglu_gpt_oss_sigmoid_alpha` on GEMM1 rows [R, 2I] with
    interleaved gate (even) and up (odd) columns: gate * sigmoid(alpha * gate) * (up + 1) after the clamps, in
    fp32 from the bf16 rows, one rounding to bf16."""
    import torch

    xf = x.to(torch.float32)
    gate = xf[..., ::2].clamp(max=limit)
    up = xf[..., 1::2].clamp(min=-limit, max=limit)
    return (gate * torch.sigmoid(gate * alpha) * (up + 1)).to(torch.bfloat16).contiguous()


def fused_experts(case, device, config, stacked, biases=None, gpt_oss=False, **quant_flags):
    """Steps 1-5 above on `case`: `stacked(dev)` gives (w13 [E, 2I, H], its B_scale or None, w2 [E, H, I], its
    B_scale or None) on the device, `biases(dev)` (optional) (b1 [E, 2I] in w13's row order, b2 [E, H]),
    `gpt_oss` selects gpt-oss's SwiGLU (w13 rows interleaved), `quant_flags` the quantization arguments of
    invoke_fused_moe_kernel (none: bf16). Returns the layer's (output fp32 [T, H], topk ids, topk weights)."""
    import torch
    import triton.language as tl

    dev = torch.device(device)
    t, k = int(case.tokens), int(case.top_k)
    x = case.hidden_states.to(dev).contiguous()
    logits = case.router_logits.to(dev)
    with torch.no_grad():
        weights, ids = _topk.fused_topk_torch_native(x, logits, k, bool(case.renormalize))
        weights = weights.to(torch.float32).contiguous()
        ids = ids.to(torch.int32).contiguous()
        w13, w13_scale, w2, w2_scale = stacked(dev)
        b1, b2 = biases(dev) if biases is not None else (None, None)
        e_count, n2 = int(w13.shape[0]), int(w13.shape[1])
        h = int(w2.shape[1])
        config = dict(config)
        sorted_ids, expert_ids, post_padded = align_block_size(ids, config["BLOCK_SIZE_M"], e_count)
        flags = dict(compute_type=tl.bfloat16, use_fp8_w8a8=False, use_int8_w8a8=False, use_int8_w8a16=False,
                     use_int4_w4a16=False, per_channel_quant=False, filter_expert=True)
        flags.update(quant_flags)
        cache1 = torch.empty((t * k, n2), dtype=torch.bfloat16, device=dev)
        _kernels.invoke_fused_moe_kernel(x, w13, b1, cache1, None, w13_scale, None, weights, ids, sorted_ids,
                                         expert_ids, post_padded, False, k, config, **flags)
        if gpt_oss:
            cache2 = gpt_oss_swiglu(cache1, float(case.swiglu_alpha), float(case.swiglu_limit))
        else:
            cache2 = torch.empty((t * k, n2 // 2), dtype=torch.bfloat16, device=dev)
            _kernels.act_and_mul_triton(cache1, cache2, config, ids, expert_ids, False, "silu")
        rsf = 1.0 if bool(case.rsf_in_topk) else float(case.routed_scaling_factor)
        out = torch.empty((t, h), dtype=torch.bfloat16, device=dev)
        direct = k == 1 and rsf == 1.0
        cache3 = out.unsqueeze(0) if direct else torch.empty((t, k, h), dtype=torch.bfloat16, device=dev)
        _kernels.invoke_fused_moe_kernel(cache2, w2, b2, cache3, None, w2_scale, None, weights, ids, sorted_ids,
                                         expert_ids, post_padded, True, 1, config, **flags)
        if direct:
            pass
        elif k == 2 and rsf == 1.0:
            torch.add(cache3[:, 0], cache3[:, 1], out=out)
        else:
            _kernels.moe_sum_reduce_triton(cache3, out, rsf)
    return out.to(torch.float32), ids, weights


class SGLangFusedExpertsBf16:
    name = "sglang-fused-experts-bf16"
    profile = "sglang-triton"
    description = "SGLang Triton fused MoE, bf16 weights (fused_experts_impl's CUDA path)"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = len(_CONFIGS)
    weight_formats = ("bf16",)
    expert_bias = True

    def supports(self, case):
        if _case.cuda_capability(self.device) is None:
            return "fused_moe_kernel is a Triton kernel and needs a CUDA device"
        return outside_fused_experts(case, gpt_oss_ok=True)

    def layer(self, case):
        import torch

        gpt_oss = is_gpt_oss_swiglu(case)

        def w13_rows(gate, up):  # gpt-oss interleaves gate and up rows; the plain path stacks [gate; up]
            return torch.stack([gate, up], dim=2).flatten(1, 2) if gpt_oss else torch.cat([gate, up], dim=1)

        def stacked(dev):
            w13 = w13_rows(case.w_gate, case.w_up).to(dev).contiguous()  # [E, 2I, H]
            return w13, None, case.w_down.to(dev).contiguous(), None  # w2 [E, H, I]

        def biases(dev):  # bf16, as the model holds them (the values are bf16 already)
            b1 = w13_rows(case.b_gate, case.b_up).to(torch.bfloat16).to(dev).contiguous()  # [E, 2I]
            return b1, case.b_down.to(torch.bfloat16).to(dev).contiguous()  # [E, H]

        return fused_experts(case, self.device, _CONFIGS[int(case.tactic)], stacked,
                             biases=biases if case.b_gate is not None else None, gpt_oss=gpt_oss)


kernel = SGLangFusedExpertsBf16()
