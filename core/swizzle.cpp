#include "core/swizzle.h"

#include <string>

#include "core/errors.h"

namespace moefuzz {
namespace {

using OffsetFn = int64_t (*)(int64_t m, int64_t kb, int64_t scale_cols);
using SizeFn = int64_t (*)(int64_t rows, int64_t scale_cols);

// Each dimension below 2^31 keeps every padded size and offset far from int64 overflow.
constexpr int64_t kMaxDim = int64_t{1} << 31;

void check_dims(const char* what, int64_t rows, int64_t scale_cols) {
  if (rows < 0 || scale_cols < 0 || rows >= kMaxDim || scale_cols >= kMaxDim) {
    throw InputError(std::string(what) + ": shape [" + std::to_string(rows) + ", " +
                     std::to_string(scale_cols) + "] is negative or not below 2^31");
  }
}

void check_size(const char* what, size_t got, int64_t expected) {
  if (static_cast<int64_t>(got) != expected) {
    throw InputError(std::string(what) + ": buffer holds " + std::to_string(got) +
                     " bytes, the shape needs " + std::to_string(expected));
  }
}

std::vector<uint8_t> swizzle(const char* what, std::span<const uint8_t> linear, int64_t rows,
                             int64_t scale_cols, SizeFn padded_size_of, OffsetFn offset) {
  check_dims(what, rows, scale_cols);
  const int64_t padded_size = padded_size_of(rows, scale_cols);
  check_size(what, linear.size(), rows * scale_cols);
  std::vector<uint8_t> out(static_cast<size_t>(padded_size), 0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t kb = 0; kb < scale_cols; ++kb)
      out[static_cast<size_t>(offset(m, kb, scale_cols))] = linear[static_cast<size_t>(m * scale_cols + kb)];
  return out;
}

std::vector<uint8_t> unswizzle(const char* what, std::span<const uint8_t> swizzled, int64_t rows,
                               int64_t scale_cols, SizeFn padded_size_of, OffsetFn offset) {
  check_dims(what, rows, scale_cols);
  const int64_t padded_size = padded_size_of(rows, scale_cols);
  check_size(what, swizzled.size(), padded_size);
  std::vector<uint8_t> out(static_cast<size_t>(rows * scale_cols));
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t kb = 0; kb < scale_cols; ++kb)
      out[static_cast<size_t>(m * scale_cols + kb)] =
          swizzled[static_cast<size_t>(offset(m, kb, scale_cols))];
  return out;
}

}  // namespace

std::vector<uint8_t> swizzle_128x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols) {
  return swizzle("swizzle_128x4", linear, rows, scale_cols, swizzled_128x4_size, swizzled_128x4_offset);
}

std::vector<uint8_t> unswizzle_128x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols) {
  return unswizzle("unswizzle_128x4", swizzled, rows, scale_cols, swizzled_128x4_size, swizzled_128x4_offset);
}

std::vector<uint8_t> swizzle_8x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols) {
  return swizzle("swizzle_8x4", linear, rows, scale_cols, swizzled_8x4_size, swizzled_8x4_offset);
}

std::vector<uint8_t> unswizzle_8x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols) {
  return unswizzle("unswizzle_8x4", swizzled, rows, scale_cols, swizzled_8x4_size, swizzled_8x4_offset);
}

}  // namespace moefuzz
