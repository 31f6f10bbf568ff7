// core/fp4_packing.h: element 2j in the LOW nibble of byte j (SPEC.md §1.1), round trips, rejection
// of bad outside data, and consistency with tests/golden/nvfp4_quant_golden.json, whose
// output.codes / output.packed were produced from vLLM's ref_nvfp4_quant with the break_fp4_bytes
// (low nibble first) convention. Fails when the golden file is absent.
#include "core/fp4_packing.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/e2m1.h"
#include "core/errors.h"
#include "golden_files.h"

namespace moefuzz {
namespace {

TEST(Fp4Packing, EvenElementGoesToTheLowNibble) {
  const std::vector<uint8_t> codes = {0x1, 0x2, 0xF, 0x8};
  const std::vector<uint8_t> packed = pack_fp4(codes);
  ASSERT_EQ(packed.size(), 2u);
  EXPECT_EQ(packed[0], 0x21);  // element 0 -> bits [3:0], element 1 -> bits [7:4]
  EXPECT_EQ(packed[1], 0x8F);
  for (size_t i = 0; i < codes.size(); ++i)
    EXPECT_EQ(fp4_code_at(packed.data(), static_cast<int64_t>(i)), codes[i]);
}

TEST(Fp4Packing, EveryByteRoundTripsThroughUnpackAndPack) {
  std::vector<uint8_t> all(256);
  for (int b = 0; b < 256; ++b) all[b] = static_cast<uint8_t>(b);
  const std::vector<uint8_t> codes = unpack_fp4(all);
  ASSERT_EQ(codes.size(), 512u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(codes[2 * b], b & 0xF);
    EXPECT_EQ(codes[2 * b + 1], b >> 4);
  }
  EXPECT_EQ(pack_fp4(codes), all);
}

TEST(Fp4Packing, SetCodeWritesOneNibbleAndKeepsTheOther) {
  for (int before = 0; before < 256; ++before) {
    for (int code = 0; code < 16; ++code) {
      for (int element = 0; element < 2; ++element) {
        uint8_t byte = static_cast<uint8_t>(before);
        set_fp4_code(&byte, element, static_cast<uint8_t>(code));
        EXPECT_EQ(fp4_code_at(&byte, element), code);
        const int other_before = element == 0 ? before >> 4 : before & 0xF;
        EXPECT_EQ(fp4_code_at(&byte, 1 - element), other_before) << before << " " << code << " " << element;
      }
    }
  }
  uint8_t byte = 0;
  set_fp4_code(&byte, 1, 0x1F);  // only the low 4 bits of the code are written
  EXPECT_EQ(byte, 0xF0);
}

TEST(Fp4Packing, RejectsOddCountsAndWideCodes) {
  const std::vector<uint8_t> odd = {1, 2, 3};
  EXPECT_THROW(pack_fp4(odd), InputError);
  const std::vector<uint8_t> wide = {1, 16};
  EXPECT_THROW(pack_fp4(wide), InputError);
  EXPECT_TRUE(pack_fp4(std::vector<uint8_t>{}).empty());
}

TEST(Fp4Packing, MatchesGoldenCodesPackedAndValues) {
  const nlohmann::json golden = load_golden("nvfp4_quant_golden.json");
  expect_at_least_cases(golden, kMinQuantGoldenCases, "nvfp4_quant_golden.json");
  size_t rows_checked = 0, elements_checked = 0;
  for (const auto& c : golden.at("cases")) {
    const auto& out = c.at("output");
    for (size_t r = 0; r < out.at("codes").size(); ++r) {
      const std::vector<uint8_t> codes = out.at("codes")[r].get<std::vector<uint8_t>>();
      const std::vector<uint8_t> packed = out.at("packed")[r].get<std::vector<uint8_t>>();
      const std::vector<float> values = out.at("values")[r].get<std::vector<float>>();
      EXPECT_EQ(pack_fp4(codes), packed) << c.at("id") << " row " << r;
      EXPECT_EQ(unpack_fp4(packed), codes) << c.at("id") << " row " << r;
      ASSERT_EQ(values.size(), codes.size());
      for (size_t i = 0; i < codes.size(); ++i) {
        // Bitwise: the golden values carry -0.0 where the code is 0x8.
        EXPECT_EQ(std::bit_cast<uint32_t>(e2m1_to_float(codes[i])), std::bit_cast<uint32_t>(values[i]))
            << c.at("id") << " row " << r << " element " << i;
        ++elements_checked;
      }
      ++rows_checked;
    }
  }
  EXPECT_GT(rows_checked, 0u) << "golden file has no rows: nothing was compared";
  std::cout << "[ info ] " << rows_checked << " golden rows, " << elements_checked << " elements\n";
}

}  // namespace
}  // namespace moefuzz
