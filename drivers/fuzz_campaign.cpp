#include "drivers/fuzz_campaign.h"
#include "drivers/finding_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/file_text.h"
#include "core/interrupt.h"
#include "core/recipe_text.h"
#include "core/repro_command.h"
#include "drivers/campaign.h"
#include "drivers/campaign_janitor.h"
#include "drivers/shrinker.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace fs = std::filesystem;
namespace {

std::string file_stem_of(std::string sig) {
  for (char& c : sig)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return sig;
}

std::vector<fs::path> files_in(const fs::path& dir, std::string_view prefix = "",
                               std::string_view suffix = "") {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.rfind(prefix, 0) != 0) continue;
    if (!suffix.empty() && (name.size() < suffix.size() ||
                            name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0))
      continue;
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// fork + exec with extra environment and stdout/stderr to `log_path`; returns the pid of a guardian
// that leads a new process group holding the exec'd program and everything it starts (libFuzzer's
// -fork jobs run through system()). Kill the group with kill(-pid, ...). The guardian relays the
// program's exit status, and when this process dies, even by SIGKILL, it gets PR_SET_PDEATHSIG and
// kills the whole group, so no fuzzer outlives its campaign.
void kill_own_group(int) { kill(0, SIGKILL); }

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& log_path) {
  const pid_t campaign = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InputError("campaign: fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGUSR1, kill_own_group);
    prctl(PR_SET_PDEATHSIG, SIGUSR1);
    if (getppid() != campaign) kill_own_group(0);  // the campaign died before prctl
    const pid_t program = fork();
    if (program < 0) _exit(127);
    if (program == 0) {
      signal(SIGUSR1, SIG_DFL);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    int status = 0;
    while (waitpid(program, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      signal(WTERMSIG(status), SIG_DFL);
      raise(WTERMSIG(status));
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
  }
  setpgid(pid, pid);  // also here: no kill(-pid) may race ahead of the child's own setpgid
  return pid;
}

// Waits for pid at most `seconds`, then kills it. Returns the exit status (or -1 when killed).
int wait_bounded(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= end) {
      kill(-pid, SIGKILL);  // the whole group (spawn)
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

int detect_gpus() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (p == nullptr) return 0;
  int n = 0;
  char line[512];
  while (fgets(line, sizeof line, p) != nullptr)
    if (std::string_view(line).rfind("GPU ", 0) == 0) ++n;
  pclose(p);
  return n;
}

}  // namespace

// libFuzzer's status lines: "#1271: cov: 45 ft: 67 corp: 8 exec/s 89 oom/timeout/crash: 0/0/2 time: 19s
// job: 4 dft_time: 0" (fork mode: "#N" counts the executions of all jobs so far, "job:" the jobs) or
// "#123 NEW cov: 45 ft: 67 corp: 8/1Kb ... exec/s: 900 ..." (one process: "#N" counts executions).
void accumulate_libfuzzer_log(const std::string& text, FuzzCampaignSummary& s) {
  static const std::regex kRuns(R"(^#(\d+))"), kJob(R"( job: (\d+))"), kCov(R"(cov: (\d+))"),
      kFt(R"(ft: (\d+))"), kCorp(R"(corp: (\d+))"), kCrash(R"(oom/timeout/crash: \d+/\d+/(\d+))"),
      kSem(R"(moefuzz-features: (reached .*))"), kUnits(R"(stat::number_of_executed_units: (\d+))");
  std::istringstream in(text);
  std::string line, last;
  std::smatch m;
  int64_t units = 0;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0 && line.find("cov: ") != std::string::npos) last = line;
    if (std::regex_search(line, m, kSem)) s.semantic = m[1];
    if (std::regex_search(line, m, kUnits)) units += std::stoll(m[1]);
  }
  if (last.empty()) return;
  auto num = [&](const std::regex& re) -> int64_t {
    return std::regex_search(last, m, re) ? std::stoll(m[1]) : 0;
  };
  const bool fork_mode = std::regex_search(last, m, kJob);
  if (fork_mode) s.jobs += num(kJob);
  // The parent's cumulative count in fork mode; a single process's final stats when it printed them.
  s.execs += fork_mode || units == 0 ? num(kRuns) : units;
  s.coverage = std::max(s.coverage, num(kCov));
  s.features = std::max(s.features, num(kFt));
  s.corpus = std::max(s.corpus, num(kCorp));
  s.crashes += num(kCrash);
}

