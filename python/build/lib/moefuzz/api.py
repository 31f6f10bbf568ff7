"""moefuzz from Python: check a kernel from a script or a pytest test.

Example (pytest):
    import moefuzz
    from mykernels import my_layer          # an object with profile + layer() or stage methods

    def test_my_layer():
        moefuzz.check(my_layer, cases=50, seed=1)     # raises moefuzz.CheckFailure with the report and REPRO

The check runs the `moefuzz` binary (found through $MOEFUZZ_BIN, then PATH, then the source tree's
build/release/bin) with the kernel in a worker that uses this interpreter (sys.executable).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


class CheckFailure(AssertionError):
    """A check found a failure. str() is moefuzz's report, with the REPRO line; .summary is the JSON summary."""

    def __init__(self, report: str, summary: dict):
        super().__init__(report)
        self.report = report
        self.summary = summary

    @property
    def findings(self) -> list:
        return self.summary.get("findings", [])


class UsageError(ValueError):
    """moefuzz refused the request (exit 2): a bad flag, an unknown profile, a kernel it cannot load."""


def find_binary() -> str:
    """The moefuzz executable: $MOEFUZZ_BIN, `moefuzz` on PATH, or this source tree's build."""
    env = os.environ.get("MOEFUZZ_BIN")
    if env:
        return env
    on_path = shutil.which("moefuzz")
    if on_path:
        return on_path
    tree = Path(__file__).resolve().parents[2] / "build" / "release" / "bin" / "moefuzz"
    if tree.exists():
        return str(tree)
    raise UsageError("the moefuzz binary was not found: set MOEFUZZ_BIN, put moefuzz on PATH (cmake --install), "
                     "or build the source tree (scripts/build.sh)")


def kernel_spec(kernel) -> str:
    """'py:MODULE:ATTR' for a kernel object (or a string naming one, or a built-in kernel name)."""
    if isinstance(kernel, str):
        if kernel.startswith("py:") or ":" not in kernel:
            return kernel
        return "py:" + kernel
    module = getattr(kernel, "__module__", None)
    qualname = getattr(kernel, "__qualname__", None)
    if not isinstance(qualname, str):  # an instance: find the name it is bound to in its module
        qualname = None
        mod = sys.modules.get(module or type(kernel).__module__)
        module = mod.__name__ if mod else None
        for name, value in vars(mod or object()).items():
            if value is kernel:
                qualname = name
                break
    if not module or not qualname or module == "__main__" or "<locals>" in qualname:
        raise UsageError(f"cannot name {kernel!r} for the worker process: define it at module level in an "
                         "importable module, or pass 'py:MODULE:ATTR'")
    return f"py:{module}:{qualname}"


def check(kernel, *, profile: str | None = None, shapes: str = "small", cases: int | None = None,
          time: float | None = None, seed: int = 1, invariants: str | list | None = None,
          out: str | None = None, extra_args: list | None = None, env: dict | None = None) -> dict:
    """Runs `moefuzz check` on the kernel; returns the JSON summary, raises CheckFailure on a finding."""
    if cases is None and time is None:
        cases = 50
    args = [find_binary(), "check", "--kernel", kernel_spec(kernel), "--shapes", shapes, "--seed", str(seed)]
    if profile:
        args += ["--profile", profile]
    if cases is not None:
        args += ["--cases", str(cases)]
    if time is not None:
        args += ["--time", str(time)]
    if invariants:
        args += ["--invariants", invariants if isinstance(invariants, str) else ",".join(invariants)]
    with tempfile.TemporaryDirectory(prefix="moefuzz-py-") as tmp:
        summary_path = os.path.join(tmp, "summary.json")
        args += ["--json", summary_path, "--out", out or os.path.join(tempfile.gettempdir(), "moefuzz-pytest")]
        args += list(extra_args or [])
        run_env = dict(os.environ)
        run_env.setdefault("MOEFUZZ_PYTHON", sys.executable)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        run_env["PYTHONPATH"] = os.pathsep.join(paths + [run_env.get("PYTHONPATH", "")]).strip(os.pathsep)
        run_env.update(env or {})
        proc = subprocess.run(args, capture_output=True, text=True, env=run_env)
        summary = {}
        if os.path.exists(summary_path):
            with open(summary_path) as f:
                summary = json.load(f)
    report = proc.stdout + proc.stderr
    if proc.returncode == 1:
        raise CheckFailure(report, summary)
    if proc.returncode != 0:
        raise UsageError(f"moefuzz exited {proc.returncode}: {report.strip()}")
    return summary
