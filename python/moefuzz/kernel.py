"""How moefuzz reads a Python kernel's description, and the @moefuzz.kernel decorator.

A kernel is any object with a `profile` attribute and either `layer(case)` or some of the stage methods
(route, quantize, gemm1, activation, gemm2, combine); docs/python.md is the guide.

Example:
    @moefuzz.kernel(profile="sglang-triton", tensors="torch", device="cuda")
    def my_layer(case):
        ...
        return output, topk_ids, topk_weights
"""
from __future__ import annotations

STAGES = ("route", "quantize", "gemm1", "activation", "gemm2", "combine")


class KernelSpecError(Exception):
    """The object does not describe a usable kernel (bad input: moefuzz exits 2)."""


WEIGHT_FORMATS = ("nvfp4", "bf16", "mxfp4", "fp8_block")


def kernel(profile: str, *, name: str | None = None, description: str = "", tensors: str = "torch",
           device: str | None = None, deterministic: bool = True, batch_invariant: bool = True, tactics: int = 1,
           supports=None, weight_formats=("nvfp4",), expert_bias=False):
    """Marks a function as a whole-layer kernel: fn(case) -> (output [T,H], topk_ids [T,slots], topk_weights)."""

    def wrap(fn):
        fn.profile = profile
        fn.name = name or fn.__name__
        fn.description = description or (fn.__doc__ or "").strip().split("\n")[0]
        fn.tensors = tensors
        fn.device = device
        fn.deterministic = deterministic
        fn.batch_invariant = batch_invariant
        fn.tactics = tactics
        fn.weight_formats = tuple(weight_formats)
        fn.expert_bias = bool(expert_bias)
        if supports is not None:
            fn.supports = supports
        return fn

    return wrap


class _FunctionKernel:
    """A plain function as a whole-layer kernel (its attributes carry the description)."""

    def __init__(self, fn):
        self.fn = fn

    def layer(self, case):
        return self.fn(case)

    def supports(self, case):
        s = getattr(self.fn, "supports", None)
        return s(case) if callable(s) else None


def _default_device(tensors: str) -> str:
    if tensors != "torch":
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def describe_kernel(obj, default_name: str):
    """(callable holder, description dict) for the object named on the command line."""
    if isinstance(obj, type):  # a class: use an instance
        try:
            obj = obj()
        except TypeError as exc:
            raise KernelSpecError(f"the class cannot be constructed without arguments: {exc}") from exc
    holder = obj
    stages = [s for s in STAGES if callable(getattr(obj, s, None))]
    has_layer = callable(getattr(obj, "layer", None))
    if not has_layer and not stages and callable(obj) and not isinstance(obj, type):
        holder = _FunctionKernel(obj)
        has_layer = True
    if not has_layer and not stages:
        raise KernelSpecError("defines neither layer(case) nor any stage method (" + ", ".join(STAGES) + ")")
    profile = getattr(obj, "profile", None)
    if not isinstance(profile, str) or not profile:
        raise KernelSpecError("has no `profile` attribute naming the contract it claims (see `moefuzz list`)")
    tensors = getattr(obj, "tensors", "torch")
    if tensors not in ("torch", "numpy"):
        raise KernelSpecError(f"tensors = {tensors!r}, expected 'torch' or 'numpy'")
    if tensors == "torch":
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise KernelSpecError("asks for torch tensors but torch is not importable in this interpreter "
                                  "(MOEFUZZ_PYTHON selects another one)") from exc
    device = getattr(obj, "device", None) or _default_device(tensors)
    if tensors == "numpy" and device != "cpu":
        raise KernelSpecError(f"numpy kernels run on the cpu, not {device!r}")
    if tensors == "torch" and device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise KernelSpecError(f"asks for device {device!r} but CUDA is not available here")
    tactics = getattr(obj, "tactics", 1)
    if not isinstance(tactics, int) or not 1 <= tactics <= 64:
        raise KernelSpecError(f"tactics = {tactics!r}, expected an integer in 1..64")
    weight_formats = getattr(obj, "weight_formats", ("nvfp4",))
    if isinstance(weight_formats, str) or not all(f in WEIGHT_FORMATS for f in weight_formats) or not weight_formats:
        raise KernelSpecError(f"weight_formats = {weight_formats!r}, expected a non-empty list of {WEIGHT_FORMATS}")
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(obj, "__name__", None) or default_name
    description = getattr(obj, "description", None)
    if not isinstance(description, str):
        description = ""
    desc = {
        "name": name,
        "profile": profile,
        "description": description,
        "tensors": tensors,
        "device": device,
        "deterministic": bool(getattr(obj, "deterministic", True)),
        "batch_invariant": bool(getattr(obj, "batch_invariant", True)),
        "tactics": tactics,
        "supports": callable(getattr(holder, "supports", None)),
        "stages": ["layer"] if has_layer else stages,
        "expected_killers": [str(k) for k in getattr(obj, "expected_killers", ())],
        "weight_formats": list(weight_formats),
        "expert_bias": bool(getattr(obj, "expert_bias", False)),
    }
    return holder, desc
