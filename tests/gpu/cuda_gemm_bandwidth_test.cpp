// Achieved HBM bandwidth of the CUDA grouped GEMMs (GEMM1 + GEMM2) on DeepSeek-V3 decode shapes
// (H = 7168, I = 2048, E = 256, k = 8, T = 16 .. 256), against the device-to-device copy ceiling
// measured in the same process (and the ~4.3 TB/s of KINDS.md). Opt-in: MOEFUZZ_GPU_BENCH=1
// (allocates ~6.5 GB per shape).
// Bytes counted: the weights (codes + scales) of every expert with >= 1 token, the bf16 activations
// read once and the bf16 outputs written once (MoePipeline::gemm_min_bytes). Timing: CUDA events,
// median of 20 replays after 3 warm-ups. Weights are random (never zeros).
// Every tactic's layer output is also compared BIT FOR BIT with tactic 0's on the same shape and
// seed (TACTIC contract at full DeepSeek size, which the random small cases do not reach).
// Env: MOEFUZZ_BENCH_TACTICS (comma list, default all), MOEFUZZ_BENCH_TOKENS (comma list, default
// 16,32,64,128,256), MOEFUZZ_CUDA_STREAM_VARIANT (stream tactic tile variant, default 0),
// MOEFUZZ_BENCH_COPY=0 skips the copy measurement.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/recipe.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaGemmBandwidth, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled";
}
#else
namespace moefuzz {
namespace {

constexpr double kKindsCopyGBs = 4300;  // KINDS.md: device-to-device copy on this H200 kind

std::vector<int64_t> env_list(const char* name, std::vector<int64_t> fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::vector<int64_t> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

cuda::PipelineConfig decode_config(int64_t T, int tactic) {
  CaseRecipe r;
  r.shape = {.tokens = T, .hidden = 7168, .inter = 2048, .experts = 256, .top_k = 8};
  r.routing.mode = RoutingMode::kSoftmax;
  return cuda::config_for(r, cuda_kernel_profile(), tactic);
}

TEST(CudaGemmBandwidth, DecodeShapes) {
  std::string why;
  if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << "no CUDA GPU present: " << why;
  const char* on = std::getenv("MOEFUZZ_GPU_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "opt-in: MOEFUZZ_GPU_BENCH=1";
  std::vector<int64_t> all;
  for (int t = 0; t < cuda::kNumTactics; ++t) all.push_back(t);
  const std::vector<int64_t> tactics = env_list("MOEFUZZ_BENCH_TACTICS", all);
  const std::vector<int64_t> tokens = env_list("MOEFUZZ_BENCH_TOKENS", {16, 32, 64, 128, 256});
  const char* copy_env = std::getenv("MOEFUZZ_BENCH_COPY");
  std::printf("[cuda-bench] device %s; stream variant %d (%s)\n", cuda::cuda_device_name().c_str(),
              cuda::stream_variant(), cuda::stream_variant_name(cuda::stream_variant()).c_str());
  double copy = kKindsCopyGBs;
  if (!copy_env || std::string(copy_env) != "0") {
    copy = cuda::measure_copy_gbs(int64_t{2} << 30, 10);
    std::printf("[cuda-bench] copy ceiling: cudaMemcpy D2D 2 GiB, median of 10: %.1f GB/s (read + write)\n",
                copy);
  }
  std::printf("[cuda-bench] %6s %6s %-18s %8s %10s %10s %8s %8s %s\n", "T", "tactic", "variant", "ms", "MB",
              "GB/s", "%copy", "%4.3TB", "vs tactic 0");
  for (int64_t T : tokens) {
    // Reference output of tactic 0 (same seed, same random device-generated case).
    std::vector<uint16_t> ref;
    {
      cuda::MoePipeline p0(decode_config(T, 0));
      p0.fill_random_device(1234 + T);
      p0.run();
      ref = p0.download_output();
    }
    int64_t nonfinite = 0;
    for (uint16_t b : ref) nonfinite += (b & 0x7F80) == 0x7F80;
    for (int64_t tactic : tactics) {
      if (tactic < 0 || tactic >= cuda::kNumTactics) continue;
      cuda::MoePipeline p(decode_config(T, static_cast<int>(tactic)));
      p.fill_random_device(1234 + T);
      p.run();
      const std::vector<uint16_t> out = p.download_output();
      int64_t diff = 0;
      for (size_t i = 0; i < out.size(); ++i) diff += out[i] != ref[i];
      const float ms = p.time_gemms_ms(20);
      const double bytes = static_cast<double>(p.gemm_min_bytes());
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      const std::string variant =
          cuda::kTactics[tactic].stream
              ? cuda::stream_variant_name(cuda::stream_variant())
              : (cuda::kTactics[tactic].rows_per_tile == 16 ? "splitK 16-row" : "splitK 64-row");
      std::printf(
          "[cuda-bench] %6lld %6lld %-18s %8.4f %10.1f %10.1f %7.1f%% %7.1f%% %s (%lld/%zu differ, %lld "
          "non-finite in ref)\n",
          static_cast<long long>(T), static_cast<long long>(tactic), variant.c_str(), ms, bytes / 1e6, gbs,
          100 * gbs / copy, 100 * gbs / kKindsCopyGBs, diff == 0 ? "IDENTICAL" : "DIFFERENT",
          static_cast<long long>(diff), out.size(), static_cast<long long>(nonfinite));
      std::fflush(stdout);
      EXPECT_GT(ms, 0.0f);
      EXPECT_EQ(diff, 0) << "T=" << T << " tactic " << tactic << ": output differs from tactic 0";
    }
  }
}

}  // namespace
}  // namespace moefuzz
#endif
