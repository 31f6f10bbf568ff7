#pragma once
// The one elementwise comparison of moefuzz: got vs expected within a per-element bound, producing
// a Verdict with the worst element, max error/bound, the compared count and up to 30 worst elements
// (non-finite first, then by error/bound). Oracle and metamorphic invariants both use it.
//
// Example:
//   moefuzz::Verdict v = moefuzz::compare_elementwise("PERM", "output", got, expected, bound, T, H);
//   // v.outcome == kFail with v.worst.where = {.token = t, .element = h} when |got-expected| > bound
#include <cstdint>
#include <string>
#include <vector>

#include "core/verdict.h"

namespace moefuzz {

// rows index tokens, cols index elements; NaN in `expected` means "no expectation" (skipped).
// A non-finite `got` where expected is finite always fails.
Verdict compare_elementwise(const std::string& invariant, const std::string& stage,
                            const std::vector<double>& got, const std::vector<double>& expected,
                            const std::vector<double>& bound, int64_t rows, int64_t cols);

}  // namespace moefuzz
