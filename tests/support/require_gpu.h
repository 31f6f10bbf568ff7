#pragma once
// MOEFUZZ_REQUIRE_GPU(): the first statement of a GPU test; skips it visibly (with the reason) where
// no usable CUDA GPU exists. Builds with nvcc only (include it under #ifdef MOEFUZZ_WITH_CUDA).
//
// Example:
//   TEST(CudaThing, Works) {
//     MOEFUZZ_REQUIRE_GPU();
//     ...
//   }
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/moe_pipeline.h"

#define MOEFUZZ_REQUIRE_GPU()                                                                            \
  do {                                                                                                   \
    std::string why_;                                                                                    \
    if (!::moefuzz::cuda::cuda_device_available(&why_)) GTEST_SKIP() << "no CUDA GPU present: " << why_; \
  } while (0)
