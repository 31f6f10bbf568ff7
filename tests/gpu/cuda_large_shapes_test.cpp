// The `cuda` kernel on shapes the random campaigns (tests/gpu/cuda_oracle_test.cpp) never draw,
// against the project's oracle (oracles/oracle.h) and the check engine. Skips visibly without a GPU.
//
//   MShapeLayerPassesTheCheck             T=128, H=2048, I=1024, E=64, k=8 through the check engine
//   IndicesPast2Pow31AreCorrectOnSampledTokens   T*k*H > 2^31; opt-in MOEFUZZ_GPU_LARGE=1 (~7 GB)
//   TacticsAreBitIdenticalAtDecodeShapes  DeepSeek-V3 decode sizes; opt-in MOEFUZZ_GPU_LARGE=1 (~7 GB)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/verdict.h"
#include "drivers/check_engine.h"
#include "oracles/oracle.h"
#include "properties/case_transforms.h"
#include "properties/invariant.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/cuda/pipeline_result.h"
#include "support/require_gpu.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaLargeShapes, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled";
}
#else
namespace moefuzz {
namespace {

#define MOEFUZZ_REQUIRE_LARGE()                                               \
  do {                                                                        \
    const char* on_ = std::getenv("MOEFUZZ_GPU_LARGE");                       \
    if (!on_ || std::string(on_) != "1")                                      \
      GTEST_SKIP() << "opt-in: MOEFUZZ_GPU_LARGE=1 (~7 GB of device memory)"; \
  } while (0)

// A medium shape (the M shape of bench/cpu_bench.cpp): every exposed stage and the output against the
// oracle, and the three tactics bit for bit.
TEST(CudaLargeShapes, MShapeLayerPassesTheCheck) {
  MOEFUZZ_REQUIRE_GPU();
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.routing.mode = RoutingMode::kSoftmax;
  r.routing.routed_scaling_factor = 2.5;
  r.shape = {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8};
  const Case c = materialize(r);
  const auto kernel = make_cuda_kernel();
  const CaseReport rep = check_case(*kernel, c, {.invariants = select_invariants("ORACLE,TACTIC")});
  ASSERT_EQ(rep.verdicts.size(), 2u);
  for (const Verdict& v : rep.verdicts) {
    EXPECT_TRUE(v.passed()) << v.invariant << "/" << v.stage << ": " << v.message;
    EXPECT_GT(v.compared, 0) << v.invariant << " compared nothing";
  }
}

// T * k * H > 2^31 (T = 40000, k = 8, H = 7168): the tokens whose expanded rows lie past 2^31
// elements (and a sample of the others) against the oracle. The oracle cannot afford the whole
// case on the host, so it checks the sub-case of the sampled tokens (select_tokens: each token's
// output depends on its own inputs only) against the kernel's rows of those tokens.
TEST(CudaLargeShapes, IndicesPast2Pow31AreCorrectOnSampledTokens) {
  MOEFUZZ_REQUIRE_GPU();
  MOEFUZZ_REQUIRE_LARGE();
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.routing.mode = RoutingMode::kSoftmax;
  r.routing.routed_scaling_factor = 2.5;
  r.shape = {.tokens = 40000, .hidden = 7168, .inter = 64, .experts = 8, .top_k = 8};
  const int64_t T = r.shape.tokens, H = r.shape.hidden, E = r.shape.experts;
  ASSERT_GT(T * r.shape.top_k * H, int64_t{1} << 31);

  // Weights and scales from the project's generator on one token; the hidden states and logits of
  // the 40000 tokens are filled here with a plain generator (cheap at 287 M elements).
  CaseRecipe one = r;
  one.shape.tokens = 1;
  Case c = materialize(one);
  c.recipe = r;
  std::mt19937_64 bits(99);
  c.hidden.resize(static_cast<size_t>(T * H));
  for (auto& h : c.hidden) {  // bf16 of magnitude in [2^-7, 2^4), either sign
    const uint64_t z = bits();
    h = static_cast<uint16_t>((z & 0x807F) | ((0x78 + (z >> 16) % 12) << 7));
  }
  for (auto& s : c.a1_scale) s = 2688.0f / 16.0f;  // S_q = 6 * 448 / amax: no block scale saturates
  std::normal_distribution<float> normal(0.0f, 1.0f);
  c.logits.resize(static_cast<size_t>(T * E));
  for (auto& l : c.logits) l = normal(bits);

  const cuda::PipelineConfig cfg = cuda::config_for(r, cuda_kernel_profile(), 0);
  cuda::MoePipeline p(cfg);
  p.upload_case(c);
  p.run();

  std::vector<int64_t> sample = {0, 1, T / 2, T - 2, T - 1};
  for (int i = 0; i < 27; ++i) sample.push_back(static_cast<int64_t>(bits() % static_cast<uint64_t>(T)));
  const LayerResult res = cuda::pipeline_result(p, sample, cuda::Exposure::kAll);
  const cuda::Permutation perm = p.download_permutation();
  int64_t max_row = 0;
  for (int64_t t : sample)
    for (int64_t s = 0; s < cfg.routed_slots(); ++s)
      max_row = std::max(max_row, perm.pair_row[t * cfg.all_slots() + s]);
  EXPECT_GT(max_row * H, int64_t{1} << 31) << "no sampled row lies past 2^31 elements";

  const Verdict v = compare_layer(select_tokens(c, sample), cuda_kernel_profile(), res);
  EXPECT_TRUE(v.passed()) << v.stage << ": " << v.message;
  EXPECT_GT(v.compared, 0);
  std::printf(
      "[cuda] T*k*H = %lld (2^31 = %lld): %zu sampled tokens, largest row offset %lld, max error/bound "
      "%.3g\n",
      static_cast<long long>(T * r.shape.top_k * H), 1LL << 31, sample.size(),
      static_cast<long long>(max_row * H), v.max_ratio);
}

// The TACTIC contract at the full DeepSeek-V3 decode sizes (H=7168, I=2048, E=256, k=8), which the
// random cases do not reach: every tactic's output equals tactic 0's bit for bit. Weights and
// activations are random bytes written on the device (MoePipeline::fill_random_device).
TEST(CudaLargeShapes, TacticsAreBitIdenticalAtDecodeShapes) {
  MOEFUZZ_REQUIRE_GPU();
  MOEFUZZ_REQUIRE_LARGE();
  for (const int64_t T : {16, 32, 64, 128, 256}) {
    CaseRecipe r;
    r.shape = {.tokens = T, .hidden = 7168, .inter = 2048, .experts = 256, .top_k = 8};
    r.routing.mode = RoutingMode::kSoftmax;
    auto output_of = [&](int tactic) {
      cuda::MoePipeline p(cuda::config_for(r, cuda_kernel_profile(), tactic));
      p.fill_random_device(1234 + T);
      p.run();
      return p.download_output();
    };
    const std::vector<uint16_t> ref = output_of(0);
    for (int tactic = 1; tactic < cuda::kNumTactics; ++tactic) {
      const std::vector<uint16_t> out = output_of(tactic);
      ASSERT_EQ(out.size(), ref.size());
      int64_t differ = 0;
      for (size_t i = 0; i < out.size(); ++i) differ += out[i] != ref[i];
      EXPECT_EQ(differ, 0) << "T=" << T << ": tactic " << tactic << " differs from tactic 0 in " << differ
                           << " of " << out.size() << " outputs";
    }
  }
}

}  // namespace
}  // namespace moefuzz
#endif  // MOEFUZZ_WITH_CUDA
