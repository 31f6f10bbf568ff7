#pragma once
// An NVFP4 matrix: packed E2M1 codes, one E4M3 scale per 16 consecutive elements of a row (linear
// layout [rows, cols/16]) and one fp32 global DEquantization scale S_d (SPEC.md §1.2-1.4, §1.7).
// The two global-scale conventions: S_q multiplies the data before quantization (2688/amax),
// S_d = 1/S_q multiplies decoded values. This struct always stores S_d; quantizers take S_q.
//
// Example:
//   moefuzz::Nvfp4Matrix w(4, 32);           // 4 rows, K = 32: 16 bytes of codes, 8 scales
//   w.set_code(0, 17, 0x3);                  // element (0,17) = 1.5 * scale
//   w.scale(0, 1) = moefuzz::e4m3_from_float(2.0f);
//   float x = w.dequant(0, 17);              // fl(1.5 * fl(2.0 * S_d))
#include <cstdint>
#include <vector>

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/fp4_packing.h"

namespace moefuzz {

inline constexpr int64_t kNvfp4BlockSize = 16;

struct Nvfp4Matrix {
  int64_t rows = 0;
  int64_t cols = 0;                 // K, a multiple of 16
  std::vector<uint8_t> packed;      // rows * cols / 2 bytes, row-major, low nibble first
  std::vector<uint8_t> scales;      // rows * cols / 16 E4M3 bytes, linear layout
  float global_dequant = 1.0f;      // S_d

  Nvfp4Matrix() = default;
  Nvfp4Matrix(int64_t r, int64_t c)
      : rows(r), cols(c), packed(static_cast<size_t>(r * c / 2), 0), scales(static_cast<size_t>(r * c / 16), 0) {}

  int64_t blocks_per_row() const { return cols / kNvfp4BlockSize; }
  uint8_t code(int64_t r, int64_t c) const { return fp4_code_at(packed.data() + r * (cols / 2), c); }
  void set_code(int64_t r, int64_t c, uint8_t v) { set_fp4_code(packed.data() + r * (cols / 2), c, v); }
  uint8_t& scale(int64_t r, int64_t block) { return scales[static_cast<size_t>(r * blocks_per_row() + block)]; }
  uint8_t scale(int64_t r, int64_t block) const { return scales[static_cast<size_t>(r * blocks_per_row() + block)]; }
  // SPEC.md §1.7 (TRT-LLM E2M1AndUFP8SFScaleToFloatV2): scaleFloat = fl(e4m3 * S_d), then e2m1 * scaleFloat.
  float dequant(int64_t r, int64_t c) const;
  bool operator==(const Nvfp4Matrix&) const = default;
};

}  // namespace moefuzz
