#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: the fuzz preset, with the sanitizer flags the builder exports in
# CFLAGS/CXXFLAGS (MOEFUZZ_SANITIZE empty, so they are not added twice) and $LIB_FUZZING_ENGINE as the
# fuzzing engine at link time. Each target goes to $OUT with its .dict, .options and seed corpus zip.
cd "$SRC/moefuzz"
cmake --preset fuzz -B build/cflite -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DMOEFUZZ_SANITIZE= -DMOEFUZZ_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" -DMOEFUZZ_BUILD_TESTS=OFF
targets="recipe_parser_fuzzer nvfp4_fuzzer routing_fuzzer moe_layer_fuzzer"
cmake --build build/cflite -j"$(nproc)" --target $targets
for t in $targets; do
  cp "build/cflite/bin/$t" "$OUT/"
  cp "fuzz/$t.dict" "fuzz/$t.options" "$OUT/"
  (cd "corpora/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
done
