#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, builds, runs ctest.
# Exit status is non-zero on any failure; the last lines are ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
cd build/release
ctest --output-on-failure -j "${MOEFUZZ_JOBS:-$(nproc)}" --timeout 900
