#include "core/e2m1.h"

#include <cmath>

namespace moefuzz {

uint8_t e2m1_from_float(float x) {
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  uint8_t m;
  if (a <= 0.25f) m = 0;
  else if (a < 0.75f) m = 1;
  else if (a <= 1.25f) m = 2;
  else if (a < 1.75f) m = 3;
  else if (a <= 2.5f) m = 4;
  else if (a < 3.5f) m = 5;
  else if (a <= 5.0f) m = 6;
  else m = 7;
  return sign | m;
}

float e2m1_to_float(uint8_t code) {
  const float v = kE2m1Magnitudes[code & 0x7];
  return (code & 0x8) ? -v : v;
}

}  // namespace moefuzz
