#pragma once
// e4m3_from_float_nosat (core/e4m3.h) of a row of scaled values, eight at a time in AVX2 where the CPU
// has it: codes[i] = e4m3_from_float_nosat(fl(x[i] * multiplier)), the same product and the same
// encoding rule (round to nearest even; NaN -> 0x7F; |v| > 464, Inf included, -> sign | 0x7F), so the
// same bytes. The FP8 block weight quantizer's hot loop (core/fp8_block_quant.cpp): every drawn FP8
// weight element goes through it.
//
// Example:
//   std::vector<uint8_t> codes(128);
//   moefuzz::e4m3_nosat_codes(w.data(), 128, 1.0f / scale, codes.data());
#include <cstdint>

namespace moefuzz {

// `simd` false: the element loop only (the reference the tests hold the AVX2 path to).
void e4m3_nosat_codes(const float* x, int64_t n, float multiplier, uint8_t* codes, bool simd = true);

}  // namespace moefuzz
