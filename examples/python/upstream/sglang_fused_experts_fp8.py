"""SGLang's FP8 block-scaled (W8A8, 128x128 weight blocks, 1x128 activation groups) Triton fused MoE as a
whole moefuzz layer: top-k, per-token-group activation quantization, both grouped GEMMs, the activation and
the combine, in the order SGLang's runner calls them for a DeepSeek-V3 FP8 checkpoint.

Upstream: PyPI `sglang` 0.5.10.post1 (--no-deps at run time). The layer replays the CUDA path of
`sglang.srt.layers.moe.fused_moe_triton.fused_moe.fused_experts_impl` with `use_fp8_w8a8=True,
block_shape=[128, 128]` (the steps of sglang_fused_experts_bf16.py; what differs):
  1. top-k: `topk.fused_topk_torch_native` (softmax, optional renormalize, rsf in the reduce);
  2. `fused_moe_triton_kernels.invoke_fused_moe_kernel(hidden, w13 [E, 2I, H] e4m3, B_scale [E, 2I/128,
     H/128], use_fp8_w8a8=True, block_shape=[128, 128])`: it quantizes the bf16 rows per token and 128
     columns (`sglang_per_token_group_quant_fp8`, below) and runs `fused_moe_kernel`'s block-wise branch:
     acc += tl.dot(a, b) * sa * sb per 128-group (BLOCK_SIZE_N <= 128: P * (sa * sb); wider: (P * sa) * sb;
     swap_ab below 64 rows per block on SM90), GEMM1 rows = bf16(acc);
  3. `act_and_mul_triton`: h = bf16(bf16(silu(g)) * u);
  4. `invoke_fused_moe_kernel(h, w2 [E, H, I] e4m3, B_scale [E, H/128, I/128], mul_routed_weight=True)`:
     h quantized per token group again, y = bf16(acc * w) per (token, slot);
  5. combine as fused_experts_impl on CUDA (torch.add for k == 2, rsf == 1; else moe_sum_reduce_triton).
The activation quantizer: on CUDA, fused_moe_triton_kernels calls fp8_kernel.sglang_per_token_group_quant_fp8,
which (with sgl_kernel's sgl_per_token_group_quant_8bit present, the JIT branch) allocates row-major codes
and fp32 scales and calls `sglang.jit_kernel.per_token_group_quant_8bit` (amax seeded with eps = 1e-10,
s = amax / 448, q = e4m3(clamp(x / s, -448, 448)), IEEE division). fp8_kernel.py itself imports sgl_kernel
and DeepGEMM at module level, so `quantize_activations` below does what that function does and calls the
same upstream JIT kernel; nothing else of the quantization is ours.

Stand-ins (our code): `moe_align_block_size` and the small-batch reduce, as in sglang_fused_experts_bf16.py.
The layer returns the quantized FC1/FC2 activations it saw (docs/python.md, "Exposed FP8 activations").

Claims `sglang-triton`; weight_formats fp8_block. Tactics: four configs of SGLang's H200 tuned files
(configs/*/E=*,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json use BLOCK_SIZE_K 128 in
257 entries and 64 in 5, BLOCK_SIZE_N 128/256/64/32): tactic 0 the default block-wise config of
`get_default_config` (64x128x128, GROUP 32), 1 the small-M shape 16x128x128 (swap_ab), 2 64x256x128
(BLOCK_SIZE_N > 128: the (P * sa) * sb order), 3 32x64x64 (two dots per 128-group).
Declined: UE8M0 scales (the JIT kernel writes UE8M0 only column-major, which fused_moe_kernel does not
read: SGLang's Triton MoE ignored scale_fmt ue8m0, SPEC-formats F5), routing other than softmax, shared
experts, a SwiGLU clamp, non-CUDA devices.
"""

from __future__ import annotations

import os

from . import _case, _sglang
from .sglang_fused_experts_bf16 import fused_experts, outside_fused_experts

_kernels = _sglang.triton_kernels()
_quant = _sglang.per_token_group_quant_8bit()

