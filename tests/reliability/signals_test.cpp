// Signals: SIGINT/SIGTERM end a run at the next boundary with the summary so far and its JSON;
// SIGKILL at any time leaves every finding complete and replayable, no process of the kernel alive
// (they die with moefuzz) and no temporary file.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <random>
#include <regex>
#include <thread>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

struct Started {
  pid_t pid = -1;
  int out_fd = -1;
};

// Starts bin/moefuzz with stdout and stderr to `log`.
Started start_moefuzz(const std::vector<std::string>& args, const fs::path& log) {
  const std::string binary = MOEFUZZ_BINARY_DIR "/bin/moefuzz";
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Started s;
  s.pid = ::fork();
  if (s.pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return s;
}

// Every process whose parent is `pid` (the isolated kernel calls).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// Waits until the process has a child that lives on (the hanging kernel call, not the short
// isolated calls of loading the plugin and of supports()) or gives up after `limit`.
std::vector<pid_t> wait_for_children(pid_t pid, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    auto c = children_of(pid);
    if (!c.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (children_of(pid) == c) return c;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

void expect_gone_soon(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {  // up to 2 s: the kernel delivers the death signal at once
      gone = !alive(p);
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "orphaned kernel process " << p << " still running";
    if (!gone) ::kill(p, SIGKILL);  // never leave one spinning on the machine
  }
}

// Every file in `dir`: no temporary file, and every finding (*.moefuzz) complete and replaying to the
// signature its header names. Returns the number of findings checked.
int expect_complete_replayable_findings(const fs::path& dir) {
  int findings = 0;
  for (const auto& f : files_in(dir)) {
    const std::string name = f.filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << "temporary file left: " << f;
    if (name.size() < 8 || name.compare(name.size() - 8, 8, ".moefuzz") != 0) continue;
    ++findings;
    const fs::path report = fs::path(f).replace_extension(".txt");
    // The recipe is written first, then its report: a kill between leaves a recipe alone, still
    // complete and replayable.
    const RunResult r = run_moefuzz({"replay", f.string()});
    EXPECT_EQ(r.exit_code, 1) << "finding " << f << " does not replay\n" << r.output;
    // ... to the signature its header names (`# kills: INVARIANT/stage`, or CLASS/call for a fault).
    const std::string text = file_text(f);
    const size_t at = text.find("# kills: ");
    EXPECT_NE(at, std::string::npos) << "finding without its signature: " << f;
    if (at == std::string::npos) continue;
    const std::string signature = text.substr(at + 9, text.find('\n', at) - at - 9);
    const std::string code = signature.substr(0, signature.find('/'));
    EXPECT_TRUE(r.output.find(signature) != std::string::npos ||
                std::regex_search(r.output, std::regex("\\b" + code + "\\s+FAIL")))
        << "finding " << f << " (" << signature << ") replays to another failure\n"
        << r.output;
    if (fs::exists(report)) {
      EXPECT_NE(file_text(report).find("REPRO:"), std::string::npos) << report;
    }
  }
  return findings;
}

// Processes still running (not zombies) whose command line mentions `needle` (a run's directory).
std::vector<pid_t> live_processes_mentioning(const std::string& needle) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid() || !alive(pid)) continue;
    std::string cmdline = file_text(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

class Signals : public ReliabilityTest, public ::testing::WithParamInterface<int> {};

TEST_P(Signals, PrintTheSummarySoFarWriteTheJsonAndEndTheKernel) {
  ::setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "60", 1);  // the hang outlives the test unless we end it
  const fs::path log = dir_ / "log", json = dir_ / "s.json";
  const Started s = start_moefuzz({"check", "--kernel", faulty_plugin("hang"), "--cases", "5", "--seed", "1",
                                   "--out", out(), "--json", json.string()},
                                  log);
  const std::vector<pid_t> kids = wait_for_children(s.pid, std::chrono::seconds(20));
  ASSERT_FALSE(kids.empty()) << file_text(log);
  ::kill(s.pid, GetParam());
  int status = 0;
  ASSERT_EQ(::waitpid(s.pid, &status, 0), s.pid);
  const std::string text = file_text(log);
  ASSERT_TRUE(WIFEXITED(status)) << "died from the signal instead of handling it\n" << text;
  EXPECT_EQ(WEXITSTATUS(status), 128 + GetParam()) << text;
  EXPECT_NE(text.find("interrupted by signal " + std::to_string(GetParam())), std::string::npos) << text;
  EXPECT_NE(text.find("invariant"), std::string::npos) << "no summary table\n" << text;
  const nlohmann::json j = json_of(json);
  EXPECT_EQ(j.at("interrupted_by_signal"), GetParam());
  expect_gone_soon(kids);
}

INSTANTIATE_TEST_SUITE_P(IntAndTerm, Signals, ::testing::Values(SIGINT, SIGTERM));

TEST_F(ReliabilityTest, SigkillOfMoefuzzEndsTheKernelsProcessToo) {
  ::setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "60", 1);
  const Started s = start_moefuzz(
      {"check", "--kernel", faulty_plugin("hang"), "--cases", "5", "--seed", "1", "--out", out()},
      dir_ / "log");
  const std::vector<pid_t> kids = wait_for_children(s.pid, std::chrono::seconds(20));
  ASSERT_FALSE(kids.empty());
  ::kill(s.pid, SIGKILL);
  ::waitpid(s.pid, nullptr, 0);
  expect_gone_soon(kids);
}

// >= 20 kills at random times: whatever was written is a complete, replayable finding, no kernel
// process survives, and no temporary file is left.
TEST_F(ReliabilityTest, RandomTimeSigkillTrialsLeaveCompleteReplayableFindings) {
  std::mt19937 rng(20261201);  // fixed: a failure reproduces
  std::uniform_int_distribution<int> delay_ms(50, 1500);
  int findings = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const fs::path dir = dir_ / ("t" + std::to_string(trial));
    // Alternate a correct kernel's mutant (findings written as they come) and a crashing plugin.
    const std::string kernel = trial % 2 == 0 ? "mutant/z1-rsf-twice" : faulty_plugin("crash");
    const Started s = start_moefuzz({"check", "--kernel", kernel, "--cases", "60", "--seed",
                                     std::to_string(trial + 1), "--out", dir.string()},
                                    dir_ / ("log" + std::to_string(trial)));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    const std::vector<pid_t> kids = children_of(s.pid);
    ::kill(s.pid, SIGKILL);
    ::waitpid(s.pid, nullptr, 0);
    expect_gone_soon(kids);
    findings += expect_complete_replayable_findings(dir);
  }
  EXPECT_GT(findings, 0) << "no trial wrote a finding: the kills were all too early to test anything";
  RecordProperty("findings_checked", findings);
}

