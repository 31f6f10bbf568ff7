#include "core/fp8_block_quant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/cpu_features.h"
#include "core/e4m3_rows.h"
#include "core/e8m0.h"
#include "core/errors.h"
#include "core/matrix_shape.h"

namespace moefuzz {
namespace {

// DeepGEMM's clamp(1e-4) of the block amax (SPEC-formats.md §1.2, DeepGEMM reference row): the
// constant of the cited code, not a tolerance.
constexpr float kAmaxFloor = 1e-4f;

#if defined(__x86_64__)
__attribute__((target("avx2"))) int64_t amax_of_avx2(const float* x, int64_t n, float& amax, bool& nan) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 running = _mm256_set1_ps(amax), unordered = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    running = _mm256_max_ps(_mm256_and_ps(v, abs_mask), running);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, running);
  for (float a : lanes) amax = a > amax ? a : amax;
  nan |= _mm256_movemask_ps(unordered) != 0;
  return i;
}
#endif

// max(amax, |v|) over v in x[0, n) with NaN dropped, and whether a NaN was seen. fmax drops NaN, as
// the comparison does; the maximum of the other values does not depend on the order, so the AVX2 path
// (eight running maxima: MAXPS returns its second operand, the running one, for a NaN) is the same.
void amax_of(const float* x, int64_t n, bool simd, float& amax, bool& nan) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (simd && cpu_has_avx2()) i = amax_of_avx2(x, n, amax, nan);
#else
  (void)simd;
#endif
  for (; i < n; ++i) {
    nan |= x[i] != x[i];
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
  }
}

}  // namespace

Fp8BlockQuantized quantize_fp8_block_weight(std::span<const float> w, int64_t rows, int64_t cols, bool ue8m0,
                                            bool simd) {
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
      // amax_of, not std::fmax per element: that is a libm call each, and this loop draws every FP8 weight.
      float amax = 0.0f;
      bool nan = false;
      for (int64_t n = n0; n < n1; ++n) amax_of(w.data() + n * cols + k0, k1 - k0, simd, amax, nan);
      amax = nan ? std::numeric_limits<float>::quiet_NaN() : std::fmax(amax, kAmaxFloor);
      float s = amax / kE4m3Max;
      if (ue8m0) s = e8m0_to_float(ue8m0_ceil_clamped(s));
      const float inverse = 1.0f / s;
      for (int64_t n = n0; n < n1; ++n) {
        const size_t at = static_cast<size_t>(n * cols + k0);
        e4m3_nosat_codes(w.data() + at, k1 - k0, inverse, out.codes.data() + at, simd);
      }
      out.scales[static_cast<size_t>(bn * out.scale_cols + bk)] = s;
    }
  }
  return out;
}

}  // namespace moefuzz
