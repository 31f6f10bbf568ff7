// moefuzz: differential testing and fuzzing of Mixture-of-Experts kernels. See README.md.
#include <charconv>
#include <iostream>
#include <new>

#include "core/errors.h"
#include "core/heap_retention.h"
#include "core/interrupt.h"
#include "oracles/gpu/gpu_exact_dots.h"
#include "tools/commands.h"
#include "tools/global_options.h"
#include "tools/misspelling.h"
#include "tools/version.h"

int main(int argc, char** argv) {
  moefuzz::retain_freed_heap_memory();
  CLI::App app{
      "moefuzz: differential testing and fuzzing of MoE kernels (routing, NVFP4, grouped GEMM, combine)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", moefuzz::cli::version_string());
  // Global options may also follow the subcommand (`moefuzz show F --max-case-bytes N`): subcommands
  // created after this inherit fallthrough.
  app.fallthrough();
  app.add_option(
         "--max-case-bytes", moefuzz::cli::global_options().max_case_bytes,
         "Largest case (bytes of materialized tensors) any command materializes; larger recipes exit 2 "
         "(default: a quarter of the memory available now)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // CLI11 saturates an overflowing integer silently; a size limit must be exact.
            int64_t value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec != std::errc() || end != text.data() + text.size() || value <= 0)
              return "must be a positive byte count below 2^63, got '" + text + "'";
            return "";
          },
          "BYTES"))
      ->capture_default_str();
  app.add_option(
         "--oracle-device", moefuzz::cli::global_options().oracle_device,
         "Where the oracle's exact GEMM dots run (bit-identical everywhere): cpu, gpu (exit 2 when no GPU "
         "is usable) or auto (the GPU when the kernel under test runs on one in this process, else the "
         "CPU). Default: the environment variable MOEFUZZ_ORACLE_DEVICE, else auto")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  // Before any command's callback: a GPU asked for (flag or environment) and absent is exit 2 here.
  app.parse_complete_callback([] {
    moefuzz::gpu::use_oracle_device(
        moefuzz::gpu::oracle_device_choice(moefuzz::cli::global_options().oracle_device));
  });
  int exit_code = moefuzz::kExitOk;
  moefuzz::cli::add_list_command(app, exit_code);
  moefuzz::cli::add_show_command(app, exit_code);
  moefuzz::cli::add_check_command(app, exit_code);
  moefuzz::cli::add_replay_command(app, exit_code);
  moefuzz::cli::add_mutants_command(app, exit_code);
  moefuzz::cli::add_drift_command(app, exit_code);
  moefuzz::cli::add_shrink_command(app, exit_code);
  moefuzz::cli::add_campaign_command(app, exit_code);
  moefuzz::cli::add_report_command(app, exit_code);
  // A misspelled command or option is named with the nearest known one (CLI11 alone would say "A
  // subcommand is required").
  if (const std::string why = moefuzz::cli::misspelling_message(app, argc, argv); !why.empty()) {
    std::cerr << "moefuzz: error: " << why << "\n";
    return moefuzz::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return moefuzz::kExitUsage;  // every usage error is exit 2, whatever CLI11's own code
  } catch (const moefuzz::InputError& e) {
    std::cerr << "moefuzz: error: " << e.what() << "\n";
    return moefuzz::kExitUsage;
  } catch (const moefuzz::ToolError& e) {
    // moefuzz's own machinery failed (the oracle's GPU dots): not the kernel's finding.
    std::cerr << "moefuzz: error: " << e.what() << " (moefuzz's own failure, not the kernel's)\n";
    return moefuzz::kExitUsage;
  } catch (const moefuzz::Interrupted& e) {
    std::cerr << "moefuzz: " << e.what() << "\n";
    return 128 + e.signal_number();
  } catch (const std::bad_alloc&) {
    // moefuzz's own allocation failed (an oracle, the framework): a tool error, never a finding.
    std::cerr << "moefuzz: error: out of memory in moefuzz itself (lower --max-case-bytes or the shapes)\n";
    return moefuzz::kExitUsage;
  }
  return exit_code;
}
