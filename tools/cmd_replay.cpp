// moefuzz replay FILE... [--kernel K] [--profile P] [--invariants a,b]: re-run saved cases and print the
// report.
// The kernel defaults to the one named in the file's "# kernel:" header (findings carry it).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/case.h"
#include "core/errors.h"
#include "core/file_text.h"
#include "core/memory_budget.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "core/repro_command.h"
#include "drivers/campaign.h"
#include "drivers/finding_file.h"
#include "drivers/findings_ledger.h"
#include "drivers/junit_results.h"
#include "drivers/memory_gate.h"
#include "drivers/ordered_parallel.h"
#include "kernels/kernel_name.h"
#include "kernels/registry.h"
#include "kernels/worker_device.h"
#include "tools/check_workers.h"
#include "tools/commands.h"
#include "tools/global_options.h"
#include "tools/tensor_file_options.h"

namespace moefuzz::cli {
namespace {

// --sanitize: re-run this replay under compute-sanitizer (memcheck, then racecheck). Device memory
// errors and races are the sanitizer's job (STYLE.md); only CUDA kernels touch device memory.
std::string find_compute_sanitizer() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t a = 0, b; a <= p.size(); a = b + 1) {
      b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      dirs.push_back(p.substr(a, b - a));
    }
  }
  dirs.push_back("/usr/local/cuda/bin");
  for (const auto& d : dirs)
    if (!d.empty() && access((d + "/compute-sanitizer").c_str(), X_OK) == 0) return d + "/compute-sanitizer";
  return "";
}

