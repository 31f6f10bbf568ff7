#pragma once
// DRIFT: long-horizon error accumulation that single-call tolerances cannot see (BUGZOO Z13: a bf16
// conversion where fp32 was meant passes every single-call check and drifts over many layers).
//
// (a) Many layers: a residual stream h <- h + MoE_l(rmsnorm(h)) over L layers with per-layer weights.
//     Each layer's oracle is evaluated on the kernel's own input (conditioning, as for decisions:
//     FP4 quantization is discontinuous, so unconditioned trajectories of two CORRECT kernels part
//     ways after a single code flip). The kernel's accumulated error D_L = sum_l (out_l - oracle_l)
//     must behave like an unbiased random walk: |D_L| within kappa * sqrt(sum_l bound_l^2), and no
//     systematic bias: the signed error and the error projected on sign(h) (shrinking toward zero)
//     have |t| below the threshold.
//
// The bias statistic counts tokens, not elements, as its independent samples. A token's output
// elements share that token's routing weights (a weight's rounding error scales the whole row:
// projected on sign(h), which follows the row's own outputs, it has one sign across the row) and its
// activation scale, so their errors are not independent: an element-level z over 9 tokens x 64
// columns of a correct kernel reached 6.42 (`moefuzz check --kernel cpu --invariants DRIFT --seed 1
// --cases 200`, one-expert load). The test is therefore a cluster-robust t statistic: the mean of the
// normalized errors over its cluster-robust standard error (each token's summed deviation, small-
// sample factor g/(g-1)), with g - 1 degrees of freedom for g tokens, compared with the Student-t
// quantile of the same tail probability as kDriftZ Gaussian sigmas. Tokens whose errors are bitwise
// identical (duplicate rows) count once; with fewer than 2 distinct tokens, or no spread beyond the
// rounding of the normalization itself (every element exactly at its bound), no bias is claimed.
// (b) Long sequences: T up to >= 32k tokens in one call; the error/bound per position must not grow
//     with position (first vs last quarter).
//
// Example:
//   moefuzz::DriftReport r = moefuzz::run_layer_drift(*kernel, recipe, /*layers=*/64);
//   if (r.verdict.failed()) ...;  write_drift_csv(r, "out/drift.csv");
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe.h"
#include "core/verdict.h"
#include "kernels/kernel.h"

namespace moefuzz {

struct DriftPoint {
  int64_t index = 0;            // layer (a) or position bucket (b)
  double max_single_ratio = 0;  // max |out - oracle| / bound of this layer alone (single-call ORACLE)
  double rms_error = 0;         // rms of the accumulated error D
  double rw_bound = 0;          // rms of sqrt(sum bound^2): the random-walk scale
  double max_normalized = 0;    // max |D| / sqrt(sum bound^2)
  double z_signed = 0;          // t statistic of the mean signed normalized error
  double z_shrink = 0;          // t statistic of the mean error projected on sign(h) (negative: shrinking)
  double z_limit = INFINITY;    // |z_signed| beyond it is a bias (Student-t quantile for the token count)
  double z_limit_shrink = INFINITY;
};

// The cluster-robust bias test of x (cluster[i]: the token of x[i]): t statistic and the limit its
// magnitude must stay within (the Student-t quantile with clusters - 1 degrees of freedom at the
// tail probability of kDriftZ Gaussian sigmas). z = 0, limit = inf when nothing can be claimed.
// Example: BiasTest b = bias_test(x, token); if (std::fabs(b.z) > b.limit) ...;
struct BiasTest {
  double z = 0;
  double limit = INFINITY;
  int64_t clusters = 0;
};
BiasTest bias_test(const std::vector<double>& x, const std::vector<int64_t>& cluster);

struct DriftReport {
  std::string kernel;
  std::string mode;  // "layers" or "sequence"
  std::vector<DriftPoint> points;
  Verdict verdict;  // invariant "DRIFT"
};

// Decision thresholds: kappa bounds the random-walk excursion, z the bias test (as a tail
// probability: the Student-t limit above matches it). Chosen so a correct kernel's false-alarm
// probability is negligible (Gaussian tail at 6 sigma ~ 2e-9 per test).
inline constexpr double kDriftKappa = 8.0;
inline constexpr double kDriftZ = 6.0;

DriftReport run_layer_drift(const Kernel& kernel, const CaseRecipe& base, int layers);
DriftReport run_sequence_drift(const Kernel& kernel, const CaseRecipe& base, int64_t tokens);

// CSV: one row per point; and a gnuplot-rendered SVG of error against layer/position for every
// report given (kernel and mutant side by side) with the random-walk bound. Returns "" or an error.
void write_drift_csv(const std::vector<DriftReport>& reports, const std::string& path);
std::string plot_drift(const std::vector<DriftReport>& reports, const std::string& csv_path,
                       const std::string& svg_path);

}  // namespace moefuzz
