#include "core/e4m3.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace moefuzz {

uint8_t e4m3_from_float(float x) {
  // On the float's bits, without floor/frexp/ldexp (this encoder runs per element of every FP8
  // activation and per NVFP4 block scale, in the kernels and the oracle alike). Equal to the
  // definition (round to nearest even, saturate to 448) and to the CUDA Toolkit's host conversion on all
  // 2^32 inputs (tests/core/cuda_reference_test.cpp, MOEFUZZ_EXHAUSTIVE=1).
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kE4m3NaNCode;
  if (a >= 0x43E00000u) return sign | kE4m3MaxCode;  // |x| >= 448, Inf included: (448, 464] rounds to 448
  if (a < 0x3C800000u) {
    // |x| < 2^-6, the subnormal range: quantum 2^-9. |x| * 2^9 < 8 is exact, and adding and removing
    // 2^23 rounds it to an integer, ties to even; 8 becomes code 0x08, the smallest normal.
    float ax;
    std::memcpy(&ax, &a, sizeof ax);
    const float m = (ax * 0x1p9f + 0x1p23f) - 0x1p23f;
    return sign | static_cast<uint8_t>(m);
  }
  // Normal: keep the top 3 of 23 mantissa bits, ties to even (a carry moves into the exponent), then
  // rebias the exponent from 127 to 7; 464 and above would pass 0x7E and saturate.
  const uint32_t kept = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
  const uint32_t code = kept - (120u << 3);
  return sign | static_cast<uint8_t>(code > kE4m3MaxCode ? kE4m3MaxCode : code);
}

uint8_t e4m3_from_float_clamped(float x) {
  // The device's fmaxf (PTX max.f32) returns the other operand for ANY NaN, signaling ones included;
  // glibc's fmax returns NaN for a signaling one, so the NaN case is spelled out.
  if (std::isnan(x)) return 0x80 | kE4m3MaxCode;
  return e4m3_from_float(std::fmin(std::fmax(x, -kE4m3Max), kE4m3Max));
}

uint8_t e4m3_from_float_nosat(float x) {
  if (std::isnan(x)) return kE4m3NaNCode;
  // 464 itself ties to 448 (even mantissa); anything above rounds past the largest finite value.
  if (std::fabs(x) > 464.0f) return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0x00) | kE4m3NaNCode);
  return e4m3_from_float(x);
}

namespace {

constexpr float power_of_two(int e) {  // exact for the exponents used here (-10 .. 8)
  float r = 1.0f;
  for (int i = 0; i < e; ++i) r *= 2.0f;
  for (int i = 0; i > e; --i) r /= 2.0f;
  return r;
}

// The decoding rule, evaluated at compile time for every code: a lookup is ~10x cheaper than ldexp,
// every kernel, the oracle and materialize decode block scales, and a constant table cannot be read
// before it is initialized (no static-initialization order to worry about).
constexpr float e4m3_decode(uint8_t code) {
  const bool negative = (code & 0x80) != 0;
  const int exponent_field = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent_field == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const float v = exponent_field == 0 ? static_cast<float>(mantissa) * power_of_two(-9)
                                      : static_cast<float>(8 + mantissa) * power_of_two(exponent_field - 10);
  return negative ? -v : v;
}

constexpr std::array<float, 256> kE4m3Values = [] {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = e4m3_decode(static_cast<uint8_t>(c));
  return t;
}();
static_assert(kE4m3Values[0x7E] == 448.0f && kE4m3Values[0x01] == 0x1p-9f && kE4m3Values[0xB8] == -1.0f);

}  // namespace

float e4m3_to_float(uint8_t code) { return kE4m3Values[code]; }

const std::array<float, 256>& e4m3_values() { return kE4m3Values; }

}  // namespace moefuzz
