#include "oracles/fp8_block_gemm.h"

#include <cmath>
#include <limits>

#include "core/errors.h"
#include "oracles/bounds.h"

namespace moefuzz {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kFp32Max = 0x1.fffffep127;
constexpr double kFp32UnderflowFloor = 0x1p-126;  // smallest normal: the most one FTZ op loses

// gamma_n(u) = n u / (1 - n u); +inf when n u >= 1 (Higham, Lemma 3.1).
double gamma(double n, double u) {
  const double nu = n * u;
  return nu >= 1 ? std::numeric_limits<double>::infinity() : nu / (1 - nu);
}

}  // namespace

double fp8_mma_block_error(int64_t n, int mma_accum_mantissa_bits) {
  if (n <= 0) return 0;
  const int64_t steps = (n + kFp8MmaChunk - 1) / kFp8MmaChunk;
  return gamma(static_cast<double>(n + 2 * steps), std::ldexp(1.0, -mma_accum_mantissa_bits));
}

Fp8GemmBound fp8_block_gemm_element(const Fp8BlockDot& d, std::span<const float> sa,
                                    std::span<const float> sb, const Fp8BlockGemmContract& contract) {
  const int64_t blocks = d.blocks();
  if (static_cast<int64_t>(sa.size()) != blocks || static_cast<int64_t>(sb.size()) != blocks)
    throw InputError("fp8_block_gemm_element: one activation and one weight scale per K-block expected");
  if (contract.mma_accum_mantissa_bits < 1 || contract.mma_accum_mantissa_bits > 52 ||
      contract.dots_per_block < 1)
    throw InputError(
        "fp8_block_gemm_element: contract needs 1 <= mma_accum_mantissa_bits <= 52, dots_per_block >= 1");
  if (d.nan) return {kNaN, kNaN};
  const double dpb = static_cast<double>(contract.dots_per_block);
  const double terms = static_cast<double>(blocks) * dpb;  // J
  double expected = 0;
  double inner = 0;      // sum_b gamma_N M_b |s_b|
  double magnitude = 0;  // sum_b M_b |s_b|
  double computed = 0;   // sum_b (1 + gamma_N) M_b |s_b| >= sum_j |P~_j| |s_j|
  double floor = 0;      // sum_b dpb (2 + |sb|) + (1 + gamma_N) M_b, in units of 2^-126
  double largest = 0;    // largest intermediate magnitude before a partial sum
  // gamma_N of a whole block, computed once (every block but a partial last one has 128 products).
  const double g_whole = fp8_mma_block_error(kFp8DotBlock, contract.mma_accum_mantissa_bits);
  for (int64_t b = 0; b < blocks; ++b) {
    const double a = sa[static_cast<size_t>(b)], w = sb[static_cast<size_t>(b)];
    if (!std::isfinite(a) || !std::isfinite(w)) return {kNaN, kNaN};
    const double s = a * w;  // exact: two 24-bit significands, far inside double's exponent range
    const double p = d.block_value(b), m = d.block_abs_value(b);  // exact
    const int64_t length = d.block_length(b);
    const double g =
        length == kFp8DotBlock ? g_whole : fp8_mma_block_error(length, contract.mma_accum_mantissa_bits);
    const double pm = (1 + g) * m;  // >= |P~_b| (sum over the block's dots)
    expected += p * s;
    inner += g * m * std::fabs(s);
    magnitude += m * std::fabs(s);
    computed += pm * std::fabs(s);
    floor += dpb * (2 + std::fabs(w)) + pm;
    largest =
        fmax_inline(largest, fmax_inline(pm * std::fabs(a), fmax_inline(std::fabs(s), pm * std::fabs(s))));
  }
  // Each accumulated quantity above carries at most blocks + 4 double roundings per term (a few
  // products, then the sum): inflating by gamma_{J+4}(2^-53) makes every one an upper bound.
  const double up = 1 + gamma(terms + 4, kDoubleUnit);
  const double outer = gamma(terms + 1, kFp32Unit);
  const double bound = (inner * up + outer * computed * up + gamma(terms + 1, kDoubleUnit) * magnitude * up +
                        2 * floor * up * kFp32UnderflowFloor) *
                       (1 + 8 * kDoubleUnit);
  // (e): a partial sum is at most (1 + outer) computed; every intermediate below it, with its own
  // roundings, at most (1 + 2^-22) largest.
  const double watch = std::fmax(largest * (1 + 0x1p-22), computed * up * (1 + outer));
  if (!std::isfinite(bound) || !std::isfinite(expected) || watch >= kFp32Max) return {kNaN, kNaN};
  return {expected, bound};
}

}  // namespace moefuzz
