#!/usr/bin/env bash
# Builds the GPU test executables with only the CUDA toolkit, a C++20 g++ and googletest SOURCES
# (the lent GPU machine's image has no fmt/CLI11/rapidcheck/GTest packages, so the main CMake
# configure cannot run there). Usage, from the repository root:
#   kernels/cuda/build_gpu_tests.sh OUT_DIR GTEST_SRC_DIR [EXTRA_INCLUDE_DIR]
# GTEST_SRC_DIR = .../googletest/googletest; EXTRA_INCLUDE_DIR may hold header-only fmt (used with
# FMT_HEADER_ONLY, so core/ files that format messages compile without libfmt).
# Produces OUT_DIR/gpu_cuda_layer_test and OUT_DIR/gpu_cuda_gemm_bandwidth_test.
set -euo pipefail
out=${1:?out dir}; gtest=${2:?googletest source dir}; extra=${3:-/usr/include}
mkdir -p "$out/obj"
NVCC=${NVCC:-nvcc}
CUDA_FLAGS="-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --fmad=false -lineinfo -I. -DMOEFUZZ_WITH_CUDA=1"
CXX_FLAGS="-std=c++20 -O2 -g -ffp-contract=off -fno-fast-math -I. -I$extra -DFMT_HEADER_ONLY -DMOEFUZZ_WITH_CUDA=1"
pids=()
for f in kernels/cuda/*.cu; do
  $NVCC $CUDA_FLAGS -c "$f" -o "$out/obj/$(basename "$f").o" & pids+=($!)
done
objs=()
for f in core/*.cpp kernels/cuda/*.cpp; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  ( g++ $CXX_FLAGS -c "$f" -o "$o" 2>"$o.log" || echo "skipped $f (does not compile here: $(head -c 200 "$o.log"))" ) & pids+=($!)
done
g++ -std=c++20 -O2 -I"$gtest/include" -I"$gtest" -c "$gtest/src/gtest-all.cc" -o "$out/obj/gtest-all.o" & pids+=($!)
g++ -std=c++20 -O2 -I"$gtest/include" -c "$gtest/src/gtest_main.cc" -o "$out/obj/gtest_main.o" & pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
# An archive: the linker takes only the members the tests need (core files that need fmt etc. are
# skipped above where those packages are missing, and never pulled in here).
rm -f "$out/libmoefuzz_gpu.a"
ar rcs "$out/libmoefuzz_gpu.a" $(ls "$out"/obj/*.o | grep -v 'gtest\|/t_')
CUDA_LIB=$(dirname "$(command -v $NVCC)")/../lib64
for t in cuda_layer cuda_gemm_bandwidth; do
  g++ $CXX_FLAGS -I"$gtest/include" -I/usr/local/cuda/include -DMOEFUZZ_HAVE_CUDA_HEADERS=1 -c "tests/gpu/${t}_test.cpp" -o "$out/obj/t_$t.o"
  g++ -o "$out/gpu_${t}_test" "$out/obj/t_$t.o" "$out/libmoefuzz_gpu.a" "$out/obj/gtest-all.o" "$out/obj/gtest_main.o" \
      -L"$CUDA_LIB" -lcudart -lpthread -Wl,-rpath,"$CUDA_LIB"
done
echo "built: $(ls "$out"/gpu_*_test)"
