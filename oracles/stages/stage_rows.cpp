#include "oracles/stages/stage_rows.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "oracles/interval_avx2.h"

namespace moefuzz::stages {
namespace {

void store_row_scalar(StageExpectation* st, int64_t row, int64_t col, const Interval* v, int64_t begin,
                      int64_t end) {
  for (int64_t i = begin; i < end; ++i) store(st, row, col + i, v[i]);
}

// Four Intervals from memory as (lo, hi) vectors in column order o, o+1, o+2, o+3 (unpacking two
// loads of pairs gives lanes o, o+2, o+1, o+3; one permute puts them in order).
struct Ends {
  __m256d lo, hi;
};
__attribute__((target("avx2"))) inline Ends load_ends(const Interval* v) {
  const __m256d a = _mm256_loadu_pd(&v[0].lo), b = _mm256_loadu_pd(&v[2].lo);
  return {_mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), _MM_SHUFFLE(3, 1, 2, 0)),
          _mm256_permute4x64_pd(_mm256_unpackhi_pd(a, b), _MM_SHUFFLE(3, 1, 2, 0))};
}
// The inverse of load_ends.
__attribute__((target("avx2"))) inline void store_ends(Interval* v, __m256d lo, __m256d hi) {
  const __m256d l = _mm256_permute4x64_pd(lo, _MM_SHUFFLE(3, 1, 2, 0)),
                h = _mm256_permute4x64_pd(hi, _MM_SHUFFLE(3, 1, 2, 0));
  _mm256_storeu_pd(&v[0].lo, _mm256_unpacklo_pd(l, h));
  _mm256_storeu_pd(&v[2].lo, _mm256_unpackhi_pd(l, h));
}

// Interval::center(): lo == hi ? lo : lo + (hi - lo) / 2 (halving is exact, so * 0.5 is the same).
__attribute__((target("avx2"))) inline __m256d center_pd(__m256d lo, __m256d hi) {
  const __m256d mid = _mm256_add_pd(lo, _mm256_mul_pd(_mm256_sub_pd(hi, lo), _mm256_set1_pd(0.5)));
  return _mm256_blendv_pd(mid, lo, _mm256_cmp_pd(lo, hi, _CMP_EQ_OQ));
}
// Interval::radius(): hi - lo == 0 ? 0 : (hi - lo) / 2 * (1 + 2u).
__attribute__((target("avx2"))) inline __m256d radius_pd(__m256d lo, __m256d hi) {
  const __m256d d = _mm256_sub_pd(hi, lo);
  const __m256d r = _mm256_mul_pd(_mm256_mul_pd(d, _mm256_set1_pd(0.5)), _mm256_set1_pd(1 + 2 * kDoubleUnit));
  return _mm256_andnot_pd(_mm256_cmp_pd(d, _mm256_setzero_pd(), _CMP_EQ_OQ), r);
}
__attribute__((target("avx2"))) inline __m256d nan_mask(__m256d lo, __m256d hi) {
  return _mm256_or_pd(_mm256_cmp_pd(lo, lo, _CMP_UNORD_Q), _mm256_cmp_pd(hi, hi, _CMP_UNORD_Q));
}
// store() of four elements whose ends are (lo, hi), NaN lanes `bad`.
__attribute__((target("avx2"))) inline void store4(double* expected, double* bound, __m256d lo, __m256d hi,
                                                   __m256d bad) {
  _mm256_storeu_pd(expected, _mm256_blendv_pd(center_pd(lo, hi), _mm256_set1_pd(kNaN), bad));
  _mm256_storeu_pd(bound, _mm256_blendv_pd(radius_pd(lo, hi), _mm256_set1_pd(kInf), bad));
}

__attribute__((target("avx2"))) void store_row_avx2(StageExpectation* st, int64_t row, int64_t col,
                                                    const Interval* v, int64_t n) {
  const size_t at = static_cast<size_t>(row * st->cols + col);
  double *expected = st->expected.data() + at, *bound = st->bound.data() + at;
  const int64_t n4 = n / 4 * 4;
  for (int64_t i = 0; i < n4; i += 4) {
    const Ends e = load_ends(v + i);
    store4(expected + i, bound + i, e.lo, e.hi, nan_mask(e.lo, e.hi));
  }
  store_row_scalar(st, row, col, v, n4, n);
}

