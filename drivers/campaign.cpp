#include "drivers/campaign.h"

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <new>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/case.h"
#include "core/errors.h"
#include "core/interrupt.h"
#include "core/memory_budget.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "core/repro_command.h"
#include "core/terminal_width.h"
#include "drivers/finding_file.h"
#include "drivers/memory_gate.h"
#include "drivers/ordered_parallel.h"
#include "drivers/progress_line.h"
#include "drivers/shrinker.h"
#include "kernels/kernel_name.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

// The NNN of the highest "finding-NNN-*" file in `dir`, 0 when none (or no such directory).
int64_t highest_finding_index(const std::string& dir) {
  int64_t highest = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("finding-", 0) != 0) continue;
    int64_t n = 0;
    size_t i = 8;
    for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && n < (int64_t{1} << 40);
         ++i)
      n = n * 10 + (name[i] - '0');
    if (i > 8 && i < name.size() && name[i] == '-') highest = std::max(highest, n);
  }
  return highest;
}

}  // namespace

Finding save_finding(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel_as_given,
                     const std::string& out_dir, int64_t index, const std::string& profile_override) {
  make_directories(out_dir);
  // A plugin path is stored absolute: the finding replays from any directory.
  const std::string kernel_name = stored_kernel_name(kernel_as_given);
  Finding f;
  f.signature = v.signature();
  f.message = v.message;
  // Never over an earlier finding (another run into the same directory): take the next free number.
  std::string stem;
  for (;; ++index) {
    stem = fmt::format("{}/finding-{:03d}-{}", out_dir, index, sanitize(f.signature));
    std::error_code ec;
    if (!std::filesystem::exists(stem + ".moefuzz", ec) && !std::filesystem::exists(stem + ".txt", ec)) break;
  }
  f.recipe_path = stem + ".moefuzz";
  f.report_path = stem + ".txt";
  f.repro = repro_replay_command(f.recipe_path, kernel_name) +
            (profile_override.empty() ? "" : " --profile " + profile_override);
  const FindingHeader header{
      .kills = f.signature, .kernel = kernel_name, .message = v.message, .repro = f.repro};
  write_file_atomically(f.recipe_path, finding_text(to_text(recipe), header));
  write_file_atomically(f.report_path, format_failure_report(recipe, v, kernel_name, f.repro));
  return f;
}

namespace {

// One drawn index as a worker left it, for the in-order commit.
struct DrawnCase {
  enum class Kind { kChecked, kUnsupported, kTimeUp, kInterrupted, kOutOfMemory };
  Kind kind = Kind::kChecked;
  CaseRecipe recipe;
  std::string unsupported;        // kUnsupported: why
  CaseReport report;              // kChecked
  double generation_seconds = 0;  // materializing the case
};

}  // namespace

