#include "core/junit_xml.h"

#include <fmt/format.h>

#include "core/atomic_file.h"

namespace moefuzz {
namespace {

// XML 1.0 allows tab, LF, CR and code points from 0x20; any other control byte (a kernel's message
// may carry one) becomes '?'. Bytes >= 0x80 pass through (UTF-8).
std::string escape(const std::string& text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += attribute ? "&quot;" : "\"";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\r':
        out += attribute ? "&#13;" : "\r";
        break;
      default:
        out += c < 0x20 || c == 0x7F ? '?' : ch;
    }
  }
  return out;
}

const char* element_of(JunitResult r) {
  switch (r) {
    case JunitResult::kFailure:
      return "failure";
    case JunitResult::kError:
      return "error";
    case JunitResult::kSkipped:
      return "skipped";
    case JunitResult::kPass:
      break;
  }
  return "";
}

}  // namespace

std::string to_junit_xml(const std::vector<JunitSuite>& suites) {
  int total = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  std::string body;
  for (const auto& s : suites) {
    int f = 0, e = 0, k = 0;
    for (const auto& c : s.cases) {
      f += c.result == JunitResult::kFailure;
      e += c.result == JunitResult::kError;
      k += c.result == JunitResult::kSkipped;
    }
    body += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        escape(s.name, true), s.cases.size(), f, e, k, s.seconds);
    for (const auto& c : s.cases) {
      body += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                          escape(c.classname, true), escape(c.name, true), c.seconds);
      if (c.result == JunitResult::kPass) {
        body += "/>\n";
        continue;
      }
      body += fmt::format(">\n      <{} message=\"{}\"", element_of(c.result), escape(c.message, true));
      if (c.result != JunitResult::kSkipped) body += fmt::format(" type=\"{}\"", element_of(c.result));
      body += c.details.empty() ? "/>\n"
                                : fmt::format(">{}</{}>\n", escape(c.details, false), element_of(c.result));
      body += "    </testcase>\n";
    }
    body += "  </testsuite>\n";
    total += static_cast<int>(s.cases.size());
    failures += f;
    errors += e;
    skipped += k;
    seconds += s.seconds;
  }
  return fmt::format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"moefuzz\" tests=\"{}\" "
             "failures=\"{}\" "
             "errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
             total, failures, errors, skipped, seconds) +
         body + "</testsuites>\n";
}

void write_junit_file(const std::string& path, const std::vector<JunitSuite>& suites) {
  write_file_atomically(path, to_junit_xml(suites));
}

}  // namespace moefuzz
