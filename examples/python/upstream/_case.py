"""Small accessors shared by the upstream adapters (our code; no upstream code here).

moefuzz.Case (python/moefuzz/case.py) has flat fields (`case.top_k`, `case.router_logits`);
PYAPI.md's draft grouped them as `case.config.x` / `case.inputs.x`. The accessors accept both.
"""

from __future__ import annotations

_MISSING = object()


def cfg(case, name, default=_MISSING):
    for holder in (getattr(case, "config", None), case):
        if holder is not None and hasattr(holder, name):
            return getattr(holder, name)
    if default is _MISSING:
        raise AttributeError(f"moefuzz case has no config field '{name}'")
    return default


def inp(case, name, default=_MISSING):
    for holder in (getattr(case, "inputs", None), case):
        if holder is not None and hasattr(holder, name):
            return getattr(holder, name)
    if default is _MISSING:
        raise AttributeError(f"moefuzz case has no input '{name}'")
    return default


def correction_bias(case):
    """The selection bias tensor [E], or None when the case routes without one.

    moefuzz.Case carries the flag as `correction_bias` (bool) and the tensor as
    `e_score_correction_bias`; PYAPI.md's draft put the tensor under inputs.correction_bias."""
    flag = cfg(case, "correction_bias", None)
    tensor = inp(case, "e_score_correction_bias", None)
    if tensor is None:
        candidate = inp(case, "correction_bias", None)
        tensor = None if isinstance(candidate, (bool, type(None))) else candidate
    if flag is False or flag is None and tensor is None:
        return None
    return tensor


def uses_correction_bias(case) -> bool:
    """Whether the case routes with a selection bias (valid in supports(), where no tensor is attached)."""
    return bool(cfg(case, "correction_bias", False))


def fused_shared(case) -> int:
    """Number of shared experts that occupy top-k slots (shared_fusion == 'fused')."""
    if cfg(case, "shared_fusion", "separate") == "fused":
        return int(cfg(case, "shared_experts", 0))
    return 0


def cuda_capability(device) -> tuple[int, int] | None:
    import torch

    dev = torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability(dev)
