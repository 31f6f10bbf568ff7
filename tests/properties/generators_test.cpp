// The recipe generators (properties/gen/recipe_gen.h) reach the regions where MoE kernels break:
// every routing mode and value profile, shared experts fused and separate, k = 1 and k = E,
// tile-boundary token counts, non-power-of-two H and I, experts with no tokens, near-ties; they
// shrink toward small tame cases; and the model generators produce the real model shapes.
//
// Reach is asserted by counting over a fixed number of deterministic draws (gen::sample), so the
// assertions never flake; an RC_CLASSIFY/RC_TAG property additionally prints the distribution a
// RapidCheck run sees.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe.h"
#include "core/recipe_text.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

// Enough draws that a region of probability 1% is missed with probability (0.99)^2000 ~ 2e-9; the
// draws are deterministic anyway, so the counts below are fixed numbers for a given generator.
constexpr int kDraws = 2000;

std::vector<CaseRecipe> draws(const rc::Gen<CaseRecipe>& g, int n = kDraws, int size = 100) {
  std::vector<CaseRecipe> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    out.push_back(gen::sample(g, /*seed=*/20240611, static_cast<uint64_t>(i), size));
  return out;
}

int64_t count(const std::vector<CaseRecipe>& rs, const std::function<bool(const CaseRecipe&)>& pred) {
  int64_t n = 0;
  for (const auto& r : rs) n += pred(r) ? 1 : 0;
  return n;
}

bool power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// Experts that no token routes to, known from the recipe alone: more experts than slots, or the
// value profile that starves some experts on purpose.
bool has_zero_token_experts(const CaseRecipe& r) {
  return r.shape.experts > r.shape.tokens * r.shape.top_k ||
         r.values.load == LoadProfile::kZeroTokenExperts || r.values.load == LoadProfile::kOneExpert;
}

class Generators : public ::testing::Test {
 protected:
  static const std::vector<CaseRecipe>& small() {
    static const std::vector<CaseRecipe> s = draws(gen::recipe(gen::ShapeClass::kSmall));
    return s;
  }
  static const std::vector<CaseRecipe>& medium() {
    static const std::vector<CaseRecipe> m = draws(gen::recipe(gen::ShapeClass::kMedium));
    return m;
  }
};

TEST_F(Generators, EveryDrawIsValid) {
  for (const auto* set : {&small(), &medium()})
    for (const auto& r : *set) ASSERT_EQ(validate(r), "") << to_text(r);
}

TEST_F(Generators, SmallShapesStayInTheirClass) {
  for (const auto& r : small()) {
    EXPECT_LE(r.shape.tokens, 40);
    EXPECT_LE(r.shape.hidden, 256);
    EXPECT_LE(r.shape.inter, 128);
    // 64 experts at most, or a wide case: 384, 512 or 1280 experts at H <= 64, I <= 32, T <= 8.
    if (r.shape.experts > 64) {
      EXPECT_TRUE(r.shape.experts == 384 || r.shape.experts == 512 || r.shape.experts == 1280) << to_text(r);
      EXPECT_LE(r.shape.hidden, 64);
      EXPECT_LE(r.shape.inter, 32);
      EXPECT_LE(r.shape.tokens, 8);
    }
  }
}

// The expert counts of real and coming models (384, 512, past 1024) are reached at small H/I.
TEST_F(Generators, ReachWideExpertCounts) {
  for (int64_t e : {384, 512, 1280})
    EXPECT_GT(count(small(), [e](const CaseRecipe& r) { return r.shape.experts == e; }), 0)
        << e << " experts";
}

// The corners of the accepted value range reach the zero-false-positive sweeps (issue 15): routed
// scaling factors at both ends of the normal fp32 range, global scales that make every dequantized
// weight of a matrix subnormal or push the GEMMs toward overflow, and extreme E4M3 block scale bytes
// (subnormal 0x01..0x07 and the largest finite, 0x7E).
TEST_F(Generators, ReachTheCornersOfTheAcceptedValueRange) {
  for (const auto* set : {&small(), &medium()}) {
    for (double rsf : {0x1p-126, 1e-30, 1e30, 0x1p127})
      EXPECT_GT(count(*set, [rsf](const CaseRecipe& r) { return r.routing.routed_scaling_factor == rsf; }), 0)
          << "rsf " << rsf;
    for (const char* tensor : {"gate.global", "down.global"})
      for (double value : {0x1p-140, 1e-45, 0x1p100, 1e30})
        EXPECT_GT(count(*set,
                        [&](const CaseRecipe& r) {
                          for (const auto& e : r.edits)
                            if (e.tensor == tensor && e.value == value) return true;
                          return false;
                        }),
                  0)
            << tensor << " = " << value;
    EXPECT_GT(count(*set, [](const CaseRecipe& r) { return r.values.weights == WeightProfile::kTinyScales; }),
              0);
    EXPECT_GT(count(*set, [](const CaseRecipe& r) { return r.values.weights == WeightProfile::kWideScales; }),
              0);
  }
  // The E4M3 scale bytes themselves: a kWideScales matrix draws every finite positive byte.
  CaseRecipe r = small().front();
  r.values.weights = WeightProfile::kWideScales;
  r.edits.clear();
  const Case c = materialize(r);
  std::set<uint8_t> bytes;
  for (const auto& e : c.experts) bytes.insert(e.gate.scales.begin(), e.gate.scales.end());
  EXPECT_TRUE(bytes.count(0x01) || bytes.count(0x02) || bytes.count(0x03)) << "no E4M3 subnormal scale";
  EXPECT_TRUE(bytes.count(0x7E) || bytes.count(0x7D)) << "no scale at the top of the E4M3 range";
}

