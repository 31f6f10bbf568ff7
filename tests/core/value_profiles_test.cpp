// Every value profile reaches the corner it names (docs/value-profiles.md): each test asserts the
// profile's defining property on materialized cases, over a few seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "core/act_scales.h"
#include "core/bf16.h"
#include "core/case.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/value_profiles.h"

namespace moefuzz {
namespace {

constexpr uint64_t kSeeds[] = {1, 2, 3, 99};

CaseRecipe base(uint64_t seed) {
  CaseRecipe r;
  r.seed = seed;
  r.shape = {.tokens = 8, .hidden = 64, .inter = 32, .experts = 16, .top_k = 3};
  return r;
}
CaseRecipe sigmoid(uint64_t seed) {
  CaseRecipe r = base(seed);
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.shape.n_group = 4;
  r.shape.topk_group = 2;
  return r;
}

// Plain top-k (value descending, lower index wins) of one row of scores.
std::vector<int64_t> top_k(const std::vector<double>& row, int64_t k) {
  std::vector<int64_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  idx.resize(static_cast<size_t>(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}
// Selection scores of token t: logits (softmax) or sigmoid + bias (the test may use libm).
std::vector<double> scores(const Case& c, int64_t t) {
  const int64_t e_count = c.recipe.shape.experts;
  std::vector<double> s(static_cast<size_t>(e_count));
  for (int64_t e = 0; e < e_count; ++e) {
    const double l = c.logits[static_cast<size_t>(t * e_count + e)];
    s[static_cast<size_t>(e)] =
        c.recipe.routing.mode == RoutingMode::kSigmoidGrouped
            ? 1.0 / (1.0 + std::exp(-l)) + (c.bias.empty() ? 0.0 : c.bias[static_cast<size_t>(e)])
            : l;
  }
  return s;
}

TEST(LogitProfiles, AllNegativeAndVeryNegativeUnderEveryLoad) {
  for (uint64_t seed : kSeeds)
    for (LoadProfile load :
         {LoadProfile::kUniform, LoadProfile::kZeroTokenExperts, LoadProfile::kOneExpert}) {
      CaseRecipe r = sigmoid(seed);
      r.values.load = load;
      r.values.logits = LogitProfile::kAllNegative;
      for (float l : draw_logits(r)) EXPECT_LT(l, 0.0f);
      r.values.logits = LogitProfile::kVeryNegative;
      for (float l : draw_logits(r)) {
        EXPECT_LE(l, -90.0f);
        // The fp32 sigmoid underflows below the normal range (Z5).
        EXPECT_LT(1.0f / (1.0f + std::exp(-l)), std::numeric_limits<float>::min());
      }
    }
}

TEST(LogitProfiles, TiesSitExactlyOnTheKthBoundary) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = base(seed);
    r.values.logits = LogitProfile::kTies;
    const Case c = materialize(r);
    for (int64_t t = 0; t < r.shape.tokens; ++t) {
      std::vector<double> s = scores(c, t);
      std::sort(s.begin(), s.end(), std::greater<>());
      EXPECT_EQ(s[static_cast<size_t>(r.shape.top_k - 1)], s[static_cast<size_t>(r.shape.top_k)]) << t;
    }
    // In sigmoid routing the bias is shared, so the biased scores tie too.
    CaseRecipe g = sigmoid(seed);
    g.shape.n_group = 1;
    g.shape.topk_group = 1;
    g.values.logits = LogitProfile::kTies;
    const Case cg = materialize(g);
    std::vector<double> s = scores(cg, 0);
    std::sort(s.begin(), s.end(), std::greater<>());
    EXPECT_EQ(s[static_cast<size_t>(g.shape.top_k - 1)], s[static_cast<size_t>(g.shape.top_k)]);
  }
}

TEST(LogitProfiles, NearTiesAreOneUlpApart) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = base(seed);
    r.values.logits = LogitProfile::kNearTies;
    const std::vector<float> l = draw_logits(r);
    for (int64_t t = 0; t < r.shape.tokens; ++t) {
      std::vector<float> row(l.begin() + t * r.shape.experts, l.begin() + (t + 1) * r.shape.experts);
      std::sort(row.begin(), row.end(), std::greater<>());
      const float kth = row[static_cast<size_t>(r.shape.top_k - 1)];
      EXPECT_EQ(row[static_cast<size_t>(r.shape.top_k)], std::nextafter(kth, -INFINITY));
    }
  }
}