bool finish_activation_scalar(const ActivationFinish& f, Interval* xs, const Interval* up, int64_t begin,
                              int64_t end, double* lo, double* hi, double* center) {
  bool nan = false;
  for (int64_t o = begin; o < end; ++o) {
    Interval x = xs[o];
    if (!is_nan(x) && f.silu_may_round_bf16) {
      // bf16(silu(g)) is within 2^-8 of silu(g) relative (plus the subnormal floor, flushes
      // included), and |silu(g) * v| <= max|x|: widen by that much times |v| <= max|up| + |beta|.
      const Interval& u = up[o];
      const double v = std::max(std::fabs(u.lo), std::fabs(u.hi)) + f.abs_beta;
      const double w =
          kBf16Unit * std::max(std::fabs(x.lo), std::fabs(x.hi)) * (1 + kBf16Unit) + kUnderflowFloor * v;
      x = {x.lo - w, x.hi + w};
    }
    if (!is_nan(x) && f.bf16) x = round_to_bf16(x);
    xs[o] = x;
    nan |= is_nan(x);
    lo[o] = x.lo;
    hi[o] = x.hi;
    center[o] = x.center();
  }
  return nan;
}

// finish_activation_scalar four elements at a time: the same operations in the same order, each step
// taken only in the lanes where the scalar loop takes it.
__attribute__((target("avx2"))) bool finish_activation_avx2(const ActivationFinish& f, Interval* xs,
                                                            const Interval* up, int64_t n, double* lo,
                                                            double* hi, double* center) {
  using avx2::abs_pd;
  using avx2::std_max;
  const __m256d beta = _mm256_set1_pd(f.abs_beta), unit = _mm256_set1_pd(kBf16Unit),
                grow = _mm256_set1_pd(1 + kBf16Unit), floor = _mm256_set1_pd(kUnderflowFloor);
  const int64_t n4 = n / 4 * 4;
  __m256d any_nan = _mm256_setzero_pd();
  for (int64_t o = 0; o < n4; o += 4) {
    Ends x = load_ends(xs + o);
    if (f.silu_may_round_bf16) {
      const __m256d keep = nan_mask(x.lo, x.hi);
      const Ends u = load_ends(up + o);
      const __m256d v = _mm256_add_pd(std_max(abs_pd(u.lo), abs_pd(u.hi)), beta);
      const __m256d w =
          _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(unit, std_max(abs_pd(x.lo), abs_pd(x.hi))), grow),
                        _mm256_mul_pd(floor, v));
      x.lo = _mm256_blendv_pd(_mm256_sub_pd(x.lo, w), x.lo, keep);
      x.hi = _mm256_blendv_pd(_mm256_add_pd(x.hi, w), x.hi, keep);
    }
    if (f.bf16) {
      const __m256d keep = nan_mask(x.lo, x.hi);
      x.lo = _mm256_blendv_pd(avx2::round_bits_to_bf16(avx2::outward_float_bits</*kDown=*/true>(x.lo)), x.lo,
                              keep);
      x.hi = _mm256_blendv_pd(avx2::round_bits_to_bf16(avx2::outward_float_bits</*kDown=*/false>(x.hi)), x.hi,
                              keep);
    }
    store_ends(xs + o, x.lo, x.hi);
    any_nan = _mm256_or_pd(any_nan, nan_mask(x.lo, x.hi));
    _mm256_storeu_pd(lo + o, x.lo);
    _mm256_storeu_pd(hi + o, x.hi);
    _mm256_storeu_pd(center + o, center_pd(x.lo, x.hi));
  }
  const bool tail = finish_activation_scalar(f, xs, up, n4, n, lo, hi, center);
  return tail || _mm256_movemask_pd(any_nan) != 0;
}

}  // namespace

void store_row(StageExpectation* st, int64_t row, int64_t col, const Interval* v, int64_t n, bool simd) {
  if (st == nullptr) return;
  if (simd && cpu_has_avx2())
    store_row_avx2(st, row, col, v, n);
  else
    store_row_scalar(st, row, col, v, 0, n);
}

bool finish_activation_row(const ActivationFinish& f, Interval* x, const Interval* up, int64_t n, double* lo,
                           double* hi, double* center, bool simd) {
  if (simd && cpu_has_avx2()) return finish_activation_avx2(f, x, up, n, lo, hi, center);
  return finish_activation_scalar(f, x, up, 0, n, lo, hi, center);
}

}  // namespace moefuzz::stages
