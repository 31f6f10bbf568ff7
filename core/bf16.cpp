#include "core/bf16.h"

#include <bit>

namespace moefuzz {

uint16_t bf16_from_float(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  // RNE on the 16 dropped bits: add 0x7FFF plus the lowest kept bit. Carries into the exponent
  // are correct (they produce the next binade or Inf).
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

float round_to_bf16(float x) { return bf16_to_float(bf16_from_float(x)); }

}  // namespace moefuzz
