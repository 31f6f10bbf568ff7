#include "oracles/stages/combine_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cpu_features.h"
#include "oracles/bounds.h"
#include "oracles/interval_avx2.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

CombineAccumulators::CombineAccumulators(int64_t cols)
    : lo(static_cast<size_t>(cols)),
      hi(static_cast<size_t>(cols)),
      mag(static_cast<size_t>(cols)),
      peak(static_cast<size_t>(cols)),
      nan(static_cast<size_t>(cols)) {}

void CombineAccumulators::reset() {
  std::fill(lo.begin(), lo.end(), 0.0);
  std::fill(hi.begin(), hi.end(), 0.0);
  std::fill(mag.begin(), mag.end(), 0.0);
  std::fill(peak.begin(), peak.end(), 0.0);
  std::fill(nan.begin(), nan.end(), 0);
}

namespace {

using avx2::abs_pd;
using avx2::outward_float_bits;
using avx2::round_bits_to_bf16;
using avx2::std_max;
using avx2::std_min;

// Columns [begin, end) of the scalar finish (the reference), stored in row `row` of `out`.
void finish_scalar(const CombineAccumulators& acc, const CombineFinish& f, StageExpectation& out, int64_t row,
                   int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; ++o) {
    double peak;
    const Interval s = routed_output(acc, o, f, &peak);
    const bool unknown = acc.nan[static_cast<size_t>(o)] != 0 || !(peak < kBf16Max);
    store(&out, row, o, unknown ? Interval{kNaN, kNaN} : s);
  }
}

// One column of the scalar loop (the reference): columns [begin, end).
void accumulate_scalar(double w, const double* ylo, const double* yhi, bool bf16_products,
                       CombineAccumulators& acc, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; ++o) {
    const size_t i = static_cast<size_t>(o);
    const Interval yi{ylo[o], yhi[o]};
    if (is_nan(yi) || std::isnan(w)) {
      acc.nan[i] = 1;
      continue;
    }
    Interval prod{std::min(w * yi.lo, w * yi.hi), std::max(w * yi.lo, w * yi.hi)};
    const double pm = std::max(std::fabs(prod.lo), std::fabs(prod.hi));
    // The fp32 product's own rounding.
    prod = {prod.lo - kFp32Unit * pm - kUnderflowFloor, prod.hi + kFp32Unit * pm + kUnderflowFloor};
    if (bf16_products) prod = round_to_bf16(prod);
    acc.lo[i] += prod.lo;
    acc.hi[i] += prod.hi;
    acc.mag[i] += std::max(std::fabs(prod.lo), std::fabs(prod.hi));
    acc.peak[i] = std::max(acc.peak[i], pm * (1 + kFp32Unit) + kUnderflowFloor);
  }
}

