// OVF covers every index product the pipeline forms (core/index_products.h): the window probes place
// each product's crossing of 2^31 and 2^32 inside the case (the unit just below and the one at or past
// the limit both present), nothing large is materialized, the correct CPU kernels pass on generated
// cases, and every one-product int32 mutant - and the uint32 one, at 2^32 only - is killed by OVF
// alone.
#include <gtest/gtest.h>

#include <set>

#include "core/case.h"
#include "core/index_products.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"
#include "properties/ovf_cases.h"

namespace moefuzz {
namespace {

constexpr int64_t kTwo31 = int64_t{1} << 31, kTwo32 = int64_t{1} << 32;

// A W4A4 case where every product is formed: several tokens and slots, per-expert scales.
CaseRecipe small_case() {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.shape = {.tokens = 5, .hidden = 96, .inter = 48, .experts = 8, .top_k = 3};
  r.quant.act_scales = ActScaleMode::kPerExpert;
  return r;
}

Verdict ovf_verdict(const Kernel& k, const CaseRecipe& r) {
  const Case c = materialize(r);
  const CaseReport rep = check_case(k, c, CheckOptions{.invariants = {&invariant_by_code("OVF")}});
  EXPECT_EQ(rep.verdicts.size(), 1u);
  return rep.verdicts.empty() ? Verdict{} : rep.verdicts.front();
}

TEST(Ovf, EveryProductCrossesBothLimitsInsideTheCase) {
  for (const CaseRecipe& r : {small_case(), gen::sample(gen::recipe(gen::ShapeClass::kLarge), 3, 1)}) {
    SCOPED_TRACE(std::to_string(r.shape.hidden) + "x" + std::to_string(r.shape.inter));
    const std::vector<int32_t> ids = {0, static_cast<int32_t>(r.shape.experts - 1)};
    std::set<std::pair<int, int64_t>> covered;
    for (const OvfWindowProbe& p : ovf_window_probes(r, ids)) {
      for (IndexProduct product : p.products) {
        covered.insert({static_cast<int>(product), p.limit});
        const int64_t stride = index_stride(product, r);
        const int64_t first = window_first_index(product, p.window, r.slots());
        const int64_t units = is_expert_product(product)             ? r.total_experts()
                              : product == IndexProduct::kCombineOut ? r.shape.tokens
                                                                     : r.shape.tokens * r.slots();
        // Some unit of the window starts below the limit and some at or past it.
        EXPECT_LT(first * stride, p.limit) << p.name;
        EXPECT_GE((first + units - 1) * stride, p.limit) << p.name;
        // The unit at the crossing is exact under 64 bits and wraps under the 32-bit width.
        const int64_t crossing = (p.limit + stride - 1) / stride;
        EXPECT_EQ(formed_offset(crossing, stride, 0, IndexWidth::k64), crossing * stride);
        if (p.limit == kTwo31) {
          EXPECT_LT(formed_offset(crossing, stride, 0, IndexWidth::kInt32), 0) << p.name;
          EXPECT_EQ(formed_offset(crossing - 1, stride, 0, IndexWidth::kInt32), (crossing - 1) * stride);
        }
      }
    }
    EXPECT_EQ(covered.size(), 2u * kIndexProducts);
  }
}

TEST(Ovf, WindowOffsetIsExactAt64BitsAndLeavesTheBufferWhenWrapped) {
  const int64_t stride = 4096, first = kTwo31 / stride - 1;  // unit 0 below 2^31, unit 1 at it
  EXPECT_EQ(window_offset(first, 0, stride, 7, 4, IndexWidth::k64), 7);
  EXPECT_EQ(window_offset(first, 1, stride, 7, 4, IndexWidth::k64), stride + 7);
  EXPECT_EQ(window_offset(first, 0, stride, 7, 4, IndexWidth::kInt32), 7);
  EXPECT_EQ(window_offset(first, 1, stride, 7, 4, IndexWidth::kInt32), -1);
  EXPECT_EQ(window_offset(first, 1, stride, 7, 4, IndexWidth::kUint32), stride + 7);  // fine until 2^32
  const int64_t first32 = kTwo32 / stride - 1;
  EXPECT_EQ(window_offset(first32, 1, stride, 0, 4, IndexWidth::kUint32), -1);
}

TEST(Ovf, CorrectCpuKernelsPassOnGeneratedCases) {
  const auto gen = gen::recipe(gen::ShapeClass::kSmall);
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const auto k = make_kernel(name);
    int checked = 0;
    for (uint64_t i = 0; checked < 12 && i < 60; ++i) {
      CaseRecipe r = gen::sample(gen, 20261201, i, 30);
      r.profile = k->profile();
      if (!validate(r).empty() || !k->supports(r).empty()) continue;
      ++checked;
      const Verdict v = ovf_verdict(*k, r);
      EXPECT_EQ(v.outcome, Outcome::kPass) << name << " case " << i << ": " << v.message;
      EXPECT_GT(v.compared, 0) << name;
    }
    EXPECT_EQ(checked, 12) << name;
  }
}

TEST(Ovf, EachInt32ProductMutantIsKilledByOvfOnly) {
  const auto cpu = make_kernel("cpu");
  const CaseRecipe r = small_case();
  ASSERT_TRUE(ovf_verdict(*cpu, r).passed());
  std::vector<std::string> names = {"mutant/z7-int32-row-offset", "mutant/ovf-uint32-gemm1-out"};
  for (int i = 0; i < kIndexProducts; ++i)
    names.push_back("mutant/ovf-int32-" + std::string(index_product_name(static_cast<IndexProduct>(i))));
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const auto k = make_kernel(name);
    ASSERT_EQ(k->expected_killers(), std::vector<std::string>{"OVF"});
    const Verdict v = ovf_verdict(*k, r);
    EXPECT_TRUE(v.failed()) << v.message;
    // Below the limits the mutant is the cpu kernel, so nothing else sees it.
    const Case c = materialize(r);
    const CaseReport rep = check_case(*k, c, CheckOptions{.invariants = select_invariants("ORACLE,TACTIC")});
    EXPECT_FALSE(rep.failed());
  }
}

// The unsigned mutant is exact while its product stays below 2^32: the window that puts gemm1-out at
// 2^31 leaves it untouched, the one at 2^32 does not. (Other windows move every product at once, and
// some put gemm1-out far past 2^32: that is why OVF kills it on any case.)
TEST(Ovf, Uint32ProductWrapsAt2To32NotAt2To31) {
  const auto cpu = make_kernel("cpu");
  const auto u32 = make_kernel("mutant/ovf-uint32-gemm1-out");
  const CaseRecipe r = small_case();
  const Case c = materialize(r);
  const auto output_at = [&](const Kernel& k, const IndexWindow& w) {
    LayerResult out;
    out.output.assign(static_cast<size_t>(r.shape.tokens * r.shape.hidden), 0.0f);
    k.run_layer(c, RunOptions{.index_window = w}, out);
    return out.output;
  };
  int seen = 0;
  for (const OvfWindowProbe& p : ovf_window_probes(r, {0, 7})) {
    if (p.products.front() != IndexProduct::kGemm1Out) continue;
    ++seen;
    const bool same = output_at(*u32, p.window) == output_at(*cpu, p.window);
    EXPECT_EQ(same, p.limit == kTwo31) << p.name;
  }
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace moefuzz