TEST(LogitProfiles, LargeOverflowsANaiveExp) {
  CaseRecipe r = base(1);
  r.values.logits = LogitProfile::kLarge;
  const std::vector<float> l = draw_logits(r);
  // expf overflows above ln(FLT_MAX) = 88.72.
  EXPECT_TRUE(std::any_of(l.begin(), l.end(), [](float x) { return std::isinf(std::exp(x)); }));
}

TEST(BiasProfiles, EachReachesItsCorner) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = sigmoid(seed);
    auto bias = [&](BiasProfile p) {
      r.values.bias = p;
      const std::vector<float> b = draw_bias(r);
      EXPECT_EQ(b.size(), 16u);
      for (float x : b) EXPECT_EQ(x, round_to_bf16(x));
      return b;
    };
    for (float x : bias(BiasProfile::kZero)) EXPECT_EQ(x, 0.0f);
    // Negative: below -1, so sigmoid (< 1) + bias < 0 for every expert (Z3).
    for (float x : bias(BiasProfile::kNegative)) EXPECT_LT(x, -1.0f);
    // Dominant: the bias spread exceeds the whole sigmoid range (0, 1).
    const auto d = bias(BiasProfile::kDominant);
    EXPECT_GT(*std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end()), 1.0f);
    const auto s = bias(BiasProfile::kSmall);
    EXPECT_TRUE(std::any_of(s.begin(), s.end(), [](float x) { return x != 0; }));
    for (float x : s) EXPECT_LT(std::fabs(x), 1.0f);
  }
  CaseRecipe soft = base(1);
  EXPECT_TRUE(draw_bias(soft).empty());
}

TEST(LoadProfiles, ZeroTokenExpertsAndOneExpertUnderPlainTopK) {
  for (uint64_t seed : kSeeds)
    for (bool grouped : {false, true}) {
      CaseRecipe r = grouped ? sigmoid(seed) : base(seed);
      r.values.load = LoadProfile::kZeroTokenExperts;
      Case c = materialize(r);
      std::set<int64_t> used;
      for (int64_t t = 0; t < r.shape.tokens; ++t)
        for (int64_t e : top_k(scores(c, t), r.shape.top_k)) used.insert(e);
      EXPECT_LT(static_cast<int64_t>(used.size()), r.shape.experts) << "some expert must get no token";

      r.values.load = LoadProfile::kOneExpert;
      c = materialize(r);
      const auto first = top_k(scores(c, 0), r.shape.top_k);
      for (int64_t t = 1; t < r.shape.tokens; ++t) EXPECT_EQ(top_k(scores(c, t), r.shape.top_k), first) << t;
    }
}

TEST(TableProfiles, DistinctAndDuplicates) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = base(seed);
    r.routing.mode = RoutingMode::kHash;
    HashRoutingTables h = draw_hash_routing(r);
    const int64_t k = r.shape.top_k, vocab = r.hash_vocab();
    ASSERT_EQ(h.table.size(), static_cast<size_t>(vocab * k));
    auto repeated = [&](int64_t row) {
      std::set<int32_t> s(h.table.begin() + row * k, h.table.begin() + (row + 1) * k);
      return static_cast<int64_t>(s.size()) < k;
    };
    for (int64_t v = 0; v < vocab; ++v) EXPECT_FALSE(repeated(v));
    for (int32_t id : h.table) EXPECT_TRUE(id >= 0 && id < r.shape.experts);
    for (int32_t t : h.token_ids) EXPECT_TRUE(t >= 0 && t < vocab);
    r.values.table = TableProfile::kDuplicates;
    h = draw_hash_routing(r);
    EXPECT_TRUE(repeated(h.token_ids[0])) << "token 0 reads a row with a repeated id (Z8)";
  }
}

// Effective block scales fp32(e4m3) * S_d over all matrices of a case.
template <class F>
void for_each_matrix(const Case& c, F f) {
  for (const auto& w : c.experts)
    for (const Nvfp4Matrix* m : {&w.gate, &w.up, &w.down}) f(*m);
}