int run_under_sanitizer(const std::string& sanitizer, const std::string& tool,
                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {sanitizer, "--tool",
                                   tool,      "--error-exitcode",
                                   "3",       std::filesystem::read_symlink("/proc/self/exe").string(),
                                   "replay"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::cout << "moefuzz replay --sanitize: " << tool << "\n" << std::flush;
  const pid_t pid = fork();
  if (pid == 0) {
    // Every device buffer its own allocation, so that memcheck knows each one's bounds
    // (kernels/cuda/moe_pipeline.cu otherwise carves a run's buffers from one).
    setenv("MOEFUZZ_CUDA_SEPARATE_BUFFERS", "1", 1);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 3;
  return WEXITSTATUS(status);
}

}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("replay", "Re-run saved cases (findings, regressions) and print the report");
  static std::vector<std::string> files;
  static std::string kernel_arg, profile_arg, invariants = "all";
  cmd->add_option("FILE", files, "Recipe files (default with --ledger: every file the ledger lists)");
  static std::string ledger_path;
  cmd->add_option(
      "--ledger", ledger_path,
      "Judge each result against this findings ledger (docs/ledger.md): exit 1 on a new finding, a "
      "changed signature, a fixed entry failing or an expected failure passing");
  cmd->add_option("--kernel", kernel_arg, "Kernel (default: the file's '# kernel:' header, else cpu)");
  cmd->add_option("--profile", profile_arg, "Check against this profile instead of the kernel's claimed one");
  cmd->add_option("--invariants", invariants, "Comma-separated invariant codes, or all")
      ->capture_default_str();
  static std::string junit;
  cmd->add_option("--junit", junit,
                  "Write JUnit XML here: one test case per invariant and finding of each file");
  static int jobs = 0;  // 0 = every core
  cmd->add_option("-j,--jobs", jobs,
                  "Files replayed at once (default: all cores; output stays in file order)")
      ->check(CLI::PositiveNumber);
  static TensorFileArgs tensor_files;
  add_tensor_file_options(cmd, tensor_files);
  static bool sanitize = false;
  cmd->add_flag("--sanitize", sanitize,
                "Re-run under compute-sanitizer (memcheck, then racecheck); needs a CUDA kernel");
  cmd->callback([&exit_code] {
    std::optional<FindingsLedger> ledger;
    if (!ledger_path.empty()) ledger = load_findings_ledger(ledger_path);
    if (files.empty() && ledger) files = ledger->files();
    if (files.empty()) throw InputError("replay: no FILE given (and no --ledger to take them from)");
    if (sanitize) {
      const std::string sanitizer = find_compute_sanitizer();
      for (const auto& path : files) {
        std::string k = kernel_arg;
        if (k.empty()) {
          k = read_finding_header(file_text(path)).kernel;
        }
        if (!runs_on_a_gpu(k))
          throw InputError(fmt::format(
              "--sanitize: kernel '{}' is not a CUDA kernel (compute-sanitizer checks device memory; "
              "use --kernel cuda on a build with CUDA)",
              k.empty() ? "cpu" : k));
      }
      if (sanitizer.empty())
        throw InputError(
            "--sanitize: compute-sanitizer not found on PATH or in /usr/local/cuda/bin (it ships with the "
            "CUDA Toolkit)");
      int worst = 0;
      for (const char* tool : {"memcheck", "racecheck"}) {
        for (const auto& path : files) {
          std::vector<std::string> args = {path, "--invariants", invariants, "--max-case-bytes",
                                           std::to_string(global_options().max_case_bytes)};
          if (!kernel_arg.empty()) args.insert(args.end(), {"--kernel", kernel_arg});
          if (!profile_arg.empty()) args.insert(args.end(), {"--profile", profile_arg});
          if (!tensor_files.weights.empty())
            args.insert(args.end(),
                        {"--weights", tensor_files.weights, "--w13-order", tensor_files.w13_order});
          if (tensor_files.layer >= 0)
            args.insert(args.end(), {"--layer", std::to_string(tensor_files.layer)});
          if (!tensor_files.inputs.empty()) args.insert(args.end(), {"--inputs", tensor_files.inputs});
          const int rc = run_under_sanitizer(sanitizer, tool, args);
          // 3 = the sanitizer found errors; 1 = a check failed; both fail the replay.
          if (rc != 0) worst = std::max(worst, rc == 2 ? 2 : 1);
        }
      }
      exit_code = worst;
      return;
    }
    // A bad file is reported and skipped: the others still replay, and the exit code is 2 at the end.
    int failed = 0, bad = 0, ledger_violations = 0;
    JunitSuite suite{.name = "moefuzz replay"};
    (void)select_invariants(invariants);  // a bad --invariants is one usage error, not one per file
    // Files replay on -j threads, each with its own kernel; what they print comes out in file order.
    struct Replayed {
      CaseRecipe recipe;
      std::string kernel_name, repro, input_error;
      CaseReport rep;
    };
    // As `check -j`: memory measured once (which files are refused depends on the file alone), and
    // the workers together never hold more than it (drivers/memory_gate.h).
    const int64_t memory_at_start = available_memory_bytes();
    MemoryGate memory(std::max<int64_t>(memory_at_start, 1));
    auto replay_one = [&](int worker, uint64_t i) {
      Replayed d;
      if (i >= files.size()) return d;
      const std::string& path = files[i];
      try {
        CaseRecipe r = load_recipe(path, tensor_files, global_options().max_case_bytes);
        // The whole check (oracle, transformed cases), not only the case, must fit: refused up front.
        if (const std::string why = check_memory_refusal(r, memory_at_start); !why.empty())
          throw InputError(fmt::format("{}: {}", path, why));
        std::string kernel_name = kernel_arg;
        if (kernel_name.empty()) {
          kernel_name = read_finding_header(file_text(path)).kernel;
          if (kernel_name.empty()) kernel_name = "cpu";
        }
        if (runs_on_a_gpu(kernel_name))
          bind_worker_gpu(worker);  // kernels/worker_device.h: each worker thread on its GPU
        const auto kernel = make_kernel(kernel_name);
        CheckOptions o{.invariants = select_invariants(invariants)};
        std::optional<Verdict> supports_fault;
        const std::string why = supports_or_fault(*kernel, r, supports_fault);
        if (!why.empty() && !supports_fault)
          throw InputError(
              fmt::format("{}: kernel {} does not support this recipe: {}", path, kernel_name, why));
        // The report states the contract in force (describe_recipe reads recipe.profile).
        r.profile = profile_arg.empty() ? kernel->profile() : profile_by_name(profile_arg).name;
        o.profile = profile_arg;
        if (supports_fault) {
          d.rep = fault_report(*supports_fault, o);
        } else {
          const MemoryGate::Hold held(memory, estimate_check_bytes(r));
          d.rep = check_case(*kernel, materialize(r, global_options().max_case_bytes), o);
        }
        d.rep.baseline.reset();
        d.repro = repro_replay_command(path, stored_kernel_name(kernel_name)) +
                  (profile_arg.empty() ? "" : " --profile " + profile_arg) +
                  tensor_file_repro_args(tensor_files);
        d.recipe = std::move(r);
        d.kernel_name = kernel_name;
      } catch (const InputError& e) {
        d.input_error = e.what();
      }
      return d;
    };
    auto report = [&](uint64_t i, Replayed& d) {
      if (i >= files.size()) return false;
      const std::string& path = files[i];
      if (!d.input_error.empty()) {
        ++bad;
        add_junit_error(suite, path, d.input_error);
        std::cout << std::flush;
        std::cerr << "moefuzz: error: " << d.input_error << "\n";
        return true;
      }
      const CaseReport& rep = d.rep;
      add_junit_cases(suite, path, d.kernel_name, rep, d.repro);
      if (rep.failed()) {
        ++failed;
        std::cout << format_failure_report(d.recipe, rep.first_failure(), d.kernel_name, d.repro);
      } else {
        std::cout << fmt::format("{}: all {} checks held on kernel {} ({:.2f}s)\n", path, rep.verdicts.size(),
                                 d.kernel_name, rep.seconds);
      }
      if (ledger) {
        std::vector<std::string> failures;
        for (const auto& v : rep.verdicts)
          if (v.failed()) failures.push_back(v.signature());
        const LedgerJudgement j = ledger->judge(path, failures);
        std::cout << fmt::format("{}: ledger: {}\n", path, j.message);
        if (!j.ok) {
          ++ledger_violations;
          add_junit_error(suite, path, "ledger: " + j.message);
        }
      }
      for (const auto& v : rep.verdicts)
        std::cout << fmt::format("  {:<8} {:<8} {}\n", v.invariant,
                                 v.outcome == Outcome::kPass      ? "pass"
                                 : v.outcome == Outcome::kFail    ? "FAIL"
                                 : v.outcome == Outcome::kSkip    ? "skip"
                                 : v.outcome == Outcome::kVacuous ? "vacuous"
                                                                  : "not-eval",
                                 v.message);
      return true;
    };
    const int threads = std::min<int>(jobs > 0 ? jobs : default_jobs(), static_cast<int>(files.size()));
    // Workers of a GPU kernel named here share its GPUs as `check -j` workers do (a kernel named by
    // each file's header is known only inside its worker: those keep the defaults, set for 16).
    set_gpu_workers(kernel_arg, threads);
    run_in_index_order<Replayed>(
        threads, [](int) {}, replay_one, report);
    if (bad > 0 && files.size() > 1)
      std::cerr << fmt::format("moefuzz replay: {} of {} files could not be replayed\n", bad, files.size());
    if (!junit.empty()) write_junit_file(junit, {suite});
    // With a ledger, known failures are expected: only its violations fail the run.
    if (ledger && ledger_violations + bad == 0 && failed > 0)
      std::cout << fmt::format("ledger {}: {} expected failure(s), no violation\n", ledger_path, failed);
    const bool any_failure = ledger ? ledger_violations > 0 : failed > 0;
    exit_code = bad ? kExitUsage : any_failure ? kExitCheckFailed : kExitOk;
  });
}

}  // namespace moefuzz::cli
