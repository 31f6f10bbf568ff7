// core/global_scale.h: the two global-scale conventions (SPEC.md §1.4) reproduce the upstream
// expressions bit for bit:
//   * FlashInfer calculate_fp4_global_scale_factor, S_q = fl(fl(1/amax) * 2688), against every
//     '2688/amax' case of tests/golden/nvfp4_quant_golden.json and every layer input / weight scale of
//     tests/golden/moe_layer_golden.json (amax recomputed from the stored tensors);
//   * S_d = fl(1/S_q) against the layer file's *_dequant values;
//   * ModelOpt weight_scale_2 = fl(amax / 2688) is the correctly rounded quotient (checked with
//     Boost.Multiprecision);
//   * amax follows abs().nan_to_num().max().
// The golden tests fail when tests/golden/ is absent.
#include "core/global_scale.h"

#include <gtest/gtest.h>

#include <bit>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "golden_files.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
uint32_t parse_bits(const nlohmann::json& hex) {
  return static_cast<uint32_t>(std::stoul(hex.get<std::string>(), nullptr, 16));
}

std::vector<float> flatten(const nlohmann::json& rows) {
  std::vector<float> out;
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(v.get<float>());
  return out;
}

TEST(GlobalScale, QuantGoldenFlashInferScalesFromRecomputedAmax) {
  const nlohmann::json golden = load_golden("nvfp4_quant_golden.json");
  expect_at_least_cases(golden, kMinQuantGoldenCases, "nvfp4_quant_golden.json");
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    if (c.at("global_scale_kind") != "2688/amax") continue;
    std::vector<uint16_t> input_bits;
    for (const auto& row : c.at("input_bf16_bits"))
      for (const auto& b : row)
        input_bits.push_back(static_cast<uint16_t>(std::stoul(b.get<std::string>(), nullptr, 16)));
    const float amax = flashinfer_abs_max_bf16(input_bits);
    EXPECT_EQ(bits_of(flashinfer_global_scale_q(amax)), parse_bits(c.at("global_scale_f32_bits")))
        << c.at("id");
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no '2688/amax' case in the golden file: nothing was compared";
}

TEST(GlobalScale, LayerGoldenInputAndWeightScales) {
  const nlohmann::json golden = load_golden("moe_layer_golden.json");
  expect_at_least_cases(golden, kMinLayerGoldenCases, "moe_layer_golden.json");
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    const auto& in = c.at("inputs");
    const float amax = flashinfer_abs_max(flatten(in.at("hidden_states")));
    const float s_q = flashinfer_global_scale_q(amax);
    EXPECT_EQ(bits_of(s_q), parse_bits(in.at("hidden_states_global_scale_q_f32_bits"))) << c.at("id");
    EXPECT_EQ(bits_of(dequant_scale_from_quant_scale(s_q)),
              parse_bits(in.at("hidden_states_global_scale_dequant_f32_bits")))
        << c.at("id");
    for (const char* w : {"w13", "w2"}) {
      const auto& wj = in.at(w);
      for (size_t e = 0; e < wj.at("weight_amax").size(); ++e) {
        const float s_q_w = flashinfer_global_scale_q(wj.at("weight_amax")[e].get<float>());
        EXPECT_EQ(bits_of(s_q_w), parse_bits(wj.at("global_scale_q_f32_bits")[e]))
            << c.at("id") << " " << w << " expert " << e;
        EXPECT_EQ(bits_of(dequant_scale_from_quant_scale(s_q_w)),
                  parse_bits(wj.at("global_scale_dequant_f32_bits")[e]))
            << c.at("id") << " " << w << " expert " << e;
      }
    }
    // The FC2-input scale: amax over bf16(act_out) of all T*k rows (golden README, "FC2 input").
    const auto& mid = c.at("intermediates");
    std::vector<float> act = flatten(mid.at("act_out"));
    for (float& x : act) x = round_to_bf16(x);
    EXPECT_EQ(bits_of(flashinfer_global_scale_q(flashinfer_abs_max(act))),
              parse_bits(mid.at("act_global_scale_q_f32_bits")))
        << c.at("id");
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no layer case: nothing was compared";
}

