#pragma once
// Invariant: a named check over (kernel, case, oracle) returning a Verdict. One registry implements
// the whole catalogue of BUGZOO.md; RapidCheck properties, fuzz targets and the CLI all call it, so no
// invariant is ever written twice.
//
// An invariant is differential (kernel vs oracle within the derived bound) or metamorphic (kernel vs
// kernel on a transformed case: scale linearity, permutation, batch, padding, global scale,
// duplicate ids, determinism). Each declares when it applies; the check engine skips it elsewhere.
//
// Example:
//   const moefuzz::Invariant& inv = moefuzz::invariant_by_code("SCALE1");
//   moefuzz::CheckContext ctx(kernel, c);
//   moefuzz::Verdict v = inv.check(ctx);
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/verdict.h"
#include "kernels/kernel.h"
#include "oracles/oracle.h"
#include "oracles/row_memo.h"

namespace moefuzz {

// Everything one invariant needs; the baseline run is computed once and shared by all invariants.
class CheckContext {
 public:
  // profile: the contract in force, "" = the kernel's claimed one (throws InputError on an unknown name).
  // check_inputs: hash the case before and after the baseline run (CANARY's input check, two hashes
  // of the whole case); off when no selected invariant reads it.
  CheckContext(const Kernel& kernel, const Case& c, RunOptions opts = {}, std::string_view profile = "",
               bool check_inputs = true);
  const Kernel& kernel() const { return kernel_; }
  const Case& base_case() const { return case_; }
  // The profile in force: the oracle and every invariant read the contract from here only.
  const Profile& profile() const { return profile_; }
  const RunOptions& options() const { return opts_; }
  // case_fingerprint (kernels/canary.h: word-wise, cheaper than the byte-wise content_hash) of the input case
  // when the context was made (before any kernel ran). Precondition: made with check_inputs.
  uint64_t input_hash_at_start() const { return input_hash_; }
  // The kernel's run on the base case (guarded: poisoned outputs, canary bands), computed once.
  const LayerResult& baseline();
  // A run of the kernel on another (transformed) case with the same options, guarded (poisoned output,
  // guard bands); the input check is the baseline run's and CANARY's.
  LayerResult run(const Case& c, const RunOptions* opts = nullptr) const;
  // run() for a caller that reads only the output, the routing and the quantized codes (a metamorphic
  // comparison: its evaluations are conditioned on those decisions alone): RunOptions::intermediates
  // off, so a device kernel need not download GEMM1, activation and GEMM2.
  LayerResult run_for_comparison(const Case& c) const;
  // Faults in the baseline run (canary violations, unwritten outputs, plugin crash), "" if none.
  const std::string& baseline_fault();
  // The oracle's evaluation of the base case conditioned on every decision and intermediate the
  // baseline run exposes (each stage checked on the kernel's own previous stage), computed once.
  const OracleEvaluation& oracle();
  // End-to-end evaluation for metamorphic checks: conditioned on the run's discrete decisions
  // (routing, quantized codes) only, so the output bound covers every rounding from the inputs on.
  // Taken from oracle_end_to_end() when c is the base case (same content) and r's decisions are the
  // baseline's, bit for bit: the same inputs (properties/oracle_reuse.h). Holds the route and output
  // stages (a fresh evaluation keeps no others: OracleStages::kRouteAndOutput).
  // Shared, not copied: a reused evaluation is the context's own (at M ~0.1 GB with its stages).
  std::shared_ptr<const OracleEvaluation> evaluate(const Case& c, const LayerResult& r);
  // The same as evaluate(base_case(), baseline()), taken from oracle() when that is the same
  // evaluation (properties/oracle_reuse.h).
  const OracleEvaluation& oracle_end_to_end();
  // evaluate(base_case(), profile(), r) for another run `r` on the base case (TACTIC): oracle() when
  // r conditions the oracle as the baseline does, bit for bit; else a fresh evaluation.
  std::shared_ptr<const OracleEvaluation> evaluate_on_base(const LayerResult& r);
  // Off: every evaluation above is made afresh, row by row too (tests and benchmarks compare; the
  // results are the same).
  void set_oracle_reuse(bool on) { reuse_ = on; }
  // Off: evaluations keep no rows for later ones (same results; for checks that evaluate nothing but
  // the baseline, Invariant::evaluates_other_runs).
  void set_row_memo(bool on) { row_memo_on_ = on; }
  // The rows every evaluation of this context shares (oracles/row_memo.h): its hit and miss counts.
  const OracleRowMemo& row_memo() const { return memo_; }
  // Hands the baseline run over (when an invariant computed it) so a caller that needs the run as
  // well - a fuzz target - does not run the kernel again. The context must not be used afterwards.
  std::optional<LayerResult> take_baseline() { return std::move(baseline_); }

 private:
  const Kernel& kernel_;
  const Case& case_;
  const Profile& profile_;
  RunOptions opts_;
  bool check_inputs_ = true;
  uint64_t input_hash_ = 0;
  std::optional<LayerResult> baseline_;
  std::string baseline_fault_;
  std::shared_ptr<const OracleEvaluation> oracle_;
  std::shared_ptr<const OracleEvaluation> oracle_end_to_end_;
  bool reuse_ = true, row_memo_on_ = true;
  OracleRowMemo memo_;
  OracleRowMemo* memo() { return reuse_ && row_memo_on_ ? &memo_ : nullptr; }
  OracleEvaluation evaluate_fresh(const Case& c, const LayerResult& r, OracleStages stages);
  std::shared_ptr<const OracleEvaluation> oracle_shared();
  std::shared_ptr<const OracleEvaluation> end_to_end_shared();
};

struct Invariant {
  std::string code;         // "ORACLE", "SCALE1", ...
  std::string description;  // one line, from BUGZOO.md's catalogue
  // "" when the invariant applies to this kernel and recipe, else why not (shown as a skip).
  std::function<std::string(const Kernel&, const CaseRecipe&)> applies;
  std::function<Verdict(CheckContext&)> check;
  bool expensive = false;  // runs only when asked for (e.g. OVF large tier, DRIFT)
  // Whether its check evaluates the oracle beyond the baseline's own evaluation (ctx.evaluate,
  // evaluate_on_base, oracle_end_to_end: transformed cases, other runs). The check engine keeps the
  // oracle's rows for reuse (oracles/row_memo.h) only when a selected invariant does: for the others
  // storing them is pure cost (at M ~0.1 GB copied per case). tests/properties/oracle_reuse_test.cpp
  // holds every invariant that says false to it.
  bool evaluates_other_runs = true;
};

const std::vector<Invariant>& invariant_registry();
// Throws InputError listing the known codes.
const Invariant& invariant_by_code(std::string_view code);
// Whether `code` names an invariant of the registry.
bool is_invariant_code(std::string_view code);
// Parses "a,b,c" (or "all") into invariants; throws InputError on unknown codes.
std::vector<const Invariant*> select_invariants(std::string_view list);

}  // namespace moefuzz
