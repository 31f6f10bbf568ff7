#pragma once
// A differential + metamorphic campaign: draw recipes from a generator (one root seed), skip those
// outside the kernel's domain, run the selected invariants through the check engine, save each new
// failure signature as a finding (recipe + report, written atomically) with a one-line REPRO
// command, and tally results per invariant. `moefuzz check` is a thin CLI over this.
//
// Example:
//   moefuzz::CampaignOptions o{.kernel_name = "cpu", .cases = 200, .seed = 7, .out_dir = "/tmp/f"};
//   o.invariants = moefuzz::select_invariants("all");
//   moefuzz::CampaignSummary s = moefuzz::run_campaign(*kernel, o, std::cerr);
//   std::cout << moefuzz::format_summary_table(s);
//   o.jobs = 4;  // the same summary, four cases at a time
//   o.worker_kernel = [](int) { return moefuzz::make_kernel("cpu"); };
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/recipe.h"
#include "core/verdict.h"
#include "drivers/check_engine.h"
#include "drivers/run_coverage.h"
#include "kernels/kernel.h"

namespace moefuzz {

struct CampaignOptions {
  std::string kernel_name;  // as given to --kernel (registry name or plugin path): used in REPRO
  std::string profile;      // "" = the kernel's declared profile
  int64_t cases = 0;        // stop after this many checked cases (0 = no limit)
  double seconds = 0;       // stop after this much time (0 = no limit)
  uint64_t seed = 1;
  std::string shapes = "small";  // small | medium | large | model:NAME
  std::vector<const Invariant*> invariants;
  std::string out_dir;    // findings land here
  bool progress = false;  // a progress line on stderr
  // Drawn recipes above this many bytes (estimate_case_bytes) are not materialized: they count as
  // outside the domain, with the reason, like recipes the kernel does not support.
  int64_t max_case_bytes = kDefaultMaxCaseBytes;
  RunOptions run;
  // Worker threads checking cases at once. The cases, verdicts, tallies and findings (files and
  // numbering) depend on the seed alone, never on jobs: each index's case is drawn from (seed, index)
  // and results are committed in index order (drivers/ordered_parallel.h). 1 = the calling thread
  // checks every case with `kernel`.
  int jobs = 1;
  // jobs > 1: makes worker `worker`'s own kernel instance, called on that worker's thread before its
  // first case (so a GPU bound there with kernels/worker_device.h stays the thread's device).
  std::function<std::unique_ptr<Kernel>(int worker)> worker_kernel;
  // Applied to every drawn recipe before it is validated (its edits are then re-fitted): `check
  // --weights` fits the recipe to the files' dimensions here (core/tensor_files.h). May be empty.
  std::function<void(CaseRecipe&)> adapt_recipe;
  // Only drawn recipes of this weight format are checked (`check --weight-format`); the others are
  // passed over and counted with the unsupported ones. Unset: every drawn recipe.
  std::optional<WeightFormat> weight_format;
  // Evaluations and rows of the oracle taken from earlier ones where they are the same bit for bit
  // (CheckOptions::oracle_reuse; `check --oracle-reuse off` evaluates everything afresh).
  bool oracle_reuse = true;
  // Only drawn recipes with expert biases (`check --expert-bias`; bf16 and MXFP4 weights carry them).
  bool expert_bias_only = false;
};

struct Finding {
  std::string signature;  // invariant/stage
  std::string message;    // the first failing case's one-line message (with its residual pattern)
  std::string recipe_path;
  std::string report_path;
  std::string repro;        // the one-line command
  int64_t occurrences = 1;  // cases that failed with this signature
};

struct CampaignSummary {
  std::string kernel;
  std::string profile;  // the profile in force
  std::string shapes;   // the shape class drawn from (--shapes)
  uint64_t seed = 0;
  int64_t cases = 0;             // checked
  int64_t unsupported = 0;       // drawn but outside the kernel's domain
  std::string last_unsupported;  // the kernel's reason for the last one (shown when nothing ran)
  double seconds = 0;
  int interrupted_by = 0;  // the signal (SIGINT, SIGTERM) that stopped the campaign early, else 0
  Tallies tallies;
  // Worker time by kind of work (core/phase_clock.h) and in all (checks plus case generation): the
  // rest of worker_seconds is case transforms, comparisons and waits.
  PhaseSeconds phases;
  double worker_seconds = 0;
  RunCoverage reached;  // routing modes, profiles, shape classes and hostile corners of the checked cases
  std::vector<Finding> findings;
};

CampaignSummary run_campaign(const Kernel& kernel, const CampaignOptions& options, std::ostream& log);
// Writes the recipe (with the finding header of drivers/finding_file.h: signature, kernel, message,
// REPRO) and the failure report.
// recipe.profile names the profile the check used; profile_override is "" when that is the kernel's
// claimed one, else the name passed on (REPRO then carries --profile).
Finding save_finding(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel_name,
                     const std::string& out_dir, int64_t index, const std::string& profile_override = "");
std::string format_summary_table(const CampaignSummary& s);
// The summary as JSON; `moefuzz check` also writes it as DIR/summary.json, which `moefuzz report`
// reads (docs/report.md).
nlohmann::json summary_json(const CampaignSummary& s);

}  // namespace moefuzz
