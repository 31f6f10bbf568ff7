#include "core/e4m3.h"

#include <array>
#include <cmath>
#include <limits>

namespace moefuzz {
namespace {

// Round-half-to-even of a non-negative double holding at most 53 significant bits (exact input).
double round_half_even(double q) {
  double f = std::floor(q);
  double r = q - f;
  if (r > 0.5) return f + 1;
  if (r < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

}  // namespace

uint8_t e4m3_from_float(float x) {
  if (std::isnan(x)) return kE4m3NaNCode;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return sign | kE4m3MaxCode;  // (448,464] rounds to 448, above saturates
  if (a < 0x1p-6) {
    // Subnormal range: quantum 2^-9; m == 8 becomes the smallest normal (code 0x08).
    const double m = round_half_even(a * 0x1p9);
    return sign | static_cast<uint8_t>(m);
  }
  int e = 0;
  (void)std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)  => unbiased exponent e-1
  const int exponent = e - 1;
  double q = round_half_even(std::ldexp(a, 3 - exponent));  // in [8, 16]
  int biased = exponent + 7;
  if (q == 16.0) {
    q = 8.0;
    ++biased;
  }
  const int code = (biased << 3) | (static_cast<int>(q) - 8);
  if (code > kE4m3MaxCode) return sign | kE4m3MaxCode;
  return sign | static_cast<uint8_t>(code);
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
