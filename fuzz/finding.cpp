#include "fuzz/finding.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"
#include "core/report.h"
#include "properties/campaign.h"

namespace moefuzz::fuzz {
namespace {

[[noreturn]] void abort_handler(const CaseRecipe&, const Verdict&, const std::string&) { std::abort(); }

FindingHandler g_handler = nullptr;
bool g_quiet = false;
std::atomic<int64_t> g_saved{0};

}  // namespace

FindingHandler set_finding_handler(FindingHandler h) {
  FindingHandler old = g_handler;
  g_handler = h;
  return old;
}

void set_quiet_findings(bool quiet) { g_quiet = quiet; }

void report_finding(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel) {
  if (!g_quiet) {
    const char* dir = std::getenv("MOEFUZZ_FINDINGS_DIR");
    std::string repro = "moefuzz replay <the crash-* file libFuzzer writes> --kernel " + kernel;
    if (dir != nullptr && *dir != '\0') {
      try {
        const Finding f = save_finding(recipe, v, kernel, dir, g_saved++);
        repro = f.repro;
        std::fprintf(stderr, "moefuzz-fuzz: finding saved to %s\n", f.recipe_path.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "moefuzz-fuzz: could not save the finding: %s\n", e.what());
      }
    }
    std::fprintf(stderr, "%s", format_failure_report(recipe, v, kernel, repro).c_str());
  }
  (g_handler != nullptr ? g_handler : abort_handler)(recipe, v, kernel);
}

}  // namespace moefuzz::fuzz
