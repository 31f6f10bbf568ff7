#include "properties/invariant.h"

#include "core/profile.h"
#include "kernels/canary.h"
#include "properties/oracle_reuse.h"

namespace moefuzz {

CheckContext::CheckContext(const Kernel& kernel, const Case& c, RunOptions opts, std::string_view profile,
                           bool check_inputs)
    : kernel_(kernel),
      case_(c),
      profile_(profile_by_name(profile.empty() ? std::string_view(kernel.profile()) : profile)),
      opts_(opts),
      check_inputs_(check_inputs),
      // Before the first run: the experts' remembered content hashes are their bytes' (the first
      // run's resident copies and the oracle's row memo take the same hashes).
      input_hash_(check_inputs ? case_fingerprint(c, ExpertBytes::kRemembered) : 0),
      memo_(profile_) {}

const LayerResult& CheckContext::baseline() {
  if (!baseline_) {
    GuardedRun g = check_inputs_ ? run_guarded(kernel_, case_, opts_, input_hash_)
                                 : run_guarded(kernel_, case_, opts_, std::nullopt, /*check_input=*/false);
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
  // Only the result is kept: the input check's two hashes of the whole case would be thrown away
  // (CANARY checks the inputs on the baseline run and on its own second run).
  return run_guarded(kernel_, c, opts ? *opts : opts_, std::nullopt, /*check_input=*/false).result;
}

LayerResult CheckContext::run_for_comparison(const Case& c) const {
  RunOptions opts = opts_;
  opts.intermediates = false;
  return run(c, &opts);
}

const OracleEvaluation& CheckContext::oracle() { return *oracle_shared(); }

std::shared_ptr<const OracleEvaluation> CheckContext::oracle_shared() {
  if (!oracle_)
    oracle_ =
        std::make_shared<const OracleEvaluation>(moefuzz::evaluate(case_, profile_, baseline(), memo()));
  return oracle_;
}

OracleEvaluation CheckContext::evaluate_fresh(const Case& c, const LayerResult& r, OracleStages stages) {
  LayerResult decisions_only = r;
  decisions_only.gemm1.reset();
  decisions_only.activation.reset();
  decisions_only.gemm2.reset();
  return moefuzz::evaluate(c, profile_, decisions_only, memo(), stages);
}

std::shared_ptr<const OracleEvaluation> CheckContext::evaluate(const Case& c, const LayerResult& r) {
  // The base case itself (a transform that changed nothing: SCALE1 at the recipe's own factor,
  // WEIGHT1 without shared experts to drop) with the baseline's decisions: the same inputs.
  // Content by bits (operator== on floats would take -0 for +0).
  const bool base_case = &c == &case_ || same_case(c, case_);
  if (reuse_ && baseline_ && same_decisions(r, *baseline_) && base_case) return end_to_end_shared();
  return std::make_shared<const OracleEvaluation>(evaluate_fresh(c, r, OracleStages::kRouteAndOutput));
}

const OracleEvaluation& CheckContext::oracle_end_to_end() { return *end_to_end_shared(); }

std::shared_ptr<const OracleEvaluation> CheckContext::end_to_end_shared() {
  if (reuse_ && full_evaluation_is_decisions_only(oracle(), baseline())) return oracle_shared();
  if (!oracle_end_to_end_)
    oracle_end_to_end_ =
        std::make_shared<const OracleEvaluation>(evaluate_fresh(case_, baseline(), OracleStages::kAll));
  return oracle_end_to_end_;
}

std::shared_ptr<const OracleEvaluation> CheckContext::evaluate_on_base(const LayerResult& r) {
  if (reuse_ && same_conditioning(r, baseline())) return oracle_shared();
  return std::make_shared<const OracleEvaluation>(moefuzz::evaluate(case_, profile_, r, memo()));
}

}  // namespace moefuzz
