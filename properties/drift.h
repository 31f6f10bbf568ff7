#pragma once
// DRIFT: long-horizon error accumulation that single-call tolerances cannot see (BUGZOO Z13: a bf16
// conversion where fp32 was meant passes every single-call check and drifts over many layers).
//
// (a) Many layers: a residual stream h <- h + MoE_l(rmsnorm(h)) over L layers with per-layer weights.
//     Each layer's oracle is evaluated on the kernel's own input (conditioning, as for decisions:
//     FP4 quantization is discontinuous, so unconditioned trajectories of two CORRECT kernels part
//     ways after a single code flip). The kernel's accumulated error D_L = sum_l (out_l - oracle_l)
//     must behave like an unbiased random walk: |D_L| within kappa * sqrt(sum_l bound_l^2), and no
//     systematic bias: each layer's error over its bound, signed and projected on the sign of the
//     oracle's value (negative: shrinking toward zero), has a pooled mean that is not both
//     significant and large.
//
// The bias test's independent samples are LAYERS. Within one layer the errors of all tokens share
// that layer's weights, per-expert scales and routing-weight roundings, so a correct kernel's errors
// are correlated across tokens (a token-level t statistic failed correct kernels on 5 of 7,155
// large-tier cases, t = -8.4 against a limit of 8.1 and t = -1.1e7 with almost no spread; they are
// regression cases in tests/properties/false_positives_test.cpp); each layer draws fresh weights, so layers
// are independent draws of every such source. The test is a cluster-robust t statistic with layers as
// clusters (each layer's summed deviation, small-sample factor g/(g-1)), g - 1 degrees of freedom,
// compared with the Student-t quantile of the same tail probability as kDriftZ Gaussian sigmas.
// Significance alone is not a bug: a correct kernel's roundings need not be unbiased to the last
// bit (cpu-flashinfer's bf16 atomic combine shrinks by ~0.15% of its bound per element, consistently
// over layers, so enough layers make that significant). A bias fails only when it is also large:
// its pooled mean exceeds kDriftMinBias of the bound, the bias that alone outgrows the random-walk
// limit kappa within 2^12 layers (kappa / sqrt(2^12), 40x the depth of the deepest production MoE
// models: DeepSeek-V3 61 layers, Qwen3-235B 94). Elements the kernel flushed to zero where
// the bound admits zero are not samples (an admitted underflow, not a rounding direction). At an
// exact bf16 tie (the oracle admits both neighbours) the bias is measured from the even neighbour,
// what round-to-nearest-even gives: structured values can place most even neighbours toward zero,
// and a correct kernel is no more biased than correct rounding (drift.cpp, bias_reference).
// With fewer than 2 layers, or no spread between layers beyond the rounding of the normalization
// itself, no bias is claimed.
// The excursion test cannot fire before kappa^2 = 64 layers when every single call passes (|D| <=
// sum bound_l <= sqrt(L) * sqrt(sum bound_l^2)): it is for `moefuzz drift --layers N` with N > 64.
// (b) Long sequences: T up to >= 32k tokens in one call; the error/bound per position must not grow
//     with position (first vs last quarter). One layer has no independent replication of its shared
//     roundings, so this mode makes no bias claim.
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
  // Bias over the layers so far (layers mode): pooled mean of error/bound, signed and projected on
  // the sign of the oracle's value (negative: shrinking), and their t statistics.
  double bias_signed = 0;
  double bias_shrink = 0;
  double z_signed = 0;
  double z_shrink = 0;
  double z_limit = INFINITY;  // |z| beyond it is significant (Student-t quantile for the layer count)
};

// The cluster-robust bias test of x (cluster[i]: the independent draw x[i] belongs to, a layer):
// pooled mean, t statistic and the limit its magnitude must stay within (the Student-t quantile
// with clusters - 1 degrees of freedom at the tail probability of kDriftZ Gaussian sigmas).
// z = 0, limit = inf when nothing can be claimed.
// Example: BiasTest b = bias_test(x, layer);
//          if (std::fabs(b.z) > b.limit && std::fabs(b.mean) > kDriftMinBias) ...;
struct BiasTest {
  double mean = 0;
  double z = 0;
  double limit = INFINITY;
  int64_t clusters = 0;
};
BiasTest bias_test(const std::vector<double>& x, const std::vector<int64_t>& cluster);

// The same test from each cluster's running sums (what a layer contributes), so that a runner can
// judge after every layer without keeping every sample. Clusters with no samples are left out.
struct ClusterSum {
  double sum = 0;
  double count = 0;
  double scale = 0;  // max |x|: the zero-spread rule's scale
  void add(double x);
};
BiasTest bias_test(const std::vector<ClusterSum>& clusters);

struct DriftReport {
  std::string kernel;
  std::string mode;  // "layers" or "sequence"
  std::vector<DriftPoint> points;
  Verdict verdict;  // invariant "DRIFT"
};

// Decision thresholds: kappa bounds the random-walk excursion, z the bias test's significance (as a
// tail probability: the Student-t limit above matches it; Gaussian tail at 6 sigma ~ 2e-9 per test),
// kDriftMinBias its size in units of the per-element bound (kappa / sqrt(2^12): see above).
inline constexpr double kDriftKappa = 8.0;
inline constexpr double kDriftZ = 6.0;
inline constexpr double kDriftMinBias = kDriftKappa / 64.0;

DriftReport run_layer_drift(const Kernel& kernel, const CaseRecipe& base, int layers);
DriftReport run_sequence_drift(const Kernel& kernel, const CaseRecipe& base, int64_t tokens);

// CSV: one row per point; and a gnuplot-rendered SVG of error against layer/position for every
// report given (kernel and mutant side by side) with the random-walk bound. Returns "" or an error.
void write_drift_csv(const std::vector<DriftReport>& reports, const std::string& path);
std::string plot_drift(const std::vector<DriftReport>& reports, const std::string& csv_path,
                       const std::string& svg_path);

}  // namespace moefuzz
