#include "core/residual_pattern.h"

#include <fmt/format.h>

#include <cmath>

namespace moefuzz {
namespace {

// Least-squares ratio got/expected over finite elements; NaN when expected is all zero.
double ls_ratio(const std::vector<double>& got, const std::vector<double>& expected) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(expected[i])) continue;
    num += got[i] * expected[i];
    den += expected[i] * expected[i];
  }
  return den > 0 ? num / den : NAN;
}

// Relative residual of `got` against `model` (sum of squares ratio).
double rel_residual(const std::vector<double>& got, const std::vector<double>& model) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(model[i])) continue;
    num += (got[i] - model[i]) * (got[i] - model[i]);
    den += model[i] * model[i];
  }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

bool near(double a, double b) { return std::fabs(a - b) <= 0.02 * std::fabs(b); }

std::string index_list(const std::vector<int64_t>& v, int64_t total) {
  if (static_cast<int64_t>(v.size()) == total) return "all";
  std::string s;
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > 8) s += fmt::format(",... ({} of {})", v.size(), total);
  return s;
}

}  // namespace

ResidualSummary summarize_residual(const std::vector<double>& got, const std::vector<double>& expected,
                                   const std::vector<double>& bound, int64_t rows, int64_t cols, double rsf) {
  ResidualSummary s;
  std::vector<int64_t> bad_rows, bad_cols;
  std::vector<char> col_bad(static_cast<size_t>(cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    bool row_bad = false;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      // No expectation (compare_elementwise skips these too): nothing can be over its bound.
      if (std::isnan(expected[i]) || std::isinf(bound[i])) continue;
      if (!std::isfinite(got[i]) && std::isfinite(expected[i]) && s.first_nan < 0)
        s.first_nan = static_cast<int64_t>(i);
      const bool over =
          std::isfinite(expected[i]) ? !(std::fabs(got[i] - expected[i]) <= bound[i]) : got[i] != expected[i];
      if (over) {
        row_bad = true;
        col_bad[static_cast<size_t>(c)] = 1;
      }
    }
    if (row_bad) bad_rows.push_back(r);
  }
  for (int64_t c = 0; c < cols; ++c)
    if (col_bad[static_cast<size_t>(c)]) bad_cols.push_back(c);
  s.failing_rows = static_cast<int64_t>(bad_rows.size());
  s.failing_cols = static_cast<int64_t>(bad_cols.size());
  s.where = fmt::format("rows {}; cols {}", index_list(bad_rows, rows), index_list(bad_cols, cols));
  if (bad_rows.empty()) return s;

  if (s.first_nan >= 0) {
    s.pattern =
        fmt::format("first non-finite value at row {}, col {}", s.first_nan / cols, s.first_nan % cols);
    return s;
  }
  bool all_zero = true;
  for (double g : got) all_zero = all_zero && g == 0.0;
  if (all_zero) {
    s.pattern = "output is all zeros";
    return s;
  }

  const double ratio = ls_ratio(got, expected);
  if (std::isfinite(ratio)) {
    if (rsf != 1.0 && near(ratio, rsf)) {
      s.pattern = fmt::format("ratio got/expected = {:.4f} = rsf: routed scale applied twice", ratio);
      return s;
    }
    if (rsf != 1.0 && near(ratio, 1.0 / rsf)) {
      s.pattern = fmt::format("ratio got/expected = {:.4f} = 1/rsf: routed scale never applied", ratio);
      return s;
    }
    std::vector<double> scaled = expected;
    for (auto& x : scaled) x *= ratio;
    if (near(ratio, -1.0) && rel_residual(got, scaled) < 0.05) {
      s.pattern = "sign flip: got = -expected";
      return s;
    }
    // The same 5% relative residual as the sign flip: the whole output off by one factor.
    if (!near(ratio, 1.0) && rel_residual(got, scaled) < 0.05) {
      s.pattern = fmt::format("constant factor: got = {:.4f} x expected", ratio);
      return s;
    }
  }
  // The neighbouring token's row.
  if (rows > 1) {
    for (int d : {-1, 1}) {
      std::vector<double> shifted(expected.size(), NAN);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = r + d;
        if (src < 0 || src >= rows) continue;
        for (int64_t c = 0; c < cols; ++c)
          shifted[static_cast<size_t>(r * cols + c)] = expected[static_cast<size_t>(src * cols + c)];
      }
      int64_t matches = 0;
      for (int64_t r : bad_rows) {
        double e_own = 0, e_nb = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          if (!std::isfinite(shifted[i])) {
            e_nb = INFINITY;
            break;
          }
          e_own += std::fabs(got[i] - expected[i]);
          e_nb += std::fabs(got[i] - shifted[i]);
        }
        if (e_nb < 0.5 * e_own) ++matches;
      }
      if (matches * 2 > static_cast<int64_t>(bad_rows.size())) {
        s.pattern = fmt::format("failing rows hold the {} token's row", d < 0 ? "previous" : "next");
        return s;
      }
    }
  }
  // A periodic error along a stride: failing columns all in one residue class modulo p.
  for (int64_t p : {2, 4, 8, 16, 32, 64, 128}) {
    if (p >= cols || bad_cols.size() < 2) continue;
    const int64_t r0 = bad_cols[0] % p;
    bool same = true;
    for (int64_t c : bad_cols) same = same && c % p == r0;
    if (same) {
      s.pattern = fmt::format("periodic error: failing columns are {} mod {}", r0, p);
      return s;
    }
  }
  if (bad_cols.size() < static_cast<size_t>(cols) && bad_cols.size() * 8 <= static_cast<size_t>(cols))
    s.pattern = "error confined to a few columns";
  else if (bad_rows.size() * 8 <= static_cast<size_t>(rows) && rows >= 8)
    s.pattern = "error confined to a few rows (tokens)";
  return s;
}

}  // namespace moefuzz
