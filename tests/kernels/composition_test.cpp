// The composition matrix: consistent cells agree with the CPU kernel of their profile bit for bit;
// inconsistent cells scale the routed output by s (rsf twice) or 1/s (never). rsf = 2 is a power of
// two, so every scaling is exact and the ratios can be checked exactly (no tolerance needed).
#include <gtest/gtest.h>

#include "kernel_test_cases.h"
#include "kernels/cpu/cpu_kernel.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

int count_cells(bool mutants) {
  int n = 0;
  for (const auto& e : kernel_registry())
    if (e.kind == KernelKind::kComposition && e.make()->is_mutant() == mutants) ++n;
  return n;
}

TEST(Composition, TwentyFourCellsHalfOfThemMutants) {
  EXPECT_EQ(count_cells(false), 12);
  EXPECT_EQ(count_cells(true), 12);
  auto bad = make_kernel("compose/grouped/scaling/fuse/separate");
  EXPECT_EQ(bad->expected_killers(), (std::vector<std::string>{"SCALE1", "ORACLE"}));
}

TEST(Composition, CellsScaleTheRoutedOutputExactlyOnceTwiceOrNever) {
  const std::pair<const char*, RoutingMode> topks[] = {{"softmax", RoutingMode::kSoftmax},
                                                       {"grouped", RoutingMode::kSigmoidGrouped},
                                                       {"hash", RoutingMode::kHash}};
  for (const auto& [tk, mode] : topks) {
    for (const char* shared : {"separate", "fused"}) {
      CaseRecipe r = testing::small_recipe(7, mode);
      r.routing.routed_scaling_factor = 2.0;
      const bool fused = std::string(shared) == "fused";
      r.routing.shared_fusion = fused ? SharedFusion::kFused : SharedFusion::kSeparate;
      r.shape.shared_experts = fused ? 1 : 0;  // separate: no shared part, so output = routed part
      const Case c = materialize(r);
      auto cell = [&](const char* runner, const char* fuse) {
        auto k = make_kernel(std::string("compose/") + tk + "/" + runner + "/" + fuse + "/" + shared);
        EXPECT_EQ(k->supports(r), "") << k->name();
        return testing::run_kernel(*k, c).output;
      };
      const auto fused_ok = cell("plain", "fuse"), twice = cell("scaling", "fuse");
      const auto runner_ok = cell("scaling", "nofuse"), never = cell("plain", "nofuse");
      // Consistent cells = the CPU kernel claiming the same profile.
      EXPECT_TRUE(testing::same_bits(fused_ok, testing::run_kernel(*make_kernel("cpu"), c).output))
          << tk << shared;
      cpu::CpuKernel::Spec triton;
      triton.name = "cpu-triton";
      triton.profile = "sglang-triton";
      EXPECT_TRUE(testing::same_bits(runner_ok, testing::run_kernel(cpu::CpuKernel(triton), c).output))
          << tk << shared;
      int nonzero = 0;
      for (size_t i = 0; i < fused_ok.size(); ++i) {
        EXPECT_EQ(twice[i], 2.0f * fused_ok[i]) << tk << " " << shared << " " << i;   // s^2 instead of s
        EXPECT_EQ(never[i], 0.5f * runner_ok[i]) << tk << " " << shared << " " << i;  // 1 instead of s
        nonzero += fused_ok[i] != 0;
      }
      EXPECT_GT(nonzero, 0);  // the ratios above were not vacuous
    }
  }
}

TEST(Composition, CellRejectsRecipesOfAnotherMode) {
  auto k = make_kernel("compose/hash/plain/fuse/separate");
  EXPECT_NE(k->supports(testing::small_recipe(1, RoutingMode::kSoftmax)), "");
}

}  // namespace
}  // namespace moefuzz
