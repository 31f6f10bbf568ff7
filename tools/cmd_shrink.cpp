// moefuzz shrink FILE --kernel K -o OUT [--time S] [--all-invariants] [--signature INV/STAGE]:
// minimize a failing case while its failure signature still fails (drivers/shrinker.h) and write
// the result atomically as a regression file. Exit 0 shrunk, 1 the input did not fail, 2 bad input.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/file_text.h"
#include "core/output_path.h"
#include "core/recipe_text.h"
#include "core/repro_command.h"
#include "drivers/campaign.h"
#include "drivers/finding_file.h"
#include "drivers/shrinker.h"
#include "kernels/kernel_name.h"
#include "kernels/registry.h"
#include "tools/commands.h"
#include "tools/global_options.h"
#include "tools/tensor_file_options.h"

namespace moefuzz::cli {

void add_shrink_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("shrink",
                                 "Minimize a failing case, keeping its failure signature (invariant/stage)");
  static std::string file, kernel_arg, out;
  static ShrinkOptions o;
  static bool quiet = false;
  cmd->add_option("FILE", file, "Recipe file (a finding, a corpus case)")->required();
  cmd->add_option("--kernel", kernel_arg, "Kernel (default: the file's '# kernel:' header, else cpu)");
  cmd->add_option("-o,--out", out, "Where to write the minimized recipe")->required();
  cmd->add_option("--time", o.seconds, "Time budget in seconds (0 = until the fixpoint)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--all-invariants", o.all_invariants,
                "Check every cheap invariant on candidates (slower; keeps the FIRST failure's signature)");
  cmd->add_option("--signature", o.expected_signature,
                  "Keep this INVARIANT/STAGE (default: the input's first failure, or its '# kills:' header)");
  cmd->add_option("--max-check-bytes", o.max_check_bytes,
                  "Largest candidate materialized; larger inputs are checked through a structural proxy")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed-retries", o.seed_retries, "Other seeds tried when a size pass is stuck")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  cmd->add_flag("-q,--quiet", quiet, "No progress lines");
  static TensorFileArgs tensor_files;
  add_tensor_file_options(cmd, tensor_files);
  cmd->callback([&exit_code] {
    check_output_file(out);  // before the shrink: a bad path costs nothing
    const CaseRecipe r = load_recipe(file, tensor_files, global_options().max_case_bytes);
    const std::string text = file_text(file);
    std::string kernel_name = kernel_arg.empty() ? read_finding_header(text).kernel : kernel_arg;
    if (kernel_name.empty()) kernel_name = "cpu";
    if (o.expected_signature.empty()) o.expected_signature = read_finding_header(text).kills;
    const auto kernel = make_kernel(kernel_name);
    if (!quiet) o.log = [](const std::string& line) { std::cerr << "shrink: " << line << "\n"; };
    const ShrinkResult s = shrink_recipe(*kernel, r, o);
    if (!s.input_failed) {
      std::cout << fmt::format(
          "{}: {} on kernel {}; nothing to shrink\n", file,
          s.input_checked
              ? "the case does not fail" +
                    (o.expected_signature.empty() ? std::string() : " with " + o.expected_signature)
              : "the case is too large to check and none of its proxies fails",
          kernel_name);
      for (const std::string& n : s.notes) std::cout << "  " << n << "\n";
      exit_code = kExitCheckFailed;
      return;
    }
    write_output(out, format_regression(s, kernel_name, out));
    std::cout << fmt::format(
        "shrunk {} ({}) in {:.2f}s, {} candidates, {}\n  before: {}\n  after:  {}\n  wrote {}\n  REPRO: {}\n",
        file, s.signature, s.seconds, s.candidates, s.fixpoint ? "fixpoint" : "time budget reached",
        shape_summary(s.original), shape_summary(s.shrunk), out,
        repro_replay_command(out, stored_kernel_name(kernel_name)));
    if (!s.proxy_kept.empty())
      std::cout << "  started from the proxy keeping " << s.proxy_kept
                << " (the structural proxy, which reduces it, does not fail)\n";
    for (const std::string& n : s.notes) std::cout << "  " << n << "\n";
    exit_code = kExitOk;
  });
}

}  // namespace moefuzz::cli
