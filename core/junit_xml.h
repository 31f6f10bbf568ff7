#pragma once
// JUnit XML, the report format CI servers read (Jenkins, GitLab, GitHub Actions test reporters): one
// <testsuites> document with <testsuite> elements holding <testcase>s, each passed, or with one
// <failure>, <error> or <skipped> child. Counts (tests, failures, errors, skipped) are computed from
// the cases; text is escaped, and characters XML 1.0 forbids are replaced, so the file always parses.
//
// Example:
//   JunitSuite s{.name = "moefuzz check cpu"};
//   s.cases.push_back({.classname = "moefuzz.check.cpu", .name = "ORACLE"});
//   s.cases.push_back({.classname = "moefuzz.check.cpu", .name = "finding SCALE1/output",
//                      .result = JunitResult::kFailure, .message = "rsf applied twice", .details = "REPRO:
//                      ..."});
//   write_junit_file("report.xml", {s});  // temporary file + rename: never half a report
#include <string>
#include <vector>

namespace moefuzz {

enum class JunitResult { kPass, kFailure, kError, kSkipped };

struct JunitCase {
  std::string classname;  // dotted group, e.g. "moefuzz.check.cpu"
  std::string name;
  JunitResult result = JunitResult::kPass;
  std::string message;  // one line (the failure's message attribute)
  std::string details;  // the element's text: report, REPRO line
  double seconds = 0;
};

struct JunitSuite {
  std::string name;
  std::vector<JunitCase> cases;
  double seconds = 0;
};

std::string to_junit_xml(const std::vector<JunitSuite>& suites);
// Writes to_junit_xml atomically (core/atomic_file.h); throws InputError when the file cannot be written.
void write_junit_file(const std::string& path, const std::vector<JunitSuite>& suites);

}  // namespace moefuzz
