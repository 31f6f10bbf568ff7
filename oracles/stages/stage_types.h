#pragma once
// The types the stages of the layer oracle pass along (SPEC.md §3.7: route -> quantize -> gemm1 ->
// activation -> quantize2 -> gemm2 -> combine). Each stage file holds one stage's expected value, its
// derived bound and its admissibility; a stage takes the previous stages' values as intervals
// (expected value +- a rigorous bound, conditioned on the kernel's own decisions where it exposes
// them) and the profile, and returns intervals plus a verdict when a kernel decision is inadmissible.
// oracles/layer_ref.cpp chains them; one comparison (oracles/layer_ref.h compare_stage) ends it.
//
// Rows are processed one expert at a time (an ExpertRows), so each expert's weights are decoded and
// read once per row block.
//
// Example:
//   moefuzz::stages::ExpertRows er{.rows = rows, .members = by_expert[e]};
//   const moefuzz::stages::ExpandedRow& first = er.row(0);   // token, kernel slot, expert, weight
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "oracles/bounds.h"
#include "oracles/exact_dot.h"
#include "oracles/oracle.h"

namespace moefuzz::stages {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// One expanded (token, slot) pair, or a separately added shared expert of a token.
struct ExpandedRow {
  int64_t token = 0;
  int64_t slot = 0;  // kernel row index t * slots + slot; -1 for a separate shared expert
  int32_t expert = 0;
  float weight = 1.0f;
};

// The rows of one expert: members index into rows.
struct ExpertRows {
  std::span<const ExpandedRow> rows;
  std::span<const int64_t> members;
  int64_t size() const { return static_cast<int64_t>(members.size()); }
  const ExpandedRow& row(int64_t j) const {
    return rows[static_cast<size_t>(members[static_cast<size_t>(j)])];
  }
};

// An interval nothing can be said about (a non-finite input, a possible fp32 overflow): its element
// is left to the FINITE invariant.
inline bool is_nan(Interval x) { return std::isnan(x.lo) || std::isnan(x.hi); }

// Where a stage records its per-row expectation for the final comparison (nullptr: not kept).
inline void store(StageExpectation* st, int64_t row, int64_t col, Interval x) {
  if (st == nullptr) return;
  const size_t idx = static_cast<size_t>(row * st->cols + col);
  if (is_nan(x)) {
    st->expected[idx] = kNaN;
    st->bound[idx] = kInf;  // nothing can be said: left to the FINITE invariant
  } else {
    st->expected[idx] = x.center();
    st->bound[idx] = x.radius();
  }
}

inline StageExpectation make_stage(const std::string& name, int64_t rows, int64_t cols) {
  StageExpectation s;
  s.stage = name;
  s.rows = rows;
  s.cols = cols;
  s.expected.assign(static_cast<size_t>(rows * cols), 0.0);
  s.bound.assign(static_cast<size_t>(rows * cols), 0.0);
  return s;
}

// Quantized input rows of one expert (the output of a quantize stage): the decoded operands and the
// sparse per-element radius of the operands a correct kernel might have chosen instead (empty when
// conditioned on its codes); indeterminate rows (a non-finite input) carry nothing.
struct QuantizedInputs {
  DecodedNvfp4 rows;
  std::vector<FlipList> flips;
  std::vector<uint8_t> indeterminate;
  QuantizedInputs(int64_t decoded_rows, int64_t n, int64_t cols)
      : rows(decoded_rows, cols), flips(static_cast<size_t>(n)), indeterminate(static_cast<size_t>(n), 0) {}
};

// The activation stage's intervals of an expert's rows (after its rounding point), the input of
// quantize2.
struct ActivationRows {
  int64_t cols = 0;
  std::vector<double> lo, hi, center;  // n * cols
  std::vector<uint8_t> nan;            // n: the row holds an interval nothing can be said about
};

// A W4A16 activation operand row block: fp32 centers plus a radius covering the rest of its interval
// (radius empty = a point input).
struct Bf16Operands {
  std::vector<float> center;  // n * cols
  std::vector<float> radius;  // n * cols, or empty
};

}  // namespace moefuzz::stages
