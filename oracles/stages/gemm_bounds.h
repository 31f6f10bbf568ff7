#pragma once
// The derived bound of one GEMM element, shared by the gemm1 and gemm2 stages (derivation:
// oracles/bounds.h, docs/oracle.md): alpha * exact dot +- (gamma_{K+extra} |alpha| (|dot| + flips) +
// |alpha| flips) (1 + 8u_double) + the underflow floor; NaN (nothing said) where a correct fp32 kernel
// may overflow.
//
// Example:
//   const double gk = moefuzz::gamma_n(K + moefuzz::kGemmExtraRoundings, moefuzz::kFp32Unit);
//   moefuzz::Interval y = moefuzz::stages::gemm_interval(dot, alpha, flip_sum, gk,
//                                                       moefuzz::stages::gemm_floor(K, sda, sdw));
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/case.h"
#include "core/nvfp4.h"
#include "oracles/bounds.h"
#include "oracles/exact_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// Loop tiling of both GEMM stages (speed only, no effect on values). W4A16: rows of one expert are
// processed in blocks of kRowBlock with the weight row loop outside the row loop: each decoded weight
// row is then read from memory once per block, while the block's activation rows stay in cache.
inline constexpr int64_t kRowBlock = 32;
// W4A4: rows per exact_dot_rows call (the most it takes); tiles hold 2 x kDotRows rows.
inline constexpr int64_t kDotRows = 4;

// Largest |e2m1 * e4m3| operand: 6 * 448.
inline constexpr double kMaxOperand = 6.0 * 448.0;

// Underflow floor of one GEMM element: each of the K + kGemmExtraRoundings operations may lose up
// to 2^-126 (FTZ); an underflowed dequantized operand is further multiplied by the other operand,
// at most kMaxOperand * S_d.
double gemm_floor(int64_t k, double sda, double sdw);

// The underflow floor of one element of a bf16-weight GEMM (W16A16): each of the K products of fp32
// operands may underflow (or be flushed to zero) and each of the K - 1 additions and the extra
// roundings may lose up to 2^-126 (FTZ); no scale multiplies the lost amounts.
double dense_gemm_floor(int64_t k);

// True where a correct fp32 kernel may overflow to Inf/NaN (see gemm_bounds.cpp for the allowance).
bool fp32_may_overflow(double abs_sum, double alpha, double v, double b);

// W4A16 kernels may apply a block's scale after the block's 16-term partial sum: true when a
// zero-scale block of weight row `row` may see its raw partial reach the overflow range.
bool zero_scale_partial_may_overflow(std::span<const float> center, std::span<const float> radius,
                                     const Nvfp4Matrix& w, int64_t row);
// The cheap pre-test of zero_scale_partial_may_overflow over a whole input row.
bool row_may_overflow_a_partial(std::span<const float> center, std::span<const float> radius);

// Interval of a correct kernel's fp32 W4A4 GEMM result: alpha * exact sum, accumulation in any order
// over operands that may deviate from the decoded center by the sparse flips (summed to flip_sum).
// gk = gamma_n(k + kGemmExtraRoundings, kFp32Unit).
Interval gemm_interval(const RoundedDot& d, double alpha, double flip_sum, double gk, double floor);
// The same for a W4A16 dot of a point activation row (gemm1).
Interval w4a16_point_interval(const W4A16Dot& d, double alpha, double gk, double floor);
// The same for a W4A16 dot of an activation row given as centers d plus radii r (gemm2).
Interval w4a16_radius_interval(const W4A16Dot& d, const W4A16Dot& r, double alpha, double gk, double floor);

// Weight matrix m of expert W ("which": 0 gate, 1 up, 2 down) as a dot device receives it, named by
// content when W is the case's expert of `rows` (so the device keeps its copy across evaluations of
// a case and its transforms, which share most experts).
DeviceWeights device_weights(const Case& c, const ExpertRows& rows, const ExpertWeights& W,
                             const Nvfp4Matrix& m, int which);

// A GEMM element plus an expert bias (recipe expert_bias): the kernel's fl(acc + b) in fp32, for any
// acc in `v`. One rounding (exact when it underflows); NaN (nothing said) near the fp32 overflow.
Interval add_expert_bias(Interval v, double b);

