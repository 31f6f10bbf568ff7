# Instrumentation of our own libraries: asan preset (ASan+UBSan), fuzz preset (libFuzzer hooks +
# ASan/UBSan) and fuzz-gpu preset (libFuzzer hooks only: ASan's shadow memory and the CUDA driver do
# not mix, and GPU campaigns want throughput). C++ only: nvcc must not see these flags.
set(MOEFUZZ_SANITIZE "" CACHE STRING "none | asan | fuzz | fuzz-coverage")
function(moefuzz_instrument target)
  if(MOEFUZZ_SANITIZE STREQUAL "asan")
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer
                                            -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  elseif(MOEFUZZ_SANITIZE STREQUAL "fuzz")
    target_compile_options(${target} PUBLIC -fsanitize=fuzzer-no-link,address,undefined
                                            -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  elseif(MOEFUZZ_SANITIZE STREQUAL "fuzz-coverage")
    target_compile_options(${target} PUBLIC $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endif()
endfunction()
