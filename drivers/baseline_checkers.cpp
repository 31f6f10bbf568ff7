#include "drivers/baseline_checkers.h"

#include <cmath>

#include "core/case.h"
#include "core/profile.h"
#include "kernels/canary.h"
#include "kernels/registry.h"
#include "oracles/oracle.h"

namespace moefuzz {
namespace {

// torch.allclose: |a - b| <= atol + rtol * |b| everywhere; NaN never close.
bool allclose(const std::vector<float>& a, const std::vector<double>& b, double atol, double rtol) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]))) return false;
  return true;
}

// TensorRT-LLM check_accuracy: the fraction of close elements must reach `percent`.
bool check_accuracy(const std::vector<float>& a, const std::vector<double>& b, double atol, double rtol,
                    double percent) {
  size_t close = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i])) ++close;
  return static_cast<double>(close) >= percent * static_cast<double>(a.size());
}

// A vLLM-like grid reduced to CPU sizes: (tokens, hidden, inter, experts, top_k); tame values.
struct GridShape {
  int64_t t, h, i, e, k;
  RoutingMode mode;
};
const GridShape kGrid[] = {
    {2, 128, 128, 8, 2, RoutingMode::kSoftmax},
    {33, 256, 128, 16, 6, RoutingMode::kSoftmax},
    {64, 128, 256, 40, 8, RoutingMode::kSigmoidGrouped},
};

}  // namespace

BaselineResult run_baselines(const Kernel& kernel, uint64_t seed) {
  BaselineResult res;
  const auto reference_kernel = make_kernel("cpu");
  const Profile& profile = profile_by_name(reference_kernel->profile());
  for (const GridShape& g : kGrid) {
    for (int n = 0; n < 10; ++n) {
      CaseRecipe r;
      r.seed = seed * 1000 + static_cast<uint64_t>(n);
      r.profile = kernel.profile();
      r.shape = Shape{.tokens = g.t,
                      .hidden = g.h,
                      .inter = g.i,
                      .experts = g.e,
                      .top_k = g.k,
                      .n_group = g.mode == RoutingMode::kSigmoidGrouped ? 8 : 1,
                      .topk_group = g.mode == RoutingMode::kSigmoidGrouped ? 4 : 1};
      r.routing.mode = g.mode;
      r.routing.routed_scaling_factor = g.mode == RoutingMode::kSigmoidGrouped ? 2.5 : 1.0;
      r.values = ValueProfile{};  // tame: normal logits, small bias, calibrated scales
      if (!kernel.supports(r).empty()) continue;
      const Case c = materialize(r);
      const LayerResult ref_run = run_guarded(*reference_kernel, c, RunOptions{}).result;
      const OracleEvaluation ev = evaluate(c, profile, ref_run);
      const StageExpectation* out = ev.stage("output");
      LayerResult got;
      try {
        got = run_guarded(kernel, c, RunOptions{}).result;
      } catch (const std::exception&) {
        res.allclose_caught = res.check_accuracy_caught = true;  // a crash is caught by any test
        continue;
      }
      ++res.cases;
      if (!allclose(got.output, out->expected, 1e-2, 1e-2)) res.allclose_caught = true;
      if (!check_accuracy(got.output, out->expected, 0.1, 0.85, 0.925)) res.check_accuracy_caught = true;
    }
  }
  return res;
}

}  // namespace moefuzz
