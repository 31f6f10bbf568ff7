// core/nvfp4.h: Nvfp4Matrix storage and dequantization as SPEC.md §1.7 defines it,
//   x_hat = fl(e2m1 * fl(e4m3 * S_d)),
// checked (1) exhaustively over all 16 codes x all 256 scale bytes x several S_d against the same
// formula evaluated through exact double products rounded once; (2) on hand values; (3) against the
// golden MoE layer file, whose reference dequantized in the OTHER order fl(fl(e2m1 * e4m3) * S_d): the
// number of elements where the two orders differ must equal the generator's own count
// (checks.dequant_elements_differing_if_sf_times_gs_first), operand by operand.
#include "core/nvfp4.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/errors.h"
#include "golden_files.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

// fl(a * b) for fp32 a, b: the double product of two 24-bit significands is exact (48 bits), so one
// rounding to float is IEEE fp32 multiplication (barring double-range overflow, impossible here).
float fl_product(float a, float b) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b));
}

const std::vector<float> kGlobalDequantScales = {
    1.0f, 0.5f, 1.0f / 3.0f, 1.0f / 2688.0f, 1.5694755e-3f, 7.0f, std::numeric_limits<float>::min(), 1e30f};

bool same_value_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

TEST(Nvfp4, DequantIsScaleTimesGlobalFirstForEveryCodeAndScale) {
  for (float s_d : kGlobalDequantScales) {
    for (int scale = 0; scale < 256; ++scale) {
      for (int code = 0; code < 16; ++code) {
        const float block = fl_product(e4m3_to_float(static_cast<uint8_t>(scale)), s_d);
        const float expected = fl_product(e2m1_to_float(static_cast<uint8_t>(code)), block);
        const float got = nvfp4_dequant_value(static_cast<uint8_t>(code), static_cast<uint8_t>(scale), s_d);
        ASSERT_TRUE(same_value_or_both_nan(got, expected))
            << "code " << code << " scale " << scale << " S_d " << s_d;
      }
    }
  }
}

TEST(Nvfp4, TheTwoOrdersDifferOnlyForOddSignificandCodes) {
  // e2m1 in {0, 0.5, 1, 2, 4} is a power of two (or 0): scaling by it is exact, so the order cannot
  // matter. Only 1.5, 3, 6 (significand 3) can differ, and somewhere they do.
  int differing = 0;
  for (float s_d : kGlobalDequantScales) {
    for (int scale = 0; scale < 0x7F; ++scale) {
      for (int code = 0; code < 16; ++code) {
        const auto c = static_cast<uint8_t>(code), sc = static_cast<uint8_t>(scale);
        const float a = nvfp4_dequant_value(c, sc, s_d, Nvfp4DequantOrder::kScaleTimesGlobalFirst);
        const float b = nvfp4_dequant_value(c, sc, s_d, Nvfp4DequantOrder::kCodeTimesScaleFirst);
        if (a == b) continue;
        ++differing;
        const float magnitude = std::fabs(e2m1_to_float(c));
        EXPECT_TRUE(magnitude == 1.5f || magnitude == 3.0f || magnitude == 6.0f)
            << code << " " << scale << " " << s_d;
      }
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(Nvfp4, MatrixStorageAndHandValues) {
  Nvfp4Matrix w(2, 32);
  EXPECT_EQ(w.packed.size(), 32u);  // 2 rows x 32 elements / 2
  EXPECT_EQ(w.scales.size(), 4u);   // 2 rows x 2 blocks
  EXPECT_EQ(w.blocks_per_row(), 2);
  w.global_dequant = 0.5f;
  w.set_code(0, 17, 0x3);                   // +1.5, block 1 of row 0
  w.set_code(1, 0, 0xF);                    // -6, block 0 of row 1
  w.scale(0, 1) = e4m3_from_float(2.0f);    // 0x40
  w.scale(1, 0) = e4m3_from_float(448.0f);  // 0x7E
  EXPECT_EQ(w.packed[8], 0x30);             // element 17 is the HIGH nibble of byte 8 of row 0
  EXPECT_EQ(w.packed[16], 0x0F);            // element 0 of row 1 is the low nibble of its first byte
  EXPECT_EQ(w.dequant(0, 17), 1.5f);        // 1.5 * (2 * 0.5)
  EXPECT_EQ(w.dequant(1, 0), -1344.0f);     // -6 * (448 * 0.5)
  EXPECT_EQ(w.dequant(0, 16), 0.0f);        // code 0
  EXPECT_EQ(w.dequant(0, 0), 0.0f);         // scale 0
  // An S_d that is not a power of two: the block scale fl(2 * S_d) is formed first, then times 1.5.
  w.global_dequant = 1.0f / 3.0f;
  EXPECT_EQ(w.dequant(0, 17), fl_product(1.5f, fl_product(2.0f, 1.0f / 3.0f)));
  EXPECT_EQ(w.dequant(0, 17), nvfp4_dequant_value(0x3, 0x40, 1.0f / 3.0f));
}

// dequant_row is dequant for every column, bit for bit (signs of zero included), over every code in
// every position and a spread of block scales, with an S_d that is not a power of two.
TEST(Nvfp4, DequantRowIsDequantOfEveryColumn) {
  Nvfp4Matrix w(3, 64);
  w.global_dequant = 1.0f / 3.0f;
  for (int64_t r = 0; r < w.rows; ++r) {
    for (int64_t c = 0; c < w.cols; ++c) w.set_code(r, c, static_cast<uint8_t>((c * 7 + r * 5) % 16));
    for (int64_t b = 0; b < w.blocks_per_row(); ++b)
      w.scale(r, b) = static_cast<uint8_t>(0x08 + 37 * (r * 4 + b));
  }
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    w.dequant_row(r, row.data());
    for (int64_t c = 0; c < w.cols; ++c)
      EXPECT_EQ(std::bit_cast<uint32_t>(row[static_cast<size_t>(c)]),
                std::bit_cast<uint32_t>(w.dequant(r, c)))
          << r << " " << c;
  }
}

TEST(Nvfp4, RejectsShapesThatAreNotNvfp4) {
  EXPECT_THROW(Nvfp4Matrix(2, 24), InputError);  // K not a multiple of 16
  EXPECT_THROW(Nvfp4Matrix(-1, 16), InputError);
  EXPECT_THROW(Nvfp4Matrix(1, -16), InputError);
  EXPECT_THROW(Nvfp4Matrix(int64_t{1} << 40, 16), InputError);  // bounded allocation
  EXPECT_NO_THROW(Nvfp4Matrix(0, 0));
}

// ---- golden layer file ----

std::vector<uint8_t> parse_hex_row(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = static_cast<uint8_t>(std::stoul(hex.substr(2 * j, 2), nullptr, 16));
  return out;
}

float parse_f32_bits(const nlohmann::json& hex) {
  return std::bit_cast<float>(static_cast<uint32_t>(std::stoul(hex.get<std::string>(), nullptr, 16)));
}

Nvfp4Matrix matrix_from_hex(const nlohmann::json& packed_rows, const nlohmann::json& scale_rows, float s_d) {
  const std::vector<uint8_t> first = parse_hex_row(packed_rows.at(0).get<std::string>());
  Nvfp4Matrix m(static_cast<int64_t>(packed_rows.size()), static_cast<int64_t>(first.size() * 2));
  m.global_dequant = s_d;
  for (size_t r = 0; r < packed_rows.size(); ++r) {
    const std::vector<uint8_t> p = parse_hex_row(packed_rows[r].get<std::string>()),
                               s = parse_hex_row(scale_rows[r].get<std::string>());
    EXPECT_EQ(static_cast<int64_t>(p.size()), m.cols / 2);
    EXPECT_EQ(static_cast<int64_t>(s.size()), m.blocks_per_row());
    std::copy(p.begin(), p.end(), m.packed.begin() + static_cast<int64_t>(r) * (m.cols / 2));
    std::copy(s.begin(), s.end(), m.scales.begin() + static_cast<int64_t>(r) * m.blocks_per_row());
  }
  return m;
}

int64_t elements_where_orders_differ(const Nvfp4Matrix& m) {
  int64_t n = 0;
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) {
      const float other = nvfp4_dequant_value(m.code(r, c), m.scale(r, c / kNvfp4BlockSize), m.global_dequant,
                                              Nvfp4DequantOrder::kCodeTimesScaleFirst);
      if (m.dequant(r, c) != other) ++n;
    }
  }
  return n;
}

