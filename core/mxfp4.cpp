#include "core/mxfp4.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "core/errors.h"
#include "core/matrix_shape.h"

namespace moefuzz {
namespace {

// E2M1's largest exponent (6 = 1.5 * 2^2): the OCP rule's emax_elem.
constexpr int kE2m1MaxExponent = 2;

// floor(log2 a) for finite a > 0, exact (subnormals included).
int floor_log2(float a) { return std::ilogb(a); }

void quantize_block_triton(const float* x, int64_t n, uint8_t* codes, uint8_t* scale) {
  // fmaxf(amax, |x|) over the block drops NaN, as these comparisons do; four running maxima (the
  // maximum of the non-NaN values does not depend on the order) keep the loop off one dependency chain.
  float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) {
      const float a = std::fabs(x[i + j]);
      part[j] = a > part[j] ? a : part[j];
    }
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    part[0] = a > part[0] ? a : part[0];
  }
  const float amax = std::max(std::max(part[0], part[1]), std::max(part[2], part[3]));
  const float d = amax / kE2m1Max;
  const uint8_t code = e8m0_ceil_by_carry(d);
  // The kernel's dequant_scale_rounded: the carried fp32 bits as a float (0, a normal power of two,
  // or +Inf for code 0xFF).
  const float rounded = std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
  const float multiplier = rounded == 0.0f ? 0.0f : 1.0f / rounded;
  for (int64_t i = 0; i < n; ++i) codes[i] = e2m1_from_float(x[i] * multiplier);
  *scale = code;
}

void quantize_block_ocp(const float* x, int64_t n, uint8_t* codes, uint8_t* scale) {
  float amax = 0.0f;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan = nan || std::isnan(x[i]);
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  if (nan || std::isinf(amax)) {  // torch.max propagates NaN; log2(Inf) - 2 > 127: NaN scale
    *scale = kE8m0NaNCode;
    for (int64_t i = 0; i < n; ++i)
      codes[i] = e2m1_from_float_ties_away(std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const int shared = (amax == 0.0f ? -126 : floor_log2(amax)) - kE2m1MaxExponent;
  const int e = std::max(shared, -kE8m0Bias);  // never above 127 - 2 for finite fp32
  const float power = std::ldexp(1.0f, e);     // exact: 2^-127 is a representable subnormal
  for (int64_t i = 0; i < n; ++i) codes[i] = e2m1_from_float_ties_away(x[i] / power);
  *scale = static_cast<uint8_t>(e + kE8m0Bias);
}

}  // namespace

float Mxfp4Quantized::dequant(int64_t r, int64_t c, E8m0Decode decode) const {
  return e2m1_to_float(code(r, c)) * e8m0_decode(scale(r, c / kMxfp4BlockSize), decode);
}

Mxfp4Quantized quantize_mxfp4(std::span<const float> x, int64_t rows, int64_t cols, Mxfp4ScaleRule rule) {
  if (rows < 0 || cols < 0 || !matrix_shape_matches(x.size(), rows, cols)) {
    throw InputError("MXFP4 quantization: " + std::to_string(x.size()) + " values for a [" +
                     std::to_string(rows) + ", " + std::to_string(cols) +
                     "] matrix (need rows, cols >= 0 and rows * cols values)");
  }
  Mxfp4Quantized out;
  out.rows = rows;
  out.cols = cols;
  out.scale_cols = (cols + kMxfp4BlockSize - 1) / kMxfp4BlockSize;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.scales.assign(static_cast<size_t>(rows * out.scale_cols), 0);
  if (rows == 0 || cols == 0) return out;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < out.scale_cols; ++b) {
      const int64_t c0 = b * kMxfp4BlockSize, n = std::min(cols, c0 + kMxfp4BlockSize) - c0;
      const size_t at = static_cast<size_t>(r * cols + c0);
      uint8_t* scale = &out.scales[static_cast<size_t>(r * out.scale_cols + b)];
      if (rule == Mxfp4ScaleRule::kOcp)
        quantize_block_ocp(x.data() + at, n, out.codes.data() + at, scale);
      else
        quantize_block_triton(x.data() + at, n, out.codes.data() + at, scale);
    }
  }
  return out;
}

}  // namespace moefuzz
