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
    # Executables other than the fuzz targets (the CLI, tests, replay runners) still call the coverage
    # hooks compiled into the libraries; without ASan nothing defines them, so they link libFuzzer's
    # no-main runtime (the fuzz targets get the full runtime from MOEFUZZ_FUZZ_ENGINE instead).
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "EXECUTABLE" AND NOT target IN_LIST MOEFUZZ_FUZZ_TARGETS)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir OUTPUT_VARIABLE _rt
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      target_link_libraries(${target} PRIVATE "${_rt}/libclang_rt.fuzzer_no_main-${CMAKE_SYSTEM_PROCESSOR}.a")
    endif()
  endif()
endfunction()

# Numeric inner loops (GEMMs, dot products, the FC2 scale estimate, bf16 rounding) and the value
# generators (whose comparisons test random bits the fuzzer does not control): their comparisons are
# loop bounds, table indices and bit patterns, not decisions an input can steer. Tracing them cost
# about a third of a routing_fuzzer execution under the fuzz preset (perf, docs/perf.md) and guides
# nothing, so the fuzz presets keep edge coverage there but drop trace-cmp. Call in the folder that
# defines the target.
function(moefuzz_numeric_loops)
  if(MOEFUZZ_SANITIZE MATCHES "^fuzz")
    set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_OPTIONS $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-coverage=trace-cmp>)
  endif()
endfunction()