__attribute__((target("avx2"))) void accumulate_avx2(double w, const double* ylo, const double* yhi,
                                                     bool bf16_products, CombineAccumulators& acc) {
  const int64_t H = acc.cols(), H4 = H / 4 * 4;
  const __m256d wv = _mm256_set1_pd(w), unit = _mm256_set1_pd(kFp32Unit),
                floor = _mm256_set1_pd(kUnderflowFloor), peak_scale = _mm256_set1_pd(1 + kFp32Unit);
  double *alo = acc.lo.data(), *ahi = acc.hi.data(), *amag = acc.mag.data(), *apeak = acc.peak.data();
  for (int64_t o = 0; o < H4; o += 4) {
    const __m256d lo = _mm256_loadu_pd(ylo + o), hi = _mm256_loadu_pd(yhi + o);
    const __m256d skip =
        _mm256_or_pd(_mm256_cmp_pd(lo, lo, _CMP_UNORD_Q), _mm256_cmp_pd(hi, hi, _CMP_UNORD_Q));
    if (const int m = _mm256_movemask_pd(skip); m != 0)
      for (int k = 0; k < 4; ++k)
        if (m & (1 << k)) acc.nan[static_cast<size_t>(o + k)] = 1;
    const __m256d a = _mm256_mul_pd(wv, lo), b = _mm256_mul_pd(wv, hi);
    __m256d plo = std_min(a, b), phi = std_max(a, b);
    const __m256d pm = std_max(abs_pd(plo), abs_pd(phi));
    const __m256d widen = _mm256_mul_pd(unit, pm);
    plo = _mm256_sub_pd(_mm256_sub_pd(plo, widen), floor);
    phi = _mm256_add_pd(_mm256_add_pd(phi, widen), floor);
    if (bf16_products) {
      plo = round_bits_to_bf16(outward_float_bits</*kDown=*/true>(plo));
      phi = round_bits_to_bf16(outward_float_bits</*kDown=*/false>(phi));
    }
    const __m256d old_lo = _mm256_loadu_pd(alo + o), old_hi = _mm256_loadu_pd(ahi + o),
                  old_mag = _mm256_loadu_pd(amag + o), old_peak = _mm256_loadu_pd(apeak + o);
    const __m256d new_mag = _mm256_add_pd(old_mag, std_max(abs_pd(plo), abs_pd(phi)));
    const __m256d new_peak = std_max(old_peak, _mm256_add_pd(_mm256_mul_pd(pm, peak_scale), floor));
    // A NaN column keeps its accumulators as they were (the scalar loop skips it).
    _mm256_storeu_pd(alo + o, _mm256_blendv_pd(_mm256_add_pd(old_lo, plo), old_lo, skip));
    _mm256_storeu_pd(ahi + o, _mm256_blendv_pd(_mm256_add_pd(old_hi, phi), old_hi, skip));
    _mm256_storeu_pd(amag + o, _mm256_blendv_pd(new_mag, old_mag, skip));
    _mm256_storeu_pd(apeak + o, _mm256_blendv_pd(new_peak, old_peak, skip));
  }
  accumulate_scalar(w, ylo, yhi, bf16_products, acc, H4, H);
}

__attribute__((target("avx2"))) void finish_avx2(const CombineAccumulators& acc, const CombineFinish& f,
                                                 StageExpectation& out, int64_t row) {
  const int64_t H = acc.cols(), H4 = H / 4 * 4;
  double* expected = out.expected.data() + row * out.cols;
  double* bound = out.bound.data() + row * out.cols;
  const __m256d gamma = _mm256_set1_pd(f.gamma), floor_n = _mm256_set1_pd(f.floor_n),
                rsf = _mm256_set1_pd(static_cast<double>(f.rsf)), unit = _mm256_set1_pd(kFp32Unit),
                floor = _mm256_set1_pd(kUnderflowFloor), peak_scale = _mm256_set1_pd(1 + kFp32Unit),
                bf16_max = _mm256_set1_pd(kBf16Max), two = _mm256_set1_pd(2.0),
                radius_scale = _mm256_set1_pd(1 + 2 * kDoubleUnit), zero = _mm256_setzero_pd(),
                nan_v = _mm256_set1_pd(kNaN), inf_v = _mm256_set1_pd(kInf);
  for (int64_t o = 0; o < H4; o += 4) {
    const __m256d mag = _mm256_loadu_pd(acc.mag.data() + o);
    const __m256d err = _mm256_mul_pd(gamma, mag);
    __m256d lo = _mm256_sub_pd(_mm256_sub_pd(_mm256_loadu_pd(acc.lo.data() + o), err), floor_n);
    __m256d hi = _mm256_add_pd(_mm256_add_pd(_mm256_loadu_pd(acc.hi.data() + o), err), floor_n);
    __m256d peak =
        std_max(_mm256_loadu_pd(acc.peak.data() + o), _mm256_add_pd(_mm256_add_pd(mag, err), floor_n));
    if (f.rsf_in_combine) {
      const __m256d a = _mm256_mul_pd(lo, rsf), b = _mm256_mul_pd(hi, rsf);
      lo = std_min(a, b);
      hi = std_max(a, b);
      const __m256d m = std_max(abs_pd(lo), abs_pd(hi));
      const __m256d widen = _mm256_mul_pd(unit, m);
      lo = _mm256_sub_pd(_mm256_sub_pd(lo, widen), floor);
      hi = _mm256_add_pd(_mm256_add_pd(hi, widen), floor);
      peak = std_max(peak, _mm256_add_pd(_mm256_mul_pd(m, peak_scale), floor));
    }
    if (f.bf16_output) {
      lo = round_bits_to_bf16(outward_float_bits</*kDown=*/true>(lo));
      hi = round_bits_to_bf16(outward_float_bits</*kDown=*/false>(hi));
    }
    // store(): NaN / +inf where a NaN reached the column, an intermediate may pass bf16's largest
    // finite value (!(peak < max): NaN peaks included), or an end is NaN.
    int32_t flags;
    std::memcpy(&flags, acc.nan.data() + o, 4);
    const __m256i flag_lanes = _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(flags));
    const __m256d flagged = _mm256_castsi256_pd(_mm256_cmpgt_epi64(flag_lanes, _mm256_setzero_si256()));
    const __m256d unknown =
        _mm256_or_pd(_mm256_or_pd(flagged, _mm256_cmp_pd(peak, bf16_max, _CMP_NLT_UQ)),
                     _mm256_or_pd(_mm256_cmp_pd(lo, lo, _CMP_UNORD_Q), _mm256_cmp_pd(hi, hi, _CMP_UNORD_Q)));
    // Interval::center and radius (bounds.h).
    const __m256d width = _mm256_sub_pd(hi, lo);
    const __m256d center =
        _mm256_blendv_pd(_mm256_add_pd(lo, _mm256_div_pd(width, two)), lo, _mm256_cmp_pd(lo, hi, _CMP_EQ_OQ));
    const __m256d radius = _mm256_blendv_pd(_mm256_mul_pd(_mm256_div_pd(width, two), radius_scale), zero,
                                            _mm256_cmp_pd(width, zero, _CMP_EQ_OQ));
    _mm256_storeu_pd(expected + o, _mm256_blendv_pd(center, nan_v, unknown));
    _mm256_storeu_pd(bound + o, _mm256_blendv_pd(radius, inf_v, unknown));
  }
  finish_scalar(acc, f, out, row, H4, H);
}

}  // namespace

