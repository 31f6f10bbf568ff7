"""The Python API: moefuzz.check() passes a correct kernel, raises CheckFailure with the report and the REPRO line
on a finding, and the pytest fixture does the same; the layout helpers agree with SPEC.md."""
from __future__ import annotations

import numpy as np
import pytest

import moefuzz
from moefuzz import formats, layouts


def test_check_passes_a_correct_kernel(tmp_path):
    summary = moefuzz.check("py:examples.python.numpy_stages:stages", cases=20, seed=5, out=str(tmp_path))
    assert summary["cases"] == 20 and not summary["findings"]


def test_check_takes_the_kernel_object(tmp_path):
    from examples.python import numpy_stages

    assert moefuzz.kernel_spec(numpy_stages.stages) == "py:examples.python.numpy_stages:stages"
    summary = moefuzz.check(numpy_stages.stages, cases=5, seed=2, out=str(tmp_path))
    assert summary["cases"] == 5


def test_check_raises_with_report_and_repro(tmp_path):
    with pytest.raises(moefuzz.CheckFailure) as info:
        moefuzz.check("py:examples.python.seed_scenario:layer", cases=20, seed=1, out=str(tmp_path))
    text = str(info.value)
    assert "SCALE1" in text and "applied 2x" in text and "REPRO:" in text, text
    assert any(f["signature"].startswith("SCALE1") for f in info.value.findings)


def test_usage_error_for_bad_flags(tmp_path):
    with pytest.raises(moefuzz.UsageError):
        moefuzz.check("py:examples.python.numpy_stages:stages", shapes="no-such-shapes", cases=1, out=str(tmp_path))


def test_fixture(moefuzz_check, tmp_path):
    summary = moefuzz_check("py:examples.python.numpy_stages:stages", cases=3, out=str(tmp_path))
    assert summary["seed"] == 1


def test_swizzle_128x4_matches_the_spec_offsets():
    rng = np.random.default_rng(0)
    m, kb = 130, 5
    sf = rng.integers(0, 255, size=(m, kb), dtype=np.uint8)
    sw = layouts.swizzle_128x4(sf)
    kbp = 8
    for r in range(m):
        for c in range(kb):
            off = (r // 128) * (kbp // 4) * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
            assert sw[off] == sf[r, c]
    assert sw.shape == (256 * kbp,) and np.count_nonzero(sw) <= sf.size
    assert np.array_equal(layouts.linear_from_128x4(sw, m, kb), sf)


def test_w13_orders_stack_gate_and_up_rows():
    from types import SimpleNamespace as NS

    e, i, k = 2, 3, 4
    gate = NS(codes=np.arange(e * i * k).reshape(e, i, k), scales=np.arange(e * i).reshape(e, i, 1))
    up = NS(codes=-gate.codes - 1, scales=-gate.scales - 1)
    case = NS(w_gate=gate, w_up=up, b_gate=np.arange(e * i, dtype=np.float32).reshape(e, i),
              b_up=-np.arange(e * i, dtype=np.float32).reshape(e, i) - 1)
    codes, scales = layouts.w13(case, "gate_up")
    assert np.array_equal(codes[:, :i], gate.codes) and np.array_equal(codes[:, i:], up.codes)
    codes, scales = layouts.w13(case, "up_gate")
    assert np.array_equal(codes[:, :i], up.codes) and np.array_equal(scales[:, i:], gate.scales)
    codes, scales = layouts.w13(case, "interleaved")  # gpt-oss: row 2j gate row j, row 2j + 1 up row j
    assert codes.shape == (e, 2 * i, k)
    assert np.array_equal(codes[:, 0::2], gate.codes) and np.array_equal(codes[:, 1::2], up.codes)
    assert np.array_equal(scales[:, 0::2], gate.scales) and np.array_equal(scales[:, 1::2], up.scales)
    b1 = layouts.w13_bias(case, "interleaved")
    assert np.array_equal(b1[:, 0::2], case.b_gate) and np.array_equal(b1[:, 1::2], case.b_up)
    try:
        layouts.w13(case, "gate-up")
        raise AssertionError("an unknown order must raise")
    except ValueError:
        pass


def test_formats():
    assert formats.round_to_bf16(np.float32([1.00390625]))[0] == 1.0
    assert formats.round_to_bf16(np.float32([1.01171875]))[0] == np.float32(1.015625)
    assert list(formats.e2m1_value(np.uint8([0x7, 0xF, 0x8]))) == [6.0, -6.0, 0.0]
    assert formats.e4m3_value(np.uint8([0x7E]))[0] == 448.0 and np.isnan(formats.e4m3_value(np.uint8([0x7F]))[0])
    codes = np.arange(16, dtype=np.uint8).reshape(2, 8)
    assert np.array_equal(formats.unpack_fp4(formats.pack_fp4(codes)), codes)
