#!/usr/bin/env bash
# Installs the Debian packages moefuzz needs, only those missing; silent when nothing is needed.
# Called by scripts/demo.sh and scripts/test.sh; safe to run again.
set -euo pipefail
PACKAGES=(
  cmake make g++
  clang libclang-rt-14-dev llvm                # fuzz preset (scripts/fuzz-ci.sh): clang 14; libFuzzer and the
                                               # ASan/UBSan runtimes (only Recommended by clang-14, so named);
                                               # llvm-symbolizer for readable sanitizer stack traces
  libgtest-dev librapidcheck-dev libbenchmark-dev
  libboost-dev                                 # Boost.Multiprecision (header-only)
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libxxhash-dev                                # XXH3 content hashes (core/content_hasher.h), header-only
  gnuplot-nox                                  # drift plots
  python3 python3-venv                         # Python kernels (py:) and their tests (scripts/python-env.sh)
  clang-format                                 # tests/format_check.sh (ctest format.clang_format)
  chromium                                     # headless browser of the report test (cli.report_in_browser)
  git ca-certificates
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "moefuzz: installing missing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The CUDA Toolkit is not a Debian package here: it is used when present (nvcc on PATH or in
# /usr/local/cuda), and the build and tests say so when it is absent.
