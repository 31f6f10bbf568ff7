# CUDA: compiled whenever nvcc is found (release preset), run only where a GPU exists.
# The CUDA Toolkit headers (cuda_fp8.h, cuda_fp4.h) are also the independent reference of the
# number-format tests, so the toolkit is looked for even when CUDA code is not built.
set(MOEFUZZ_HAVE_CUDA OFF)
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
find_package(CUDAToolkit QUIET)
if(MOEFUZZ_ENABLE_CUDA AND CUDAToolkit_FOUND)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake 3.25 (Debian 12) knows no CUDA20 dialect flag for nvcc 13, and moefuzz_core's PUBLIC
    # cxx_std_20 reaches CUDA targets as CUDA20: generate then stops. Tell it the flag.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # sm_90a SASS for the H200 plus compute_90 PTX for anything newer.
    set(CMAKE_CUDA_ARCHITECTURES 90a-real 90-virtual)
    set(MOEFUZZ_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "moefuzz: CUDA kernels ${MOEFUZZ_HAVE_CUDA}; CUDA Toolkit headers ${CUDAToolkit_FOUND}")