TEST(Nvfp4, GoldenLayerOrderDifferencesMatchTheGeneratorsCount) {
  const nlohmann::json golden = load_golden("moe_layer_golden.json");
  expect_at_least_cases(golden, kMinLayerGoldenCases, "moe_layer_golden.json");
  int64_t total_elements = 0;
  for (const auto& c : golden.at("cases")) {
    const auto& counts = c.at("checks").at("dequant_elements_differing_if_sf_times_gs_first");
    const auto& inputs = c.at("inputs");
    // Layer input (one row per token).
    const Nvfp4Matrix hidden =
        matrix_from_hex(c.at("hidden_states_quantized").at("packed_hex"),
                        c.at("hidden_states_quantized").at("scale_e4m3_hex"),
                        parse_f32_bits(inputs.at("hidden_states_global_scale_dequant_f32_bits")));
    EXPECT_EQ(elements_where_orders_differ(hidden), counts.at("hidden").get<int64_t>()) << c.at("id");
    total_elements += hidden.rows * hidden.cols;
    // Expert weights: one matrix and one S_d per expert.
    for (const char* w : {"w13", "w2"}) {
      const auto& wj = inputs.at(w);
      int64_t differ = 0;
      for (size_t e = 0; e < wj.at("packed_hex").size(); ++e) {
        const Nvfp4Matrix m = matrix_from_hex(wj.at("packed_hex")[e], wj.at("scale_e4m3_hex")[e],
                                              parse_f32_bits(wj.at("global_scale_dequant_f32_bits")[e]));
        differ += elements_where_orders_differ(m);
        total_elements += m.rows * m.cols;
      }
      EXPECT_EQ(differ, counts.at(w).get<int64_t>()) << c.at("id") << " " << w;
    }
    // FC2 input.
    const auto& mid = c.at("intermediates");
    const Nvfp4Matrix act =
        matrix_from_hex(mid.at("act_quant_packed_hex"), mid.at("act_quant_scale_e4m3_hex"),
                        parse_f32_bits(mid.at("act_global_scale_dequant_f32_bits")));
    EXPECT_EQ(elements_where_orders_differ(act), counts.at("activation").get<int64_t>()) << c.at("id");
  }
  EXPECT_GT(total_elements, 0) << "no layer case: nothing was compared";
}

}  // namespace
}  // namespace moefuzz
