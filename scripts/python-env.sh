#!/usr/bin/env bash
# The Python environment of the bridge tests (ctest label `python`): build/python-venv with numpy and pytest,
# and the moefuzz package installed from python/ the way a user installs it (pip, PEP 517). Idempotent.
# Called by scripts/test.sh and scripts/demo.sh; MOEFUZZ_HOST_PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/python-venv
host="${MOEFUZZ_HOST_PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p build
  "$host" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"$venv/bin/python" -c 'import numpy, pytest' 2>/dev/null || "${pip[@]}" 'numpy>=1.22' pytest
"${pip[@]}" --force-reinstall --no-deps ./python
