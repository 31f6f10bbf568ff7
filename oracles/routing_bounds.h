#pragma once
// Rigorous error bounds for what a correct fp32 routing kernel computes, per the profile's arithmetic
// (SigmoidForm, fast_math_exp; SPEC.md §2). Used for set admissibility (how far a kernel's selection
// score may be from the exact one) and for routing weights (conditioned on the kernel's ids).
// Every constant is derived in routing_bounds.cpp from the documented accuracy of the CUDA / libm
// functions the kernels call and the IEEE rounding of each fp32 operation.
//
// Example:
//   double b = moefuzz::sigmoid_error_bound(profile, x, s);   // |s_kernel - s| <= b
//   moefuzz::WeightBound wb = moefuzz::normalized_weight_bound(raw, bounds, j, eps, scale, k, dtype);
#include <cstdint>
#include <span>

#include "core/case.h"
#include "core/profile.h"
#include "oracles/bounds.h"  // kFp32Unit, kBf16Unit

namespace moefuzz {

// fp32 ulp, relative upper bound (twice the unit roundoff kFp32Unit of oracles/bounds.h).
inline constexpr double kFp32Ulp = 2 * kFp32Unit;
// Absolute floor for results that may be flushed to zero (FTZ) or land in fp32 subnormals: any
// value below 2^-126 may become 0, and subnormal rounding errs by at most 2^-150.
inline constexpr double kFp32FlushFloor = 0x1p-125;
// The largest finite fp32 value: an fp32 result whose exact value reaches it may round to Inf.
inline constexpr double kFp32Max = 0x1.fffffep127;

// Error, in fp32 ulps (relative 2^-23 each), of the kernel's expf(a): precise expf <= 2 ulp (CUDA
// Programming Guide, math function accuracy table; glibc and Sleef are tighter); __expf (fast math)
// <= 2 + floor(1.173*|a|) ulp (same table), taken as 2 + 1.5*|a|.
double exp_error_ulps(const Profile& p, double a);
// |sigmoid_kernel(x) - s| for s = sigmoid(x) exactly.
double sigmoid_error_bound(const Profile& p, double x, double s);
// |sqrt(softplus)_kernel(x) - v| for v = sqrt(softplus(x)) exactly.
double sqrt_softplus_error_bound(const Profile& p, double x, double v);
// |p_kernel_i - p_i| for the softmax of a row: p are the exact probabilities, d_i = x_i - max.
// Returns one bound per expert.
void softmax_error_bounds(const Profile& p, std::span<const float> logits, std::span<const double> probs,
                          std::span<double> bounds);

// Bound on a routing weight w = scale * raw_j / (sum(raw) + eps) (normalize) or scale * raw_j,
// given exact raw scores and their absolute bounds, for a kernel that computes in fp32 and stores
// `dtype`. `expected` is the exact weight, `bound` the admissible |kernel - expected|; expected NaN
// and bound Inf where an intermediate of a correct kernel may overflow to Inf (a huge scale).
struct WeightBound {
  double expected = 0;
  double bound = 0;
};
WeightBound routing_weight_bound(std::span<const double> raw, std::span<const double> raw_bounds, size_t j,
                                 bool normalize, double eps, double scale, WeightDtype dtype);

// The routing-weight sum rules of the STRUCT invariant (weights sum to 1, to s, or to at most 1):
// the rounding allowance of a sum of n weights each produced as fl(s_i / fl(sum)) (n+2 fp32
// roundings, gamma_{n+2}) and, for bf16 weights, one bf16 rounding of each weight.
double routing_sum_allowance(const Profile& p, int64_t n, double abs_sum);
// The absolute part of the same allowance: each of the n weights may be subnormal (a tiny routed
// scaling factor), where fp32 and bf16 roundings err absolutely; `amplify` bounds how much a later
// operation of the weight's computation multiplies such an error (1 / the kernel's score sum, or
// the largest raw score). Example: allowance += routing_sum_underflow_allowance(p, k, 1.0 / lo_sum);
double routing_sum_underflow_allowance(const Profile& p, int64_t n, double amplify);
// The unnormalized score of selected expert e of token t in double (only to size the epsilon
// allowance of a renormalized sum: w = s / (sum + eps) sums to sum / (sum + eps)); 1 for softmax.
double selected_raw_score(const Case& c, int64_t t, int32_t e);
// How far a correct kernel's score may sit from selected_raw_score.
double selected_raw_score_error(const Case& c, const Profile& p, int64_t t, int32_t e);

}  // namespace moefuzz
