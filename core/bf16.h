#pragma once
// bfloat16: the 16 high bits of an IEEE fp32, rounded to nearest even.
//
// Example:
//   uint16_t b = moefuzz::bf16_from_float(1.00390625f);  // 0x3F80 (ties to even)
//   float f = moefuzz::bf16_to_float(b);                 // 1.0f
#include <cstdint>

namespace moefuzz {

// Round-to-nearest-even fp32 -> bf16. NaN stays NaN (quiet, sign and high payload kept); Inf stays
// Inf; overflow past the largest finite bf16 rounds to Inf as IEEE RN does. Equal to cuda_bf16.h's
// host __float2bfloat16_rn on all 2^32 inputs except NaN payloads (the toolkit returns 0x7FFF).
uint16_t bf16_from_float(float x);
// Exact widening.
float bf16_to_float(uint16_t bits);
// bf16_to_float(bf16_from_float(x)): the value a kernel holds after a bf16 rounding point.
float round_to_bf16(float x);

}  // namespace moefuzz
