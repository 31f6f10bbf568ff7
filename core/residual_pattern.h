#pragma once
// Names the structure of an output error, because bugs live in error *structure* (every 32nd
// element, the neighbour's row, a factor s^2), not only in its maximum (BUGZOO.md).
//
// Every failed elementwise comparison names its summary in the verdict's message after "; residual: "
// (core/elementwise_compare.h), so findings and `moefuzz report` show the structure, not only the
// worst element.
//
// Example:
//   moefuzz::ResidualSummary r = moefuzz::summarize_residual(got, expected, bound, T, H, /*rsf=*/2.5);
//   // r.pattern == "ratio got/expected = 2.5000 = rsf: routed scale applied twice"
//   // r.where == "rows all; cols all"
#include <cstdint>
#include <string>
#include <vector>

namespace moefuzz {

struct ResidualSummary {
  std::string pattern;       // the named pattern, "" if none matched
  int64_t failing_rows = 0;  // rows (tokens) with at least one element over its bound
  int64_t failing_cols = 0;  // columns with at least one element over its bound
  int64_t first_nan = -1;    // flat index of the first NaN/Inf in got (where expected is finite)
  std::string where;         // "rows 0,3,5 of 8; cols: all" style summary
};

// `got`, `expected`, `bound`: [rows, cols] row-major. `rsf` is the routed scaling factor (1 = none
// or unknown: a constant factor is then still named, without the rsf reading).
ResidualSummary summarize_residual(const std::vector<double>& got, const std::vector<double>& expected,
                                   const std::vector<double>& bound, int64_t rows, int64_t cols, double rsf);

}  // namespace moefuzz
