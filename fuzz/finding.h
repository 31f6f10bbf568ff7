#pragma once
// How a fuzz target reports a finding (a failed verdict): it prints the failure report
// (core/report.h, with a REPRO line), saves the recipe + report when $MOEFUZZ_FINDINGS_DIR is set
// (drivers/campaign.h save_finding: `# kernel: NAME` header, atomic write), then calls the finding
// handler. The default handler calls abort(), so libFuzzer stores the input as crash-<sha1>; the
// replay runner (fuzz/replay_main.cpp) installs a handler that records the finding and returns, so the
// target returns normally and the runner decides whether a failure was expected.
//
// Example (inside LLVMFuzzerTestOneInput):
//   if (rep.failed()) moefuzz::fuzz::report_finding(recipe, rep.first_failure(), kernel_name);
#include <string>

#include "core/recipe.h"
#include "core/verdict.h"

namespace moefuzz::fuzz {

using FindingHandler = void (*)(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel);

// Replaces the handler; returns the previous one. nullptr restores the default (abort()).
FindingHandler set_finding_handler(FindingHandler h);
// Prints the report to stderr, saves it if $MOEFUZZ_FINDINGS_DIR is set, then calls the handler.
void report_finding(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel);
// When true (the replay runner), report_finding prints nothing itself: the handler decides.
void set_quiet_findings(bool quiet);

}  // namespace moefuzz::fuzz