TEST_F(Generators, ReachEveryRoutingMode) {
  for (RoutingMode m : {RoutingMode::kSoftmax, RoutingMode::kSigmoidGrouped, RoutingMode::kHash})
    EXPECT_GT(count(small(), [m](const CaseRecipe& r) { return r.routing.mode == m; }), kDraws / 10)
        << "mode " << static_cast<int>(m);
  for (ScoreFunc f : {ScoreFunc::kSqrtSoftplus, ScoreFunc::kSigmoid, ScoreFunc::kSoftmax})
    EXPECT_GT(count(small(),
                    [f](const CaseRecipe& r) {
                      return r.routing.mode == RoutingMode::kHash && r.routing.hash_score == f;
                    }),
              0)
        << "hash score " << static_cast<int>(f);
  EXPECT_GT(
      count(small(),
            [](const CaseRecipe& r) { return r.shape.n_group > 1 && r.shape.topk_group < r.shape.n_group; }),
      0)
      << "grouped routing with unselected groups";
  for (ScalePlacement p : {ScalePlacement::kTopK, ScalePlacement::kCombine})
    EXPECT_GT(count(small(), [p](const CaseRecipe& r) { return r.routing.scale_placement == p; }), 0);
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return !r.routing.renormalize; }), 0);
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.routing.routed_scaling_factor != 1.0; }), 0);
}

// Every enumerator of every value-profile field occurs.
TEST_F(Generators, ReachEveryValueProfile) {
  auto each = [&](const char* field, int n, const std::function<int(const CaseRecipe&)>& get) {
    std::map<int, int64_t> seen;
    for (const auto& r : small()) ++seen[get(r)];
    for (int v = 0; v < n; ++v) EXPECT_GT(seen[v], 0) << field << " value " << v << " never drawn";
  };
  each("logits", 6, [](const CaseRecipe& r) { return static_cast<int>(r.values.logits); });
  each("bias", 4, [](const CaseRecipe& r) { return static_cast<int>(r.values.bias); });
  each("table", 2, [](const CaseRecipe& r) { return static_cast<int>(r.values.table); });
  each("weights", 5, [](const CaseRecipe& r) { return static_cast<int>(r.values.weights); });
  each("hidden", 5, [](const CaseRecipe& r) { return static_cast<int>(r.values.hidden); });
  each("act_scale", 2, [](const CaseRecipe& r) { return static_cast<int>(r.values.act_scale); });
  each("load", 3, [](const CaseRecipe& r) { return static_cast<int>(r.values.load); });
  each("activations", 2, [](const CaseRecipe& r) { return static_cast<int>(r.quant.activations); });
  each("act_scales", 2, [](const CaseRecipe& r) { return static_cast<int>(r.quant.act_scales); });
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.quant.gate_up_scale_ratio != 1.0; }), 0)
      << "Z11 region";
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return std::isfinite(r.swiglu.limit); }), 0)
      << "SwiGLU clamp";
}

TEST_F(Generators, ReachSharedExpertsFusedAndSeparate) {
  for (SharedFusion f : {SharedFusion::kSeparate, SharedFusion::kFused})
    EXPECT_GT(count(small(),
                    [f](const CaseRecipe& r) {
                      return r.shape.shared_experts > 0 && r.routing.shared_fusion == f;
                    }),
              kDraws / 20)
        << "fusion " << static_cast<int>(f);
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.shape.shared_experts == 0; }), 0);
}

TEST_F(Generators, ReachTopKOneAndTopKEqualsExperts) {
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.shape.top_k == 1; }), 0);
  EXPECT_GT(
      count(small(),
            [](const CaseRecipe& r) { return r.shape.top_k == r.shape.experts && r.shape.experts > 1; }),
      0);
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.shape.experts == 1; }), 0);
}

