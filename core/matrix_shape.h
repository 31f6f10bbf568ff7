#pragma once
// Whether a flat buffer holds a rows x cols matrix: rows * cols == size, computed without overflowing
// (a hostile shape is a refusal, never a wrapped product), false for negative extents. The format
// quantizers (fp8_group_quant, fp8_block_quant, mxfp4) refuse a mismatch with an InputError.
//
// Example:
//   if (!moefuzz::matrix_shape_matches(x.size(), rows, cols)) throw InputError("shape mismatch");
#include <cstddef>
#include <cstdint>

namespace moefuzz {

inline bool matrix_shape_matches(size_t size, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return false;
  if (cols == 0) return size == 0;
  return static_cast<uint64_t>(rows) <= size / static_cast<uint64_t>(cols) &&
         static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) == size;
}

}  // namespace moefuzz
