#include "properties/campaign.h"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <ostream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/case.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "core/repro_command.h"
#include "core/terminal_width.h"
#include "kernels/kernel_name.h"
#include "properties/gen/recipe_gen.h"
#include "properties/progress_line.h"

namespace moefuzz {
namespace {

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

}  // namespace

std::string kernel_named_in(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    constexpr std::string_view kTag = "# kernel: ";
    if (line.rfind(kTag, 0) == 0) return line.substr(kTag.size());
  }
  return "";
}

Finding save_finding(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel_as_given,
                     const std::string& out_dir, int64_t index) {
  make_directories(out_dir);
  // A plugin path is stored absolute: the finding replays from any directory.
  const std::string kernel_name = stored_kernel_name(kernel_as_given);
  Finding f;
  f.signature = v.signature();
  const std::string stem = fmt::format("{}/finding-{:03d}-{}", out_dir, index, sanitize(f.signature));
  f.recipe_path = stem + ".moefuzz";
  f.report_path = stem + ".txt";
  f.repro = repro_replay_command(f.recipe_path, kernel_name);
  std::string text = to_text(recipe);
  const size_t eol = text.find('\n');
  const std::string header = fmt::format("# moefuzz finding: {}\n# kernel: {}\n# {}\n# REPRO: {}\n",
                                         f.signature, kernel_name, v.message, f.repro);
  text.insert(eol == std::string::npos ? text.size() : eol + 1, header);
  write_file_atomically(f.recipe_path, text);
  write_file_atomically(f.report_path, format_failure_report(recipe, v, kernel_name, f.repro));
  return f;
}

CampaignSummary run_campaign(const Kernel& kernel, const CampaignOptions& o, std::ostream& log) {
  CampaignSummary s;
  s.kernel = o.kernel_name;
  s.seed = o.seed;
  const rc::Gen<CaseRecipe> gen = gen::recipe_for(o.shapes);
  const std::string profile = o.profile.empty() ? kernel.profile() : o.profile;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CheckOptions co{.invariants = o.invariants, .run = o.run};
  int64_t consecutive_unsupported = 0;
  for (uint64_t index = 0;; ++index) {
    if (o.cases > 0 && s.cases >= o.cases) break;
    if (o.seconds > 0 && elapsed() >= o.seconds) break;
    if (o.cases <= 0 && o.seconds <= 0) break;
    // RapidCheck sizes grow from small to large over the first cases, like a property run.
    const int size = static_cast<int>(std::min<uint64_t>(100, index));
    CaseRecipe r = gen::sample(gen, o.seed, index, size);
    r.profile = profile;
    const int64_t bytes = estimate_case_bytes(r);
    if (!kernel.supports(r).empty() || !validate(r).empty() || bytes > o.max_case_bytes) {
      ++s.unsupported;
      s.last_unsupported = !validate(r).empty() ? validate(r)
                           : !kernel.supports(r).empty()
                               ? kernel.supports(r)
                               : fmt::format("the case needs {}, above --max-case-bytes {}",
                                             format_byte_count(bytes), format_byte_count(o.max_case_bytes));
      if (++consecutive_unsupported > 10000) {
        log << "moefuzz: the kernel supports none of 10000 consecutive drawn recipes; stopping\n";
        break;
      }
      continue;
    }
    consecutive_unsupported = 0;
    const Case c = materialize(r, o.max_case_bytes);
    const CaseReport rep = check_case(kernel, c, co);
    tally(s.tallies, rep);
    ++s.cases;
    if (rep.failed()) {
      const Verdict& v = rep.first_failure();
      auto it = std::find_if(s.findings.begin(), s.findings.end(),
                             [&](const Finding& f) { return f.signature == v.signature(); });
      if (it != s.findings.end()) {
        ++it->occurrences;
      } else {
        Finding f = save_finding(r, v, o.kernel_name, o.out_dir, static_cast<int64_t>(s.findings.size()) + 1);
        log << (o.progress ? "\n" : "")
            << fmt::format("FINDING {}: {}\n  REPRO: {}\n", f.signature, v.message, f.repro);
        s.findings.push_back(f);
      }
    }
    if (o.progress) {
      const double frac =
          o.cases > 0 ? static_cast<double>(s.cases) / static_cast<double>(o.cases) : elapsed() / o.seconds;
      // Fitted to the terminal's width (asked each time: it may be resized); "\x1b[K" clears the rest.
      log << "\r"
          << format_progress_line(frac, s.cases, static_cast<int64_t>(s.findings.size()), elapsed(),
                                  terminal_columns(STDERR_FILENO))
          << "\x1b[K" << std::flush;
    }
  }
  if (o.progress) log << "\n";
  s.seconds = elapsed();
  return s;
}

std::string format_summary_table(const CampaignSummary& s) {
  std::string out = fmt::format(
      "moefuzz check: kernel {}, seed {}, {} cases in {:.1f}s ({} drawn recipes outside the kernel's "
      "domain)\n",
      s.kernel, s.seed, s.cases, s.seconds, s.unsupported);
  out += fmt::format("{:<9} {:>8} {:>6} {:>8} {:>8} {:>16}\n", "invariant", "pass", "fail", "skip", "vacuous",
                     "max err/bound");
  for (const auto& [code, t] : s.tallies)
    out += fmt::format("{:<9} {:>8} {:>6} {:>8} {:>8} {:>16.3g}\n", code, t.passed, t.failed, t.skipped,
                       t.vacuous, t.max_ratio);
  if (s.findings.empty()) {
    out += "no findings\n";
  } else {
    out += fmt::format("{} finding signature(s):\n", s.findings.size());
    for (const auto& f : s.findings)
      out += fmt::format("  {} ({} case(s))\n    report: {}\n    REPRO: {}\n", f.signature, f.occurrences,
                         f.report_path, f.repro);
  }
  return out;
}

nlohmann::json summary_json(const CampaignSummary& s) {
  nlohmann::json j;
  j["kernel"] = s.kernel;
  j["seed"] = s.seed;
  j["cases"] = s.cases;
  j["unsupported"] = s.unsupported;
  j["seconds"] = s.seconds;
  for (const auto& [code, t] : s.tallies)
    j["invariants"][code] = {{"pass", t.passed},
                             {"fail", t.failed},
                             {"skip", t.skipped},
                             {"vacuous", t.vacuous},
                             {"max_ratio", t.max_ratio}};
  j["findings"] = nlohmann::json::array();
  for (const auto& f : s.findings)
    j["findings"].push_back({{"signature", f.signature},
                             {"recipe", f.recipe_path},
                             {"report", f.report_path},
                             {"repro", f.repro},
                             {"occurrences", f.occurrences}});
  return j;
}

}  // namespace moefuzz
