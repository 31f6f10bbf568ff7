"""A faulty Python kernel is a finding of its class, never a crash of moefuzz; after a crash or a hang the
worker is replaced and the check goes on; a kernel that cannot be loaded is bad input (exit 2)."""
from __future__ import annotations

import pytest

FAULTS = {
    "raises": "plugin-error: combine raised RuntimeError: combine failed on purpose",
    "crashes": "crash: the worker died from signal 11",
    "hangs": "timeout: no reply to 'call combine' within 2 s",
    "oom": "oom: combine: MemoryError",
    "bad_shape": "bad-result: combine: combine returned output of shape",
    "writes_input": "bad-result: route: route modified its input tensor(s) in place: router_logits",
    "exits": "bad-result: the worker exited with status 7",
}


@pytest.mark.parametrize("kernel", sorted(FAULTS))
def test_fault_is_a_finding_of_its_class(moefuzz, tmp_path, kernel):
    r = moefuzz("check", "--kernel", f"py:examples.python.faulty:{kernel}", "--cases", 2, "--seed", 1,
                "--out", tmp_path / "out", env={"MOEFUZZ_PLUGIN_TIMEOUT_S": "2"})
    assert r.rc == 1, r.out
    assert FAULTS[kernel] in r.out, r.out
    assert r.summary["cases"] == 2 and r.summary["findings"], r.summary


def test_worker_restarts_after_each_crash(moefuzz, tmp_path):
    # Every case crashes the worker; every case is still checked (a fresh worker each time).
    trace = tmp_path / "trace.txt"
    r = moefuzz("check", "--kernel", "py:examples.python.faulty:crashes", "--cases", 3, "--seed", 1,
                "--invariants", "ORACLE", "--out", tmp_path / "out", env={"MOEFUZZ_WORKER_TRACE": str(trace)})
    assert r.rc == 1, r.out
    assert r.summary["cases"] == 3
    workers = {line.split()[0] for line in trace.read_text().splitlines()}
    assert len(workers) >= 3, workers


@pytest.mark.parametrize("spec, message", [
    ("py:examples.python.faulty:no_profile", "has no `profile` attribute"),
    ("py:examples.python.not_there:layer", "cannot load examples.python.not_there:layer: ModuleNotFoundError"),
    ("py:examples.python.numpy_stages:missing_attr", "AttributeError"),
    ("py:not a spec", "expected py:MODULE:ATTR"),
])
def test_unloadable_kernel_is_bad_input(moefuzz, tmp_path, spec, message):
    r = moefuzz("check", "--kernel", spec, "--cases", 1, "--out", tmp_path / "out")
    assert r.rc == 2, r.out
    assert message in r.out, r.out


def test_missing_interpreter_is_bad_input(moefuzz, tmp_path):
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_stages:stages", "--cases", 1, "--out",
                tmp_path / "out", env={"MOEFUZZ_PYTHON": "/nonexistent/python3"})
    assert r.rc == 2, r.out
    assert "did not start" in r.out, r.out
