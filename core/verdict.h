#pragma once
// Verdict / Witness: the result of one check. A failure carries what a kernel engineer needs:
// invariant, stage, location, got / expected / bound and error/bound ratio, plus the worst elements.
// The failure signature (invariant, stage) is what the shrinker preserves.
//
// Example:
//   moefuzz::Verdict v = moefuzz::Verdict::fail("ORACLE", "combine", {.token = 3, .element = 17},
//                                                 got, expected, bound);
//   if (!v.passed) std::cout << moefuzz::format_failure_report(recipe, v);  // core/report.h
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace moefuzz {

struct Location {
  int64_t token = -1;
  int64_t slot = -1;
  int64_t expert = -1;
  int64_t element = -1;  // column within the stage's row
};

struct ElementError {
  Location where;
  double got = 0;
  double expected = 0;
  double bound = 0;
  double ratio() const {
    return bound > 0 ? std::fabs(got - expected) / bound : (got == expected ? 0 : INFINITY);
  }
};

// kNotEvaluated: the invariant could not run because the kernel faulted on the case (crash, hang,
// error, ...): the fault is the case's one finding, and the invariant is neither passed nor failed.
enum class Outcome : uint8_t { kPass, kFail, kSkip, kVacuous, kNotEvaluated };

struct Verdict {
  Outcome outcome = Outcome::kPass;
  std::string invariant;                     // e.g. "ORACLE", "SCALE1"
  std::string stage;                         // e.g. "route", "gemm1", "combine", "layer"
  std::string message;                       // one line: what went wrong, named pattern if one matched
  ElementError worst;                        // the element with the largest error/bound
  std::vector<ElementError> worst_elements;  // up to 30, NaN first, then by ratio
  double max_ratio = 0;  // max error/bound over all compared elements (reported on pass too)
  int64_t compared = 0;  // number of elements compared (0 on a pass means vacuous)
  // The kernel faulted (invariant = its class: CRASH, HANG, ERROR, ...): there was no output, so
  // location, got, expected and bound mean nothing and reports leave them out.
  bool kernel_fault = false;

  // A vacuous verdict (the bound would also accept a trivial corruption) is neither a pass nor a
  // failure: it is counted apart in summaries.
  bool passed() const { return outcome == Outcome::kPass || outcome == Outcome::kSkip; }
  bool failed() const { return outcome == Outcome::kFail; }
  static Verdict pass(std::string invariant, std::string stage) {
    Verdict v;
    v.invariant = std::move(invariant);
    v.stage = std::move(stage);
    return v;
  }
  static Verdict skip(std::string invariant, std::string reason) {
    Verdict v;
    v.outcome = Outcome::kSkip;
    v.invariant = std::move(invariant);
    v.message = std::move(reason);
    return v;
  }
  static Verdict not_evaluated(std::string invariant, std::string reason) {
    Verdict v;
    v.outcome = Outcome::kNotEvaluated;
    v.invariant = std::move(invariant);
    v.message = std::move(reason);
    return v;
  }
  static Verdict fail(std::string invariant, std::string stage, std::string message,
                      ElementError worst = {}) {
    Verdict v;
    v.outcome = Outcome::kFail;
    v.invariant = std::move(invariant);
    v.stage = std::move(stage);
    v.message = std::move(message);
    v.worst = worst;
    v.max_ratio = worst.ratio();
    return v;
  }
  std::string signature() const { return invariant + "/" + stage; }
};

}  // namespace moefuzz
