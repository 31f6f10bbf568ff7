#!/usr/bin/env bash
# ctest `format.clang_format`: every C, C++ and CUDA file of the repository is clang-format clean (.clang-format).
# Fails, never skips, when clang-format is missing (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found (apt-get install clang-format)" >&2; exit 1; }
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.c')
[ -n "$files" ] || { echo "no source files found: not a git checkout?" >&2; exit 1; }
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
echo "clang-format: $(echo "$files" | wc -l) files clean"
