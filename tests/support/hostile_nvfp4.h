#pragma once
// Test helper: NVFP4 operands built to break an exact dot: every E2M1 code (both zeros, +-6), E4M3
// scale bytes that are NaN (0x7F, 0xFF), zero (0x00, 0x80), subnormal (0x01..0x07, 0x81..0x87), the
// largest (0x7E, 0xFE) and random, row kinds that stress the accumulator (all codes +-6 at scale 448,
// one sign) and rows without any NaN; and code flip lists for the flip sums. Shared by the CPU tests
// of oracles/gpu/dot_math.h and flip_math.h and the GPU test of the device dots.
//
// Example:
//   moefuzz::Nvfp4Matrix w = moefuzz::test::hostile_matrix(24, 2064, /*seed=*/3);
//   moefuzz::DecodedNvfp4 a = moefuzz::DecodedNvfp4::from_matrix(moefuzz::test::hostile_matrix(9, 2064, 4));
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/nvfp4.h"
#include "core/rng.h"
#include "oracles/exact_dot.h"

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

// Code flip lists (oracles/exact_dot.h FlipList) for the flip sums of the GEMM bounds, by r % 5: 0
// none; 1 a few (sparse); 2 just past the dense threshold, columns repeated; 3 every column, some
// twice; 4 a few, in descending column order. Weights of every size a quantizer produces and beyond:
// 0, subnormal, ordinary, 2^600.
inline std::vector<FlipList> hostile_flips(int64_t rows, int64_t cols, uint64_t seed) {
  const Stream s(seed, "hostile-flips");
  std::vector<FlipList> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int kind = static_cast<int>(r % 5);
    const int64_t count = kind == 0   ? 0
                          : kind == 2 ? cols / 16 + 1
                          : kind == 3 ? cols + cols / 8
                                      : 1 + cols / 64;
    FlipList& l = out[static_cast<size_t>(r)];
    for (int64_t k = 0; k < count; ++k) {
      const uint64_t i = static_cast<uint64_t>(r * 4 * cols + k) * 3;
      int64_t column = kind == 3 ? k % cols : s.uniform_int(i, 0, cols - 1);
      if (kind == 4) column = cols - 1 - k;
      const uint64_t size = s.bits(i + 1) % 8;
      const double weight = size == 0   ? 0.0
                            : size == 1 ? 0x1p-1060 * static_cast<double>(1 + s.bits(i + 2) % 1000)
                            : size == 2
                                ? 0x1p600 * s.uniform(i + 2)
                                : std::ldexp(s.uniform(i + 2), static_cast<int>(s.bits(i + 2) % 40) - 20);
      l.emplace_back(static_cast<int32_t>(column), weight);
    }
  }
  return out;
}

}  // namespace moefuzz::test