// What follows a W4A4 GEMM element's dot in the stages: gemm_interval's constants, the expert bias
// (empty: none) and whether the profile rounds the result to bf16.
struct GemmEpilogue {
  double alpha = 0, gk = 0, floor = 0;
  std::span<const float> bias;
  bool bf16 = false;
};
// One output row of a W4A4 GEMM stage from a device's dots and flip sums: out[o] = gemm_interval(
// dots[o], alpha, flips[o], gk, floor), then add_expert_bias(bias[o]) and, unless NaN, round_to_bf16,
// as the stages compute element by element. `flips` null: every flip sum is +0 (DeviceGemm::zero_flips). One
// call per row keeps the loop free of the stages' per-element bookkeeping. `simd` false: the
// element-by-element loop (the reference the tests hold the AVX2 path to; the AVX2 path is taken only where
// cpu_has_avx2()).
void gemm_row_intervals(const GemmEpilogue& e, const RoundedDot* dots, const double* flips, int64_t cols,
                        Interval* out, bool simd = true);
// The same epilogue of one element (the stages' per-element path). Inline: an Interval passed to a
// call goes through memory, and that store-to-load round trip per element was the epilogue's cost.
inline Interval gemm_epilogue(const GemmEpilogue& e, Interval v, int64_t o) {
  if (!e.bias.empty()) v = add_expert_bias(v, e.bias[static_cast<size_t>(o)]);  // before the rounding point
  if (e.bf16 && !is_nan(v)) v = round_to_bf16(v);
  return v;
}

// A W4A4 GEMM stage's dots of one expert on a dot device: rows [0, n) of `q` against each matrix of
// `weights` (ExactDotDevice::dots's layout), with their flip sums where the device can repeat the
// CPU's order (weighted_abs_sum_rows_is_fused; `flips` empty otherwise, and the stage sums the flips)
// or where they are all +0 (`zero_flips`).
// `zero_flips`: no row has a flip (every row conditioned on a kernel's codes), so every flip sum is +0
// and `flips` stays empty.
struct DeviceGemm {
  std::vector<RoundedDot> dots;
  std::vector<double> flips;
  bool zero_flips = false;
  // Whether the flip sums are known (computed by the device, or all +0), and those of dot `at` (null:
  // all +0) for gemm_row_intervals.
  bool flips_known() const { return zero_flips || !flips.empty(); }
  const double* flips_at(size_t at) const { return zero_flips ? nullptr : &flips[at]; }
};
DeviceGemm device_gemm(ExactDotDevice& device, const QuantizedInputs& q, int64_t n,
                       std::span<const DeviceWeights> weights);
// The same dots and flip sums on the CPU, in device_gemm's layout, so that the stages take one row
// epilogue (gemm_row_intervals) whoever computed them: rounded_dot_rows and flip_sums in tiles of
// 2 x kDotRows rows (the tile's decoded rows stay in L1; each weight row is read once per tile).
// The flip sums are always known: all +0 (zero_flips) where no row flips a code.
DeviceGemm cpu_gemm(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights);
// The flip sums of a device's dots when it did not compute them (flips_known() false: a CPU without
// FMA, whose flip order a device does not repeat), from flip_sums on the CPU.
void add_cpu_flips(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights,
                   DeviceGemm& g);

// The code flips of one quantized row (column, weight), in the form the per-output loop reads
// fastest: a dense per-column vector when they are many (flips_are_dense), else the sparse list.
struct FlipTerms {
  const FlipList* sparse = nullptr;
  std::vector<double> dense;
};
FlipTerms flip_terms(const FlipList& flips, int64_t cols);
// Flip magnitudes of rows j0 .. j0+na-1 (na <= 8) against packed weight row w: dense rows together.
void flip_sums(const std::vector<FlipTerms>& fl, int64_t j0, int na, PackedNvfp4Row w, double* out);
// One row's flip magnitude against packed weight row w, as flip_terms + flip_sums give it: what a dot
// device returns for the row and w (DotFlips), and what the tests hold a device to.
double flip_sum(const FlipList& flips, PackedNvfp4Row w);

}  // namespace moefuzz::stages
