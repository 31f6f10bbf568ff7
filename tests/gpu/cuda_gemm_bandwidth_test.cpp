// Achieved HBM bandwidth of the CUDA grouped GEMMs (GEMM1 + GEMM2) on DeepSeek-V3 decode shapes
// (H = 7168, I = 2048, E = 256, k = 8, T = 16 .. 256), against the ~4.3 TB/s device-to-device copy
// measured on the H200 (KINDS.md). Opt-in: MOEFUZZ_GPU_BENCH=1 (allocates ~6.5 GB per shape).
// Bytes counted: the weights (codes + scales) of every expert with >= 1 token, the bf16 activations
// read once and the bf16 outputs written once (MoePipeline::gemm_min_bytes). Timing: CUDA events,
// median of 20 replays after 3 warm-ups. Weights are random (never zeros).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/recipe.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaGemmBandwidth, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled"; }
#else
namespace moefuzz {
namespace {

constexpr double kCopyCeilingGBs = 4300;  // KINDS.md: device-to-device copy on this H200 kind

TEST(CudaGemmBandwidth, DecodeShapes) {
  std::string why;
  if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << "no CUDA GPU present: " << why;
  const char* on = std::getenv("MOEFUZZ_GPU_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "opt-in: MOEFUZZ_GPU_BENCH=1";
  std::printf("[cuda-bench] device %s\n", cuda::cuda_device_name().c_str());
  std::printf("[cuda-bench] %6s %6s %8s %10s %10s %8s\n", "T", "tactic", "ms", "MB", "GB/s", "%copy");
  for (int64_t T : {16, 32, 64, 128, 256}) {
    for (int tactic = 0; tactic < cuda::kNumTactics; ++tactic) {
      CaseRecipe r;
      r.shape = {.tokens = T, .hidden = 7168, .inter = 2048, .experts = 256, .top_k = 8};
      r.routing.mode = RoutingMode::kSoftmax;
      cuda::MoePipeline p(cuda::config_for(r, cuda_kernel_profile(), tactic));
      p.fill_random_device(1234 + T);
      p.run();
      const float ms = p.time_gemms_ms(20);
      const double bytes = static_cast<double>(p.gemm_min_bytes());
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("[cuda-bench] %6lld %6d %8.4f %10.1f %10.1f %7.1f%%\n", static_cast<long long>(T), tactic, ms, bytes / 1e6,
                  gbs, 100 * gbs / kCopyCeilingGBs);
      EXPECT_GT(ms, 0.0f);
    }
  }
}

}  // namespace
}  // namespace moefuzz
#endif
