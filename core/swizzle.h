#pragma once
// Scale-factor layouts of NVFP4 block scales (SPEC.md §1.8).
// SWIZZLED_128x4: rows padded to a multiple of 128, scale columns to a multiple of 4, padding bytes 0;
//   offset(m, kb) = (m/128)*(Kbp/4)*512 + (kb/4)*512 + (m%32)*16 + ((m%128)/32)*4 + kb%4.
// LINEAR: row-major [M, Kb], no padding.
//
// Example:
//   auto sw = moefuzz::swizzle_128x4(linear, /*rows=*/200, /*scale_cols=*/6);  // 256 * 8 bytes
//   auto back = moefuzz::unswizzle_128x4(sw, 200, 6);                           // == linear
#include <cstdint>
#include <span>
#include <vector>

namespace moefuzz {

inline int64_t padded_rows_128x4(int64_t rows) { return (rows + 127) / 128 * 128; }
inline int64_t padded_scale_cols_128x4(int64_t scale_cols) { return (scale_cols + 3) / 4 * 4; }
// Byte offset of scale (m, kb) in the 128x4 layout of a [rows, scale_cols] scale matrix.
inline int64_t swizzled_128x4_offset(int64_t m, int64_t kb, int64_t scale_cols) {
  const int64_t kbp = padded_scale_cols_128x4(scale_cols);
  return (m / 128) * (kbp / 4) * 512 + (kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + (kb % 4);
}
std::vector<uint8_t> swizzle_128x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols);
// Inverse; padding bytes are dropped (callers that care check them separately).
std::vector<uint8_t> unswizzle_128x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols);

}  // namespace moefuzz
