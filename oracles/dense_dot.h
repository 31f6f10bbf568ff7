#pragma once
// Certified dots of fp32 operand rows, for layers whose weights are plain bf16 (W16A16,
// SPEC-formats.md §2). A bf16 weight has 8 significant bits and an activation (a bf16 value, or the
// fp32 center of an interval) at most 24, so every product is exact in double (32 bits; the exponent
// range of two fp32 operands, 2^-298 .. 2^256, is inside double's). The sum is accumulated in double
// and certified exactly as w4a16_dot's (oracles/exact_dot.h): `exact` when every product is a
// multiple of 2^q and sum |products| < 2^(53+q), so no partial sum in any order was rounded;
// otherwise `error_bound` bounds the double rounding error, and callers add it to their bound.
//
// q comes from each row's coarsest grid (DenseRow::grid_exp, the smallest exponent e such that every
// nonzero finite element is a multiple of 2^e): q = grid_exp(x) + grid_exp(w) is at most every
// product's own grid exponent, so the test is conservative, and each row is scanned once.
//
// Example:
//   std::vector<float> w = moefuzz::bf16_row_to_float(c.experts[e].bf16.gate.row(o));
//   moefuzz::DenseRow wr = moefuzz::dense_row(w), xr = moefuzz::dense_row(x);
//   moefuzz::W4A16Dot d = moefuzz::dense_dot(xr, wr);   // d.value, d.abs_value, d.error_bound
#include <climits>
#include <cstdint>
#include <span>
#include <vector>

#include "core/bf16_matrix.h"
#include "core/mxfp4.h"
#include "core/recipe.h"
#include "oracles/exact_dot.h"

namespace moefuzz {

struct DenseRow {
  std::span<const float> values;
  int grid_exp = INT_MAX;  // INT_MAX: no nonzero finite element
};
// Scans the row once for its grid exponent.
DenseRow dense_row(std::span<const float> values);
// A bf16 row widened to fp32 (exact).
std::vector<float> bf16_row_to_float(std::span<const uint16_t> bits);
// Row `row` of an MXFP4 matrix decoded to fp32 with the OCP decode (core/e8m0.h kOcp): e2m1 x
// 2^(scale - 127) has at most 2 significant bits and is exact in fp32 from 0.5 x 2^-127 (a subnormal)
// up; 2^128 and above is +-Inf (as in bf16, the upcast of every Hopper path); scale 0xFF gives NaN.
// Non-finite weights make the dot non-finite (left to FINITE). Example:
//   std::vector<float> w = moefuzz::mxfp4_row_to_float(c.experts[e].mx.gate, o);
std::vector<float> mxfp4_row_to_float(const Mxfp4Quantized& m, int64_t row);
// Row `row` of one projection's weights in the recipe's non-NVFP4 format, widened exactly: the bf16
// matrix for WeightFormat::kBf16, the MXFP4 one for kMxfp4 (the other is empty).
//   std::vector<float> w = moefuzz::weight_row_to_float(format, W.bf16.down, W.mx.down, o);
std::vector<float> weight_row_to_float(WeightFormat format, const Bf16Matrix& b, const Mxfp4Quantized& m,
                                       int64_t row);

// sum_i x_i w_i, certified (same length; throws InputError otherwise). Non-finite operands give a
// non-finite value (callers leave such elements to FINITE).
W4A16Dot dense_dot(const DenseRow& x, const DenseRow& w);
// The portable loop dense_dot is tested against (same value up to summation order, same certificate
// when exact).
W4A16Dot dense_dot_scalar(const DenseRow& x, const DenseRow& w);

}  // namespace moefuzz
