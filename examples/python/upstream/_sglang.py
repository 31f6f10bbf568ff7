"""Load SGLang's MoE kernel modules (top-k, Triton combine) without SGLang's server.

Verified against sglang 0.5.10.post1 (PyPI wheel, `pip install --no-deps`). Which modules are
imported and which serving-stack modules get inert stand-ins is listed below with the reason;
/work/helpers/UPSTREAM.md records what ran on the H200.

Stand-ins (sglang-internal infrastructure that kernel files import at module level but that
the functions the adapters call never touch; any use raises UpstreamStubUsed):
* sglang.srt.distributed, ...pynccl_allocator: tensor-parallel groups (TopK.forward_* only);
* sglang.srt.eplb.*: expert-location remapping (select_experts post-processing only);
* sglang.srt.layers.dp_attention: DP attention flags (TopK.forward_* only);
* sglang.srt.layers.moe.routed_experts_capturer: capture hook (select_experts only);
* sglang.srt.batch_invariant_ops: is_batch_invariant_mode_enabled() is given as the real
  default (False: batch-invariant mode is off unless the server enables it); the real module
  imports deep_gemm_wrapper -> distributed -> the server;
* sglang.srt.layers.quantization.fp8_kernel / int8_kernel: quantized-activation helpers of
  fused_moe_triton_kernels.py, used only on fp8/int8 paths, not by moe_sum_reduce_triton;
* sglang.utils (only for the FP8 quantizer): notebook/HTTP helpers; jit_kernel.utils takes
  is_in_ci from it (given as the real default, False);
* sgl_kernel: the compiled SGLang kernels (built for torch 2.9.1; not installed): the
  moe_fused_gate / topk_softmax paths of topk.py are reached only if FlashInfer is absent.
Packages imported bare (no __init__.py): sglang, sglang.srt.layers.moe,
sglang.srt.layers.moe.fused_moe_triton (their __init__ files import the server and FusedMoE).
"""

from __future__ import annotations

import functools

from . import _loader

SGLANG_PIP = "sglang==0.5.10.post1 orjson pybase64 starlette"


def _prepare() -> None:
    _loader.require("sglang", "sglang", SGLANG_PIP)
    _loader.bare_package("sglang")
    # sglang.srt and sglang.srt.layers are namespace packages (no __init__.py).
    _loader.bare_package("sglang.srt.layers.moe")
    _loader.bare_package("sglang.srt.layers.moe.fused_moe_triton")
    force = dict(force=True)
    _loader.inert_module("sglang.srt.distributed", **force)
    _loader.inert_module("sglang.srt.distributed.device_communicators", **force)
    _loader.inert_module("sglang.srt.distributed.device_communicators.pynccl_allocator", **force)
    _loader.inert_module("sglang.srt.eplb", **force)
    _loader.inert_module("sglang.srt.eplb.expert_location_dispatch", **force)
    _loader.inert_module("sglang.srt.eplb.expert_distribution", **force)
    _loader.inert_module("sglang.srt.layers.dp_attention", **force)
    _loader.inert_module("sglang.srt.layers.moe.routed_experts_capturer", **force)
    _loader.inert_module(
        "sglang.srt.batch_invariant_ops",
        is_batch_invariant_mode_enabled=lambda: False,
        **force,
    )
    if _loader.inert_module("sgl_kernel").__dict__.get("__moefuzz_inert__"):
        _define_absent_sgl_kernel_ops()
    moe_pkg = _loader.bare_package("sglang.srt.layers.moe")
    if not hasattr(moe_pkg, "get_moe_runner_backend"):
        # topk.py imports it from the package __init__; only TopK.forward_cuda calls it.
        moe_pkg.get_moe_runner_backend = _loader._Inert(
            "sglang.srt.layers.moe.get_moe_runner_backend"
        )


_SGL_KERNEL_LIB = None


def _define_absent_sgl_kernel_ops() -> None:
    """topk.py registers fake (meta) kernels for sgl_kernel::moe_fused_gate on CUDA at import
    time, which needs the op to exist. With sgl_kernel absent, the op is declared here with the
    same schema and an implementation that raises: the adapters never take that path
    (biased_grouped_topk_gpu goes to FlashInfer's fused_topk_deepseek when FlashInfer imports)."""
    global _SGL_KERNEL_LIB
    if _SGL_KERNEL_LIB is not None:
        return
    import torch

    lib = torch.library.Library("sgl_kernel", "FRAGMENT")
    lib.define(
        "moe_fused_gate(Tensor input_tensor, Tensor bias, int num_expert_group, int topk_group, "
        "int topk, int num_fused_shared_experts=0, float routed_scaling_factor=0, "
        "bool apply_routed_scaling_factor_on_output=False) -> (Tensor, Tensor)"
    )

    def _absent(*args, **kwargs):
        raise _loader.UpstreamStubUsed(
            "sgl_kernel::moe_fused_gate was called: sgl_kernel is not installed; SGLang reaches "
            "it only when FlashInfer's fused_topk_deepseek is unavailable or the shape is outside "
            "FlashInfer's limits"
        )

    lib.impl("moe_fused_gate", _absent, "CompositeExplicitAutograd")
    _SGL_KERNEL_LIB = lib


@functools.cache
def topk():
    """sglang.srt.layers.moe.topk (biased_grouped_topk_impl, grouped_topk_gpu, ...)."""
    _prepare()
    return _import("sglang.srt.layers.moe.topk")


@functools.cache
def triton_kernels():
    """sglang.srt.layers.moe.fused_moe_triton.fused_moe_triton_kernels (moe_sum_reduce_triton)."""
    _prepare()
    force = dict(force=True)
    _loader.inert_module("sglang.srt.layers.quantization", **force)
    _loader.inert_module("sglang.srt.layers.quantization.fp8_kernel", **force)
    _loader.inert_module("sglang.srt.layers.quantization.int8_kernel", **force)
    return _import("sglang.srt.layers.moe.fused_moe_triton.fused_moe_triton_kernels")


@functools.cache
def per_token_group_quant_8bit():
    """sglang.jit_kernel.per_token_group_quant_8bit (the CUDA per-token-group FP8 quantizer SGLang's
    `sglang_per_token_group_quant_fp8` calls on CUDA when sgl_kernel has sgl_per_token_group_quant_8bit;
    JIT-compiled with nvcc through apache-tvm-ffi on first use). Its jit_kernel.utils imports
    `is_in_ci` from sglang.utils, a module of notebook/HTTP helpers (IPython, pydantic, tqdm at module
    level): it gets a stand-in whose is_in_ci is the real default (False: SGLANG_IS_IN_CI unset; it
    only picks benchmark ranges)."""
    _prepare()
    _loader.inert_module("sglang.utils", is_in_ci=lambda: False, force=True)
    return _import("sglang.jit_kernel.per_token_group_quant_8bit")


def _import(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise ImportError(
            f"importing {name} needs module '{e.name}', which is not installed; the adapters "
            f"need: python3 -m pip install --no-deps {SGLANG_PIP}"
        ) from e


def version() -> str:
    return _loader.version_of("sglang")
