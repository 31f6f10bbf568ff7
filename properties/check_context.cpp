#include "properties/invariant.h"

#include "core/profile.h"
#include "kernels/canary.h"

namespace moefuzz {

CheckContext::CheckContext(const Kernel& kernel, const Case& c, RunOptions opts, std::string_view profile)
    : kernel_(kernel),
      case_(c),
      profile_(profile_by_name(profile.empty() ? std::string_view(kernel.profile()) : profile)),
      opts_(opts),
      input_hash_(case_fingerprint(c)) {}

const LayerResult& CheckContext::baseline() {
  if (!baseline_) {
    GuardedRun g = run_guarded(kernel_, case_, opts_);
    if (!g.canary.clean()) baseline_fault_ = g.canary.summary();
    baseline_ = std::move(g.result);
  }
  return *baseline_;
}

const std::string& CheckContext::baseline_fault() {
  baseline();
  return baseline_fault_;
}

LayerResult CheckContext::run(const Case& c, const RunOptions* opts) const {
  return run_guarded(kernel_, c, opts ? *opts : opts_).result;
}

const OracleEvaluation& CheckContext::oracle() {
  if (!oracle_) oracle_ = moefuzz::evaluate(case_, profile_, baseline());
  return *oracle_;
}

OracleEvaluation CheckContext::evaluate(const Case& c, const LayerResult& r) const {
  LayerResult decisions_only = r;
  decisions_only.gemm1.reset();
  decisions_only.activation.reset();
  decisions_only.gemm2.reset();
  return moefuzz::evaluate(c, profile_, decisions_only);
}

const OracleEvaluation& CheckContext::oracle_end_to_end() {
  if (!oracle_end_to_end_) oracle_end_to_end_ = evaluate(case_, baseline());
  return *oracle_end_to_end_;
}

}  // namespace moefuzz
