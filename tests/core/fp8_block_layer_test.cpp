// FP8 block-scaled W8A8 as a layer format (weight_format fp8_block, activations fp8_group; DeepSeek-V3
// FP8, SPEC-formats.md §1): the recipe fields and their validation, the case's tensors (drawn through
// the bf16 draw, quantized by core/fp8_block_quant.h), what each weight profile means for 128x128
// blocks, the UE8M0 option, edits and the content hash.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp8_block_quant.h"
#include "core/recipe_text.h"

namespace moefuzz {
namespace {

CaseRecipe fp8_recipe() {
  CaseRecipe r;
  r.seed = 17;
  r.shape = {.tokens = 5, .hidden = 256, .inter = 128, .experts = 4, .top_k = 2};
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.weights = WeightFormat::kFp8Block;
  return r;
}

bool is_power_of_two(float s) {
  int e = 0;
  return s > 0 && std::frexp(s, &e) == 0.5f;
}

TEST(Fp8BlockLayer, RecipeTextRoundTripsAndPrintsUe8m0OnlyWhenSet) {
  CaseRecipe r = fp8_recipe();
  std::string text = to_text(r);
  EXPECT_NE(text.find("weight_format = fp8_block"), std::string::npos) << text;
  EXPECT_NE(text.find("activations = fp8_group"), std::string::npos) << text;
  EXPECT_EQ(text.find("fp8_scales"), std::string::npos) << "fp32 scales are the default, not written";
  EXPECT_EQ(parse_recipe(text, "test"), r);
  r.quant.fp8_ue8m0 = true;
  text = to_text(r);
  EXPECT_NE(text.find("fp8_scales = ue8m0"), std::string::npos) << text;
  EXPECT_EQ(parse_recipe(text, "test"), r);
  // An explicit default parses too; an unknown name says which names exist.
  const std::string fp32 = to_text(fp8_recipe()) + "fp8_scales = fp32\n";
  EXPECT_EQ(parse_recipe(fp32, "test"), fp8_recipe());
  try {
    parse_recipe(to_text(fp8_recipe()) + "fp8_scales = e8m0\n", "test");
    ADD_FAILURE() << "an unknown fp8_scales name must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one of: fp32, ue8m0"), std::string::npos) << e.what();
  }
}

TEST(Fp8BlockLayer, ValidationSaysWhatIsWrong) {
  EXPECT_EQ(validate(fp8_recipe()), "");
  CaseRecipe r = fp8_recipe();
  r.quant.activations = ActivationFormat::kBf16;
  EXPECT_NE(validate(r).find("fp8_block weights need fp8_group activations"), std::string::npos)
      << validate(r);
  r = fp8_recipe();
  r.quant.weights = WeightFormat::kNvfp4;
  EXPECT_NE(validate(r).find("fp8_group activations need fp8_block weights"), std::string::npos)
      << validate(r);
  r.quant.weights = WeightFormat::kBf16;
  EXPECT_NE(validate(r).find("bf16 weights need bf16 activations"), std::string::npos) << validate(r);
  r = fp8_recipe();
  r.shape.inter = 192;  // a w13 scale block would straddle gate and up
  EXPECT_NE(validate(r).find("multiples of 128"), std::string::npos) << validate(r);
  r = fp8_recipe();
  r.shape.hidden = 320;
  EXPECT_NE(validate(r).find("multiples of 128"), std::string::npos) << validate(r);
  r = fp8_recipe();
  r.quant.gate_up_scale_ratio = 2.0;
  EXPECT_NE(validate(r).find("gate_up_scale_ratio"), std::string::npos) << validate(r);
  CaseRecipe nv;
  nv.quant.fp8_ue8m0 = true;
  EXPECT_NE(validate(nv).find("field 'fp8_scales'"), std::string::npos) << validate(nv);
  r = fp8_recipe();
  r.edits.push_back({"gate.code", {0, 0, 0}, 3});
  EXPECT_FALSE(validate(r).empty()) << "NVFP4 tensors do not exist with FP8 weights";
  r = fp8_recipe();
  r.edits.push_back({"gate.fp8_code", {0, 0, 0}, 256});
  EXPECT_FALSE(validate(r).empty()) << "an E4M3 byte is 0..255";
  r = fp8_recipe();
  r.edits.push_back({"up.fp8_scale", {0, 1, 0}, 1});
  EXPECT_FALSE(validate(r).empty()) << "I = 128 has one block row";
  r = fp8_recipe();
  r.edits.push_back({"down.fp8_scale", {3, 1, 0}, INFINITY});
  r.edits.push_back({"down.fp8_code", {3, 255, 127}, 0x7F});
  EXPECT_EQ(validate(r), "");
}