_BLOCK_SHAPE = [128, 128]
_CONFIGS = (
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 32, "num_warps": 4, "num_stages": 3},
    {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3},
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 8, "num_stages": 3},
    {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3},
)


# The activations the upstream quantizer produced during the current layer call, in call order (FC1, then
# FC2): the layer hands them to moefuzz, which admits them and checks both GEMMs on them (without them the
# oracle bounds every possible quantization, a far looser bound; MOEFUZZ_UPSTREAM_FP8_EXPOSE=0 checks so).
_quantized = []
_EXPOSE = os.environ.get("MOEFUZZ_UPSTREAM_FP8_EXPOSE", "1") != "0"


def quantize_activations(x, group_size: int, eps: float = 1e-10):
    """What fp8_kernel.sglang_per_token_group_quant_fp8 does on CUDA with row-major fp32 scales: codes
    [M, K] float8_e4m3fn, scales [M, K / group] float32, through the upstream JIT kernel."""
    import torch

    assert x.shape[-1] % group_size == 0 and x.is_contiguous()
    fp8 = torch.float8_e4m3fn
    finfo = torch.finfo(fp8)
    x_q = torch.empty(x.shape, device=x.device, dtype=fp8)
    x_s = torch.empty(x.shape[:-1] + (x.shape[-1] // group_size,), device=x.device, dtype=torch.float32)
    if x.shape[0] > 0:
        _quant.per_token_group_quant_8bit(input=x, output_q=x_q, output_s=x_s, group_size=group_size, eps=eps,
                                          fp8_min=finfo.min, fp8_max=finfo.max, scale_ue8m0=False)
    _quantized.append((x_q, x_s))
    return x_q, x_s


# fused_moe_triton_kernels imported the name from the fp8_kernel stand-in; give it the CUDA behaviour.
_kernels.sglang_per_token_group_quant_fp8 = quantize_activations


def _stack_codes(*parts):
    """torch.cat of float8 tensors through their bytes (cat is not defined for every float8 build)."""
    import torch

    return torch.cat([p.view(torch.uint8) for p in parts], dim=1).view(torch.float8_e4m3fn).contiguous()


class SGLangFusedExpertsFp8:
    name = "sglang-fused-experts-fp8"
    profile = "sglang-triton"
    description = "SGLang Triton fused MoE, FP8 block-scaled W8A8 (fused_experts_impl's CUDA path)"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = len(_CONFIGS)
    weight_formats = ("fp8_block",)

    def supports(self, case):
        if _case.cuda_capability(self.device) is None:
            return "fused_moe_kernel is a Triton kernel and needs a CUDA device"
        if case.fp8_scales == "ue8m0":
            return "UE8M0 activation scales: the JIT quantizer writes them only column-major (SPEC-formats F5)"
        return outside_fused_experts(case)

    def layer(self, case):
        import torch

        def stacked(dev):
            w13 = _stack_codes(case.w_gate.codes.to(dev), case.w_up.codes.to(dev))  # [E, 2I, H], gate first
            w13_s = torch.cat([case.w_gate.scales, case.w_up.scales], dim=1).to(dev).contiguous()
            return w13, w13_s, case.w_down.codes.to(dev).contiguous(), case.w_down.scales.to(dev).contiguous()

        _quantized.clear()
        out, ids, weights = fused_experts(case, self.device, _CONFIGS[int(case.tactic)], stacked,
                                          use_fp8_w8a8=True, block_shape=_BLOCK_SHAPE)
        if not _EXPOSE or len(_quantized) != 2:
            return out, ids, weights
        # FC1 was quantized once per token (fused_moe_kernel reads row t of A for each of its k slots);
        # moefuzz takes one row per (token, slot); FC2's rows are already (token, slot) = t * k + s.
        k = int(case.top_k)
        (a1, s1), (a2, s2) = _quantized
        exposed = {"fc1_fp8": (a1.repeat_interleave(k, dim=0), s1.repeat_interleave(k, dim=0)),
                   "fc2_fp8": (a2, s2)}
        return out, ids, weights, exposed


kernel = SGLangFusedExpertsFp8()
