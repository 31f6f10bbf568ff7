#include "core/e4m3.h"

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

float e4m3_to_float(uint8_t code) {
  const bool negative = (code & 0x80) != 0;
  const int exponent_field = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent_field == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  double v = exponent_field == 0 ? std::ldexp(static_cast<double>(mantissa), -9)
                                 : std::ldexp(1.0 + mantissa / 8.0, exponent_field - 7);
  return static_cast<float>(negative ? -v : v);
}

}  // namespace moefuzz
