"""Python mutants join the kill matrix: each is killed by an invariant it declares."""
from __future__ import annotations

import json

MUTANTS = ["rsf_twice", "rsf_never", "renorm_ignored", "gate_up_swapped", "weights_dropped", "batch_normalized"]


def test_python_mutants_are_killed(moefuzz, tmp_path):
    args = ["mutants", "--time", 20, "--correct-cases", 1, "--json", tmp_path / "m.json"]
    for m in MUTANTS:
        args += ["--mutant", f"py:examples.python.mutants:{m}"]
    r = moefuzz(*args, timeout=900)
    matrix = json.loads((tmp_path / "m.json").read_text())
    rows = {row["mutant"]: row for row in matrix["mutants"]}
    assert len(rows) == len(MUTANTS), r.out
    assert not matrix["survivors"], r.out
    for name, row in rows.items():
        killers = [inv for inv, cell in row["kills"].items() if cell["cases"] >= 0]
        assert set(killers) & set(row["expected"]), (name, row)
