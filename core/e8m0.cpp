#include "core/e8m0.h"

#include <bit>
#include <limits>

namespace moefuzz {
namespace {

constexpr uint32_t kExponentMask = 0x7F800000u;
constexpr uint32_t kMantissaMask = 0x007FFFFFu;

uint32_t magnitude_bits(float x) { return std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu; }

}  // namespace

float e8m0_to_float(uint8_t code) {
  if (code == kE8m0NaNCode) return std::numeric_limits<float>::quiet_NaN();
  // 2^(c-127): c >= 1 is the normal fp32 with exponent field c; c == 0 is 2^-127, the subnormal whose
  // mantissa has only its top bit set.
  return std::bit_cast<float>(code == 0 ? 0x00400000u : static_cast<uint32_t>(code) << 23);
}

float e8m0_decode(uint8_t code, E8m0Decode decode) {
  switch (decode) {
    case E8m0Decode::kExponentShift:
      return std::bit_cast<float>(static_cast<uint32_t>(code) << 23);  // bf16 c << 7, widened exactly
    case E8m0Decode::kLdexp:
      return code == kE8m0NaNCode ? std::numeric_limits<float>::infinity() : e8m0_to_float(code);
    case E8m0Decode::kOcp:
      break;
  }
  return e8m0_to_float(code);
}

uint8_t e8m0_from_float(float x, E8m0Rounding rounding, E8m0Overflow overflow) {
  const uint32_t a = magnitude_bits(x);
  if (a > kExponentMask) return kE8m0NaNCode;  // NaN of either sign
  int code = static_cast<int>(a >> 23);        // floor(log2 |x|) + 127 for normal |x|
  if (code == 0) {
    // Zero and subnormal |x| < 2^-126. Round toward zero: below 2^-127 clips up to 2^-127 (code 0),
    // [2^-127, 2^-126) floors to 2^-127 (code 0). Round up: |x| <= 2^-127 gives code 0, above it 2^-126.
    if (rounding == E8m0Rounding::kUp && a > 0x00400000u) code = 1;
  } else if (rounding == E8m0Rounding::kUp && (a & kMantissaMask) != 0 && code != 0xFF) {
    ++code;  // not a power of two: the next one up (2^128, code 0xFF, when |x| > 2^127)
  }
  if (code == 0xFF && overflow == E8m0Overflow::kSaturate) code = kE8m0MaxCode;  // includes Inf
  return static_cast<uint8_t>(code);
}

uint8_t e8m0_from_bf16(uint16_t bits, E8m0Rounding rounding, E8m0Overflow overflow) {
  // bf16 is the high half of an fp32 with the same value.
  return e8m0_from_float(std::bit_cast<float>(static_cast<uint32_t>(bits) << 16), rounding, overflow);
}

uint8_t e8m0_ceil_by_carry(float s) {
  // uint32 arithmetic wraps exactly as Triton's does; a NaN's carry leaves exponent bits 0.
  return static_cast<uint8_t>(((magnitude_bits(s) + kMantissaMask) & kExponentMask) >> 23);
}

uint8_t e8m0_floor_by_mask(float s) {
  return static_cast<uint8_t>((magnitude_bits(s) & kExponentMask) >> 23);
}

uint8_t ue8m0_ceil_clamped(float s) {
  const uint32_t a = magnitude_bits(s);
  int exponent = static_cast<int>(a >> 23) + ((a & kMantissaMask) != 0 ? 1 : 0);
  if (exponent < 1) exponent = 1;
  if (exponent > 254) exponent = 254;
  return static_cast<uint8_t>(exponent);
}

}  // namespace moefuzz
