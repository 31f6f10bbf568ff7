// moefuzz check --kernel K [--profile P] [--cases N | --time S] [--seed S] [--shapes ...]
//               [--invariants a,b] [--tier large] [--out DIR] [--json FILE]
//               [--weights FILE [--layer N]] [--inputs FILE]
// A random differential + metamorphic campaign; exit 1 when anything failed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/interrupt.h"
#include "core/output_path.h"
#include "drivers/campaign.h"
#include "drivers/junit_results.h"
#include "kernels/plugin_kernel.h"
#include "kernels/registry.h"
#include "tools/check_workers.h"
#include "tools/commands.h"
#include "tools/global_options.h"
#include "tools/tensor_file_options.h"

namespace moefuzz::cli {

struct CheckArgs {
  std::string kernel = "cpu";
  std::string profile;
  int64_t cases = 0;
  double seconds = 0;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string shapes = "small";
  std::string weight_format;  // "" = every drawn recipe
  bool expert_bias = false;   // only drawn recipes with expert biases
  std::string invariants = "all";
  std::string tier = "standard";
  std::string out;
  std::string json;
  std::string junit;
  int tactic = 0;
  int jobs = 0;  // 0 = every core
  std::string oracle_reuse = "on";
};

uint64_t time_seed() {
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(::getpid()) << 32);
}

// The kernel's full identity as one path component: a registry name with '/' spelled "--"
// (mutant/x and cuda-mutant/x differ), a plugin as its file name plus a hash of its canonical path
// (two plugins named alike in different folders differ).
std::string kernel_identity(const std::string& kernel) {
  std::string id;
  const auto& reg = kernel_registry();
  const bool registered =
      std::any_of(reg.begin(), reg.end(), [&](const KernelEntry& e) { return e.name == kernel; });
  if (!registered && looks_like_plugin_path(kernel)) {
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(kernel, ec).string();
    uint64_t h = 1469598103934665603ull;  // FNV-1a: a short, stable name, not a security property
    for (unsigned char c : ec ? kernel : canonical) h = (h ^ c) * 1099511628211ull;
    id = fmt::format("plugin-{}-{:08x}", kernel.substr(kernel.find_last_of('/') + 1),
                     static_cast<uint32_t>(h ^ (h >> 32)));
  } else {
    for (char c : kernel) id += c == '/' ? std::string("--") : std::string(1, c);
  }
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return id;
}

std::string default_out_dir(const std::string& kernel, uint64_t seed) {
  const char* tmp = std::getenv("TMPDIR");
  return fmt::format("{}/moefuzz/{}-seed{}", tmp && *tmp ? tmp : "/tmp", kernel_identity(kernel), seed);
}

