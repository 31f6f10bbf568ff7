#pragma once
// bfloat16: the 16 high bits of an IEEE fp32, rounded to nearest even. Inline: the kernels and the
// oracle convert per element, and as out-of-line calls these three were ~14% of a check (perf,
// BM_Check/S/all).
//
// Example:
//   uint16_t b = moefuzz::bf16_from_float(1.00390625f);  // 0x3F80 (ties to even)
//   float f = moefuzz::bf16_to_float(b);                 // 1.0f
#include <bit>
#include <cstdint>

namespace moefuzz {

// Round-to-nearest-even fp32 -> bf16. NaN stays NaN (quiet, sign and high payload kept); Inf stays
// Inf; overflow past the largest finite bf16 rounds to Inf as IEEE RN does. Equal to cuda_bf16.h's
// host __float2bfloat16_rn on all 2^32 inputs except NaN payloads (the toolkit returns 0x7FFF).
inline uint16_t bf16_from_float(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  // RNE on the 16 dropped bits: add 0x7FFF plus the lowest kept bit. Carries into the exponent are
  // correct (they produce the next binade or Inf).
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// Exact widening.
inline float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
// bf16_to_float(bf16_from_float(x)): the value a kernel holds after a bf16 rounding point.
inline float round_to_bf16(float x) { return bf16_to_float(bf16_from_float(x)); }

}  // namespace moefuzz
