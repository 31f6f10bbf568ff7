// Replays every case of tests/golden/nvfp4_quant_golden.json (vLLM ref_nvfp4_quant, run unchanged
// upstream; README in that folder) through quantize_row_ref. Codes (0x0/0x8 canonicalized) and scale
// bytes must match exactly:
//   * kReference is the torch recipe itself, so every code and byte must be identical.
//   * kFastMath + kScaleTest is vLLM's CUDA kernel (nvfp4_utils.cuh) with rcp.approx emulated as RN:
//     it differs from the reference only by FTZ and the saturating E4M3 cast, neither of which any
//     golden case reaches (the huge_*_inf case saturates to 448 both ways), so it must match too.
// A missing tests/golden/ file fails the test (every clone has it).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "golden_files.h"
#include "oracles/quant_ref.h"

namespace moefuzz {
namespace {

uint32_t parse_hex(const nlohmann::json& j) {
  return static_cast<uint32_t>(std::stoul(j.get<std::string>(), nullptr, 16));
}

struct Mismatch {
  int codes = 0;
  int scales = 0;
};

Mismatch replay(const nlohmann::json& c, QuantizerVariant variant, ZeroScaleRule rule, int* compared) {
  Mismatch m;
  const float s_q = std::bit_cast<float>(parse_hex(c["global_scale_f32_bits"]));
  const auto& bits = c["input_bf16_bits"];
  for (size_t r = 0; r < bits.size(); ++r) {
    std::vector<float> row;
    for (const auto& b : bits[r]) row.push_back(bf16_to_float(static_cast<uint16_t>(parse_hex(b))));
    const QuantizedRowRef q = quantize_row_ref(row, s_q, variant, rule);
    const auto& codes = c["output"]["codes"][r];
    const auto& scales = c["output"]["scale_e4m3_bytes"][r];
    for (size_t i = 0; i < row.size(); ++i) {
      const uint8_t want = e2m1_canonical(codes[i].get<uint8_t>());
      if (e2m1_canonical(q.codes[i]) != want) {
        ++m.codes;
        ADD_FAILURE() << c["id"] << " row " << r << " element " << i << ": code " << int(q.codes[i])
                      << " golden " << int(want) << " (x=" << row[i] << ", y=" << q.scaled[i] << ")";
      }
      ++*compared;
    }
    for (size_t b = 0; b < scales.size(); ++b) {
      if (q.scales[b] != scales[b].get<uint8_t>()) {
        ++m.scales;
        ADD_FAILURE() << c["id"] << " row " << r << " block " << b << ": scale byte " << int(q.scales[b])
                      << " golden " << scales[b].get<int>();
      }
    }
  }
  return m;
}

class QuantGolden : public ::testing::Test {
 protected:
  void SetUp() override { golden_ = load_golden("nvfp4_quant_golden.json"); }
  nlohmann::json golden_;
};

TEST_F(QuantGolden, ReferenceVariantReproducesEveryCodeAndScale) {
  int compared = 0;
  for (const auto& c : golden_["cases"]) {
    const Mismatch m = replay(c, QuantizerVariant::kReference, ZeroScaleRule::kScaleTest, &compared);
    EXPECT_EQ(m.codes + m.scales, 0) << c["id"];
  }
  expect_at_least_cases(golden_, kMinQuantGoldenCases, "nvfp4_quant_golden.json");
  EXPECT_GT(compared, 1000);  // not vacuous: 31 cases of up to 4 x 64 elements
}

TEST_F(QuantGolden, VllmKernelEmulationMatchesItsReference) {
  int compared = 0;
  for (const auto& c : golden_["cases"]) {
    const Mismatch m = replay(c, QuantizerVariant::kFastMath, ZeroScaleRule::kScaleTest, &compared);
    EXPECT_EQ(m.codes + m.scales, 0) << c["id"];
  }
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace moefuzz
