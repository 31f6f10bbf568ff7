"""FlashInfer's NVFP4 activation quantizer, `fp4_quantize`, as a moefuzz quantize stage.

Upstream: PyPI `flashinfer-python` 0.6.7.post3 (--no-deps; needs `apache-tvm-ffi` and nvcc on
the GPU host), function `flashinfer.fp4_quantize(input bf16 [M,K], global_scale fp32 [1],
sf_vec_size=16, sf_use_ue8m0=False, is_sf_swizzled_layout=False)` -> (codes uint8 [M,K/2],
E4M3 scale bytes [M,K/16]); JIT module `fp4_quantization_<major><minor>` built from
csrc/nv_internal/tensorrt_llm/thop/fp4Quantize.cpp and .../kernels/quantization.cu.
Flags: is_sf_swizzled_layout=False (linear scales, the stage's contract), sf_use_ue8m0=False
(E4M3 scales: NVFP4), global_scale = the rows' S_q (one call per distinct S_q value, because the
kernel takes one global scale per call). Claims `flashinfer-cutlass` (fast-math quantizer,
zero test on vecMax: quantization_utils.cuh cvt_warp_fp16_to_fp4).

Declined below compute capability 10.0: FlashInfer builds an sm_90 module
(gen_fp4_quantization_sm90_module) and accepts the call, but quantize_with_block_size's body and
cvt_warp_fp16_to_fp4 are compiled only under `__CUDA_ARCH__ >= 1000`, so on an H200 the kernel
writes nothing and fp4_quantize returns the uninitialized output buffers (see UPSTREAM notes).
Set MOEFUZZ_UPSTREAM_FP4_ANY_ARCH=1 to run it anyway and let moefuzz report that.
"""

from __future__ import annotations

import os

from . import _case, _loader

_loader.require("flashinfer-python", "flashinfer", "flashinfer-python==0.6.7.post3 apache-tvm-ffi")

from flashinfer import fp4_quantize as _fp4_quantize  # noqa: E402


class FlashInferFp4Quantize:
    name = "flashinfer-fp4-quantize"
    profile = "flashinfer-cutlass"
    description = "FlashInfer fp4_quantize (NVFP4, E4M3 block scales, linear layout)"
    tensors = "torch"
    device = "cuda"
    deterministic = True
    batch_invariant = True
    tactics = 1

    def supports(self, case):
        cap = _case.cuda_capability(self.device)
        if cap is None:
            return "fp4_quantize needs a CUDA device"
        if cap < (10, 0) and os.environ.get("MOEFUZZ_UPSTREAM_FP4_ANY_ARCH") != "1":
            return (f"compute capability {cap[0]}.{cap[1]}: FlashInfer's quantize kernel body is "
                    "compiled only for __CUDA_ARCH__ >= 1000 and writes nothing below it "
                    "(set MOEFUZZ_UPSTREAM_FP4_ANY_ARCH=1 to run it anyway)")
        if case.act_format != "nvfp4":
            return "fp4_quantize produces NVFP4 activations only"
        return None

    def quantize(self, case, x, global_scale):
        import torch

        dev = torch.device(self.device)
        x = x.to(dev, torch.float32).to(torch.bfloat16).contiguous()  # exact: x is bf16-valued
        gs = global_scale.to(dev, torch.float32).reshape(-1)
        rows, k = x.shape
        codes = torch.empty((rows, k // 2), dtype=torch.uint8, device=dev)
        scales = torch.empty((rows, k // 16), dtype=torch.uint8, device=dev)
        for value in torch.unique(gs).tolist():
            sel = (gs == value).nonzero().flatten()
            c, s = _fp4_quantize(
                x.index_select(0, sel).contiguous(),
                torch.tensor([value], dtype=torch.float32, device=dev),
                sf_vec_size=16,
                sf_use_ue8m0=False,
                is_sf_swizzled_layout=False,
            )
            codes[sel] = c.view(torch.uint8).reshape(len(sel), k // 2)
            scales[sel] = s.view(torch.uint8).reshape(len(sel), k // 16)
        return codes, scales


kernel = FlashInferFp4Quantize()