std::vector<std::string> libfuzzer_flags_from_options(const std::string& options_path) {
  std::ifstream in(options_path);
  if (!in) return {};
  const fs::path dir = fs::absolute(fs::path(options_path)).parent_path();
  std::vector<std::string> flags;
  std::string line, section;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#' || line[first] == ';') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (line.front() == '[') {
      section = line;
      continue;
    }
    const auto eq = line.find('=');
    if (section != "[libfuzzer]" || eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (key.empty() || key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") != std::string::npos)
      throw InputError(fmt::format("{}: '{}' is not a libFuzzer flag name", options_path, key));
    if (key == "dict" && !fs::path(value).is_absolute()) value = (dir / value).string();
    flags.push_back("-" + key + "=" + value);
  }
  return flags;
}

std::string fuzz_target_binary(const std::string& bin_dir, const std::string& target) {
  if (target.empty() || target.find('/') != std::string::npos)
    throw InputError(
        fmt::format("campaign: --target '{}' must be a fuzz target name such as moe_layer", target));
  const std::string name = target.size() > 7 && target.ends_with("_fuzzer") ? target : target + "_fuzzer";
  const std::string path = bin_dir + "/" + name;
  if (access(path.c_str(), X_OK) != 0)
    throw InputError(
        fmt::format("campaign: fuzz target {} is not built (no executable {}); build the fuzz targets with: "
                    "cmake --preset fuzz && cmake --build --preset fuzz",
                    name, path));
  return path;
}

std::vector<FuzzFinding> harvest_findings(const std::string& raw_dir, const std::string& findings_dir,
                                          const std::string& kernel, double shrink_seconds,
                                          std::ostream& log) {
  make_directories(findings_dir);
  std::set<std::string> known;
  for (const auto& f : files_in(findings_dir, "", ".moefuzz"))
    known.insert(read_finding_header(file_text(f)).kills);
  std::vector<FuzzFinding> out;
  for (const auto& raw : files_in(raw_dir, "", ".moefuzz")) {
    const std::string text = file_text(raw);
    const FindingHeader header = read_finding_header(text);
    const std::string sig = header.kills;
    if (sig.empty() || known.count(sig)) continue;
    std::string kernel_name = header.kernel;
    if (kernel_name.empty()) kernel_name = kernel;
    FuzzFinding f{
        .signature = sig, .path = findings_dir + "/" + file_stem_of(sig) + ".moefuzz", .raw = raw.string()};
    try {
      const CaseRecipe r = parse_recipe(text, raw.string());
      const auto k = make_kernel(kernel_name);
      ShrinkResult s = shrink_recipe(*k, r, {.seconds = shrink_seconds, .expected_signature = sig});
      if (!s.input_failed) {  // not reproducible in this process: keep the raw recipe, never lose it
        s.signature = sig;
        s.shrunk = r;
        s.verdict.message = "did not reproduce when shrinking; recipe kept as found";
      }
      write_file_atomically(f.path, format_regression(s, kernel_name, f.path));
      f.after = shape_summary(s.shrunk);
    } catch (const InputError& e) {
      log << fmt::format("campaign: cannot shrink {}: {}\n", raw.string(), e.what());
      continue;
    }
    known.insert(sig);
    log << fmt::format("FINDING {} -> {} ({})\n", sig, f.path, f.after);
    out.push_back(f);
  }
  return out;
}

// A path the campaign needs by default (the fuzz binaries, seeds, .options): as given when it
// exists from the working directory, else under the source tree this moefuzz was built from, so
// `moefuzz campaign` works from any directory.
std::string from_build(const std::string& relative) {
  if (relative.empty() || relative[0] == '/' || fs::exists(relative)) return relative;
  const std::string in_source = std::string(MOEFUZZ_SOURCE_DIR) + "/" + relative;
  return fs::exists(in_source) ? in_source : relative;
}

// libFuzzer's -fork mode keeps its work directory under $TMPDIR; the campaign gives its children
// DIR/tmp and empties it at start (what a killed run left) and on every exit this process sees.
struct CampaignTemp {
  std::string path;
  explicit CampaignTemp(std::string p) : path(std::move(p)) {
    std::error_code ec;
    fs::remove_all(path, ec);
    make_directories(path);
  }
  ~CampaignTemp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  CampaignTemp(const CampaignTemp&) = delete;
  CampaignTemp& operator=(const CampaignTemp&) = delete;
};

