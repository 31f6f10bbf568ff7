# Instrumentation of our own libraries: asan preset (ASan+UBSan) and fuzz preset (libFuzzer hooks).
set(MOEFUZZ_SANITIZE "" CACHE STRING "none | asan | fuzz")
function(moefuzz_instrument target)
  if(MOEFUZZ_SANITIZE STREQUAL "asan")
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer
                                            -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  elseif(MOEFUZZ_SANITIZE STREQUAL "fuzz")
    target_compile_options(${target} PUBLIC -fsanitize=fuzzer-no-link,address,undefined
                                            -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()
