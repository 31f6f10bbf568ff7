"""Shared helpers of the Python bridge tests: run the moefuzz CLI on a py: kernel from the repository root.

ctest runs these with build/python-venv's interpreter (scripts/python-env.sh) and MOEFUZZ_BIN set to the build's
binary; the worker uses the same interpreter (MOEFUZZ_PYTHON).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def moefuzz_bin() -> str:
    b = os.environ.get("MOEFUZZ_BIN")
    if not b or not os.path.exists(b):
        pytest.fail("MOEFUZZ_BIN must name the moefuzz binary (ctest sets it)")
    return b


class Run:
    def __init__(self, proc, json_path):
        self.rc = proc.returncode
        self.out = proc.stdout + proc.stderr
        self.summary = json.loads(Path(json_path).read_text()) if json_path and Path(json_path).exists() else {}

    def signatures(self):
        return [f["signature"] for f in self.summary.get("findings", [])]


@pytest.fixture
def moefuzz(tmp_path):
    """moefuzz(*args, env=...) -> Run; `--json` is added for check."""

    def run(*args, env=None, timeout=300):
        args = [str(a) for a in args]
        json_path = None
        if args and args[0] == "check" and "--json" not in args:
            json_path = tmp_path / f"summary-{len(list(tmp_path.iterdir()))}.json"
            args += ["--json", str(json_path)]
        full_env = dict(os.environ, MOEFUZZ_PYTHON=sys.executable)
        full_env.update(env or {})
        proc = subprocess.run([moefuzz_bin()] + args, cwd=ROOT, capture_output=True, text=True, env=full_env,
                              timeout=timeout)
        return Run(proc, json_path)

    return run