TEST_F(Generators, MediumReachesTileBoundaryTokenCounts) {
  for (int64_t t : {1, 16, 63, 64, 65, 127, 128, 129})
    EXPECT_GT(count(medium(), [t](const CaseRecipe& r) { return r.shape.tokens == t; }), 0) << "T = " << t;
  EXPECT_GT(count(medium(), [](const CaseRecipe& r) { return r.shape.hidden > 512; }), 0) << "H up to 1024";
}

TEST_F(Generators, ReachNonPowerOfTwoHiddenAndInter) {
  for (const auto* set : {&small(), &medium()}) {
    EXPECT_GT(count(*set, [](const CaseRecipe& r) { return !power_of_two(r.shape.hidden); }), kDraws / 10);
    EXPECT_GT(count(*set, [](const CaseRecipe& r) { return !power_of_two(r.shape.inter); }), kDraws / 10);
    EXPECT_GT(count(*set, [](const CaseRecipe& r) { return r.shape.hidden % 64 != 0; }), 0)
        << "H not a multiple of 64";
  }
}

TEST_F(Generators, ReachExpertsWithZeroTokens) {
  EXPECT_GT(count(small(), has_zero_token_experts), kDraws / 10);
  EXPECT_GT(
      count(small(), [](const CaseRecipe& r) { return r.shape.experts > r.shape.tokens * r.shape.top_k; }),
      0);
}

TEST_F(Generators, ReachNearTies) {
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.values.logits == LogitProfile::kNearTies; }),
            kDraws / 20);
  EXPECT_GT(count(small(), [](const CaseRecipe& r) { return r.values.logits == LogitProfile::kTies; }),
            kDraws / 20);
  EXPECT_GT(count(small(),
                  [](const CaseRecipe& r) {
                    return r.routing.mode == RoutingMode::kSigmoidGrouped &&
                           r.values.logits == LogitProfile::kNearTies;
                  }),
            0);
  EXPECT_GT(count(small(),
                  [](const CaseRecipe& r) {
                    return r.routing.mode == RoutingMode::kHash &&
                           r.values.table == TableProfile::kDuplicates;
                  }),
            0)
      << "duplicate hash ids (Z8)";
}

// RapidCheck grows the size from 0: the first cases of a run (and of a campaign) are the tiniest.
TEST_F(Generators, SizeZeroGivesTinyShapes) {
  for (const auto& r : draws(gen::recipe(gen::ShapeClass::kSmall), 50, /*size=*/0)) {
    EXPECT_EQ(r.shape.tokens, 1);
    EXPECT_EQ(r.shape.hidden, 16);
    EXPECT_EQ(r.shape.inter, 16);
    EXPECT_EQ(r.shape.top_k, 1);
    EXPECT_LE(r.shape.experts, 8);
  }
}

// Greedy shrinking exactly as RapidCheck does it: take the first shrink that still fails, repeat.
CaseRecipe shrink_while(rc::Shrinkable<CaseRecipe> s, const std::function<bool(const CaseRecipe&)>& fails) {
  for (bool progress = true; progress;) {
    progress = false;
    auto shrinks = s.shrinks();
    for (auto next = shrinks.next(); next; next = shrinks.next()) {
      if (fails(next->value())) {
        s = *next;
        progress = true;
        break;
      }
    }
  }
  return s.value();
}

TEST(GeneratorShrinking, MovesTowardTheSmallestTameFailingCase) {
  const auto fails = [](const CaseRecipe& r) { return r.shape.tokens > 5 && r.shape.experts > 3; };
  const rc::Gen<CaseRecipe> g = gen::recipe(gen::ShapeClass::kSmall);
  int shrunk = 0;
  for (uint64_t index = 0; index < 200 && shrunk < 5; ++index) {
    const rc::Random random(rc::Random::Key{1, 2, 3, index});
    const rc::Shrinkable<CaseRecipe> s = g(random, 100);
    if (!fails(s.value())) continue;
    ++shrunk;
    const CaseRecipe m = shrink_while(s, fails);
    SCOPED_TRACE(::testing::Message() << "draw " << index);
    EXPECT_EQ(m.shape.tokens, 6);   // the smallest failing token count
    EXPECT_EQ(m.shape.experts, 4);  // ... and expert count
    EXPECT_EQ(m.shape.top_k, 1);
    EXPECT_EQ(m.shape.hidden, 16);
    EXPECT_EQ(m.shape.inter, 16);
    EXPECT_EQ(m.shape.shared_experts, 0);
    // Every choice shrinks to its first (tamest) value. The routing mode may stay grouped: switching
    // it re-reads the later picks (group count -> expert count), which can stop the case failing.
    EXPECT_EQ(m.values, ValueProfile{});
    EXPECT_EQ(m.routing.routed_scaling_factor, 1.0);
  }
  EXPECT_EQ(shrunk, 5);
}

