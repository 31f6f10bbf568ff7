#pragma once
// The libFuzzer campaign orchestrator behind `moefuzz campaign`: runs a fuzz target
// (build/fuzz/bin/<name>_fuzzer, fuzz/) in libFuzzer fork mode (-fork=N -ignore_crashes=1
// -max_total_time=S), one libFuzzer process per GPU (CUDA_VISIBLE_DEVICES) when GPUs exist, the
// kernel passed through $MOEFUZZ_KERNEL. While it runs, findings are harvested as they appear:
//   DIR/raw/       recipes the targets save themselves ($MOEFUZZ_FINDINGS_DIR, fuzz/finding.h)
//   DIR/crashes/   libFuzzer's crash-* inputs (DIR/converted/ marks those done); each is replayed once
//   through the target (which
//                  decodes it and saves its recipe into raw/), so even a crash input becomes a recipe
//   DIR/findings/  one shrunk regression per signature (drivers/shrinker.h), written atomically
//   DIR/corpus/    the corpus: resumed from on the next run, merged (-merge=1) at the end
// A campaign killed with SIGKILL loses nothing: raw recipes are written atomically by the targets,
// findings/ is rebuilt from raw/ on the next run (deduplicated against what findings/ holds).
//
// Example:
//   moefuzz::FuzzCampaignOptions o{.target = "moe_layer", .seconds = 60, .workers = 2,
//                                   .kernel = "mutant/z1-rsf-twice", .out_dir = "/tmp/camp"};
//   moefuzz::FuzzCampaignSummary s = moefuzz::run_fuzz_campaign(o, std::cerr);
//   std::cout << moefuzz::format_fuzz_summary(s);
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moefuzz {

struct FuzzCampaignOptions {
  std::string target;          // "moe_layer" or "moe_layer_fuzzer"
  double seconds = 60;         // -max_total_time
  int workers = 1;             // -fork=N (split across GPUs when there are several)
  std::string kernel = "cpu";  // $MOEFUZZ_KERNEL
  std::string out_dir;         // DIR
  std::string bin_dir = "build/fuzz/bin";
  std::string seed_dir;        // extra read-only seed corpus ("" = corpora/<name>_fuzzer when it exists)
  double shrink_seconds = 20;  // budget per new signature
  int gpus = -1;               // -1 = detect (nvidia-smi -L)
};

struct FuzzFinding {
  std::string signature;
  std::string path;         // DIR/findings/<signature>.moefuzz
  std::string raw;          // the raw recipe it was shrunk from
  std::string after;        // shape_summary of the shrunk recipe
  double found_within = 0;  // campaign seconds when it was harvested (polled each second, so an
                            // upper bound on the time to find it; 0 outside a campaign)
};

struct FuzzCampaignSummary {
  std::string target, kernel;
  double seconds = 0;
  int processes = 0;
  int64_t jobs = 0;   // fork-mode jobs run (libFuzzer's "#N: ... job: N")
  int64_t execs = 0;  // executed inputs (final stats of the jobs, when libFuzzer prints them)
  double execs_per_second = 0;
  int64_t coverage = 0, features = 0, corpus = 0, crashes = 0;  // libFuzzer's last status line
  std::string semantic;  // "reached N of M semantic buckets" when the target prints it
  std::vector<FuzzFinding> findings;
  std::vector<std::string> unconverted;  // crash inputs that yielded no recipe (a real crash)
};

// Throws InputError (exit 2) when the target binary does not exist (naming how to build it) or
// options are bad. Findings are written as they appear; returns the summary at the end.
FuzzCampaignSummary run_fuzz_campaign(const FuzzCampaignOptions& options, std::ostream& log);

// Harvest step alone (also used on resume): every recipe in raw_dir whose signature findings_dir
// does not hold yet is shrunk on `kernel` and written to findings_dir. Returns the new findings.
std::vector<FuzzFinding> harvest_findings(const std::string& raw_dir, const std::string& findings_dir,
                                          const std::string& kernel, double shrink_seconds,
                                          std::ostream& log);

// libFuzzer flags from a target's .options file (ClusterFuzz's format: `key = value` lines under a
// [libfuzzer] section; # comments): {"-max_len=4096", "-dict=/abs/fuzz/x.dict", ...}, a relative
// dict resolved beside the file. {} when the file does not exist; InputError for a malformed key.
std::vector<std::string> libfuzzer_flags_from_options(const std::string& options_path);

// The path of the target binary for `target` under bin_dir; throws InputError when absent.
std::string fuzz_target_binary(const std::string& bin_dir, const std::string& target);

// Adds one libFuzzer process's log (its last status line, its final stats) to `s`: execs, fork jobs,
// coverage, features, corpus, crashes and the target's semantic-coverage line. execs_per_second is
// left to the caller (total execs over the campaign's wall time).
void accumulate_libfuzzer_log(const std::string& text, FuzzCampaignSummary& s);

std::string format_fuzz_summary(const FuzzCampaignSummary& s);
nlohmann::json fuzz_summary_json(const FuzzCampaignSummary& s);

}  // namespace moefuzz
