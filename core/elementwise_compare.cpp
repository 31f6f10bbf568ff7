#include "core/elementwise_compare.h"

#include "core/cpu_features.h"
#include "core/residual_pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moefuzz {
namespace {

// The clear-pass shortcut's factor (derivation at its use in compare_elementwise): an element with
// |got - expected| <= fl(fl(w bound) kBelow) passes strictly inside the worst ratio w.
constexpr double kBelow = 1.0 - 8 * 0x1p-53;

#if defined(__x86_64__)
// The loop's shortcuts (below) for four elements at a time: from element i, whole groups of four in
// which every element either is skipped uncounted (NaN expectation, infinite bound) or passes one of
// the shortcuts' tests; returns the first element of the first group that does not (or of the last,
// incomplete group) and adds the groups' counted elements to `compared`. With w = 0 every counted
// element skipped is an exact hit, which ties w: the last of them goes to `last_tie` (else it is left
// alone); with w > 0 an element whose ratio is w exactly ties too (the last of the call's ties goes to
// `last_tie`). The same comparisons as the scalar tests, so the same elements take the full path.
__attribute__((target("avx2"))) inline __m256d load4(const double* p) { return _mm256_loadu_pd(p); }
// A float got widens exactly, as the scalar loop's conversion does.
__attribute__((target("avx2"))) inline __m256d load4(const float* p) {
  return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

template <class T>
__attribute__((target("avx2"))) size_t skip_inside(const T* got, const double* expected, const double* bound,
                                                   size_t i, size_t n, double w, int64_t& compared,
                                                   int64_t& last_tie) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d inf = _mm256_set1_pd(INFINITY), min_normal = _mm256_set1_pd(DBL_MIN);
  const __m256d wv = _mm256_set1_pd(w), below = _mm256_set1_pd(kBelow), zero = _mm256_setzero_pd();
  const bool ties = w == 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d g = load4(got + i), e = _mm256_loadu_pd(expected + i), b = _mm256_loadu_pd(bound + i);
    const __m256d uncounted = _mm256_or_pd(_mm256_cmp_pd(e, e, _CMP_UNORD_Q),
                                           _mm256_cmp_pd(_mm256_and_pd(b, abs_mask), inf, _CMP_EQ_OQ));
    const __m256d d = _mm256_and_pd(_mm256_sub_pd(g, e), abs_mask);  // |got - expected|
    const __m256d finite = _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(g, abs_mask), inf, _CMP_LT_OQ),
                                         _mm256_cmp_pd(_mm256_and_pd(e, abs_mask), inf, _CMP_LT_OQ));
    const __m256d inside = _mm256_mul_pd(_mm256_mul_pd(wv, b), below);
    __m256d pass = _mm256_and_pd(_mm256_cmp_pd(inside, min_normal, _CMP_GE_OQ), finite);
    pass = _mm256_and_pd(pass, _mm256_cmp_pd(d, inside, _CMP_LE_OQ));
    // Exact hits: got == expected, finite, bound >= 0 (not NaN).
    const __m256d exact =
        _mm256_and_pd(_mm256_and_pd(_mm256_cmp_pd(g, e, _CMP_EQ_OQ), _mm256_cmp_pd(b, zero, _CMP_GE_OQ)),
                      _mm256_cmp_pd(_mm256_and_pd(e, abs_mask), inf, _CMP_LT_OQ));
    pass = _mm256_or_pd(pass, exact);
    // With w > 0, a passing element (finite, |got - expected| <= bound) whose ratio |got - expected| /
    // bound is w exactly ties: it becomes the worst passing element and w stays. Elements on an end of
    // a two-value interval all have the same ratio (1 / (1 + 2u) for a bf16 rounding point's two
    // candidates), so ties are common in a kernel's stages and took the element loop (28% of the
    // elements of a medium check).
    __m256d tie = _mm256_setzero_pd();
    if (!ties) {
      tie = _mm256_and_pd(_mm256_cmp_pd(b, zero, _CMP_GT_OQ), _mm256_cmp_pd(d, b, _CMP_LE_OQ));
      tie = _mm256_and_pd(_mm256_and_pd(tie, finite), _mm256_cmp_pd(_mm256_div_pd(d, b), wv, _CMP_EQ_OQ));
      pass = _mm256_or_pd(pass, tie);
    }
    if (_mm256_movemask_pd(_mm256_or_pd(uncounted, pass)) != 0xF) break;
    const unsigned skipped = static_cast<unsigned>(_mm256_movemask_pd(uncounted));
    compared += 4 - __builtin_popcount(skipped);
    const unsigned tied =
        ties ? ~skipped & 0xFu : static_cast<unsigned>(_mm256_movemask_pd(_mm256_andnot_pd(uncounted, tie)));
    if (tied != 0) last_tie = static_cast<int64_t>(i) + 31 - __builtin_clz(tied);
  }
  return i;
}
#endif

