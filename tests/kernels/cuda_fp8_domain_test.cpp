// The `cuda-fp8` kernel's domain and contract, checked without a GPU (its device code runs in
// tests/gpu/cuda_fp8_test.cpp): it is registered next to `cuda` and claims `vllm`; the pipeline's FP8
// domain takes FP8 recipes under `vllm` and refuses NVFP4 recipes and FP8 contracts the device code
// does not implement; config_for turns the `vllm` profile into the pipeline settings the shared
// routing / combine kernels implement; without a GPU the kernel declines with that reason.
#include <gtest/gtest.h>

#include <string>

#include "core/profile.h"
#include "core/recipe.h"
#include "kernels/registry.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaFp8Domain, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda-fp8 kernel is not compiled";
}
#else
namespace moefuzz {
namespace {

CaseRecipe fp8_recipe() {
  CaseRecipe r;
  r.seed = 11;
  r.profile = "vllm";
  r.shape = {.tokens = 5, .hidden = 256, .inter = 128, .experts = 8, .top_k = 2};
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.weights = WeightFormat::kFp8Block;
  return r;
}

bool mentions(const std::string& why, const char* what) { return why.find(what) != std::string::npos; }

TEST(CudaFp8Domain, RegisteredAsACudaKernelClaimingVllm) {
  bool found = false;
  for (const KernelEntry& e : kernel_registry())
    if (e.name == "cuda-fp8") {
      found = true;
      EXPECT_EQ(e.kind, KernelKind::kCuda);
    }
  ASSERT_TRUE(found) << "cuda-fp8 is not in the registry of a CUDA build";
  const auto k = make_kernel("cuda-fp8");
  EXPECT_EQ(k->profile(), "vllm");
  EXPECT_FALSE(k->is_mutant());
  EXPECT_EQ(k->claims().tactics, 1);
  const auto m = make_kernel("cuda-fp8-mutant/drop-act-scale");
  EXPECT_TRUE(m->is_mutant());
  EXPECT_EQ(m->expected_killers(), std::vector<std::string>{"ORACLE"});
}

TEST(CudaFp8Domain, Fp8RecipesUnderVllmOnly) {
  const Profile& vllm = profile_by_name("vllm");
  CaseRecipe r = fp8_recipe();
  ASSERT_EQ(validate(r), "");
  EXPECT_EQ(cuda::fp8_unsupported_reason(r, vllm), "");
  r.quant.fp8_ue8m0 = true;
  EXPECT_EQ(cuda::fp8_unsupported_reason(r, vllm), "");
  // The NVFP4 domain refuses FP8 recipes and points at this kernel.
  EXPECT_TRUE(mentions(cuda::unsupported_reason(r, vllm), "cuda-fp8"));

  CaseRecipe nvfp4 = fp8_recipe();
  nvfp4.quant.activations = ActivationFormat::kNvfp4;
  nvfp4.quant.weights = WeightFormat::kNvfp4;
  EXPECT_TRUE(mentions(cuda::fp8_unsupported_reason(nvfp4, vllm), "FP8 block W8A8 layers only"));

  // FP8 contracts the device code does not implement: one fp32 round-to-nearest dot per block (the
  // CPU defaults of sglang-cutlass-fp4), another quantizer, DeepGEMM's scale order.
  EXPECT_TRUE(mentions(cuda::fp8_unsupported_reason(r, profile_by_name("sglang-cutlass-fp4")), "cuda-fp8:"));
  Profile p = vllm;
  p.fp8_act_quant = Fp8GroupQuantVariant::kTriton;
  EXPECT_TRUE(mentions(cuda::fp8_unsupported_reason(r, p), "quantizer"));
  p = vllm;
  p.fp8_scale_order = Fp8ScaleOrder::kDeepGemm;
  EXPECT_TRUE(mentions(cuda::fp8_unsupported_reason(r, p), "scale"));
  p = vllm;
  p.fp8_mma_accum_bits = kFp32RoundToNearestAccumBits;
  EXPECT_TRUE(mentions(cuda::fp8_unsupported_reason(r, p), "accumulator"));
}

// The `vllm` fields the shared routing / align / combine kernels read, and the ones they implement
// as code (not as a setting): if the profile changes, this test names what to re-examine.
TEST(CudaFp8Domain, VllmProfileMapsOntoTheSharedStages) {
  const Profile& vllm = profile_by_name("vllm");
  CaseRecipe r = fp8_recipe();
  r.quant.fp8_ue8m0 = true;
  const cuda::PipelineConfig c = cuda::config_for(r, vllm, 0);
  EXPECT_TRUE(c.fp8);
  EXPECT_TRUE(c.fp8_ue8m0);
  EXPECT_FALSE(c.up_first);              // [gate; up]
  EXPECT_FALSE(c.rsf_in_topk);           // rsf multiplied in the combine
  EXPECT_EQ(c.renorm_epsilon, 0.0f);     // w / sum
  EXPECT_TRUE(c.combine_bf16_products);  // bf16(y * bf16(w)), fp32 sum in slot order
  EXPECT_TRUE(c.fused_shared_weight_inv_rsf);
  // Implemented as code: routing.cu (1/(1+expf(-x)), expf not __expf, fp32 bias, lower index wins),
  // bf16 at every rounding point (g1, act, y, out are bf16 buffers), fp32 routing weights.
  EXPECT_EQ(vllm.sigmoid_form, SigmoidForm::kReciprocal);
  EXPECT_FALSE(vllm.fast_math_exp);
  EXPECT_EQ(vllm.bias_dtype, WeightDtype::kFp32);
  EXPECT_EQ(vllm.tie_rule, TieRule::kLowerIndexWins);
  EXPECT_EQ(vllm.routing_weight_dtype, WeightDtype::kFp32);
  EXPECT_TRUE(vllm.bf16_after_gemm1 && vllm.bf16_after_activation && vllm.bf16_after_gemm2 &&
              vllm.bf16_output);
  EXPECT_EQ(vllm.fp8_dots_per_block, 2);
  EXPECT_EQ(vllm.fp8_mma_accum_bits, kHopperFp8MmaAccumBits);
}

// Without a usable GPU the kernel declines every recipe, FP8 ones included, and says why.
TEST(CudaFp8Domain, DeclinesWithoutAGpu) {
  std::string why;
  if (cuda::cuda_device_available(&why)) GTEST_SKIP() << "a GPU is present: tests/gpu covers the kernel";
  const std::string reason = make_kernel("cuda-fp8")->supports(fp8_recipe());
  EXPECT_TRUE(mentions(reason, "cuda-fp8: no usable GPU")) << reason;
}

}  // namespace
}  // namespace moefuzz
#endif