TEST(WeightProfiles, NormalDecodesToAboutUnitOverSqrtK) {
  const Case c = materialize(base(1));
  double sum2 = 0;
  int64_t n = 0;
  const Nvfp4Matrix& m = c.experts[0].gate;
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j, ++n) sum2 += static_cast<double>(m.dequant(i, j)) * m.dequant(i, j);
  const double rms = std::sqrt(sum2 / static_cast<double>(n)) * std::sqrt(static_cast<double>(m.cols));
  // Target 1 (N(0,1)/sqrt(K)); the generator's model is approximate (amax(W) ~ 5 sigma), so this is a
  // sanity band of a factor 2 either way, not a precision claim.
  EXPECT_GT(rms, 0.5);
  EXPECT_LT(rms, 2.0);
}

TEST(WeightProfiles, ZeroBlocksIncludeNegativeZeroAndBothScaleRules) {
  CaseRecipe r = base(1);
  r.values.weights = WeightProfile::kZeroBlocks;
  int64_t zero_blocks = 0, neg_zero = 0;
  std::set<uint8_t> zero_block_scales;
  for_each_matrix(materialize(r), [&](const Nvfp4Matrix& m) {
    for (int64_t b = 0; b < m.rows * m.blocks_per_row(); ++b) {
      bool all_zero = true;
      for (int64_t i = 0; i < 16; ++i) {
        const uint8_t code = m.code(b / m.blocks_per_row(), (b % m.blocks_per_row()) * 16 + i);
        all_zero &= (code & 7) == 0;
        neg_zero += code == 0x8;
      }
      if (all_zero) {
        ++zero_blocks;
        zero_block_scales.insert(m.scales[static_cast<size_t>(b)]);
      }
    }
  });
  EXPECT_GT(zero_blocks, 0);
  EXPECT_GT(neg_zero, 0);
  EXPECT_TRUE(zero_block_scales.count(0x00) && zero_block_scales.count(0x38));
}

TEST(WeightProfiles, TinyScalesStayInRangeWithSubnormalBytes) {
  CaseRecipe r = base(3);
  r.values.weights = WeightProfile::kTinyScales;
  int64_t subnormal = 0;
  double lo = INFINITY, hi = 0;
  for_each_matrix(materialize(r), [&](const Nvfp4Matrix& m) {
    for (uint8_t s : m.scales) {
      const double eff = static_cast<double>(e4m3_to_float(s)) * m.global_dequant;
      EXPECT_GE(eff, kTinyScalesMin);
      EXPECT_LE(eff, kTinyScalesMax);
      lo = std::min(lo, eff);
      hi = std::max(hi, eff);
      subnormal += s >= 1 && s <= 7;
    }
  });
  EXPECT_GT(subnormal, 0);
  // The case spans most of the range: 48 matrices with S_d = 2^-n, n uniform in [23, 80].
  EXPECT_LT(lo, 1e-20);
  EXPECT_GT(hi, 1e-8);
}

TEST(WeightProfiles, WideScalesAndExpertSpread) {
  CaseRecipe r = base(1);
  r.values.weights = WeightProfile::kWideScales;
  std::set<uint8_t> bytes;
  for_each_matrix(materialize(r),
                  [&](const Nvfp4Matrix& m) { bytes.insert(m.scales.begin(), m.scales.end()); });
  EXPECT_LE(*bytes.begin(), 0x07);   // subnormal E4M3 scales
  EXPECT_EQ(*bytes.rbegin(), 0x7E);  // 448

  r.values.weights = WeightProfile::kExpertSpread;
  r.quant.gate_up_scale_ratio = 0.75;
  const Case c = materialize(r);
  float lo = INFINITY, hi = 0;
  for (const auto& w : c.experts) {
    lo = std::min(lo, w.gate.global_dequant);
    hi = std::max(hi, w.gate.global_dequant);
    EXPECT_EQ(w.up.global_dequant, static_cast<float>(w.gate.global_dequant * 0.75));
  }
  EXPECT_GE(hi / lo, 16.0f);
  EXPECT_LE(hi / lo, 256.0f);
}

