"""Faulty Python kernels: each fails in one way that moefuzz must turn into a finding of its class, never a
crash of moefuzz (tests/python/test_isolation.py runs them). Each is the numpy reference with one fault in its
combine stage, so the fault happens on every case.

    raises      a Python exception               -> plugin-error
    crashes     SIGSEGV in the worker             -> crash (the worker is restarted)
    hangs       never returns                     -> timeout (MOEFUZZ_PLUGIN_TIMEOUT_S; the worker is killed)
    oom         MemoryError                       -> oom
    bad_shape   returns [T, H+1]                  -> bad-result
    writes_input modifies its input in place      -> bad-result
    exits       calls sys.exit in the worker      -> bad-result (the worker left)
"""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from examples.python.numpy_stages import NumpyStages


class _Faulty(NumpyStages):
    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        self.fault(case, gemm2_out)
        return super().combine(case, gemm2_out, topk_ids, topk_weights)


class Raises(_Faulty):
    def fault(self, case, x):
        raise RuntimeError("combine failed on purpose")


class Crashes(_Faulty):
    def fault(self, case, x):
        os.kill(os.getpid(), signal.SIGSEGV)


class Hangs(_Faulty):
    def fault(self, case, x):
        time.sleep(3600)


class Oom(_Faulty):
    def fault(self, case, x):
        raise MemoryError("pretending to be out of memory")


class BadShape(_Faulty):
    def combine(self, case, gemm2_out, topk_ids, topk_weights):
        return np.zeros((case.tokens, case.hidden + 1), dtype=np.float32)


class WritesInput(_Faulty):
    def route(self, case):
        case.router_logits[...] = 0.0
        return super().route(case)

    def fault(self, case, x):
        pass


class Exits(_Faulty):
    def fault(self, case, x):
        sys.exit(7)


class NoProfile:
    """Not a kernel: no profile (moefuzz exits 2)."""

    def layer(self, case):
        raise AssertionError("never called")


raises, crashes, hangs, oom = Raises(), Crashes(), Hangs(), Oom()
bad_shape, writes_input, exits = BadShape(), WritesInput(), Exits()
no_profile = NoProfile()