TEST(GlobalScale, TwoRoundingsAreNotOneDivision) {
  // Why flashinfer_global_scale_q is not 2688.0f / amax: over all bf16 amaxes in [1, 2) the two
  // differ somewhere, and never by more than one ulp (golden README, "2688/amax").
  int differ = 0;
  for (uint16_t b = 0x3F80; b < 0x4000; ++b) {
    const float amax = bf16_to_float(b);
    const float two_roundings = flashinfer_global_scale_q(amax), one_division = 2688.0f / amax;
    if (two_roundings != one_division) {
      ++differ;
      EXPECT_EQ(std::fabs(static_cast<double>(two_roundings) - one_division),
                std::nextafter(std::fmin(two_roundings, one_division), INFINITY) -
                    std::fmin(two_roundings, one_division));
    }
  }
  EXPECT_GT(differ, 0);
}

TEST(GlobalScale, ModelOptWeightScale2IsTheCorrectlyRoundedQuotient) {
  using Big = boost::multiprecision::cpp_bin_float_50;
  int checked = 0;
  // Every 97th positive normal fp32 amax (an odd stride, all binades): ~22M / 97 ~ 22k values.
  for (uint32_t b = std::bit_cast<uint32_t>(std::numeric_limits<float>::min()); b < 0x7F800000u;
       b += 97 * 1021) {
    const float amax = std::bit_cast<float>(b);
    const float got = modelopt_weight_scale_2(amax);
    const Big exact = Big(amax) / Big(2688);
    const Big err = abs(Big(got) - exact);
    // Correctly rounded: no neighbour of `got` is nearer to the exact quotient.
    EXPECT_LE(err, abs(Big(std::nextafter(got, 0.0f)) - exact)) << amax;
    EXPECT_LE(err, abs(Big(std::nextafter(got, INFINITY)) - exact)) << amax;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_EQ(modelopt_weight_scale_2(2688.0f), 1.0f);
  EXPECT_EQ(kNvfp4GlobalScaleNumerator, 2688.0f);
}

TEST(GlobalScale, AmaxFollowsAbsNanToNumMax) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(flashinfer_abs_max(std::vector<float>{-3.0f, 2.0f, nan}), 3.0f);  // NaN counts as 0
  EXPECT_EQ(flashinfer_abs_max(std::vector<float>{nan}), 0.0f);
  EXPECT_EQ(flashinfer_abs_max(std::vector<float>{1.0f, -inf}), std::numeric_limits<float>::max());
  EXPECT_EQ(flashinfer_abs_max(std::vector<float>{}), 0.0f);
  EXPECT_EQ(flashinfer_abs_max_bf16(std::vector<uint16_t>{0xC040, 0x3F80, 0x7FC0}), 3.0f);  // -3, 1, NaN
  // All-zero tensor: torch's 2688 * (1/0) = +Inf.
  EXPECT_EQ(flashinfer_global_scale_q(0.0f), inf);
}

TEST(GlobalScale, ReciprocalsBetweenTheConventions) {
  for (float s : {1.0f, 3.0f, 637.155517578125f, 1e-3f}) {
    EXPECT_EQ(dequant_scale_from_quant_scale(s), 1.0f / s);
    EXPECT_EQ(quant_scale_from_dequant_scale(s), 1.0f / s);
  }
  // Not an involution (the header's warning): some fp32 s in [1, 2) has fl(1/fl(1/s)) != s, and the
  // round trip never moves s by more than one ulp.
  int not_involutive = 0;
  for (uint32_t b = std::bit_cast<uint32_t>(1.0f); b < std::bit_cast<uint32_t>(2.0f); b += 101) {
    const float s = std::bit_cast<float>(b);
    const float back = dequant_scale_from_quant_scale(quant_scale_from_dequant_scale(s));
    if (back != s) {
      ++not_involutive;
      EXPECT_TRUE(back == std::nextafter(s, 0.0f) || back == std::nextafter(s, 4.0f)) << s;
    }
  }
  EXPECT_GT(not_involutive, 0);
}

}  // namespace
}  // namespace moefuzz