// `moefuzz campaign` killed at random times (libFuzzer fork jobs, crash conversion, harvest and
// shrinking, the final merge): its janitor (drivers/campaign_janitor.h) ends every fuzzer and removes
// libFuzzer's work directories and cut-short writes; the findings are complete and replayable.
// The campaign needs the libFuzzer targets of the fuzz preset: scripts/fuzz-ci.sh builds them and runs
// this test with MOEFUZZ_FUZZ_BIN_DIR set (there a missing target fails it); plain ctest skips it.
TEST_F(ReliabilityTest, CampaignSigkillTrialsLeaveNoFuzzerNoTemporaryFileAndReplayableFindings) {
  const char* bin_dir = std::getenv("MOEFUZZ_FUZZ_BIN_DIR");
  if (bin_dir == nullptr)
    GTEST_SKIP() << "needs the fuzz build: scripts/fuzz-ci.sh runs it with MOEFUZZ_FUZZ_BIN_DIR";
  ASSERT_TRUE(fs::exists(fs::path(bin_dir) / "moe_layer_fuzzer")) << "no moe_layer_fuzzer in " << bin_dir;
  std::mt19937 rng(20261202);  // fixed: a failure reproduces
  std::uniform_int_distribution<int> delay_ms(300, 5000);
  int findings = 0;
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const fs::path dir = dir_ / ("campaign" + std::to_string(trial));
    // Seconds of fuzzing and of shrinking short enough that later kills land in the merge too.
    const Started s =
        start_moefuzz({"campaign", "--target", "moe_layer", "--kernel", "mutant/z1-rsf-twice", "--time", "3",
                       "--shrink-time", "1", "--workers", "1", "--bin-dir", bin_dir, "--out", dir.string()},
                      dir_ / ("campaign-log" + std::to_string(trial)));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ::kill(s.pid, SIGKILL);
    ::waitpid(s.pid, nullptr, 0);
    // The janitor's work takes a moment: wait (bounded) until nothing of the run is left running.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<pid_t> left = live_processes_mentioning(dir.string());
    while (!left.empty() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      left = live_processes_mentioning(dir.string());
    }
    EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the killed campaign still running";
    for (pid_t p : left) ::kill(p, SIGKILL);
    EXPECT_FALSE(fs::exists(dir / "tmp")) << "libFuzzer's work directory left behind";
    EXPECT_FALSE(fs::exists(dir / "corpus.new"));
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      EXPECT_EQ(it->path().filename().string().find(".tmp."), std::string::npos)
          << "cut-short write left: " << it->path();
    findings += expect_complete_replayable_findings(dir / "raw");
    findings += expect_complete_replayable_findings(dir / "findings");
  }
  EXPECT_GT(findings, 0) << "no trial wrote a finding: the kills were all too early to test anything";
  RecordProperty("findings_checked", findings);
}

}  // namespace
}  // namespace reliability
