#pragma once
// The results of check, replay and mutants as JUnit test cases (core/junit_xml.h): one test case per
// invariant and one per finding, so a CI server lists which invariant failed and links the REPRO.
//
// Example:
//   const CampaignSummary s = run_campaign(*kernel, o, std::cerr);
//   write_junit_file("check.xml", {junit_suite(s)});
#include <string>

#include "core/junit_xml.h"
#include "drivers/campaign.h"
#include "drivers/check_engine.h"
#include "drivers/kill_matrix.h"

namespace moefuzz {

// check: one case per invariant (failed when any case failed it, skipped when it never ran), one
// failed case per finding signature with its REPRO line.
JunitSuite junit_suite(const CampaignSummary& s);

// replay of one file: one case per invariant verdict, and one failed "finding" case when it fails.
void add_junit_cases(JunitSuite& suite, const std::string& path, const std::string& kernel,
                     const CaseReport& r, const std::string& repro);
// replay of a file that could not be replayed (bad input): one error case naming why.
void add_junit_error(JunitSuite& suite, const std::string& path, const std::string& why);

// mutants: one case per mutant (killed by a declared invariant), per invariant (kills some mutant,
// when assessed) and per correct kernel (no false positive).
JunitSuite junit_suite(const KillMatrix& m);

}  // namespace moefuzz