// Straightforward fp32 emulation of the block quantizer (SPEC.md §1.5, rcp as exact division).
std::vector<float> scaled_values(const std::vector<uint16_t>& hidden, float s_q) {
  std::vector<float> y(hidden.size());
  for (size_t b = 0; b < hidden.size() / 16; ++b) {
    float amax = 0;
    for (size_t i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(bf16_to_float(hidden[b * 16 + i])));
    const float sf32 = s_q * (amax * (1.0f / 6.0f));
    const float sfd = e4m3_to_float(e4m3_from_float(sf32));
    const float out_scale = amax != 0 ? 1.0f / (sfd * (1.0f / s_q)) : 0.0f;
    for (size_t i = 0; i < 16; ++i) y[b * 16 + i] = bf16_to_float(hidden[b * 16 + i]) * out_scale;
  }
  return y;
}

TEST(HiddenProfiles, ThresholdsAreHitExactlyAfterQuantization) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = base(seed);
    r.values.hidden = HiddenProfile::kThresholds;
    const Case c = materialize(r);
    ASSERT_EQ(c.a1_scale[0], kThresholdsA1Scale);
    std::set<float> hit;
    for (float y : scaled_values(c.hidden, c.a1_scale[0]))
      for (float t : kE2m1Thresholds)
        if (std::fabs(y) == t) hit.insert(t);
    EXPECT_EQ(hit.size(), kE2m1Thresholds.size()) << "every E2M1 decision threshold is hit";
  }
}

TEST(HiddenProfiles, TokenSpreadUnderflowsE4m3BlockScales) {
  CaseRecipe r = base(1);
  r.values.hidden = HiddenProfile::kTokenSpread;
  const Case c = materialize(r);
  int64_t underflow = 0, subnormal = 0;
  for (size_t b = 0; b < c.hidden.size() / 16; ++b) {
    float amax = 0;
    for (size_t i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(bf16_to_float(c.hidden[b * 16 + i])));
    const uint8_t s = e4m3_from_float(c.a1_scale[0] * (amax * (1.0f / 6.0f)));
    underflow += amax > 0 && s == 0;
    subnormal += s >= 1 && s <= 7;
  }
  EXPECT_GT(underflow, 0);
  EXPECT_GT(subnormal, 0);
}

TEST(HiddenProfiles, ZeroBlocksAndOutliers) {
  CaseRecipe r = base(1);
  r.values.hidden = HiddenProfile::kZeroBlocks;
  std::vector<uint16_t> h = draw_hidden(r);
  const int64_t hd = r.shape.hidden;
  for (int64_t i = 0; i < hd; ++i)
    EXPECT_EQ(bf16_to_float(h[static_cast<size_t>((r.shape.tokens - 1) * hd + i)]), 0.0f);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(bf16_to_float(h[static_cast<size_t>(i)]), 0.0f);

  r.values.hidden = HiddenProfile::kOutliers;
  h = draw_hidden(r);
  for (int64_t t = 0; t < r.shape.tokens; ++t) {
    float amax = 0;
    for (int64_t i = 0; i < hd; ++i)
      amax = std::max(amax, std::fabs(bf16_to_float(h[static_cast<size_t>(t * hd + i)])));
    EXPECT_GE(amax, 64.0f) << "every token carries an outlier >= 2^6 (normal values are bounded by 6)";
  }
}

TEST(ActScaleProfiles, FarIsAPowerOfTwoAwayAndPerExpertNeverExceedsGlobal) {
  for (uint64_t seed : kSeeds) {
    CaseRecipe r = base(seed);
    const Case calibrated = materialize(r);
    r.values.act_scale = ActScaleProfile::kFar;
    const Case far = materialize(r);
    for (auto [a, b] : {std::pair{calibrated.a1_scale[0], far.a1_scale[0]},
                        std::pair{calibrated.a2_scale[0], far.a2_scale[0]}}) {
      int e = 0;
      const double m = std::frexp(static_cast<double>(b) / a, &e);
      EXPECT_EQ(m, 0.5);
      EXPECT_GE(std::abs(e - 1), 4);
      EXPECT_LE(std::abs(e - 1), 12);
    }
    r.values.act_scale = ActScaleProfile::kCalibrated;
    r.quant.act_scales = ActScaleMode::kPerExpert;
    const Case per = materialize(r);
    ASSERT_EQ(per.a1_scale.size(), static_cast<size_t>(r.total_experts()));
    for (float s : per.a1_scale) EXPECT_LE(s, calibrated.a1_scale[0]);
    for (float s : per.a2_scale) EXPECT_LE(s, calibrated.a2_scale[0]);
  }
}

}  // namespace
}  // namespace moefuzz
