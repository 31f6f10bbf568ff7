// moefuzz campaign --target T --time S [--workers N] [--kernel K] [--out DIR]: a libFuzzer fork-mode
// campaign of build/fuzz/bin/<T>_fuzzer with findings converted to recipes, deduplicated by
// signature and shrunk as they appear (drivers/fuzz_campaign.h). Exit 0 no finding, 1 findings,
// 2 bad usage (including fuzz targets not built).
#include <fmt/format.h>

#include <iostream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/output_path.h"
#include "drivers/fuzz_campaign.h"
#include "tools/commands.h"

namespace moefuzz::cli {

void add_campaign_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "campaign", "libFuzzer fork-mode campaign; findings converted to recipes, deduplicated and shrunk");
  static FuzzCampaignOptions o;
  static std::string json;
  cmd->add_option("--target", o.target, "Fuzz target: moe_layer, routing, nvfp4, recipe_parser")->required();
  cmd->add_option("--time", o.seconds, "Seconds (libFuzzer -max_total_time)")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--workers", o.workers, "libFuzzer -fork=N jobs (split over GPUs when present)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kernel", o.kernel, "Kernel under test (passed as MOEFUZZ_KERNEL)")
      ->capture_default_str();
  cmd->add_option("--out", o.out_dir,
                  "Campaign folder: corpus/, crashes/, raw/, findings/, logs/, summary.json (resumable)")
      ->capture_default_str();
  cmd->add_option("--bin-dir", o.bin_dir, "Where the fuzz targets are")->capture_default_str();
  cmd->add_option("--seeds", o.seed_dir, "Extra seed corpus (default corpora/<target>_fuzzer)");
  cmd->add_option("--shrink-time", o.shrink_seconds, "Shrink budget per new signature, seconds")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", json, "Also write the summary as JSON here");
  cmd->callback([&exit_code] {
    if (o.out_dir.empty()) o.out_dir = "moefuzz-campaign/" + o.target;
    if (!json.empty()) check_output_file(json);  // before the campaign: a bad path costs nothing
    check_output_dir(o.out_dir);
    const FuzzCampaignSummary s = run_fuzz_campaign(o, std::cerr);
    std::cout << format_fuzz_summary(s);
    if (!json.empty()) write_output(json, fuzz_summary_json(s).dump(2) + "\n");
    exit_code = s.findings.empty() ? kExitOk : kExitCheckFailed;
  });
}

}  // namespace moefuzz::cli
