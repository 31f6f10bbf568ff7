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
//     have |z| below the threshold.
// (b) Long sequences: T up to >= 32k tokens in one call; the error/bound per position must not grow
//     with position (first vs last quarter).
//
// Example:
//   moefuzz::DriftReport r = moefuzz::run_layer_drift(*kernel, recipe, /*layers=*/64);
//   if (r.verdict.failed()) ...;  write_drift_csv(r, "out/drift.csv");
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
  double z_signed = 0;          // z statistic of the mean signed normalized error
  double z_shrink = 0;          // z statistic of the mean error projected on sign(h) (negative: shrinking)
};

struct DriftReport {
  std::string kernel;
  std::string mode;  // "layers" or "sequence"
  std::vector<DriftPoint> points;
  Verdict verdict;  // invariant "DRIFT"
};

// Decision thresholds: kappa bounds the random-walk excursion, z the bias test. Chosen so a correct
// kernel's false-alarm probability is negligible (Gaussian tail at 6 sigma ~ 2e-9 per test).
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
