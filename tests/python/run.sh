#!/usr/bin/env bash
# ctest's entry to the Python bridge tests: INTERPRETER ARGS... from the repository root. Fails (never skips)
# when the test environment is missing: scripts/python-env.sh makes it.
set -euo pipefail
py="$1"
shift
if [ ! -x "$py" ]; then
  echo "tests/python: no Python test environment at $py: run scripts/python-env.sh (scripts/test.sh does)" >&2
  exit 1
fi
cd "$(dirname "$0")/../.."
exec "$py" "$@"