FuzzCampaignSummary run_fuzz_campaign(const FuzzCampaignOptions& o, std::ostream& log) {
  const std::string bin = fuzz_target_binary(from_build(o.bin_dir), o.target);
  if (o.out_dir.empty()) throw InputError("campaign: --out DIR is required");
  if (!(o.seconds > 0)) throw InputError("campaign: --time must be > 0");
  if (o.workers < 1) throw InputError("campaign: --workers must be >= 1");
  const std::string dir = o.out_dir, corpus = dir + "/corpus", crashes = dir + "/crashes", raw = dir + "/raw",
                    findings = dir + "/findings", logs = dir + "/logs", converted_dir = dir + "/converted";
  make_directories(dir);
  // First, while this process has one thread (a CUDA kernel's make_kernel may start more): cleans up
  // if a SIGKILL ends the campaign, which can clean nothing itself.
  CampaignJanitor janitor(dir);
  (void)make_kernel(o.kernel);  // an unknown kernel is exit 2 here, not in every child
  // A merge interrupted by SIGKILL left the previous corpus under corpus.old: resume from it (the
  // janitor does the same when it outlives the campaign).
  if (!fs::exists(corpus) && fs::exists(dir + "/corpus.old")) fs::rename(dir + "/corpus.old", corpus);
  for (const auto& d : {corpus, crashes, raw, findings, logs, converted_dir}) make_directories(d);

  FuzzCampaignSummary s;
  s.target = fs::path(bin).filename().string();
  s.kernel = o.kernel;
  std::string seeds = o.seed_dir;
  if (seeds.empty() && fs::is_directory(from_build("corpora/" + s.target)))
    seeds = from_build("corpora/" + s.target);
  if (seeds.empty())
    log << fmt::format("campaign: no seed corpus found for {} (corpora/{}): starting empty\n", s.target,
                       s.target);
  // The target's settings as ClusterFuzz reads them: <name>.options beside the binary, else fuzz/.
  std::string options = fs::path(bin).string() + ".options";
  if (!fs::exists(options)) options = from_build("fuzz/" + s.target + ".options");
  const CampaignTemp temp(dir + "/tmp");
  const std::vector<std::string> option_flags = libfuzzer_flags_from_options(options);

  const int gpus = o.gpus >= 0 ? o.gpus : detect_gpus();
  const int procs = std::max(1, std::min(o.workers, gpus));
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int p = 0; p < procs; ++p) {
    const int forks = o.workers / procs + (p < o.workers % procs ? 1 : 0);
    std::vector<std::string> argv = {
        bin,
        fmt::format("-fork={}", forks),
        "-ignore_crashes=1",
        fmt::format("-max_total_time={}", static_cast<int64_t>(std::ceil(o.seconds))),
        "-artifact_prefix=" + crashes + "/",
        "-print_final_stats=1"};
    argv.insert(argv.end(), option_flags.begin(), option_flags.end());
    argv.push_back(corpus);
    if (!seeds.empty()) argv.push_back(seeds);
    std::vector<std::pair<std::string, std::string>> env = {
        {"MOEFUZZ_KERNEL", o.kernel}, {"MOEFUZZ_FINDINGS_DIR", raw}, {"TMPDIR", temp.path}};
    if (gpus > 0) env.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(p));
    pids.push_back(spawn(argv, env, fmt::format("{}/fuzzer-{}.log", logs, p)));
    janitor.watch_group(pids.back());
  }
  s.processes = procs;
  log << fmt::format("campaign: {} process(es) of {} (-fork={} in all, {}s), kernel {}, corpus {}{}\n", procs,
                     bin, o.workers, o.seconds, o.kernel, corpus,
                     option_flags.empty() ? "" : ", options " + options);

  // Poll: convert crash inputs into recipes and shrink new signatures while the fuzzers run.
  std::set<std::string> converted;
  auto harvest = [&] {
    for (const auto& c : files_in(crashes, "crash-")) {
      // Markers live apart from crashes/ so libFuzzer's folder holds only its inputs.
      const std::string marker = converted_dir + "/" + c.filename().string();
      if (converted.count(c.string()) || fs::exists(marker)) continue;
      converted.insert(c.string());
      // The target decodes the input exactly as it did when fuzzing and saves the recipe into raw/.
      const std::string clog = logs + "/convert-" + c.filename().string() + ".log";
      const pid_t converter =
          spawn({bin, c.string()}, {{"MOEFUZZ_KERNEL", o.kernel}, {"MOEFUZZ_FINDINGS_DIR", raw}}, clog);
      janitor.watch_group(converter);
      wait_bounded(converter, 60);
      if (file_text(clog).find("moefuzz-fuzz: finding saved to") == std::string::npos)
        s.unconverted.push_back(c.string());
      write_file_atomically(marker, "");
    }
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto& f : harvest_findings(raw, findings, o.kernel, o.shrink_seconds, log)) {
      f.found_within = now;
      s.findings.push_back(f);
    }
  };
  size_t alive = pids.size();
  while (alive > 0) {
    alive = 0;
    for (pid_t& pid : pids) {
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid)
        pid = -1;
      else
        ++alive;
    }
    // SIGINT/SIGTERM: end the fuzzers' groups, wait for them, and unwind (CampaignTemp removes
    // DIR/tmp, libFuzzer's fork directories; raw/ and findings/ are written atomically). The
    // caller reports 128 + N.
    if (interrupt_requested()) {
      for (pid_t pid : pids)
        if (pid > 0) kill(-pid, SIGKILL);
      for (pid_t pid : pids)
        if (pid > 0)
          while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
          }
      throw Interrupted(interrupt_signal());
    }
    harvest();
    if (alive > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    // libFuzzer honours -max_total_time; this is only a backstop against a hung fuzzer.
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.seconds + 120)
      for (pid_t pid : pids)
        if (pid > 0) kill(-pid, SIGKILL);  // the whole group (spawn)
  }
  harvest();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int p = 0; p < procs; ++p)
    accumulate_libfuzzer_log(file_text(fmt::format("{}/fuzzer-{}.log", logs, p)), s);
  // Throughput of the whole campaign (libFuzzer's own exec/s is an average of the last job's).
  if (s.execs > 0) s.execs_per_second = static_cast<double>(s.execs) / s.seconds;

  // Merge: minimize the corpus into corpus.new, then swap (the old corpus survives a kill mid-way).
  const std::string merged = dir + "/corpus.new";
  fs::remove_all(merged);
  if (files_in(corpus).empty()) {  // every input crashed (a mutant that fails everywhere): nothing to merge
    s.corpus = 0;
    write_file_atomically(dir + "/summary.json", fuzz_summary_json(s).dump(2) + "\n");
    return s;
  }
  make_directories(merged);
  const pid_t merger =
      spawn({bin, "-merge=1", merged, corpus}, {{"MOEFUZZ_KERNEL", o.kernel}}, logs + "/merge.log");
  janitor.watch_group(merger);
  const int st = wait_bounded(merger, std::max(60.0, o.seconds));
  if (st == 0 && !files_in(merged).empty()) {
    fs::remove_all(dir + "/corpus.old");
    fs::rename(corpus, dir + "/corpus.old");
    fs::rename(merged, corpus);
    fs::remove_all(dir + "/corpus.old");
  } else {
    fs::remove_all(merged);
    log << "campaign: corpus merge failed (see logs/merge.log); corpus kept unmerged\n";
  }
  s.corpus = static_cast<int64_t>(files_in(corpus).size());
  // Semantic regions of the merged corpus: the merge runs every corpus input through the target in
  // one process, which prints the buckets it reached at exit (fuzz/semantic_features.h). Fork-mode
  // jobs print theirs into libFuzzer's temporary job logs, which the parent does not keep.
  FuzzCampaignSummary merge_run;
  accumulate_libfuzzer_log(file_text(logs + "/merge.log"), merge_run);
  if (!merge_run.semantic.empty()) s.semantic = merge_run.semantic + " by the merged corpus";
  write_file_atomically(dir + "/summary.json", fuzz_summary_json(s).dump(2) + "\n");
  return s;
}