void add_check_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Random differential + metamorphic campaign against the oracle");
  static CheckArgs a;
  cmd->add_option("--kernel", a.kernel, "Registry name or path to a plugin .so")->capture_default_str();
  cmd->add_option("--profile", a.profile, "Check against this profile instead of the kernel's declared one");
  cmd->add_option("--cases", a.cases, "Number of cases")->check(CLI::PositiveNumber);
  cmd->add_option("--time", a.seconds, "Seconds to run")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a.seed, "Root seed (default: from the clock, printed)");
  cmd->add_option("--shapes", a.shapes, "small | medium | large | model:NAME")->capture_default_str();
  cmd->add_option(
         "--weight-format", a.weight_format,
         "Check only drawn cases with these weights: nvfp4 | bf16 | mxfp4 | fp8_block (default: every "
         "case)")
      ->check(CLI::IsMember({"nvfp4", "bf16", "mxfp4", "fp8_block"}));
  cmd->add_flag("--expert-bias", a.expert_bias,
                "Check only drawn cases with expert biases (gpt-oss's b1, b2; bf16 and MXFP4 weights)");
  cmd->add_option("--invariants", a.invariants, "Comma-separated invariant codes, or all")
      ->capture_default_str();
  cmd->add_option("--tier", a.tier, "standard | large (adds OVF and DRIFT)")
      ->check(CLI::IsMember({"standard", "large"}))
      ->capture_default_str();
  cmd->add_option("--tactic", a.tactic, "Kernel tactic for the baseline run")->check(CLI::NonNegativeNumber);
  cmd->add_option("-j,--jobs", a.jobs,
                  "Cases checked at once, each worker with its own kernel instance (default: all cores, two "
                  "per core for a CUDA kernel; the results do not depend on it)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--oracle-reuse", a.oracle_reuse,
                  "on: metamorphic invariants take the oracle's evaluations and rows where they are the "
                  "same bit for bit (docs/oracle.md); off: every evaluation afresh (same verdicts, slower)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--out", a.out,
                  "Directory for findings and summary.json (default: $TMPDIR/moefuzz/<kernel>-seed<S>)");
  cmd->add_option("--json", a.json, "Write the summary as JSON here");
  cmd->add_option("--junit", a.junit, "Write JUnit XML here: one test case per invariant and per finding");
  static TensorFileArgs files;
  add_tensor_file_options(cmd, files);
  cmd->callback([cmd, &exit_code] {
    a.seed_given = cmd->count("--seed") > 0;
    if (!a.seed_given) a.seed = time_seed();
    if (a.cases == 0 && a.seconds == 0) a.cases = 200;
    // Output paths first: a bad one costs nothing (exit 2 before any kernel is loaded or run).
    const std::string out_dir = a.out.empty() ? default_out_dir(a.kernel, a.seed) : a.out;
    if (!a.json.empty()) check_output_file(a.json);
    check_output_dir(out_dir);
    // SIGINT/SIGTERM: stop at the next case or invariant, end the kernel's child, print the summary
    // so far and write the JSON (the other commands keep the default: they end at once, and their
    // kernel children with them through PR_SET_PDEATHSIG).
    // Tensor files are checked before the kernel loads: a bad file is exit 2 at once.
    std::optional<TensorFiles> tensor_files;
    if (files.given() || files.layer >= 0) tensor_files = resolve_tensor_files(files);
    install_interrupt_handlers();
    const auto kernel = make_kernel(a.kernel);
    CampaignOptions o;
    o.kernel_name = a.kernel;
    o.profile = a.profile;
    o.cases = a.cases;
    o.seconds = a.seconds;
    o.seed = a.seed;
    o.shapes = a.shapes;
    if (!a.weight_format.empty())
      o.weight_format = a.weight_format == "bf16"        ? WeightFormat::kBf16
                        : a.weight_format == "mxfp4"     ? WeightFormat::kMxfp4
                        : a.weight_format == "fp8_block" ? WeightFormat::kFp8Block
                                                         : WeightFormat::kNvfp4;
    o.expert_bias_only = a.expert_bias;
    o.invariants = select_invariants(a.invariants);
    if (a.tier == "large")
      for (const auto& inv : invariant_registry())
        if (inv.expensive && std::find(o.invariants.begin(), o.invariants.end(), &inv) == o.invariants.end())
          o.invariants.push_back(&inv);
    o.out_dir = out_dir;
    o.progress = ::isatty(STDERR_FILENO) != 0;
    o.max_case_bytes = global_options().max_case_bytes;
    o.run.tactic = a.tactic;
    o.jobs = a.jobs > 0 ? a.jobs : default_check_jobs(a.kernel);
    set_gpu_workers(a.kernel, o.jobs);
    o.oracle_reuse = a.oracle_reuse == "on";
    o.worker_kernel = worker_kernel_factory(a.kernel);
    if (tensor_files) o.adapt_recipe = [t = *tensor_files](CaseRecipe& r) { fit_recipe_to_files(r, t); };
    std::cerr << fmt::format("moefuzz check: kernel {} (profile {}), seed {}, shapes {}, {} job(s)\n",
                             a.kernel, a.profile.empty() ? kernel->profile() : a.profile, a.seed, a.shapes,
                             o.jobs);
    if (tensor_files && tensor_files->layer)
      std::cerr << fmt::format("moefuzz check: weights {} layer {} ({} experts{}, hidden {}, inter {})\n",
                               tensor_files->files.weights, tensor_files->layer->layer,
                               tensor_files->layer->experts,
                               tensor_files->layer->has_shared ? " + 1 shared" : "",
                               tensor_files->layer->hidden, tensor_files->layer->inter);
    if (tensor_files && tensor_files->inputs)
      std::cerr << fmt::format("moefuzz check: inputs {} ({} tokens{}{})\n", tensor_files->files.inputs,
                               tensor_files->inputs->tokens,
                               tensor_files->inputs->logit_experts > 0 ? ", router logits" : "",
                               tensor_files->inputs->has_token_ids ? ", token ids" : "");
    const CampaignSummary s = run_campaign(*kernel, o, std::cerr);
    if (s.cases == 0 &&
        s.interrupted_by ==
            0)  // nothing checked is not a pass (e.g. the cuda kernel on a machine without a GPU)
      throw InputError(fmt::format(
          "no case was checked: kernel {} supports none of the {} drawn recipes (last reason: {})", a.kernel,
          s.unsupported, s.last_unsupported.empty() ? "time ran out" : s.last_unsupported));
    std::cout << format_summary_table(s);
    if (!s.findings.empty()) std::cout << "findings written to " << o.out_dir << "\n";
    // DIR/summary.json always: `moefuzz report DIR` reads it (docs/report.md).
    const std::string summary = summary_json(s).dump(2) + "\n";
    make_directories(out_dir);
    write_file_atomically(out_dir + "/summary.json", summary);
    if (!a.json.empty()) write_output(a.json, summary);
    if (!a.junit.empty()) write_junit_file(a.junit, {junit_suite(s)});
    exit_code = s.interrupted_by != 0 ? 128 + s.interrupted_by : s.findings.empty() ? 0 : 1;
  });
}

}  // namespace moefuzz::cli
