// The CPU pipeline's FP8 block W8A8 path (kernels/cpu/cpu_fp8.cpp) without the oracle: the exposed
// quantized GEMM inputs are core's per-token-group quantizer of the kernel's own rows, each GEMM
// output is the Triton-order block sum recomputed element by element, the path is thread-count
// invariant, and every built-in CPU kernel runs FP8 cases (the other kernels decline them).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/fp8_group_quant.h"
#include "kernel_test_cases.h"
#include "kernels/registry.h"

#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/moe_pipeline.h"
#endif

namespace moefuzz {
namespace {

CaseRecipe fp8_recipe(uint64_t seed) {
  CaseRecipe r;
  r.seed = seed;
  r.profile = "sglang-cutlass-fp4";
  r.shape = {.tokens = 6, .hidden = 256, .inter = 256, .experts = 4, .top_k = 2};
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.fp8_ue8m0 = seed % 2 == 0;
  return r;
}

// One GEMM output element as the contract states it: per 128-block the exact dot (double is exact for
// 128 E4M3 products) rounded to fp32, then acc += fl(fl(P * sa) * sb) in fp32, then bf16.
float triton_order_element(const Fp8GroupQuantized& a, int64_t row, const Fp8BlockQuantized& w, int64_t n) {
  float acc = 0.0f;
  for (int64_t kb = 0; kb < w.cols / 128; ++kb) {
    double p = 0;
    for (int64_t k = kb * 128; k < (kb + 1) * 128; ++k)
      p += static_cast<double>(e4m3_to_float(a.code(row, k))) * e4m3_to_float(w.code(n, k));
    const float scaled = static_cast<float>(p) * a.scale(row, kb);
    acc += scaled * w.scale(n / 128, kb);
  }
  return round_to_bf16(acc);
}

TEST(CpuFp8, ExposedActivationsAreTheGroupQuantizerOfTheKernelsRows) {
  const auto k = make_kernel("cpu");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const CaseRecipe r = fp8_recipe(seed);
    ASSERT_EQ(validate(r), "");
    const Case c = materialize(r);
    const LayerResult res = testing::run_kernel(*k, c);
    ASSERT_TRUE(res.fc1_fp8 && res.fc2_fp8 && res.activation) << "the FP8 path exposes both GEMM inputs";
    EXPECT_FALSE(res.fc1_input || res.fc2_input) << "no NVFP4 codes on an FP8 layer";
    const int64_t T = r.shape.tokens, H = r.shape.hidden, I = r.shape.inter, S = res.routing.slots;
    std::vector<float> x(static_cast<size_t>(T * S * H));
    for (int64_t row = 0; row < T * S; ++row)
      for (int64_t h = 0; h < H; ++h) x[row * H + h] = bf16_to_float(c.hidden[(row / S) * H + h]);
    const Fp8GroupQuantOptions o{.ue8m0 = r.quant.fp8_ue8m0};
    const Fp8GroupQuantized fc1 = quantize_fp8_per_token_group(x, T * S, H, o);
    EXPECT_EQ(res.fc1_fp8->codes, fc1.codes);
    EXPECT_EQ(res.fc1_fp8->scales, fc1.scales);
    EXPECT_EQ(res.fc1_fp8->group, 128);
    const Fp8GroupQuantized fc2 = quantize_fp8_per_token_group(*res.activation, T * S, I, o);
    EXPECT_EQ(res.fc2_fp8->codes, fc2.codes);
    EXPECT_EQ(res.fc2_fp8->scales, fc2.scales);
    if (r.quant.fp8_ue8m0) {
      for (float s : res.fc1_fp8->scales) EXPECT_EQ(std::exp2(std::round(std::log2(s))), s) << s;
    }
  }
}

TEST(CpuFp8, GemmOutputsAreTheTritonOrderBlockSums) {
  const auto k = make_kernel("cpu");
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const CaseRecipe r = fp8_recipe(seed);
    const Case c = materialize(r);
    const LayerResult res = testing::run_kernel(*k, c);
    const int64_t I = r.shape.inter, H = r.shape.hidden, rows = r.shape.tokens * res.routing.slots;
    int checked = 0;
    for (int64_t row = 0; row < rows; row += 3) {
      const Fp8ExpertWeights& w = c.experts[static_cast<size_t>(res.routing.ids[row])].fp8;
      for (int64_t n = 0; n < I; ++n) {  // every column: the GEMM computes four at a time
        EXPECT_EQ((*res.gemm1)[row * 2 * I + n], triton_order_element(*res.fc1_fp8, row, w.gate, n));
        EXPECT_EQ((*res.gemm1)[row * 2 * I + I + n], triton_order_element(*res.fc1_fp8, row, w.up, n));
        checked += 2;
      }
      for (int64_t n = 0; n < H; ++n) {
        EXPECT_EQ((*res.gemm2)[row * H + n], triton_order_element(*res.fc2_fp8, row, w.down, n));
        ++checked;
      }
    }
    EXPECT_GT(checked, 40);
    for (float y : res.output) EXPECT_TRUE(std::isfinite(y));
  }
}

TEST(CpuFp8, ThreadCountAndSharedExpertsDoNotChangeTheBits) {
  const auto k = make_kernel("cpu");
  CaseRecipe r = fp8_recipe(3);
  r.shape.shared_experts = 1;
  const Case c = materialize(r);
  const LayerResult one = testing::run_kernel(*k, c);
  RunOptions opts;
  opts.threads = 3;
  const LayerResult three = testing::run_kernel(*k, c, opts);
  EXPECT_TRUE(testing::same_bits(one.output, three.output));
  ASSERT_EQ(one.shared_output.size(), static_cast<size_t>(r.shape.tokens * r.shape.hidden));
  bool nonzero = false;
  for (float v : one.shared_output) nonzero |= v != 0.0f;
  EXPECT_TRUE(nonzero) << "the shared expert runs through the FP8 MLP";
}

// Every built-in CPU kernel runs FP8 cases; the CUDA pipeline declines them.
TEST(CpuFp8, BuiltinCpuKernelsRunFp8AndTheCudaPipelineDeclines) {
  const CaseRecipe r = fp8_recipe(5);
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"})
    EXPECT_EQ(make_kernel(name)->supports(r), "") << name;
#ifdef MOEFUZZ_WITH_CUDA
  // The pipeline's own reason (the `cuda` kernel asks for a usable GPU first).
  const std::string why = cuda::unsupported_reason(r, profile_by_name("sglang-cutlass-fp4"));
  EXPECT_NE(why.find("FP8 block W8A8"), std::string::npos) << why;
#endif
}

}  // namespace
}  // namespace moefuzz