TEST(Fp8BlockLayer, CaseHoldsFp8TensorsOnlyAndEditsReachThem) {
  CaseRecipe r = fp8_recipe();
  r.edits.push_back({"down.fp8_scale", {2, 1, 0}, 0.25});
  r.edits.push_back({"gate.fp8_code", {1, 3, 7}, 0x7E});
  const Case c = materialize(r);
  ASSERT_EQ(c.experts.size(), 4u);
  for (const ExpertWeights& w : c.experts) {
    EXPECT_TRUE(w.gate.packed.empty() && w.bf16.gate.empty() && w.mx.gate.empty());
    EXPECT_EQ(w.fp8.gate.rows, 128);
    EXPECT_EQ(w.fp8.gate.cols, 256);
    EXPECT_EQ(w.fp8.gate.scale_rows, 1);
    EXPECT_EQ(w.fp8.gate.scale_cols, 2);
    EXPECT_EQ(w.fp8.up.scales.size(), 2u);
    EXPECT_EQ(w.fp8.down.rows, 256);
    EXPECT_EQ(w.fp8.down.scale_rows, 2);
    EXPECT_EQ(w.fp8.down.scale_cols, 1);
  }
  EXPECT_EQ(c.experts[2].fp8.down.scale(1, 0), 0.25f);
  EXPECT_EQ(c.experts[1].fp8.gate.code(3, 7), 0x7E);
  // Deterministic; the hash follows the format (and the UE8M0 option, which changes the tensors).
  EXPECT_EQ(content_hash(materialize(r)), content_hash(c));
  CaseRecipe u = r;
  u.quant.fp8_ue8m0 = true;
  EXPECT_NE(content_hash(materialize(u)), content_hash(c));
  CaseRecipe b = r;
  b.quant.weights = WeightFormat::kBf16;
  b.quant.activations = ActivationFormat::kBf16;
  b.edits.clear();
  EXPECT_NE(content_hash(materialize(b)), content_hash(c));
}

// The normal profile is what the DeepGEMM reference quantizer gives for Gaussian-like weights: the
// largest element of each block is +-448 and most codes are nonzero; the scales are amax / 448.
TEST(Fp8BlockLayer, NormalProfileIsTheQuantizersOutput) {
  const Case c = materialize(fp8_recipe());
  const Fp8BlockQuantized& g = c.experts[0].fp8.gate;
  for (int64_t bk = 0; bk < g.scale_cols; ++bk) {
    int top = 0;
    for (int64_t n = 0; n < 128; ++n)
      for (int64_t k = bk * 128; k < (bk + 1) * 128; ++k)
        top += std::fabs(e4m3_to_float(g.code(n, k))) == 448;
    EXPECT_GE(top, 1) << "block " << bk;
    EXPECT_GT(g.scale(0, bk), 1e-6f);
    EXPECT_LT(g.scale(0, bk), 1e-1f);
  }
  int nonzero = 0;
  for (uint8_t code : g.codes) nonzero += (code & 0x7F) != 0;
  EXPECT_GT(nonzero, 128 * 256 / 2);
}

TEST(Fp8BlockLayer, Ue8m0ScalesArePowersOfTwoUnderEveryProfile) {
  for (WeightProfile p : {WeightProfile::kNormal, WeightProfile::kZeroBlocks, WeightProfile::kWideScales,
                          WeightProfile::kTinyScales, WeightProfile::kExpertSpread}) {
    CaseRecipe r = fp8_recipe();
    r.quant.fp8_ue8m0 = true;
    r.values.weights = p;
    for (const ExpertWeights& w : materialize(r).experts)
      for (const Fp8BlockQuantized* m : {&w.fp8.gate, &w.fp8.up, &w.fp8.down})
        for (float s : m->scales) EXPECT_TRUE(is_power_of_two(s)) << name_of(p) << ": " << s;
  }
}

// zero_blocks: whole 128x128 blocks of zero codes; wide_scales: block scales spread over many binades
// and saturated blocks (every code +-448); tiny_scales: block scales around 1e-8 (SPEC-formats F6).
TEST(Fp8BlockLayer, WeightProfilesMeanTheirCornerAtBlockGranularity) {
  int zero_blocks = 0, saturated_blocks = 0;
  double wide_lo = INFINITY, wide_hi = 0, tiny_lo = INFINITY, tiny_hi = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CaseRecipe r = fp8_recipe();
    r.seed = seed;
    for (WeightProfile p :
         {WeightProfile::kZeroBlocks, WeightProfile::kWideScales, WeightProfile::kTinyScales}) {
      r.values.weights = p;
      for (const ExpertWeights& w : materialize(r).experts)
        for (const Fp8BlockQuantized* m : {&w.fp8.gate, &w.fp8.up, &w.fp8.down})
          for (int64_t bn = 0; bn < m->scale_rows; ++bn)
            for (int64_t bk = 0; bk < m->scale_cols; ++bk) {
              int zeros = 0, tops = 0;
              for (int64_t n = bn * 128; n < (bn + 1) * 128; ++n)
                for (int64_t k = bk * 128; k < (bk + 1) * 128; ++k) {
                  zeros += (m->code(n, k) & 0x7F) == 0;
                  tops += (m->code(n, k) & 0x7F) == kE4m3MaxCode;
                }
              const double s = m->scale(bn, bk);
              if (p == WeightProfile::kZeroBlocks && zeros == 128 * 128) {
                ++zero_blocks;
                EXPECT_EQ(m->scale(bn, bk), static_cast<float>(1e-4f / 448.0f)) << "the amax floor";
              }
              if (p == WeightProfile::kWideScales) {
                saturated_blocks += tops == 128 * 128;
                wide_lo = std::min(wide_lo, s);
                wide_hi = std::max(wide_hi, s);
              }
              if (p == WeightProfile::kTinyScales) {
                tiny_lo = std::min(tiny_lo, s);
                tiny_hi = std::max(tiny_hi, s);
              }
            }
    }
  }
  EXPECT_GT(zero_blocks, 0);
  EXPECT_GT(saturated_blocks, 0);
  EXPECT_GT(wide_hi / wide_lo, 0x1p16) << wide_lo << " .. " << wide_hi;
  EXPECT_LT(tiny_hi, 0x1p-19) << "the largest scale of a matrix is in [2^t, 2^(t+1)), t <= -20";
  EXPECT_GE(tiny_lo, 1e-15);
  EXPECT_LT(tiny_lo, 1e-8) << "weight scales ~1e-8 (flashinfer#2356) are reached";
}

}  // namespace
}  // namespace moefuzz
