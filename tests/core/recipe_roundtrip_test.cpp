// to_text -> parse_recipe gives back the same recipe, for random valid recipes (a local generator:
// the shrinking generators of properties/gen come later) and for the example corpus.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/recipe_text.h"

namespace moefuzz {
namespace {

// Any double from its bit pattern (NaNs, infinities, subnormals, -0 included).
double any_double() { return std::bit_cast<double>(*rc::gen::arbitrary<uint64_t>()); }
double positive_finite_double() {
  return *rc::gen::suchThat(
      rc::gen::map(rc::gen::arbitrary<uint64_t>(),
                   [](uint64_t bits) { return std::fabs(std::bit_cast<double>(bits)); }),
      [](double d) { return std::isfinite(d) && d > 0; });
}

// A routed scaling factor the validator accepts: any double in [2^-126, the largest bf16]
// (core/recipe.cpp says why), all its bits random.
double fp32_normal_range_double() {
  return *rc::gen::suchThat(
      rc::gen::map(rc::gen::arbitrary<uint64_t>(),
                   [](uint64_t bits) { return std::fabs(std::bit_cast<double>(bits)); }),
      [](double d) {
        return d >= static_cast<double>(std::numeric_limits<float>::min()) && d <= 0x1.fep127;
      });
}

// Uniform over the enumerators (gen::inRange leans toward small values at small sizes).
template <class Enum>
Enum any_enum(uint8_t count) {
  std::vector<Enum> all;
  for (uint8_t i = 0; i < count; ++i) all.push_back(static_cast<Enum>(i));
  return *rc::gen::elementOf(all);
}

CaseRecipe random_valid_recipe() {
  CaseRecipe r;
  r.seed = *rc::gen::arbitrary<uint64_t>();
  r.profile = *rc::gen::element<std::string>("flashinfer-cutlass", "sglang-cutlass-fp4", "vllm", "x.y_z-1");
  Shape& s = r.shape;
  s.tokens = *rc::gen::inRange<int64_t>(1, 65);
  s.hidden = 16 * *rc::gen::inRange<int64_t>(1, 9);
  s.inter = 16 * *rc::gen::inRange<int64_t>(1, 9);
  s.experts = *rc::gen::inRange<int64_t>(1, 65);
  s.shared_experts = *rc::gen::inRange<int64_t>(0, 3);
  r.routing.mode = any_enum<RoutingMode>(3);
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= s.experts; ++d)
    if (s.experts % d == 0) divisors.push_back(d);
  s.n_group = *rc::gen::elementOf(divisors);
  s.topk_group = *rc::gen::inRange<int64_t>(1, s.n_group + 1);
  const int64_t max_k = r.routing.mode == RoutingMode::kSigmoidGrouped
                            ? s.topk_group * (s.experts / s.n_group)
                        : r.routing.mode == RoutingMode::kHash ? 2 * s.experts
                                                               : s.experts;
  s.top_k = *rc::gen::inRange<int64_t>(1, max_k + 1);
  r.routing.hash_score = any_enum<ScoreFunc>(3);
  r.routing.renormalize = *rc::gen::arbitrary<bool>();
  r.routing.correction_bias = *rc::gen::arbitrary<bool>();
  r.routing.routed_scaling_factor = fp32_normal_range_double();
  r.routing.scale_placement = any_enum<ScalePlacement>(2);
  r.routing.shared_fusion = s.shared_experts > 0 ? any_enum<SharedFusion>(2) : SharedFusion::kSeparate;
  r.routing.vocab = *rc::gen::element<int64_t>(0, 1, 16, 1000);
  r.quant.activations = any_enum<ActivationFormat>(2);
  r.quant.act_scales = any_enum<ActScaleMode>(2);
  r.quant.gate_up_scale_ratio = positive_finite_double();
  r.swiglu.limit =
      *rc::gen::arbitrary<bool>() ? std::numeric_limits<double>::infinity() : positive_finite_double();
  r.swiglu.alpha = *rc::gen::suchThat(
      rc::gen::map(rc::gen::arbitrary<uint64_t>(), [](uint64_t b) { return std::bit_cast<double>(b); }),
      [](double d) { return std::isfinite(d); });
  r.swiglu.beta = *rc::gen::element(0.0, -0.0, 1.0, -1e-300, 3.5);
  r.values.logits = any_enum<LogitProfile>(6);
  r.values.bias = any_enum<BiasProfile>(4);
  r.values.table = any_enum<TableProfile>(2);
  r.values.weights = any_enum<WeightProfile>(5);
  r.values.hidden = any_enum<HiddenProfile>(5);
  r.values.act_scale = any_enum<ActScaleProfile>(2);
  r.values.load = any_enum<LoadProfile>(3);