TEST(ModelGenerators, ProduceTheRealShapes) {
  for (const auto& r : draws(gen::model("deepseek-v3"), 40)) {
    EXPECT_EQ(r.shape.experts, 256);
    EXPECT_EQ(r.shape.top_k, 8);
    EXPECT_EQ(r.shape.n_group, 8);
    EXPECT_EQ(r.shape.topk_group, 4);
    EXPECT_EQ(r.shape.hidden, 7168);
    EXPECT_EQ(r.shape.inter, 2048);
    EXPECT_EQ(r.shape.shared_experts, 1);
    EXPECT_EQ(r.routing.mode, RoutingMode::kSigmoidGrouped);
    EXPECT_TRUE(r.routing.correction_bias);
    EXPECT_EQ(r.routing.routed_scaling_factor, 2.5);
    EXPECT_EQ(validate(r), "");
  }
  for (const auto& r : draws(gen::model("qwen3-moe"), 40)) {
    EXPECT_EQ(r.shape.experts, 128);
    EXPECT_EQ(r.shape.top_k, 8);
    EXPECT_EQ(r.routing.mode, RoutingMode::kSoftmax);
  }
  for (const auto& r : draws(gen::model("mixtral"), 40)) {
    EXPECT_EQ(r.shape.experts, 8);
    EXPECT_EQ(r.shape.top_k, 2);
    EXPECT_EQ(r.routing.mode, RoutingMode::kSoftmax);
  }
  for (const auto& r : draws(gen::model("deepseek-v4-hash"), 40)) {
    EXPECT_EQ(r.routing.mode, RoutingMode::kHash);
    EXPECT_EQ(r.routing.hash_score, ScoreFunc::kSqrtSoftplus);
    EXPECT_EQ(r.values.table, TableProfile::kDuplicates);
    EXPECT_EQ(r.routing.routed_scaling_factor, 1.5);
    EXPECT_EQ(r.swiglu.limit, 10.0);
  }
  // gpt-oss: its MXFP4 checkpoint served W4A16 in at least a third of the draws, the clamped SwiGLU.
  const auto oss = draws(gen::model("gpt-oss"), 60);
  for (const auto& r : oss) {
    EXPECT_TRUE(validate(r).empty()) << validate(r);
    EXPECT_EQ(r.shape.hidden, 2880);
    EXPECT_EQ(r.shape.top_k, 4);
    EXPECT_EQ(r.routing.mode, RoutingMode::kSoftmax);
    EXPECT_EQ(r.swiglu, (Swiglu{.limit = 7.0, .alpha = 1.702, .beta = 1.0}));
  }
  EXPECT_GE(count(oss,
                  [](const CaseRecipe& r) {
                    return r.quant.weights == WeightFormat::kMxfp4 &&
                           r.quant.activations == ActivationFormat::kBf16;
                  }),
            20);
  // Shared experts of the models are drawn fused and separate.
  const auto v3 = draws(gen::model("deepseek-v3"), 200);
  EXPECT_GT(count(v3, [](const CaseRecipe& r) { return r.routing.shared_fusion == SharedFusion::kFused; }),
            0);
  EXPECT_GT(count(v3, [](const CaseRecipe& r) { return r.routing.shared_fusion == SharedFusion::kSeparate; }),
            0);
  // kModel draws every model.
  const auto any = draws(gen::recipe(gen::ShapeClass::kModel), 200);
  for (int64_t e : {256, 128, 8})  // (gpt-oss's 128 is qwen3-moe's too)
    EXPECT_GT(count(any, [e](const CaseRecipe& r) { return r.shape.experts == e; }), 0);
}

TEST(ModelGenerators, UnknownNamesAreInputErrors) {
  EXPECT_THROW(gen::model("gpt-5"), InputError);
  EXPECT_THROW(gen::recipe_for("huge"), InputError);
  EXPECT_THROW(gen::recipe_for("model:nope"), InputError);
  EXPECT_NO_THROW(gen::recipe_for("model:mixtral"));
}

// The distribution a RapidCheck run sees, printed by RapidCheck (RC_CLASSIFY / RC_TAG); the
// assertions above are the deterministic counterpart.
RC_GTEST_PROP(GeneratorDistribution, SmallRecipesAreValidAndClassified, ()) {
  const CaseRecipe r = *gen::recipe(gen::ShapeClass::kSmall);
  RC_ASSERT(validate(r).empty());
  const char* mode = r.routing.mode == RoutingMode::kSoftmax ? "softmax"
                     : r.routing.mode == RoutingMode::kHash  ? "hash"
                                                             : "grouped";
  const char* k = r.shape.top_k == r.shape.experts ? "k=E" : r.shape.top_k == 1 ? "k=1" : "1<k<E";
  RC_TAG(mode, k);
}

}  // namespace
}  // namespace moefuzz
