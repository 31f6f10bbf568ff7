#include "drivers/check_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <new>
#include <stdexcept>

#include "core/errors.h"
#include "core/interrupt.h"
#include "kernels/isolated_run.h"

namespace moefuzz {
namespace {

// The stage a fault message names ("route returned an error", "route wrote topk_ids..."), else
// `fallback` (the whole call: "layer" or "supports"). A plugin runs all its stages in one isolated
// call, so a crash or hang carries no stage; a reported error or a bad id does.
std::string stage_named_in(const std::string& message, const std::string& fallback) {
  for (const char* stage : {"route", "quantize", "gemm1", "activation", "gemm2", "combine"}) {
    const std::string s(stage);
    if (message.find(": " + s + " returned an error") != std::string::npos ||
        message.find(": " + s + " wrote ") != std::string::npos ||
        message.find("bad-result: " + s + " ") != std::string::npos)
      return s;
  }
  return fallback;
}

void mark_rest_not_evaluated(CaseReport& rep, const CheckOptions& options, size_t from,
                             const std::string& why) {
  for (size_t i = from; i < options.invariants.size(); ++i)
    rep.verdicts.push_back(Verdict::not_evaluated(options.invariants[i]->code, why));
}

Verdict fault_verdict(const KernelFault& f, const std::string& call) {
  Verdict v =
      Verdict::fail(std::string(fault_report_class(f.kind())), stage_named_in(f.what(), call), f.what());
  v.kernel_fault = true;
  return v;
}

Verdict error_verdict(const std::string& message, const std::string& call) {
  Verdict v = Verdict::fail(std::string(fault_report_class(FaultKind::kPluginError)), call, message);
  v.kernel_fault = true;
  return v;
}

}  // namespace

bool CaseReport::failed() const {
  for (const auto& v : verdicts)
    if (v.failed()) return true;
  return false;
}

const Verdict& CaseReport::first_failure() const {
  for (const auto& v : verdicts)
    if (v.failed()) return v;
  throw std::logic_error("first_failure on a passing report");
}

const Verdict* CaseReport::fault() const {
  for (const auto& v : verdicts)
    if (v.kernel_fault) return &v;
  return nullptr;
}

CaseReport fault_report(const Verdict& fault, const CheckOptions& options) {
  CaseReport rep;
  rep.verdicts.push_back(fault);
  mark_rest_not_evaluated(rep, options, 0, "not evaluated: the kernel faulted (" + fault.signature() + ")");
  return rep;
}

std::string supports_or_fault(const Kernel& kernel, const CaseRecipe& recipe, std::optional<Verdict>& fault) {
  fault.reset();
  try {
    return kernel.supports(recipe);
  } catch (const KernelFault& f) {
    fault = fault_verdict(f, "supports");
  } catch (const InputError& e) {
    throw;  // bad outside input (a plugin this build cannot run): exit 2
  } catch (const std::bad_alloc&) {
    throw;  // moefuzz's own allocation failed: a tool error, never the kernel's finding
  } catch (const ToolError&) {
    throw;  // moefuzz's own machinery failed (the oracle's GPU dots): never the kernel's finding
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    fault = error_verdict(std::string("supports() raised: ") + e.what(), "supports");
  }
  return "(the kernel faulted in supports)";
}

CaseReport check_case(const Kernel& kernel, const Case& c, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const PhaseSeconds phases_at_start = thread_phase_seconds();
  CaseReport rep;
  // CANARY alone reads the baseline run's input check (two hashes of the whole case).
  const bool canary = std::any_of(options.invariants.begin(), options.invariants.end(),
                                  [](const Invariant* inv) { return inv->code == "CANARY"; });
  static std::atomic<uint64_t> checks{0};
  RunOptions run = options.run;
  run.check_id = ++checks;
  CheckContext ctx(kernel, c, run, options.profile, canary);
  ctx.set_oracle_reuse(options.oracle_reuse);
  ctx.set_row_memo(std::any_of(options.invariants.begin(), options.invariants.end(),
                               [](const Invariant* inv) { return inv->evaluates_other_runs; }));
  for (size_t i = 0; i < options.invariants.size(); ++i) {
    const Invariant* inv = options.invariants[i];
    if (interrupt_requested()) throw Interrupted(interrupt_signal());
    if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
      // The run's --time ran out inside this case: what was checked stands, the rest is not claimed.
      mark_rest_not_evaluated(rep, options, i, "not evaluated: the run's time ran out");
      break;
    }
    const std::string why_not = inv->applies(kernel, c.recipe);
    if (!why_not.empty()) {
      rep.verdicts.push_back(Verdict::skip(inv->code, why_not));
      continue;
    }
    std::optional<Verdict> fault;
    Verdict v;
    // Also when the check throws (a fault is still time spent on this invariant).
    struct Timer {
      double& into;
      std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
      ~Timer() { into += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
    } timer{rep.seconds_by_invariant[inv->code]};
    try {
      v = inv->check(ctx);
    } catch (const KernelFault& f) {
      fault = fault_verdict(f, "layer");
    } catch (const Interrupted&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // moefuzz's own allocation (oracle, framework): a tool error, never the kernel's finding
    } catch (const ToolError&) {
      throw;  // moefuzz's own machinery (the oracle's GPU dots): never the kernel's finding
    } catch (const InputError& e) {
      // The kernel declared this recipe supported and then rejected it: a kernel defect, reported as
      // a finding rather than ending the campaign (bad outside input is caught before any run).
      fault = error_verdict(std::string("the kernel rejected a recipe it declared supported: ") + e.what(),
                            "layer");
    } catch (const std::exception& e) {
      fault = error_verdict(std::string("the kernel raised: ") + e.what(), "layer");
    }
    if (fault) {
      // One finding for the case, first in the report; this and every later invariant is not
      // evaluated (a hung kernel would cost a timeout per invariant, and each would re-report it).
      rep.verdicts.insert(rep.verdicts.begin(), *fault);
      mark_rest_not_evaluated(rep, options, i,
                              "not evaluated: the kernel faulted (" + fault->signature() + ")");
      break;
    }
    // A failure of another rule of the registry found while this invariant ran the kernel (a run's
    // own decision inadmissible: ORACLE/route "inadmissible expert set", STRUCT, ...) keeps that
    // rule's name, so a finding is named for what broke; anything else is this invariant's verdict.
    if (!(v.failed() && v.invariant != inv->code && is_invariant_code(v.invariant))) v.invariant = inv->code;
    // A pass that compared nothing proves nothing: vacuous, never counted as a pass.
    if (v.outcome == Outcome::kPass && v.compared == 0) {
      v.outcome = Outcome::kVacuous;
      v.message = "vacuous: compared nothing" + (v.message.empty() ? std::string() : " (" + v.message + ")");
    }
    rep.verdicts.push_back(v);
    if (v.failed() && options.stop_at_first_failure) break;
  }
  rep.baseline = ctx.take_baseline();
  rep.phases = thread_phase_seconds() - phases_at_start;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

void tally(Tallies& t, const CaseReport& r) {
  for (const auto& [code, seconds] : r.seconds_by_invariant) t[code].seconds += seconds;
  for (const auto& v : r.verdicts) {
    InvariantTally& x = t[v.invariant];
    switch (v.outcome) {
      case Outcome::kPass:
        ++x.passed;
        if (std::isfinite(v.max_ratio)) x.max_ratio = std::max(x.max_ratio, v.max_ratio);
        break;
      case Outcome::kFail:
        ++x.failed;
        break;
      case Outcome::kSkip:
        ++x.skipped;
        break;
      case Outcome::kVacuous:
        ++x.vacuous;
        break;
      case Outcome::kNotEvaluated:
        ++x.not_evaluated;
        break;
    }
  }
}

}  // namespace moefuzz
