#include "fuzz/finding.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "drivers/campaign.h"

namespace moefuzz::fuzz {
namespace {

[[noreturn]] void abort_handler(const CaseRecipe&, const Verdict&, const std::string&) { std::abort(); }

FindingHandler g_handler = nullptr;
bool g_quiet = false;

// The number in the saved file's name (finding-<N>-<signature>): 12 decimal digits of the FNV-1a hash
// of the kernel name and the recipe text. Fuzz targets run as many processes (-fork, -jobs, moefuzz
// campaign) sharing one $MOEFUZZ_FINDINGS_DIR, so a per-process counter would let children overwrite
// each other's findings; the content hash only ever rewrites a file with the same kernel, recipe and
// signature (a duplicate).
int64_t finding_number(const CaseRecipe& recipe, const std::string& kernel) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char ch : kernel + '\n' + to_text(recipe)) h = (h ^ ch) * 0x100000001b3ull;
  return static_cast<int64_t>(h % 1000000000000ull);
}

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
        const Finding f = save_finding(recipe, v, kernel, dir, finding_number(recipe, kernel));
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
