#pragma once
// The one elementwise comparison of moefuzz: got vs expected within a per-element bound, producing
// a Verdict with the worst element, max error/bound, the compared count and up to 30 worst elements
// (non-finite first, then by error/bound). The oracle's stage comparison (oracles/layer_ref.h
// compare_stage), the metamorphic invariants and the bitwise relations (REPEAT, CANARY, BATCH) all
// use this file.
//
// Example:
//   moefuzz::Verdict v = moefuzz::compare_elementwise("PERM", "output", got, expected, bound, T, H);
//   // v.outcome == kFail with v.worst.where = {.token = t, .element = h} when |got-expected| > bound
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/verdict.h"

namespace moefuzz {

// Where element (row, col) of a comparison lies; the default puts row in token and col in element.
using ElementLocator = std::function<Location(int64_t row, int64_t col)>;

// Elements with a NaN `expected` or an infinite `bound` carry no expectation ("nothing can be said",
// e.g. an element fed by a non-finite input, left to FINITE) and are skipped. A non-finite `got`
// where expected is finite always fails.
Verdict compare_elementwise(const std::string& invariant, const std::string& stage,
                            const std::vector<double>& got, const std::vector<double>& expected,
                            const std::vector<double>& bound, int64_t rows, int64_t cols,
                            const ElementLocator& locate = nullptr);
// The same for a kernel's float values, each widened exactly (no double copy of the stage is made).
Verdict compare_elementwise(const std::string& invariant, const std::string& stage,
                            std::span<const float> got, const std::vector<double>& expected,
                            const std::vector<double>& bound, int64_t rows, int64_t cols,
                            const ElementLocator& locate = nullptr);

// Whether one element fails compare_elementwise's test: false where there is no expectation (NaN
// expected, infinite bound); a non-finite got against a finite expectation fails; an infinite
// expectation holds only itself.
inline bool element_outside_bound(double got, double expected, double bound) {
  if (std::isnan(expected) || std::isinf(bound)) return false;
  if (!std::isfinite(got) && std::isfinite(expected)) return true;
  return std::isfinite(expected) ? !(std::fabs(got - expected) <= bound) : got != expected;
}
// compare_elementwise(...).failed() without building its report (vacuity probes call this often).
bool any_element_outside_bound(const std::vector<double>& got, const std::vector<double>& expected,
                               const std::vector<double>& bound);

// Bitwise equality of two outputs (the relation of REPEAT, CANARY and BATCH for kernels that claim
// it): every element compared, any differing bit pattern (NaN payloads, the sign of zero) fails.
Verdict compare_bitwise(const std::string& invariant, const std::string& stage, const std::vector<float>& a,
                        const std::vector<float>& b, int64_t rows, int64_t cols);

}  // namespace moefuzz
