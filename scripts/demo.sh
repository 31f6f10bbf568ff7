#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds, and runs moefuzz on the
# default kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
bin=build/release/bin/moefuzz
echo "== moefuzz list"
"$bin" list
for f in corpora/examples/*.moefuzz; do
  echo "== moefuzz show $f"
  "$bin" show "$f"
done
