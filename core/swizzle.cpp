#include "core/swizzle.h"

#include <cstring>
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

// Both layouts keep four consecutive scale columns of a row together: offset(m, kb) =
// offset(m, 0) + (kb / 4) * group_stride + kb % 4. So a row moves as 4-byte groups, with one offset
// per row instead of a call per byte (a cold `cuda` upload swizzles ~24 MB of scales at M: ~100 ms
// element by element, a tenth of that by groups).
template <class Copy>
void for_each_group(int64_t rows, int64_t scale_cols, OffsetFn offset, Copy copy) {
  const int64_t full = scale_cols / 4, tail = scale_cols % 4;
  const int64_t group_stride = scale_cols >= 8 ? offset(0, 4, scale_cols) - offset(0, 0, scale_cols) : 0;
  for (int64_t m = 0; m < rows; ++m) {
    const int64_t base = offset(m, 0, scale_cols);
    const int64_t row = m * scale_cols;
    for (int64_t q = 0; q < full; ++q) copy(base + q * group_stride, row + 4 * q, 4);
    if (tail > 0) copy(offset(m, 4 * full, scale_cols), row + 4 * full, tail);
  }
}

std::vector<uint8_t> swizzle(const char* what, std::span<const uint8_t> linear, int64_t rows,
                             int64_t scale_cols, SizeFn padded_size_of, OffsetFn offset) {
  check_dims(what, rows, scale_cols);
  const int64_t padded_size = padded_size_of(rows, scale_cols);
  check_size(what, linear.size(), rows * scale_cols);
  std::vector<uint8_t> out(static_cast<size_t>(padded_size), 0);
  for_each_group(rows, scale_cols, offset, [&](int64_t to, int64_t from, int64_t n) {
    std::memcpy(out.data() + to, linear.data() + from, static_cast<size_t>(n));
  });
  return out;
}

std::vector<uint8_t> unswizzle(const char* what, std::span<const uint8_t> swizzled, int64_t rows,
                               int64_t scale_cols, SizeFn padded_size_of, OffsetFn offset) {
  check_dims(what, rows, scale_cols);
  const int64_t padded_size = padded_size_of(rows, scale_cols);
  check_size(what, swizzled.size(), padded_size);
  std::vector<uint8_t> out(static_cast<size_t>(rows * scale_cols));
  for_each_group(rows, scale_cols, offset, [&](int64_t from, int64_t to, int64_t n) {
    std::memcpy(out.data() + to, swizzled.data() + from, static_cast<size_t>(n));
  });
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