// compare_elementwise for got of type T (double, or float: widened exactly, element by element).
template <class T>
Verdict compare_elements(const std::string& invariant, const std::string& stage, const T* got,
                         const std::vector<double>& expected, const std::vector<double>& bound, int64_t rows,
                         int64_t cols, const ElementLocator& locate) {
  Verdict v = Verdict::pass(invariant, stage);
  std::vector<ElementError> failures;
  int64_t failing = 0;
  // The locator (a std::function) runs only for the elements a report names: the failures kept and
  // the worst passing element, found by index first (a check compares ~10^7 elements per case).
  ElementError worst_pass{};
  double worst_pass_ratio = worst_pass.ratio();
  int64_t worst_r = -1, worst_c = -1;
  const auto where = [&](int64_t r, int64_t c) {
    return locate ? locate(r, c) : Location{.token = r, .element = c};
  };
  // Most elements pass well inside the worst ratio seen so far; they change nothing below, and a
  // multiply tells them apart from the rest without the division of their ratio (the loop's cost):
  // with w = worst_pass_ratio (<= 1: it passed) and |d| <= fl(fl(w b) (1 - 8u)) <= w b (1 - 5u) (both
  // products normal, so each rounding is relative), fl(|d| / b) <= w (1 - 5u)(1 + u) < w: the element
  // passes, cannot raise max_ratio (>= w) and cannot tie w (ties move the worst element to the later
  // one, so they take the full path). Exact hits (got == expected, finite, bound >= 0) are most
  // elements of a stage the oracle pins exactly (bound 0: a conditioned GEMM's unambiguous bf16
  // roundings): their ratio is 0, so with w > 0 they change nothing either, and with w = 0 they tie,
  // the last becoming the worst passing element. tests/core/elementwise_compare_test.cpp holds both
  // shortcuts to the plain loop.
  const size_t n = static_cast<size_t>(rows * cols);
#if defined(__x86_64__)
  const bool simd = cpu_has_avx2();
#endif
  size_t scalar_until = 0;  // elements before it were taken by the four-wide shortcut or are below
  for (size_t i = 0; i < n; ++i) {
#if defined(__x86_64__)
    if (simd && i >= scalar_until) {
      int64_t last_tie = -1;
      i = skip_inside(got, expected.data(), bound.data(), i, n, worst_pass_ratio, v.compared, last_tie);
      if (last_tie >= 0) {
        const size_t t = static_cast<size_t>(last_tie);
        worst_pass = ElementError{Location{}, static_cast<double>(got[t]), expected[t], bound[t]};
        worst_r = last_tie / cols;
        worst_c = last_tie % cols;
      }
      if (i >= n) break;
      scalar_until = i + 4;  // this group (or the last, incomplete one) one element at a time
    }
#endif
    {
      if (std::isnan(expected[i]) || std::isinf(bound[i])) continue;
      ++v.compared;
      const double inside = worst_pass_ratio * bound[i] * kBelow;
      const double g = static_cast<double>(got[i]);
      if (inside >= DBL_MIN && std::isfinite(g) && std::isfinite(expected[i]) &&
          std::fabs(g - expected[i]) <= inside)
        continue;
      if (worst_pass_ratio > 0 && g == expected[i] && std::isfinite(g) && bound[i] >= 0) continue;
      const ElementError e{Location{}, g, expected[i], bound[i]};
      const double e_ratio = e.ratio();
      const bool finite_mismatch = !std::isfinite(g) && std::isfinite(expected[i]);
      const double ratio = finite_mismatch ? INFINITY : e_ratio;
      // An infinite expectation (an exact overflow every correct kernel shares) holds only itself.
      const bool over = element_outside_bound(g, expected[i], bound[i]);
      if (!std::isnan(ratio)) v.max_ratio = std::max(v.max_ratio, ratio);
      if (over) {
        ++failing;
        if (failures.size() < 4096) {
          failures.push_back(e);
          failures.back().where = where(static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols);
        }
      } else if (e_ratio >= worst_pass_ratio) {
        worst_pass = e;
        worst_pass_ratio = e_ratio;
        worst_r = static_cast<int64_t>(i) / cols;
        worst_c = static_cast<int64_t>(i) % cols;
      }
    }
  }
  if (worst_r >= 0) worst_pass.where = where(worst_r, worst_c);
  if (failing == 0) {
    v.worst = worst_pass;
    return v;
  }
  auto key = [](const ElementError& e) { return std::isfinite(e.got) ? e.ratio() : INFINITY; };
  std::stable_sort(failures.begin(), failures.end(), [&](const ElementError& a, const ElementError& b) {
    const bool an = !std::isfinite(a.got), bn = !std::isfinite(b.got);
    if (an != bn) return an;  // non-finite first
    return key(a) > key(b);
  });
  v.outcome = Outcome::kFail;
  v.worst = failures.front();
  v.worst_elements.assign(failures.begin(), failures.begin() + std::min<size_t>(30, failures.size()));
  v.message = fmt::format("{} of {} elements exceed their bound (max error/bound {:.3g})", failing,
                          v.compared, v.max_ratio);
  // The error's structure, named in the message (core/residual_pattern.h): `moefuzz report` shows
  // what follows "; residual: " as the finding's residual pattern.
  const ResidualSummary residual =
      summarize_residual(std::vector<double>(got, got + n), expected, bound, rows, cols, 1.0);
  v.message +=
      "; residual: " + (residual.pattern.empty() ? residual.where : residual.pattern + "; " + residual.where);
  return v;
}

}  // namespace

