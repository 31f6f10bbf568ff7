#include "core/global_scale.h"

#include <cmath>
#include <limits>

#include "core/bf16.h"

namespace moefuzz {
namespace {

// One element's contribution under abs().nan_to_num(): NaN -> 0, Inf -> FLT_MAX.
float nan_to_num_abs(float x) {
  if (std::isnan(x)) return 0.0f;
  const float a = std::fabs(x);
  return std::isinf(a) ? std::numeric_limits<float>::max() : a;
}

}  // namespace

float flashinfer_abs_max(std::span<const float> values) {
  float amax = 0.0f;
  for (float x : values) amax = std::fmax(amax, nan_to_num_abs(x));
  return amax;
}

float flashinfer_abs_max_bf16(std::span<const uint16_t> bf16_bits) {
  float amax = 0.0f;
  for (uint16_t b : bf16_bits) amax = std::fmax(amax, nan_to_num_abs(bf16_to_float(b)));
  return amax;
}

float flashinfer_global_scale_q(float amax) {
  // Two fp32 roundings, in this order (torch Tensor.__rtruediv__ = reciprocal, then multiply).
  const float reciprocal = 1.0f / amax;
  return reciprocal * kNvfp4GlobalScaleNumerator;
}

float modelopt_weight_scale_2(float amax) { return amax / kNvfp4GlobalScaleNumerator; }

float dequant_scale_from_quant_scale(float s_q) { return 1.0f / s_q; }

float quant_scale_from_dequant_scale(float s_d) { return 1.0f / s_d; }

}  // namespace moefuzz
