#!/usr/bin/env bash
# Configure and build one preset (default: release). Used by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
jobs="${MOEFUZZ_JOBS:-$(nproc)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
