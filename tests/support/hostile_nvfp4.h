#pragma once
// Test helper: NVFP4 operands built to break an exact dot: every E2M1 code (both zeros, +-6), E4M3
// scale bytes that are NaN (0x7F, 0xFF), zero (0x00, 0x80), subnormal (0x01..0x07, 0x81..0x87), the
// largest (0x7E, 0xFE) and random, row kinds that stress the accumulator (all codes +-6 at scale 448,
// one sign) and rows without any NaN. Shared by the CPU test of oracles/gpu/dot_math.h and the GPU
// test of the device dots.
//
// Example:
//   moefuzz::Nvfp4Matrix w = moefuzz::test::hostile_matrix(24, 2064, /*seed=*/3);
//   moefuzz::DecodedNvfp4 a = moefuzz::DecodedNvfp4::from_matrix(moefuzz::test::hostile_matrix(9, 2064, 4));
#include <cstdint>

#include "core/nvfp4.h"
#include "core/rng.h"

namespace moefuzz::test {

inline uint8_t hostile_scale(const Stream& s, uint64_t i) {
  static constexpr uint8_t kBytes[] = {0x7F, 0xFF, 0x00, 0x80, 0x01, 0x81, 0x07, 0x87,
                                       0x08, 0x7E, 0xFE, 0x38, 0xB8, 0x40, 0x77};
  const uint64_t pick = s.bits(i) % 4;
  if (pick == 0) return static_cast<uint8_t>(s.bits(i + 1) & 0xFF);  // any byte, NaN included
  return kBytes[s.bits(i + 2) % sizeof(kBytes)];
}

// Row kinds by r % 5: 0 hostile scales (NaN likely); 1 hostile scales without NaN; 2 all codes +6 at
// scale 448 (largest positive terms); 3 all codes -6 (0xF) at scale -448; 4 random codes at random
// non-NaN scales.
inline Nvfp4Matrix hostile_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Nvfp4Matrix m(rows, cols);
  const Stream s(seed, "hostile-nvfp4");
  for (int64_t r = 0; r < rows; ++r) {
    const int kind = static_cast<int>(r % 5);
    for (int64_t c = 0; c < cols; ++c) {
      const uint64_t i = static_cast<uint64_t>(r * cols + c);
      const uint8_t code = kind == 2 ? 0x7 : kind == 3 ? 0xF : static_cast<uint8_t>(s.bits(3 * i) & 0xF);
      m.set_code(r, c, code);
    }
    for (int64_t b = 0; b < cols / 16; ++b) {
      const uint64_t i = static_cast<uint64_t>(r * cols + b) * 7 + 1;
      uint8_t byte = hostile_scale(s, i);
      if (kind == 4) byte = static_cast<uint8_t>(s.bits(i + 5) & 0xFF);
      if ((kind == 1 || kind == 4) && (byte & 0x7F) == 0x7F) byte = static_cast<uint8_t>(byte ^ 0x01);
      if (kind == 2) byte = 0x7E;
      if (kind == 3) byte = 0xFE;
      m.scale(r, b) = byte;
    }
  }
  return m;
}

}  // namespace moefuzz::test
