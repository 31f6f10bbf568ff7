"""Faulty CUDA kernels (torch / Triton): each fails on the GPU in one way that moefuzz must report as a finding
of its class, then carry on with a fresh worker (a fresh CUDA context). GPU only.

    device_assert   an out-of-range index on the GPU (device-side assert)   -> device-error
    illegal_address a Triton store far outside its buffer                   -> device-error
    cuda_oom        allocates far more than the GPU has                      -> oom
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from examples.python.torch_moe import TorchMoE


@triton.jit
def _store_far(out, n, FAR: tl.constexpr):
    i = tl.arange(0, 128)
    tl.store(out + FAR + i, tl.zeros([128], dtype=tl.float32), mask=i < n)


class _FaultyCombine(TorchMoE):
    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        self.fault(gemm2_out)
        return super().combine(case, gemm2_out, topk_ids, topk_weights)


class DeviceAssert(_FaultyCombine):
    def fault(self, x):
        idx = torch.tensor([x.numel() * 1000], device=x.device)
        x.view(-1)[idx].sum().item()


class IllegalAddress(_FaultyCombine):
    def fault(self, x):
        out = torch.empty(128, dtype=torch.float32, device=x.device)
        _store_far[(1,)](out, 128, FAR=1 << 40)
        torch.cuda.synchronize()


class CudaOom(_FaultyCombine):
    def fault(self, x):
        torch.empty(1 << 45, dtype=torch.uint8, device=x.device)


device_assert, illegal_address, cuda_oom = DeviceAssert(), IllegalAddress(), CudaOom()
