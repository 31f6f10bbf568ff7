"""moefuzz: differential testing of Mixture-of-Experts kernels against an exact oracle.

From Python you write the kernel (PyTorch, Triton, numpy, a CUDA extension) and moefuzz checks it:

    import moefuzz
    moefuzz.check("py:examples.python.torch_moe:layer", cases=50)     # raises CheckFailure on a finding

docs/python.md is the guide: the kernel interface, the case's tensors, the layout helpers.
"""
from .api import CheckFailure, UsageError, check, find_binary, kernel_spec
from .case import Case, Fp8BlockWeights, Mxfp4Weights, NvFp4Weights
from .kernel import kernel

__version__ = "0.5.0"
__all__ = ["Case", "CheckFailure", "Fp8BlockWeights", "Mxfp4Weights", "NvFp4Weights", "UsageError", "check", "find_binary", "kernel",
           "kernel_spec"]
