"""The torch / Triton examples, the CUDA fault classes and the upstream adapters, where their prerequisites exist
(a GPU, torch, Triton, the upstream wheels): skipped, and saying why, everywhere else (CI has none of them).
scripts/gpu-python.sh runs the same on a GPU host with longer budgets; docs/gpu.md has the results."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest


def _cuda():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    pytest.importorskip("triton", reason="triton is not installed")


@pytest.mark.parametrize("spec", ["torch_moe:layer", "triton_routing:route", "triton_combine:combine"])
def test_gpu_example_passes(moefuzz, tmp_path, spec):
    _cuda()
    r = moefuzz("check", "--kernel", f"py:examples.python.{spec}", "--time", 15, "--seed", 1, "--out", tmp_path)
    assert r.rc == 0, r.out


@pytest.mark.parametrize("kernel, cls", [("device_assert", "device-error"), ("illegal_address", "device-error"),
                                         ("cuda_oom", "oom")])
def test_cuda_fault_is_a_finding(moefuzz, tmp_path, kernel, cls):
    _cuda()
    r = moefuzz("check", "--kernel", f"py:examples.python.faulty_cuda:{kernel}", "--cases", 2,
                "--invariants", "ORACLE,REPEAT", "--out", tmp_path)
    assert r.rc == 1 and f"{cls}:" in r.out, r.out


@pytest.mark.parametrize("module", ["sglang_fused_topk_native", "sglang_moe_sum_reduce", "sglang_biased_grouped_topk",
                                    "flashinfer_fused_topk_deepseek"])
def test_upstream_adapter(moefuzz, tmp_path, module):
    _cuda()
    try:
        importlib.import_module(f"examples.python.upstream.{module}")
    except ImportError as exc:
        pytest.skip(f"upstream package missing: {exc}")
    r = moefuzz("check", "--kernel", f"py:examples.python.upstream.{module}:kernel", "--time", 20, "--out", tmp_path)
    assert r.rc in (0, 1), r.out  # findings on upstream code are results (docs/gpu.md), bad input is not


def test_triton_fp8_dot_keeps_the_bits_the_profiles_assume():
    # sglang-triton, vllm and vllm-deepgemm bound their FP8 GEMMs with kHopperFp8MmaAccumBits
    # (core/fp8_accum_bits.h): the device's e4m3 tl.dot must keep at least that many bits below the largest addend.
    header = (Path(__file__).resolve().parents[2] / "core" / "fp8_accum_bits.h").read_text()
    bits = int(re.search(r"kHopperFp8MmaAccumBits = (\d+);", header).group(1))
    _cuda()
    import torch
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("e4m3 tl.dot needs sm_89 or later")
    import triton_fp8_dot_probe
    m = triton_fp8_dot_probe.measure()
    assert m["bits_kept_products"] >= bits and m["bits_kept_accumulator"] >= bits, (bits, m)