  std::vector<EditTarget> targets;
  for (auto& t : edit_targets(r))
    if (t.shape.front() > 0) targets.push_back(t);
  const auto edits = *rc::gen::inRange(0, 6);
  for (int n = 0; n < edits; ++n) {
    const EditTarget& t = *rc::gen::elementOf(targets);
    Edit e{std::string(t.name), {}, 0};
    for (int64_t d : t.shape) e.index.push_back(*rc::gen::inRange<int64_t>(0, d));
    switch (t.kind) {
      case EditValueKind::kReal:
        e.value = any_double();
        break;
      case EditValueKind::kFp4Code:
        e.value = *rc::gen::inRange(0, 16);
        break;
      case EditValueKind::kE4m3Byte:
        e.value = *rc::gen::inRange(0, 256);
        break;
      case EditValueKind::kTokenId:
        e.value = static_cast<double>(*rc::gen::inRange<int64_t>(0, r.hash_vocab()));
        break;
      case EditValueKind::kExpertId:
        e.value = static_cast<double>(*rc::gen::inRange<int64_t>(0, s.experts));
        break;
    }
    r.edits.push_back(e);
  }
  return r;
}

// Recipe equality where a NaN edit value equals a NaN of the same sign (the text keeps the sign).
bool same_recipe(CaseRecipe a, CaseRecipe b) {
  if (a.edits.size() != b.edits.size()) return false;
  for (size_t i = 0; i < a.edits.size(); ++i) {
    const double x = a.edits[i].value, y = b.edits[i].value;
    if (std::isnan(x) || std::isnan(y)) {
      if (!(std::isnan(x) && std::isnan(y) && std::signbit(x) == std::signbit(y))) return false;
      a.edits[i].value = b.edits[i].value = 0;
    } else if (std::bit_cast<uint64_t>(x) != std::bit_cast<uint64_t>(y)) {
      return false;  // also tells -0 from +0, which operator== does not
    }
  }
  return a == b;
}

RC_GTEST_PROP(RecipeRoundTrip, ParseOfToTextIsTheSameRecipe, ()) {
  const CaseRecipe r = random_valid_recipe();
  RC_ASSERT(validate(r).empty());
  RC_CLASSIFY(!r.edits.empty(), "with edits");
  RC_CLASSIFY(r.routing.mode == RoutingMode::kHash, "hash routing");
  const std::string text = to_text(r);
  const CaseRecipe back = parse_recipe(text, "roundtrip", std::numeric_limits<int64_t>::max());
  RC_ASSERT(same_recipe(r, back));
  RC_ASSERT(to_text(back) == text);
}

TEST(RecipeRoundTrip, DefaultsAndSpecialRealsRoundTrip) {
  CaseRecipe r;
  EXPECT_EQ(parse_recipe(to_text(r), "default"), r);
  r.routing.routed_scaling_factor = 0.1;  // not exact in binary: needs all its digits
  r.swiglu.limit = std::numeric_limits<double>::infinity();
  r.swiglu.alpha = std::numeric_limits<double>::denorm_min();
  r.swiglu.beta = -std::numeric_limits<double>::max();
  r.edits = {{"logits", {0, 0}, -std::numeric_limits<double>::infinity()},
             {"hidden", {1, 2}, -std::numeric_limits<double>::quiet_NaN()},
             {"a1_scale", {0}, -0.0}};
  EXPECT_TRUE(same_recipe(parse_recipe(to_text(r), "special"), r)) << to_text(r);
}

TEST(RecipeRoundTrip, EveryExampleInTheCorpusRoundTrips) {
  const std::filesystem::path dir = std::filesystem::path(MOEFUZZ_SOURCE_DIR) / "corpora" / "examples";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".moefuzz") continue;
    SCOPED_TRACE(entry.path().string());
    // The DeepSeek examples have model shapes above the default limit (their comments say so).
    const CaseRecipe r = parse_recipe_file(entry.path().string(), std::numeric_limits<int64_t>::max());
    EXPECT_TRUE(same_recipe(parse_recipe(to_text(r), "again", std::numeric_limits<int64_t>::max()), r));
    ++files;
  }
  EXPECT_GE(files, 5);
}

}  // namespace
}  // namespace moefuzz
