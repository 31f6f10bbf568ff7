#include "drivers/junit_results.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace moefuzz {
namespace {

std::string outcome_word(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "FAIL";
    case Outcome::kSkip:
      return "skip";
    default:
      return "vacuous";
  }
}

}  // namespace

JunitSuite junit_suite(const CampaignSummary& s) {
  JunitSuite suite{.name = fmt::format("moefuzz check {} seed {}", s.kernel, s.seed), .seconds = s.seconds};
  const std::string classname = "moefuzz.check." + s.kernel;
  for (const auto& [code, t] : s.tallies) {
    JunitCase c{.classname = classname, .name = code};
    const std::string counts = fmt::format(
        "{} cases: {} pass, {} fail, {} skip, {} vacuous; max error/bound {:.3g}",
        t.passed + t.failed + t.skipped + t.vacuous, t.passed, t.failed, t.skipped, t.vacuous, t.max_ratio);
    if (t.failed > 0) {
      c.result = JunitResult::kFailure;
      c.message = fmt::format("{} failed on {} case(s)", code, t.failed);
    } else if (t.passed == 0 && t.vacuous == 0) {
      c.result = JunitResult::kSkipped;
      c.message = "never applicable: " + counts;
    }
    c.details = counts;
    suite.cases.push_back(c);
  }
  for (const auto& f : s.findings) {
    suite.cases.push_back({.classname = classname + ".findings",
                           .name = "finding " + f.signature,
                           .result = JunitResult::kFailure,
                           .message = fmt::format("{} ({} case(s))", f.signature, f.occurrences),
                           .details = fmt::format("report: {}\nREPRO: {}", f.report_path, f.repro)});
  }
  return suite;
}

void add_junit_cases(JunitSuite& suite, const std::string& path, const std::string& kernel,
                     const CaseReport& r, const std::string& repro) {
  const std::string classname = "moefuzz.replay." + path;
  for (const auto& v : r.verdicts) {
    JunitCase c{.classname = classname, .name = v.invariant, .seconds = 0};
    c.details =
        fmt::format("{} {} on kernel {}: {}", v.invariant, outcome_word(v.outcome), kernel, v.message);
    if (v.outcome == Outcome::kFail) {
      c.result = JunitResult::kFailure;
      c.message = v.signature() + ": " + v.message;
    } else if (v.outcome == Outcome::kSkip) {
      c.result = JunitResult::kSkipped;
      c.message = v.message;
    }
    suite.cases.push_back(c);
  }
  if (r.failed()) {
    const Verdict& v = r.first_failure();
    suite.cases.push_back({.classname = classname,
                           .name = "finding " + v.signature(),
                           .result = JunitResult::kFailure,
                           .message = v.message,
                           .details = "REPRO: " + repro,
                           .seconds = r.seconds});
  }
  suite.seconds += r.seconds;
}

void add_junit_error(JunitSuite& suite, const std::string& path, const std::string& why) {
  suite.cases.push_back({.classname = "moefuzz.replay." + path,
                         .name = "replay",
                         .result = JunitResult::kError,
                         .message = why});
}

JunitSuite junit_suite(const KillMatrix& m) {
  JunitSuite suite{.name = "moefuzz mutants"};
  for (const auto& row : m.rows) {
    JunitCase c{.classname = "moefuzz.mutants.mutant", .name = row.mutant, .seconds = row.seconds};
    std::string killers;
    for (const auto& [code, cell] : row.kills)
      if (cell.cases >= 0) killers += (killers.empty() ? "" : ", ") + code;
    c.details = fmt::format("declared: {}; killed by: {}", fmt::join(row.expected, ", "),
                            killers.empty() ? "none" : killers);
    if (!row.killed_as_declared()) {
      c.result = JunitResult::kFailure;
      c.message = "survived: no declared invariant killed it within the budget";
    }
    suite.cases.push_back(c);
    suite.seconds += row.seconds;
  }
  for (const auto& code : m.invariants) {
    JunitCase c{.classname = "moefuzz.mutants.invariant", .name = code};
    if (!m.toothless_assessed) {
      c.result = JunitResult::kSkipped;
      c.message = "not assessed: --mutant ran a subset of the mutants";
    } else if (std::find(m.toothless.begin(), m.toothless.end(), code) != m.toothless.end()) {
      c.result = JunitResult::kFailure;
      c.message = "toothless: kills no mutant";
    }
    suite.cases.push_back(c);
  }
  for (const auto& [kernel, failures] : m.correct_failures) {
    JunitCase c{.classname = "moefuzz.mutants.correct_kernel", .name = kernel};
    if (failures > 0) {
      c.result = JunitResult::kFailure;
      c.message = fmt::format("{} failing case(s): a false positive", failures);
      c.details = m.correct_first_failure.count(kernel) ? m.correct_first_failure.at(kernel) : "";
    }
    suite.cases.push_back(c);
  }
  return suite;
}

}  // namespace moefuzz
