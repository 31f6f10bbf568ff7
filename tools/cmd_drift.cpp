// moefuzz drift --kernel K [--compare K2] [--mode layers|sequence] [--layers L] [--tokens T]
//               [--recipe FILE] [--out DIR]: long-horizon drift with a CSV and an SVG plot.
#include <fmt/format.h>

#include <iostream>

#include "core/atomic_file.h"
#include "core/output_path.h"
#include "core/recipe_text.h"
#include "kernels/registry.h"
#include "properties/drift.h"
#include "tools/commands.h"
#include "tools/global_options.h"

namespace moefuzz::cli {

void add_drift_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("drift", "Many-layer / long-sequence drift against the oracle, with a plot");
  static std::vector<std::string> kernels{"cpu"};
  static std::string mode = "layers", recipe_path, out = "drift-out";
  static int layers = 64;
  static int64_t tokens = 32768;
  cmd->add_option("--kernel", kernels, "Kernels to compare (repeat the flag: e.g. cpu and a mutant)")
      ->capture_default_str();
  cmd->add_option("--mode", mode, "layers | sequence")
      ->check(CLI::IsMember({"layers", "sequence"}))
      ->capture_default_str();
  cmd->add_option("--layers", layers, "Layers (mode layers)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--tokens", tokens, "Tokens (mode sequence)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22))
      ->capture_default_str();
  cmd->add_option("--recipe", recipe_path, "Base recipe (default: a small softmax case)");
  cmd->add_option("--out", out, "Directory for drift.csv and drift.svg")->capture_default_str();
  cmd->callback([&exit_code] {
    check_output_dir(out);  // before the run: a bad directory costs nothing
    for (const char* f : {"/drift.csv", "/drift.svg"}) check_output_file(out + f);
    CaseRecipe base;
    if (!recipe_path.empty()) {
      base = parse_recipe_file(recipe_path, global_options().max_case_bytes);
    } else {
      // 64 tokens in layers mode: many elements per layer, so each layer's bias is measured well.
      base.shape =
          Shape{.tokens = mode == "layers" ? 64 : 1, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
      base.routing.routed_scaling_factor = 2.5;
    }
    make_directories(out);
    std::vector<DriftReport> reports;
    int failed = 0;
    for (const auto& name : kernels) {
      const auto k = make_kernel(name);
      CaseRecipe r = base;
      r.profile = k->profile();
      DriftReport rep = mode == "layers" ? run_layer_drift(*k, r, layers) : run_sequence_drift(*k, r, tokens);
      rep.kernel = name;
      const DriftPoint& last = rep.points.back();
      std::cout << fmt::format(
          "{:<32} {}: final |D|/rw-scale {:.3g} (limit {}), bias/bound signed {:+.3g} (t {:+.2f}), shrink "
          "{:+.3g} (t {:+.2f}), max single-call ratio {:.3g}\n",
          name, rep.verdict.failed() ? "FAIL" : "ok  ", last.max_normalized, kDriftKappa, last.bias_signed,
          last.z_signed, last.bias_shrink, last.z_shrink, last.max_single_ratio);
      if (rep.verdict.failed()) {
        ++failed;
        std::cout << "    " << rep.verdict.message << "\n";
      }
      reports.push_back(std::move(rep));
    }
    const std::string csv = out + "/drift.csv", svg = out + "/drift.svg";
    write_drift_csv(reports, csv);
    const std::string plot_error = plot_drift(reports, csv, svg);
    std::cout << "wrote " << csv << (plot_error.empty() ? " and " + svg : " (no plot: " + plot_error + ")")
              << "\n";
    exit_code = failed ? 1 : 0;
  });
}

}  // namespace moefuzz::cli
