#include "core/fp8_block_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/e8m0.h"
#include "core/errors.h"
#include "core/matrix_shape.h"

namespace moefuzz {
namespace {

// DeepGEMM's clamp(1e-4) of the block amax (SPEC-formats.md §1.2, DeepGEMM reference row): the
// constant of the cited code, not a tolerance.
constexpr float kAmaxFloor = 1e-4f;

}  // namespace

Fp8BlockQuantized quantize_fp8_block_weight(std::span<const float> w, int64_t rows, int64_t cols,
                                            bool ue8m0) {
  if (rows < 0 || cols < 0 || !matrix_shape_matches(w.size(), rows, cols)) {
    throw InputError("128x128 block FP8 weight quantization: " + std::to_string(w.size()) +
                     " values for a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                     "] weight (need rows, cols >= 0 and rows * cols values)");
  }
  Fp8BlockQuantized out;
  out.rows = rows;
  out.cols = cols;
  out.scale_rows = (rows + kFp8WeightBlock - 1) / kFp8WeightBlock;
  out.scale_cols = (cols + kFp8WeightBlock - 1) / kFp8WeightBlock;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.scales.assign(static_cast<size_t>(out.scale_rows * out.scale_cols), 0.0f);
  if (rows == 0 || cols == 0) return out;
  for (int64_t bn = 0; bn < out.scale_rows; ++bn) {
    const int64_t n0 = bn * kFp8WeightBlock, n1 = std::min(rows, n0 + kFp8WeightBlock);
    for (int64_t bk = 0; bk < out.scale_cols; ++bk) {
      const int64_t k0 = bk * kFp8WeightBlock, k1 = std::min(cols, k0 + kFp8WeightBlock);
      // Only the valid elements: the zero padding cannot raise the amax.
      float amax = 0.0f;
      bool nan = false;
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t k = k0; k < k1; ++k) {
          const float v = w[static_cast<size_t>(n * cols + k)];
          nan = nan || std::isnan(v);
          amax = std::fmax(amax, std::fabs(v));
        }
      }
      amax = nan ? std::numeric_limits<float>::quiet_NaN() : std::fmax(amax, kAmaxFloor);
      float s = amax / kE4m3Max;
      if (ue8m0) s = e8m0_to_float(ue8m0_ceil_clamped(s));
      const float inverse = 1.0f / s;
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t k = k0; k < k1; ++k) {
          const size_t at = static_cast<size_t>(n * cols + k);
          out.codes[at] = e4m3_from_float_nosat(w[at] * inverse);
        }
      }
      out.scales[static_cast<size_t>(bn * out.scale_cols + bk)] = s;
    }
  }
  return out;
}

}  // namespace moefuzz
