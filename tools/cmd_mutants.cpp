// moefuzz mutants [--time S] [--cases N] [--seed S] [--mutant NAME|PATH|py:M:A]... [--baselines]
// [--json FILE]: the kill matrix (mutant x invariant: cases and seconds to kill) and the correct
// kernels' false-positive sweep. Exit 1 unless the matrix is green. --mutant also takes the user's own
// kernels (a plugin .so, a py: kernel), scored like the zoo, with --baselines as well.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/output_path.h"
#include "drivers/junit_results.h"
#include "drivers/kill_matrix.h"
#include "kernels/registry.h"
#include "tools/check_workers.h"
#include "tools/commands.h"
#include "tools/global_options.h"

namespace moefuzz::cli {

void add_mutants_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("mutants", "Kill matrix: every mutant x invariant, cases and seconds to kill");
  static KillMatrixOptions o;
  static std::string json, junit;
  static int jobs = 0;  // 0 = every core
  cmd->add_option("--time", o.seconds_per_mutant, "Seconds per mutant")->capture_default_str();
  cmd->add_option("--cases", o.max_cases_per_mutant, "Cases per mutant at most")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Root seed")->capture_default_str();
  cmd->add_option("--mutant", o.mutants,
                  "Only these mutants (repeatable): a registry mutant, a plugin .so path or py:MODULE:ATTR");
  cmd->add_option("--correct-cases", o.correct_cases, "False-positive sweep cases per correct kernel")
      ->capture_default_str();
  cmd->add_flag("--baselines", o.baselines, "Also apply upstream-style checkers (allclose, check_accuracy)");
  cmd->add_option("-j,--jobs", jobs,
                  "Mutants checked at once, one thread each (default: all cores; rows keep their order)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--json", json, "Write the matrix as JSON here");
  cmd->add_option("--junit", junit,
                  "Write JUnit XML here: one test case per mutant, invariant and correct kernel");
  cmd->callback([&exit_code] {
    // An unknown --mutant would silently select nothing: name it and exit 2 like every bad input.
    // A plugin path or py: kernel is loaded (InputError if it cannot be); one that declares no
    // expected killers (a C plugin cannot) counts as killed by whichever invariant kills it first.
    // A correct registry kernel is refused: it belongs to the false-positive sweep, not the zoo.
    for (const auto& name : o.mutants) {
      const auto& reg = kernel_registry();
      const auto entry =
          std::find_if(reg.begin(), reg.end(), [&](const KernelEntry& e) { return e.name == name; });
      if (entry == reg.end()) {
        (void)make_kernel(name);
        continue;
      }
      if (entry->kind != KernelKind::kMutant && entry->make()->expected_killers().empty())
        throw InputError(fmt::format(
            "--mutant: '{}' is a correct registry kernel, not a mutant (give a registry mutant, a plugin "
            "path or a py:MODULE:ATTR kernel)",
            name));
    }
    o.max_case_bytes = global_options().max_case_bytes;
    if (!json.empty()) check_output_file(json);  // before the matrix: a bad path costs nothing
    o.jobs = jobs > 0 ? jobs : default_jobs();
    // Named GPU mutants run on worker threads bound to the GPUs, as `check -j` workers are: their
    // resident caches and waits are set for the threads that may run them at once.
    int gpu_mutants = 0;
    std::string gpu_mutant;
    for (const auto& name : o.mutants)
      if (runs_on_a_gpu(name)) {
        ++gpu_mutants;
        gpu_mutant = name;
      }
    if (gpu_mutants > 0) set_gpu_workers(gpu_mutant, std::min(o.jobs, gpu_mutants));
    const KillMatrix m = run_kill_matrix(o);
    std::cout << format_kill_matrix(m);
    if (!json.empty()) write_output(json, kill_matrix_json(m).dump(2) + "\n");
    if (!junit.empty()) write_junit_file(junit, {junit_suite(m)});
    exit_code = m.green() ? 0 : 1;
  });
}

}  // namespace moefuzz::cli
