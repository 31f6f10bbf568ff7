"""Small accessors shared by the upstream adapters (our code; no upstream code here).

They read moefuzz.Case (python/moefuzz/case.py), whose configuration fields and tensors are flat
attributes (`case.top_k`, `case.router_logits`).
"""

from __future__ import annotations


def correction_bias(case):
    """The selection bias tensor [E] (`e_score_correction_bias`), or None when the case routes without one."""
    return case.e_score_correction_bias if case.correction_bias else None


def uses_correction_bias(case) -> bool:
    """Whether the case routes with a selection bias (valid in supports(), where no tensor is attached)."""
    return bool(case.correction_bias)


def fused_shared(case) -> int:
    """Number of shared experts that occupy top-k slots (shared_fusion == 'fused')."""
    return int(case.shared_experts or 0) if case.shared_fusion == "fused" else 0


def cuda_capability(device) -> tuple[int, int] | None:
    import torch

    dev = torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(dev)
