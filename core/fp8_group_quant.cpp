#include "core/fp8_group_quant.h"

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "core/e8m0.h"
#include "core/errors.h"
#include "core/matrix_shape.h"

namespace moefuzz {
namespace {

// vLLM seeds its amax with 1e-10 (fmaxf) and floors its UE8M0 scale at 1e-10 too, DeepGEMM's
// reference clamps the amax at 1e-4 (SPEC-formats.md §1.2 table): constants of the cited code, not
// tolerances.
constexpr float kVllmAmaxFloor = 1e-10f;
constexpr float kDeepGemmAmaxFloor = 1e-4f;

// The power of two at or above s as fp32 bits, by the exponent-bit carry (s > 0 or +Inf here).
float ceil_pow2_by_carry(float s) {
  return std::bit_cast<float>(static_cast<uint32_t>(e8m0_ceil_by_carry(s)) << 23);
}

void quantize_group_vllm(const float* x, int64_t n, bool ue8m0, uint8_t* codes, float* scale) {
  float amax = kVllmAmaxFloor;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  float s = amax / kE4m3Max;
  if (ue8m0) {
    s = ceil_pow2_by_carry(std::fmax(s, kVllmAmaxFloor));  // 2^ceil(log2(max(s, 1e-10)))
    const float inverse = 1.0f / s;                        // exact: a power of two (0 when s = Inf)
    for (int64_t i = 0; i < n; ++i) codes[i] = e4m3_from_float_clamped(x[i] * inverse);
  } else {
    for (int64_t i = 0; i < n; ++i) codes[i] = e4m3_from_float_clamped(x[i] / s);
  }
  *scale = s;
}

void quantize_group_deepgemm(const float* x, int64_t n, bool ue8m0, uint8_t* codes, float* scale) {
  // torch's amax propagates NaN, and clamp(1e-4) keeps it.
  float amax = 0.0f;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan = nan || std::isnan(x[i]);
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  amax = nan ? std::numeric_limits<float>::quiet_NaN() : std::fmax(amax, kDeepGemmAmaxFloor);
  float s = amax / kE4m3Max;
  if (ue8m0) s = e8m0_to_float(ue8m0_ceil_clamped(s));
  const float inverse = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) codes[i] = e4m3_from_float_nosat(x[i] * inverse);
  *scale = s;
}

}  // namespace

Fp8GroupQuantized quantize_fp8_per_token_group(std::span<const float> x, int64_t rows, int64_t cols,
                                               const Fp8GroupQuantOptions& options) {
  const int64_t group = options.group;
  if (rows < 0 || cols < 0 || group <= 0 || cols % group != 0) {
    throw InputError("per-token-group FP8 quantization of [" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "] with group " + std::to_string(group) +
                     ": need rows, cols >= 0, group > 0 and cols a multiple of the group (production "
                     "asserts K % 128 == 0; there is no partial activation group)");
  }
  if (!matrix_shape_matches(x.size(), rows, cols)) {
    throw InputError("per-token-group FP8 quantization: " + std::to_string(x.size()) + " values for [" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  Fp8GroupQuantized out;
  out.rows = rows;
  out.cols = cols;
  out.group = group;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.scales.assign(static_cast<size_t>(rows * (cols / group)), 0.0f);
  if (rows == 0 || cols == 0) return out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols / group; ++g) {
      const int64_t at = r * cols + g * group;
      float* scale = &out.scales[static_cast<size_t>(r * (cols / group) + g)];
      if (options.variant == Fp8GroupQuantVariant::kDeepGemmReference)
        quantize_group_deepgemm(x.data() + at, group, options.ue8m0, out.codes.data() + at, scale);
      else
        quantize_group_vllm(x.data() + at, group, options.ue8m0, out.codes.data() + at, scale);
    }
  }
  return out;
}

}  // namespace moefuzz
