// The built-in profiles (core/profile.h): complete, cited, and the conventions the SPEC pins.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/errors.h"
#include "core/profile.h"

namespace moefuzz {
namespace {

TEST(Profiles, AllRequiredProfilesExistWithSourcesAndUniqueNames) {
  std::set<std::string> names;
  for (const Profile& p : all_profiles()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.summary.empty()) << p.name;
    EXPECT_GE(p.sources.size(), 3u) << p.name << " must cite its sources";
    EXPECT_GE(p.renorm_epsilon, 0.0);
  }
  for (const char* n : {"sglang-triton", "sglang-cutlass-fp4", "flashinfer-cutlass", "trtllm-gen", "vllm",
                        "deepseek-ref", "flashinfer-reference"}) {
    EXPECT_EQ(profile_by_name(n).name, n);
  }
}

TEST(Profiles, UnknownNameThrowsInputErrorListingKnownNames) {
  try {
    profile_by_name("no-such-backend");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no-such-backend"), std::string::npos);
    EXPECT_NE(what.find("trtllm-gen"), std::string::npos);
    EXPECT_NE(what.find("flashinfer-reference"), std::string::npos);
  }
}

// Conventions SPEC.md and the golden README pin down (not defaults: each differs between profiles).
TEST(Profiles, PinnedConventions) {
  EXPECT_EQ(profile_by_name("flashinfer-cutlass").w13_order, W13Order::kUpGate);
  EXPECT_EQ(profile_by_name("sglang-cutlass-fp4").w13_order, W13Order::kGateUp);
  EXPECT_TRUE(profile_by_name("sglang-cutlass-fp4").rsf_in_topk);  // should_fuse... for ModelOpt NVFP4
  EXPECT_FALSE(profile_by_name("sglang-triton").rsf_in_topk);      // moe_sum_reduce applies rsf
  EXPECT_EQ(profile_by_name("trtllm-gen").routing_weight_dtype, WeightDtype::kBf16);
  EXPECT_EQ(profile_by_name("flashinfer-cutlass").zero_scale_rule, ZeroScaleRule::kVecMaxTest);
  EXPECT_EQ(profile_by_name("vllm").zero_scale_rule, ZeroScaleRule::kScaleTest);
  const Profile& ref = profile_by_name("flashinfer-reference");
  EXPECT_EQ(ref.w13_order, W13Order::kUpGate);
  EXPECT_EQ(ref.quantizer, QuantizerVariant::kReference);
  EXPECT_EQ(ref.combine, CombineAccum::kFp32Unrounded);
  EXPECT_FALSE(ref.bf16_output);
  EXPECT_TRUE(ref.bf16_after_activation);
  EXPECT_TRUE(ref.rsf_in_topk);
  EXPECT_EQ(ref.renorm_epsilon, 1e-20);
}

}  // namespace
}  // namespace moefuzz