Interval routed_output(const CombineAccumulators& acc, int64_t o, const CombineFinish& f, double* peak_out) {
  const size_t i = static_cast<size_t>(o);
  const double lo = acc.lo[i], hi = acc.hi[i], mag = acc.mag[i];
  const double acc_err = f.gamma * mag;
  Interval s{lo - acc_err - f.floor_n, hi + acc_err + f.floor_n};
  double peak = std::max(acc.peak[i], mag + acc_err + f.floor_n);  // any partial sum
  if (f.rsf_in_combine) {
    s = {std::min(s.lo * f.rsf, s.hi * f.rsf), std::max(s.lo * f.rsf, s.hi * f.rsf)};
    const double m = std::max(std::fabs(s.lo), std::fabs(s.hi));
    s = {s.lo - kFp32Unit * m - kUnderflowFloor, s.hi + kFp32Unit * m + kUnderflowFloor};
    peak = std::max(peak, m * (1 + kFp32Unit) + kUnderflowFloor);
  }
  if (f.bf16_output) s = round_to_bf16(s);
  *peak_out = peak;
  return s;
}

void finish_routed_columns_scalar(const CombineAccumulators& acc, const CombineFinish& f,
                                  StageExpectation& out, int64_t row) {
  finish_scalar(acc, f, out, row, 0, acc.cols());
}

void finish_routed_columns(const CombineAccumulators& acc, const CombineFinish& f, StageExpectation& out,
                           int64_t row) {
  if (combine_rows_use_avx2())
    finish_avx2(acc, f, out, row);
  else
    finish_routed_columns_scalar(acc, f, out, row);
}

bool combine_rows_use_avx2() { return cpu_has_avx2(); }

void accumulate_weighted_row_scalar(double w, const double* ylo, const double* yhi, bool bf16_products,
                                    CombineAccumulators& acc) {
  accumulate_scalar(w, ylo, yhi, bf16_products, acc, 0, acc.cols());
}

void accumulate_weighted_row(double w, const double* ylo, const double* yhi, bool bf16_products,
                             CombineAccumulators& acc) {
  if (std::isnan(w)) {  // every column NaN, nothing added (as the scalar loop does column by column)
    std::fill(acc.nan.begin(), acc.nan.end(), 1);
    return;
  }
  if (combine_rows_use_avx2())
    accumulate_avx2(w, ylo, yhi, bf16_products, acc);
  else
    accumulate_weighted_row_scalar(w, ylo, yhi, bf16_products, acc);
}

}  // namespace moefuzz::stages