CampaignSummary run_campaign(const Kernel& kernel, const CampaignOptions& o, std::ostream& log) {
  CampaignSummary s;
  s.kernel = o.kernel_name;
  s.shapes = o.shapes;
  s.seed = o.seed;
  const rc::Gen<CaseRecipe> gen = gen::recipe_for(o.shapes, o.max_case_bytes);
  if (o.shapes.rfind("model:", 0) == 0) {
    const std::string name = o.shapes.substr(6);
    const CaseRecipe full = gen::sample(gen::model(name), 0, 0);
    const int64_t experts = gen::model_routed_experts(name, o.max_case_bytes);
    if (experts != full.shape.experts)
      log << fmt::format(
          "moefuzz: {}: the full layer ({} routed experts) does not fit --max-case-bytes {}; checking it "
          "with {} of them (hidden, inter, top_k and groups are the model's)\n",
          o.shapes, full.shape.experts, format_byte_count(o.max_case_bytes), experts);
  }
  // The profile in force (validated here: an unknown name is bad input, exit 2, before any case runs).
  const std::string profile = o.profile.empty() ? kernel.profile() : profile_by_name(o.profile).name;
  const int jobs = std::max(1, o.jobs);
  if (jobs > 1 && !o.worker_kernel)
    throw std::logic_error("run_campaign: jobs > 1 needs CampaignOptions::worker_kernel");
  s.profile = profile;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CheckOptions co{
      .invariants = o.invariants, .run = o.run, .profile = o.profile, .oracle_reuse = o.oracle_reuse};
  if (o.seconds > 0)
    co.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(o.seconds));
  // Findings of earlier runs in the same directory are kept: this run numbers after them.
  const int64_t earlier = highest_finding_index(o.out_dir);
  if (earlier > 0)
    log << fmt::format(
        "moefuzz: {} holds findings of an earlier run (up to finding-{:03d}); they are kept, "
        "new ones are numbered after them\n",
        o.out_dir, earlier);

  // Each worker thread checks with its own kernel instance (a plugin's or Python kernel's own worker
  // process, a GPU of its own); one thread checks with `kernel` itself.
  std::vector<std::unique_ptr<Kernel>> worker_kernels(static_cast<size_t>(jobs));
  auto kernel_of = [&](int w) -> const Kernel& { return jobs == 1 ? kernel : *worker_kernels[w]; };
  auto start_worker = [&](int w) {
    if (jobs > 1) worker_kernels[w] = o.worker_kernel(w);
  };

  // Parallel workers together never hold more than the memory there is (drivers/memory_gate.h).
  // Memory is measured once: refusals (check_memory_refusal) then depend on the case alone, not on
  // what the other workers hold when it is drawn.
  const int64_t memory_at_start = available_memory_bytes();
  MemoryGate memory(std::max<int64_t>(memory_at_start, 1));

  // The case of one index: a pure function of (seed, index) and the kernel's answers.
  auto produce = [&](int w, uint64_t index) {
    DrawnCase d;
    if (o.seconds > 0 && elapsed() >= o.seconds) {
      d.kind = DrawnCase::Kind::kTimeUp;
      return d;
    }
    // RapidCheck sizes grow from small to large over the first cases, like a property run.
    const int size = static_cast<int>(std::min<uint64_t>(100, index));
    d.recipe = gen::sample(gen, o.seed, index, size);
    d.recipe.profile = profile;
    if (o.adapt_recipe) {
      o.adapt_recipe(d.recipe);
      d.recipe = fit_edits(std::move(d.recipe));
    }
    if (interrupt_requested()) {
      d.kind = DrawnCase::Kind::kInterrupted;
      return d;
    }
    if (o.weight_format && d.recipe.quant.weights != *o.weight_format) {
      d.kind = DrawnCase::Kind::kUnsupported;
      d.unsupported = fmt::format("weight_format {} (--weight-format {})", name_of(d.recipe.quant.weights),
                                  name_of(*o.weight_format));
      return d;
    }
    if (o.expert_bias_only && !d.recipe.expert_bias) {
      d.kind = DrawnCase::Kind::kUnsupported;
      d.unsupported = "no expert biases (--expert-bias)";
      return d;
    }
    const Kernel& k = kernel_of(w);
    std::optional<Verdict> supports_fault;
    const std::string invalid = validate(d.recipe);
    const int64_t bytes = estimate_case_bytes(d.recipe);
    std::string unsupported = invalid.empty() ? supports_or_fault(k, d.recipe, supports_fault) : invalid;
    if (unsupported.empty() && !supports_fault && bytes > o.max_case_bytes)
      unsupported = fmt::format("the case needs {}, above --max-case-bytes {}", format_byte_count(bytes),
                                format_byte_count(o.max_case_bytes));
    if (unsupported.empty() && !supports_fault) unsupported = check_memory_refusal(d.recipe, memory_at_start);
    if (!unsupported.empty() && !supports_fault) {
      d.kind = DrawnCase::Kind::kUnsupported;
      d.unsupported = std::move(unsupported);
      return d;
    }
    try {
      // A fault in supports() is the case's finding: nothing else runs on it.
      if (supports_fault) {
        d.report = fault_report(*supports_fault, co);
      } else {
        const MemoryGate::Hold hold(memory, estimate_check_bytes(d.recipe));
        const PhaseSeconds before = thread_phase_seconds();
        const Case c = [&] {
          const PhaseTimer timer(Phase::kGeneration);
          return materialize(d.recipe, o.max_case_bytes);
        }();
        d.generation_seconds = (thread_phase_seconds() - before).generation;
        d.report = check_case(k, c, co);
      }
      d.report.baseline.reset();  // not needed here; results wait in memory for their commit
    } catch (const Interrupted&) {
      d.kind = DrawnCase::Kind::kInterrupted;  // the interrupted case is not counted
    } catch (const std::bad_alloc&) {
      d.kind = DrawnCase::Kind::kOutOfMemory;
    }
    return d;
  };

  int64_t consecutive_unsupported = 0;
  std::atomic<uint64_t> cases_left{o.cases > 0 ? static_cast<uint64_t>(o.cases) : UINT64_MAX};
  // Everything that shows (tallies, finding numbers, FINDING lines, progress) happens here, in
  // index order, on this thread.
  auto commit = [&](uint64_t index, DrawnCase& d) {
    if (o.cases > 0 && s.cases >= o.cases) return false;
    if (o.cases <= 0 && o.seconds <= 0) return false;
    switch (d.kind) {
      case DrawnCase::Kind::kTimeUp:
        return false;
      case DrawnCase::Kind::kInterrupted:
        s.interrupted_by = interrupt_signal();
        return false;
      case DrawnCase::Kind::kUnsupported:
        ++s.unsupported;
        s.last_unsupported = d.unsupported;
        if (++consecutive_unsupported > 10000) {
          log << "moefuzz: the kernel supports none of 10000 consecutive drawn recipes; stopping\n";
          return false;
        }
        return true;
      case DrawnCase::Kind::kOutOfMemory: {
        // moefuzz itself ran out of memory (oracle, framework): a tool error, never the kernel's
        // finding. The case is saved so the failure can be reproduced and reported.
        const std::string path = fmt::format("{}/tool-error-oom-{}.moefuzz", o.out_dir, index);
        std::string text = to_text(d.recipe);
        const size_t eol = text.find('\n');
        text.insert(eol == std::string::npos ? text.size() : eol + 1,
                    "# moefuzz tool error: out of memory in moefuzz while checking this case\n# kernel: " +
                        o.kernel_name + "\n");
        write_file_atomically(path, text);
        throw InputError(fmt::format(
            "out of memory in moefuzz itself while checking a case (saved to {}); not a finding of the "
            "kernel: lower --max-case-bytes or the shapes",
            path));
      }
      case DrawnCase::Kind::kChecked:
        break;
    }
    consecutive_unsupported = 0;
    const CaseReport& rep = d.report;
    tally(s.tallies, rep);
    s.phases += rep.phases;
    s.phases.generation += d.generation_seconds;
    s.worker_seconds += rep.seconds + d.generation_seconds;
    note_case(s.reached, d.recipe);
    ++s.cases;
    if (rep.failed()) {
      const Verdict& v = rep.first_failure();
      auto it = std::find_if(s.findings.begin(), s.findings.end(),
                             [&](const Finding& f) { return f.signature == v.signature(); });
      if (it != s.findings.end()) {
        ++it->occurrences;
      } else {
        Finding f = save_finding(d.recipe, v, o.kernel_name, o.out_dir,
                                 earlier + static_cast<int64_t>(s.findings.size()) + 1, o.profile);
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
    cases_left = o.cases > 0 ? static_cast<uint64_t>(o.cases - s.cases) : UINT64_MAX;
    return cases_left > 0;
  };
  // No case is checked past --cases (each would cost a whole check, and memory).
  run_in_index_order<DrawnCase>(jobs, start_worker, produce, commit, [&] { return cases_left.load(); });
  if (o.progress) log << "\n";
  s.seconds = elapsed();
  return s;
}

std::string format_summary_table(const CampaignSummary& s) {
  std::string out = fmt::format(
      "moefuzz check: kernel {}, seed {}, {} cases in {:.1f}s ({} drawn recipes outside the kernel's "
      "domain)\n",
      s.kernel, s.seed, s.cases, s.seconds, s.unsupported);
  if (s.interrupted_by != 0)
    out += fmt::format("interrupted by signal {}: the summary covers the cases completed before it\n",
                       s.interrupted_by);
  // The tightness of the verdicts that held (a failure's own ratio is in its finding).
  // time%: each invariant's share of the time spent in checks (where a check's time goes).
  double total_seconds = 0;
  for (const auto& [code, t] : s.tallies) total_seconds += t.seconds;
  out += fmt::format("{:<12} {:>8} {:>6} {:>8} {:>8} {:>9} {:>8} {:>20} {:>6}\n", "invariant", "pass", "fail",
                     "skip", "vacuous", "vacuous%", "not-eval", "max err/bound (pass)", "time%");
  for (const auto& [code, t] : s.tallies)
    out += fmt::format("{:<12} {:>8} {:>6} {:>8} {:>8} {:>8.1f}% {:>8} {:>20.3g} {:>5.1f}%\n", code, t.passed,
                       t.failed, t.skipped, t.vacuous, 100 * t.vacuous_share(), t.not_evaluated, t.max_ratio,
                       total_seconds > 0 ? 100 * t.seconds / total_seconds : 0.0);
  if (s.worker_seconds > 0) {
    const auto pct = [&](double x) { return 100 * x / s.worker_seconds; };
    out += fmt::format(
        "worker time: kernel runs {:.0f}%, oracle {:.0f}%, case generation {:.0f}%, the rest {:.0f}% "
        "(transforms, comparisons, waits)\n",
        pct(s.phases.kernel), pct(s.phases.oracle), pct(s.phases.generation),
        pct(std::max(0.0, s.worker_seconds - s.phases.total())));
  }
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
  j["profile"] = s.profile;
  j["shapes"] = s.shapes;
  j["seed"] = s.seed;
  j["cases"] = s.cases;
  j["unsupported"] = s.unsupported;
  j["seconds"] = s.seconds;
  if (s.interrupted_by != 0) j["interrupted_by_signal"] = s.interrupted_by;
  for (const auto& [code, t] : s.tallies)
    j["invariants"][code] = {{"pass", t.passed},
                             {"fail", t.failed},
                             {"skip", t.skipped},
                             {"vacuous", t.vacuous},
                             {"vacuous_share", t.vacuous_share()},
                             {"not_evaluated", t.not_evaluated},
                             {"max_ratio", t.max_ratio}};
  // Apart from the verdicts' tallies, which the seed alone determines: timings vary run to run.
  for (const auto& [code, t] : s.tallies) j["seconds_by_invariant"][code] = t.seconds;
  j["seconds_by_phase"] = {{"kernel", s.phases.kernel},
                           {"oracle", s.phases.oracle},
                           {"generation", s.phases.generation},
                           {"other", std::max(0.0, s.worker_seconds - s.phases.total())}};
  j["reached"] = coverage_json(s.reached);
  j["findings"] = nlohmann::json::array();
  for (const auto& f : s.findings)
    j["findings"].push_back({{"signature", f.signature},
                             {"message", f.message},
                             {"recipe", f.recipe_path},
                             {"report", f.report_path},
                             {"repro", f.repro},
                             {"occurrences", f.occurrences}});
  return j;
}

}  // namespace moefuzz
