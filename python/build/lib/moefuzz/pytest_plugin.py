"""pytest integration: the `moefuzz_check` fixture (registered through the pytest11 entry point).

Example:
    def test_my_combine(moefuzz_check):
        moefuzz_check(my_combine, cases=40)      # seed from --moefuzz-seed (default 1)
"""
from __future__ import annotations

import pytest

from .api import check


def pytest_addoption(parser):
    parser.addoption("--moefuzz-seed", type=int, default=1, help="root seed for moefuzz checks")
    parser.addoption("--moefuzz-cases", type=int, default=None, help="cases per moefuzz check (default: the test's)")


@pytest.fixture
def moefuzz_check(request):
    """check() with the session's seed and case count; a finding fails the test with moefuzz's report."""
    seed = request.config.getoption("--moefuzz-seed")
    cases = request.config.getoption("--moefuzz-cases")

    def run(kernel, **kwargs):
        kwargs.setdefault("seed", seed)
        if cases is not None:
            kwargs["cases"] = cases
        return check(kernel, **kwargs)

    return run
