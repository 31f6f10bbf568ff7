#pragma once
// Packing of E2M1 codes two per byte: element 2j in the LOW nibble, element 2j+1 in the high nibble
// (PTX cvt e2m1x2 with operands swapped as every production kernel calls it; SPEC.md §1.1). A packed
// row of K elements is K/2 bytes; bytes concatenate little-endian into wider words.
//
// Example:
//   std::vector<uint8_t> bytes = moefuzz::pack_fp4({0x1, 0x2});   // {0x21}
//   uint8_t c = moefuzz::fp4_code_at(bytes.data(), 1);             // 0x2
//   moefuzz::set_fp4_code(bytes.data(), 0, 0xF);                   // bytes[0] == 0x2F
#include <cstdint>
#include <span>
#include <vector>

namespace moefuzz {

// Code (0..15) of element `element` of a packed row.
inline uint8_t fp4_code_at(const uint8_t* packed, int64_t element) {
  const uint8_t byte = packed[element >> 1];
  return (element & 1) ? static_cast<uint8_t>(byte >> 4) : static_cast<uint8_t>(byte & 0xF);
}
// Writes the low 4 bits of `code` into element `element`, leaving the other nibble untouched.
inline void set_fp4_code(uint8_t* packed, int64_t element, uint8_t code) {
  uint8_t& byte = packed[element >> 1];
  const uint8_t nibble = code & 0xF;
  byte = (element & 1) ? static_cast<uint8_t>((byte & 0x0F) | (nibble << 4))
                       : static_cast<uint8_t>((byte & 0xF0) | nibble);
}
// Throws moefuzz::InputError if codes.size() is odd or a code exceeds 0xF (outside data, e.g. a case file).
std::vector<uint8_t> pack_fp4(std::span<const uint8_t> codes);
// 2 * packed.size() codes, element 2j from the low nibble of byte j.
std::vector<uint8_t> unpack_fp4(std::span<const uint8_t> packed);

}  // namespace moefuzz
