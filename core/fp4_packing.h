#pragma once
// Packing of E2M1 codes two per byte: element 2j in the LOW nibble, element 2j+1 in the high nibble
// (PTX cvt e2m1x2 with operands swapped as every production kernel calls it; SPEC.md §1.1).
//
// Example:
//   std::vector<uint8_t> bytes = moefuzz::pack_fp4({0x1, 0x2});   // {0x21}
//   uint8_t c = moefuzz::fp4_code_at(bytes.data(), 1);             // 0x2
#include <cstdint>
#include <span>
#include <vector>

namespace moefuzz {

inline uint8_t fp4_code_at(const uint8_t* packed, int64_t element) {
  const uint8_t byte = packed[element >> 1];
  return (element & 1) ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0xF);
}
inline void set_fp4_code(uint8_t* packed, int64_t element, uint8_t code) {
  uint8_t& byte = packed[element >> 1];
  byte = (element & 1) ? static_cast<uint8_t>((byte & 0x0F) | (code << 4))
                       : static_cast<uint8_t>((byte & 0xF0) | (code & 0xF));
}
// codes.size() must be even.
std::vector<uint8_t> pack_fp4(std::span<const uint8_t> codes);
std::vector<uint8_t> unpack_fp4(std::span<const uint8_t> packed);

}  // namespace moefuzz
