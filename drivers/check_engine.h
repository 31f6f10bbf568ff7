#pragma once
// The check engine: runs the selected invariants of the registry on one case, turning kernel faults
// (exceptions, crashes of isolated plugins) into findings, and aggregates results per invariant.
// Every driver (CLI check/replay/mutants, RapidCheck suites, fuzz targets) calls this.
//
// Example:
//   moefuzz::CheckOptions o{.invariants = moefuzz::select_invariants("all")};
//   moefuzz::CaseReport rep = moefuzz::check_case(*kernel, c, o);
//   if (rep.failed()) std::cout << moefuzz::format_failure_report(c.recipe, rep.first_failure(), ...);
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/phase_clock.h"
#include "core/verdict.h"
#include "kernels/kernel.h"
#include "properties/invariant.h"

namespace moefuzz {

struct CheckOptions {
  std::vector<const Invariant*> invariants;
  RunOptions run;
  // The contract the oracle and every invariant check against: "" = the kernel's claimed profile;
  // another name answers "would this kernel be correct under that contract?" (moefuzz check --profile).
  std::string profile;
  bool stop_at_first_failure = false;
  // Metamorphic invariants take the base case's oracle evaluation instead of a fresh one where it is
  // the same bit for bit (properties/oracle_reuse.h), and every evaluation takes the rows an earlier
  // one computed (oracles/row_memo.h); off re-evaluates everything (same results).
  bool oracle_reuse = true;
  // One deadline for the case (a campaign's --time): invariants not started by then are marked
  // not evaluated. A kernel call already running ends by its own isolation timeout.
  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt;
};

struct CaseReport {
  std::vector<Verdict> verdicts;  // one per selected invariant, in registry order
  double seconds = 0;
  // Wall seconds each invariant's check took (its kernel runs and oracle evaluations; the first
  // invariant to need the baseline run and the oracle's evaluation of it pays for them).
  std::map<std::string, double> seconds_by_invariant;
  // The same time by kind of work (core/phase_clock.h): kernel runs, oracle evaluations.
  PhaseSeconds phases;
  // The kernel's guarded run on the case when an invariant needed it (most do), for callers that
  // would otherwise run the kernel again (the fuzz targets); empty when no invariant ran it.
  std::optional<LayerResult> baseline;
  bool failed() const;
  const Verdict& first_failure() const;  // precondition: failed(); the kernel's fault when it faulted
  const Verdict* fault() const;          // the kernel's fault on this case, or nullptr
};

// Never throws for kernel misbehaviour. A kernel fault (KernelFault from an isolated plugin: crash,
// hang, bad result, error; or an exception from a built-in kernel) becomes ONE failed verdict, first
// in the report, whose invariant is the fault class (CRASH, HANG, BAD-RESULT, ERROR, OOM,
// DEVICE-ERROR; kernels/isolated_run.h) and whose stage is the call ("layer", "supports" or the
// stage a plugin named); the invariant that was running and every later one are kNotEvaluated.
// Throws std::bad_alloc (moefuzz's own allocation failed: a tool error) and Interrupted.
CaseReport check_case(const Kernel& kernel, const Case& c, const CheckOptions& options);

// kernel.supports(recipe), with a fault of the kernel's supports() (crash, hang, ...) turned into
// `fault` (stage "supports") instead of an exception; the returned reason is then non-empty.
std::string supports_or_fault(const Kernel& kernel, const CaseRecipe& recipe, std::optional<Verdict>& fault);
// The report of a case whose kernel faulted before any invariant ran (in supports()).
CaseReport fault_report(const Verdict& fault, const CheckOptions& options);

// Per-invariant tallies over a campaign.
struct InvariantTally {
  int64_t passed = 0, failed = 0, skipped = 0, vacuous = 0, not_evaluated = 0;
  double max_ratio = 0;  // max error/bound seen on passing cases (tightness)
  double seconds = 0;    // wall seconds in its checks, summed over cases (and workers)
  // Share of the verdicts that checked something (pass, fail, vacuous) which were vacuous: a pass
  // that compared nothing, or whose bound would also accept a trivial corruption. 0 when none.
  double vacuous_share() const {
    const int64_t n = passed + failed + vacuous;
    return n > 0 ? static_cast<double>(vacuous) / static_cast<double>(n) : 0.0;
  }
};
using Tallies = std::map<std::string, InvariantTally>;
void tally(Tallies& t, const CaseReport& r);

}  // namespace moefuzz