bool any_element_outside_bound(const std::vector<double>& got, const std::vector<double>& expected,
                               const std::vector<double>& bound) {
  for (size_t i = 0; i < got.size(); ++i)
    if (element_outside_bound(got[i], expected[i], bound[i])) return true;
  return false;
}

Verdict compare_elementwise(const std::string& invariant, const std::string& stage,
                            const std::vector<double>& got, const std::vector<double>& expected,
                            const std::vector<double>& bound, int64_t rows, int64_t cols,
                            const ElementLocator& locate) {
  return compare_elements(invariant, stage, got.data(), expected, bound, rows, cols, locate);
}

Verdict compare_elementwise(const std::string& invariant, const std::string& stage,
                            std::span<const float> got, const std::vector<double>& expected,
                            const std::vector<double>& bound, int64_t rows, int64_t cols,
                            const ElementLocator& locate) {
  return compare_elements(invariant, stage, got.data(), expected, bound, rows, cols, locate);
}

Verdict compare_bitwise(const std::string& invariant, const std::string& stage, const std::vector<float>& a,
                        const std::vector<float>& b, int64_t rows, int64_t cols) {
  Verdict v = Verdict::pass(invariant, stage);
  int64_t differing = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      ++v.compared;
      if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;
      if (differing++ == 0) v.worst = ElementError{{.token = r, .element = c}, a[i], b[i], 0.0};
      if (v.worst_elements.size() < 30)
        v.worst_elements.push_back(ElementError{{.token = r, .element = c}, a[i], b[i], 0.0});
    }
  if (differing == 0) return v;
  v.outcome = Outcome::kFail;
  v.max_ratio = INFINITY;
  v.message = fmt::format("{} of {} elements differ bitwise", differing, v.compared);
  return v;
}

}  // namespace moefuzz
