// Zero false positives at the extremes of what the recipe validator accepts: the validator refuses,
// with a reason, the values no kernel can apply (subnormal or infinite as an fp32 factor;
// core/recipe.cpp), and the correct kernels pass every cheap invariant on generator recipes whose
// routed scaling factor or global scales sit at the edges of the accepted range.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/case.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

// Measured before the derived terms existed (40 generator recipes x 3 correct kernels): rsf 2^-126
// and 1e-30 failed SCALE1/route and STRUCT/route (a weight x rsf below 2^-126 rounds with an
// absolute error the relative weight bound did not carry: oracles/routing_bounds.cpp now adds the
// subnormal floor per rounding, amplified by the later division); rsf 2^127 failed FINITE, DUP and
// SCALE1 on the output (the fp32 output overflows where the double oracle is finite:
// oracles/stages/combine.cpp now leaves an element whose intermediates may overflow to FINITE).
TEST(ExtremeValues, RsfAtTheEdgesOfTheAcceptedRangeGivesNoFalsePositive) {
  const std::vector<double> edges = {0x1p-126, 1e-30, 1e30, 0x1p127, 0x1.fep127 /* the largest bf16 */};
  const CheckOptions options{.invariants = select_invariants("all")};
  const auto gen = gen::recipe_for("small");
  int64_t checked = 0;
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const auto kernel = make_kernel(name);
    for (uint64_t index = 0; index < 40; ++index) {
      for (double rsf : edges) {
        CaseRecipe r =
            gen::sample(gen, /*seed=*/15, index, static_cast<int>(std::min<uint64_t>(100, 3 * index)));
        r.profile = kernel->profile();
        r.routing.routed_scaling_factor = rsf;
        ASSERT_EQ(validate(r), "") << "rsf " << rsf << " is inside the accepted range";
        if (!kernel->supports(r).empty()) continue;
        const CaseReport rep = check_case(*kernel, materialize(r), options);
        ++checked;
        EXPECT_FALSE(rep.failed()) << name << ", rsf " << rsf << ", index " << index << ": "
                                   << rep.first_failure().signature() << " " << rep.first_failure().message;
      }
    }
  }
  EXPECT_GT(checked, 300);
  RecordProperty("cases_checked", static_cast<int>(checked));
}

// Global dequantization scales at the extremes the recipe accepts: subnormal (every dequantized
// weight of the matrix an fp32 subnormal, or flushed), the smallest subnormal, and huge (the GEMM
// partial sums and the combine overflow). Cases with bf16 weights get the value as one weight; cases
// with MXFP4 weights an E8M0 extreme in the first block scale instead (codes 1, 0, 0xFE, 0xFF).
TEST(ExtremeValues, GlobalScalesAtTheExtremesGiveNoFalsePositive) {
  const CheckOptions options{.invariants = select_invariants("all")};
  const auto gen = gen::recipe_for("small");
  int64_t checked = 0;
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const auto kernel = make_kernel(name);
    for (uint64_t index = 0; index < 16; ++index)
      for (const char* tensor : {"gate.global", "up.global", "down.global"})
        for (double value : {0x1p-140, 1e-45, 0x1p100, 3e38}) {
          CaseRecipe r =
              gen::sample(gen, /*seed=*/16, index, static_cast<int>(std::min<uint64_t>(100, 3 * index)));
          r.profile = kernel->profile();
          if (r.quant.weights == WeightFormat::kBf16) {
            // bf16 weights have no global scale: the same extreme value as one weight of expert 0.
            const std::string w = std::string(tensor).replace(std::string(tensor).find(".global"), 7, ".w");
            r.edits.push_back(Edit{.tensor = w, .index = {0, 0, 0}, .value = value});
          } else if (r.quant.weights == WeightFormat::kMxfp4) {
            const std::string w =
                std::string(tensor).replace(std::string(tensor).find(".global"), 7, ".mx_scale");
            const double code = value == 0x1p-140 ? 1 : value == 1e-45 ? 0 : value == 0x1p100 ? 0xFE : 0xFF;
            r.edits.push_back(Edit{.tensor = w, .index = {0, 0, 0}, .value = code});
          } else if (r.quant.weights == WeightFormat::kFp8Block) {
            // FP8 block weights: the same extreme value as the first 128x128 block scale (a multiplier).
            const std::string w =
                std::string(tensor).replace(std::string(tensor).find(".global"), 7, ".fp8_scale");
            r.edits.push_back(Edit{.tensor = w, .index = {0, 0, 0}, .value = value});
          } else {
            r.edits.push_back(Edit{.tensor = tensor, .index = {0}, .value = value});
          }
          ASSERT_EQ(validate(r), "") << tensor << " = " << value;
          if (!kernel->supports(r).empty()) continue;
          const CaseReport rep = check_case(*kernel, materialize(r), options);
          ++checked;
          EXPECT_FALSE(rep.failed()) << name << ", " << tensor << " = " << value << ", index " << index
                                     << ": " << rep.first_failure().signature() << " "
                                     << rep.first_failure().message;
        }
  }
  EXPECT_GT(checked, 300);
}

TEST(ExtremeValues, RsfNoKernelCanApplyIsRefusedWithAReason) {
  CaseRecipe r;
  for (double rsf : {1e-40, 2e-45, 1e-39, 1.17e-38, 3.4e38, 3.5e38, 1e300}) {
    r.routing.routed_scaling_factor = rsf;
    const std::string why = validate(r);
    EXPECT_NE(why.find("routed_scaling_factor"), std::string::npos) << rsf << ": " << why;
    EXPECT_NE(why.find("fp32"), std::string::npos) << rsf << ": " << why;
    EXPECT_NE(why.find("bf16"), std::string::npos) << rsf << ": " << why;
  }
  r.routing.routed_scaling_factor = static_cast<double>(std::numeric_limits<float>::min());
  EXPECT_EQ(validate(r), "");
}

}  // namespace
}  // namespace moefuzz
