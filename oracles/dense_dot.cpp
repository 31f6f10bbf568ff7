#include "oracles/dense_dot.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "oracles/certified_sum.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moefuzz {
namespace {

// Exponent of the grid a finite float lies on: x is an integer multiple of 2^grid(x) (24 significant
// bits; subnormals share exponent -149's grid).
int grid_of(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const int biased = static_cast<int>((bits >> 23) & 0xFF);
  const uint32_t mantissa = bits & 0x7FFFFF;
  const int base = (biased == 0 ? 1 : biased) - 150;  // exponent of the last mantissa bit
  // Trailing zero bits of the significand make the grid coarser (a bf16 value has 16 of them).
  const uint32_t significand = biased == 0 ? mantissa : (mantissa | 0x800000u);
  return base + std::countr_zero(significand);
}

int product_grid(const DenseRow& x, const DenseRow& w) {
  return x.grid_exp == INT_MAX || w.grid_exp == INT_MAX ? INT_MAX : x.grid_exp + w.grid_exp;
}

void check_lengths(const DenseRow& x, const DenseRow& w) {
  if (x.values.size() != w.values.size()) throw InputError("dense_dot: operand lengths differ");
}

#if defined(__x86_64__)
// Four vector accumulators of exact double products (the certificate holds for any order).
__attribute__((target("avx2"))) W4A16Dot dense_dot_avx2(const DenseRow& x, const DenseRow& w) {
  const float* a = x.values.data();
  const float* b = w.values.data();
  const int64_t n = static_cast<int64_t>(x.values.size());
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d v0 = _mm256_setzero_pd(), v1 = v0, m0 = v0, m1 = v0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d p0 =
        _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)));
    const __m256d p1 =
        _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)), _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4)));
    v0 = _mm256_add_pd(v0, p0);
    v1 = _mm256_add_pd(v1, p1);
    m0 = _mm256_add_pd(m0, _mm256_andnot_pd(sign, p0));
    m1 = _mm256_add_pd(m1, _mm256_andnot_pd(sign, p1));
  }
  alignas(32) double vs[4], ms[4];
  _mm256_store_pd(vs, _mm256_add_pd(v0, v1));
  _mm256_store_pd(ms, _mm256_add_pd(m0, m1));
  double value = (vs[0] + vs[1]) + (vs[2] + vs[3]), abs_value = (ms[0] + ms[1]) + (ms[2] + ms[3]);
  for (; i < n; ++i) {
    const double p = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    value += p;
    abs_value += std::fabs(p);
  }
  return certify_double_sum(value, abs_value, product_grid(x, w), n);
}
#endif

}  // namespace

DenseRow dense_row(std::span<const float> values) {
  DenseRow r{values, INT_MAX};
  for (float v : values)
    if (v != 0.0f && std::isfinite(v)) r.grid_exp = std::min(r.grid_exp, grid_of(v));
  return r;
}

std::vector<float> bf16_row_to_float(std::span<const uint16_t> bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_to_float(bits[i]);
  return out;
}

std::vector<float> mxfp4_row_to_float(const Mxfp4Quantized& m, int64_t row) {
  std::vector<float> out(static_cast<size_t>(m.cols));
  for (int64_t c = 0; c < m.cols; ++c) out[static_cast<size_t>(c)] = m.dequant(row, c, E8m0Decode::kOcp);
  return out;
}

std::vector<float> weight_row_to_float(WeightFormat format, const Bf16Matrix& b, const Mxfp4Quantized& m,
                                       int64_t row) {
  return format == WeightFormat::kMxfp4 ? mxfp4_row_to_float(m, row) : bf16_row_to_float(b.row(row));
}

W4A16Dot dense_dot_scalar(const DenseRow& x, const DenseRow& w) {
  check_lengths(x, w);
  double value = 0, abs_value = 0;
  for (size_t i = 0; i < x.values.size(); ++i) {
    const double p = static_cast<double>(x.values[i]) * static_cast<double>(w.values[i]);  // exact
    value += p;
    abs_value += std::fabs(p);
  }
  return certify_double_sum(value, abs_value, product_grid(x, w), static_cast<int64_t>(x.values.size()));
}

W4A16Dot dense_dot(const DenseRow& x, const DenseRow& w) {
  check_lengths(x, w);
#if defined(__x86_64__)
  if (cpu_has_avx2()) return dense_dot_avx2(x, w);
#endif
  return dense_dot_scalar(x, w);
}

}  // namespace moefuzz
