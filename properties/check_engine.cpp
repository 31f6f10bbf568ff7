#include "properties/check_engine.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/errors.h"

namespace moefuzz {

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

CaseReport check_case(const Kernel& kernel, const Case& c, const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CaseReport rep;
  CheckContext ctx(kernel, c, options.run, options.profile);
  for (const Invariant* inv : options.invariants) {
    const std::string why_not = inv->applies(kernel, c.recipe);
    if (!why_not.empty()) {
      rep.verdicts.push_back(Verdict::skip(inv->code, why_not));
      continue;
    }
    Verdict v;
    try {
      v = inv->check(ctx);
    } catch (const InputError& e) {
      // The kernel declared this recipe supported and then rejected it: a kernel defect, reported as
      // a finding rather than ending the campaign (bad outside input is caught before any run).
      v = Verdict::fail(inv->code, "kernel",
                        std::string("the kernel rejected a recipe it declared supported: ") + e.what());
    } catch (const std::exception& e) {
      v = Verdict::fail(inv->code, "kernel", std::string("the kernel raised: ") + e.what());
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
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

void tally(Tallies& t, const CaseReport& r) {
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
    }
  }
}

}  // namespace moefuzz
