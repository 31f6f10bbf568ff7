#include "core/swizzle.h"

#include <stdexcept>

namespace moefuzz {

std::vector<uint8_t> swizzle_128x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols) {
  if (static_cast<int64_t>(linear.size()) != rows * scale_cols) throw std::invalid_argument("swizzle_128x4: size");
  std::vector<uint8_t> out(static_cast<size_t>(padded_rows_128x4(rows) * padded_scale_cols_128x4(scale_cols)), 0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t kb = 0; kb < scale_cols; ++kb)
      out[static_cast<size_t>(swizzled_128x4_offset(m, kb, scale_cols))] = linear[static_cast<size_t>(m * scale_cols + kb)];
  return out;
}

std::vector<uint8_t> unswizzle_128x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols) {
  if (static_cast<int64_t>(swizzled.size()) != padded_rows_128x4(rows) * padded_scale_cols_128x4(scale_cols))
    throw std::invalid_argument("unswizzle_128x4: size");
  std::vector<uint8_t> out(static_cast<size_t>(rows * scale_cols));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t kb = 0; kb < scale_cols; ++kb)
      out[static_cast<size_t>(m * scale_cols + kb)] = swizzled[static_cast<size_t>(swizzled_128x4_offset(m, kb, scale_cols))];
  return out;
}

}  // namespace moefuzz