std::string format_fuzz_summary(const FuzzCampaignSummary& s) {
  std::string out = fmt::format("moefuzz campaign: {} on kernel {}, {} process(es), {:.1f}s\n", s.target,
                                s.kernel, s.processes, s.seconds);
  out += fmt::format(
      "  {} fork jobs, execs {} ({:.0f}/s), coverage {} edges, {} features, corpus {} inputs, crashes {}\n",
      s.jobs, s.execs, s.execs_per_second, s.coverage, s.features, s.corpus, s.crashes);
  if (!s.semantic.empty()) out += "  semantic: " + s.semantic + "\n";
  if (s.findings.empty()) out += "  no new findings\n";
  for (const auto& f : s.findings)
    out += fmt::format("  FINDING {} (found within {:.0f} s): {}\n    {}\n    REPRO: {} replay {}\n",
                       f.signature, f.found_within, f.path, f.after, repro_program(),
                       shell_quote(std::filesystem::absolute(f.path).lexically_normal().string()));
  for (const auto& u : s.unconverted)
    out += fmt::format("  crash input without a recipe (a real crash?): {}\n", u);
  return out;
}

nlohmann::json fuzz_summary_json(const FuzzCampaignSummary& s) {
  nlohmann::json j = {{"target", s.target},
                      {"kernel", s.kernel},
                      {"seconds", s.seconds},
                      {"processes", s.processes},
                      {"jobs", s.jobs},
                      {"execs", s.execs},
                      {"execs_per_second", s.execs_per_second},
                      {"coverage", s.coverage},
                      {"features", s.features},
                      {"corpus", s.corpus},
                      {"crashes", s.crashes},
                      {"semantic", s.semantic}};
  j["findings"] = nlohmann::json::array();
  for (const auto& f : s.findings)
    j["findings"].push_back({{"signature", f.signature},
                             {"path", f.path},
                             {"raw", f.raw},
                             {"after", f.after},
                             {"found_within_s", f.found_within}});
  j["unconverted"] = s.unconverted;
  return j;
}

}  // namespace moefuzz
