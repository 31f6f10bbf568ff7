"""The Python bridge end to end through the CLI: a correct numpy kernel passes, the seed scenario is caught
(SCALE1, applied 2x), shrunk and replayed, and tensors cross the process boundary once per content."""
from __future__ import annotations

from pathlib import Path


def test_reference_stages_pass(moefuzz, tmp_path):
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_stages:stages", "--cases", 60, "--seed", 3,
                "--out", tmp_path / "out")
    assert r.rc == 0, r.out
    inv = r.summary["invariants"]
    assert r.summary["cases"] == 60
    # Not vacuous: the oracle and the scale invariant compared real outputs on most cases.
    assert inv["ORACLE"]["pass"] >= 50 and inv["SCALE1"]["pass"] >= 50, inv


def test_seed_scenario_caught_shrunk_replayed(moefuzz, tmp_path):
    out = tmp_path / "out"
    r = moefuzz("check", "--kernel", "py:examples.python.seed_scenario:layer", "--cases", 30, "--seed", 1,
                "--out", out)
    assert r.rc == 1, r.out
    assert "applied 2x" in r.out, r.out
    scale1 = [f for f in r.summary["findings"] if f["signature"].startswith("SCALE1")]
    assert scale1, r.summary["findings"]
    finding = scale1[0]["recipe"]
    assert "REPRO:" in r.out and "py:examples.python.seed_scenario:layer" in r.out

    shrunk = tmp_path / "shrunk.moefuzz"
    s = moefuzz("shrink", finding, "--kernel", "py:examples.python.seed_scenario:layer", "-o", shrunk)
    assert s.rc == 0, s.out
    text = shrunk.read_text()
    assert "tokens = 1\n" in text, text
    rep = moefuzz("replay", shrunk, "--kernel", "py:examples.python.seed_scenario:layer")
    assert rep.rc == 1, rep.out
    assert "SCALE1" in rep.out and "applied 2x" in rep.out, rep.out


def test_weights_cross_once_per_content(moefuzz, tmp_path):
    # The seed scenario's stages need no weights; the gemm kernel needs them on every call: one case checked by
    # invariants that all run the same case must send its weights exactly once.
    trace = tmp_path / "trace.txt"
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_gemm:gemm", "--cases", 4, "--seed", 2,
                "--invariants", "ORACLE,REPEAT,CANARY,FINITE", "--out", tmp_path / "out",
                env={"MOEFUZZ_WORKER_TRACE": str(trace)})
    assert r.rc in (0, 1), r.out
    lines = [l.split() for l in trace.read_text().splitlines()]
    puts = [l for l in lines if l[1] == "put" and l[2] == "weights"]
    gemm_calls = [l for l in lines if l[1] == "call" and l[2] == "gemm1"]
    assert len(gemm_calls) >= 3 * r.summary["cases"], lines
    assert len(puts) == r.summary["cases"], puts
    assert len({p[3] for p in puts}) == len(puts)  # never the same content twice
