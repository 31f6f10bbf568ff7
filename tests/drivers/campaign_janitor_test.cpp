// The campaign's janitor (drivers/campaign_janitor.h): when the campaign dies by SIGKILL, its fuzzer
// groups die and DIR keeps only complete files; when the campaign ends on its own, the janitor
// touches nothing. The campaign is played by a forked child here (the real campaign's SIGKILL trials
// need the fuzz build: tests/reliability/signals_test.cpp, CampaignSigkill, run by scripts/fuzz-ci.sh).
#include "drivers/campaign_janitor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

class Janitor : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moefuzz-janitor-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    for (const char* d :
         {"tmp/libFuzzerTemp.FuzzWithFork1.dir", "raw", "findings", "corpus.old", "corpus.new"})
      fs::create_directories(dir_ / d);
    touch("tmp/libFuzzerTemp.FuzzWithFork1.dir/job1.log");
    touch("raw/finding-1.moefuzz.tmp.4242");  // an atomic write cut short
    touch("raw/finding-2.moefuzz");           // complete
    touch("findings/finding-001.moefuzz");
    touch("corpus.old/abc");  // the merge's swap cut short: corpus moved away, not yet replaced
    touch("corpus.new/def");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& rel) { std::ofstream(dir_ / rel) << "x"; }
  void expect_cleaned() {
    EXPECT_FALSE(fs::exists(dir_ / "tmp"));
    EXPECT_FALSE(fs::exists(dir_ / "raw/finding-1.moefuzz.tmp.4242"));
    EXPECT_TRUE(fs::exists(dir_ / "raw/finding-2.moefuzz"));
    EXPECT_TRUE(fs::exists(dir_ / "findings/finding-001.moefuzz"));
    EXPECT_TRUE(fs::exists(dir_ / "corpus/abc")) << "the previous corpus is restored";
    EXPECT_FALSE(fs::exists(dir_ / "corpus.old"));
    EXPECT_FALSE(fs::exists(dir_ / "corpus.new"));
  }
  fs::path dir_;
};

// A process group that sleeps, as a fuzzer's group does between executions.
pid_t sleeping_group() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sleep", "sleep", "100", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

bool reaped_or_dead(pid_t pid, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return false;
}

TEST_F(Janitor, CleansDirectlyAndKillsTheGroups) {
  const pid_t group = sleeping_group();
  CampaignJanitor::clean_after_death(dir_.string(), {group});
  EXPECT_TRUE(reaped_or_dead(group, std::chrono::seconds(2))) << "the fuzzer group survived";
  expect_cleaned();
}

TEST_F(Janitor, OutlivesACampaignKilledBySigkill) {
  const pid_t group = sleeping_group();  // our child, so this test can reap it
  const pid_t campaign = ::fork();
  if (campaign == 0) {
    CampaignJanitor janitor(dir_.string());
    janitor.watch_group(group);
    ::pause();  // until the SIGKILL
    ::_exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the janitor is told about the group
  ::kill(campaign, SIGKILL);
  ::waitpid(campaign, nullptr, 0);
  EXPECT_TRUE(reaped_or_dead(group, std::chrono::seconds(5))) << "the janitor did not end the fuzzer group";
  // The janitor cleans right after the group is gone.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (fs::exists(dir_ / "tmp") && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  expect_cleaned();
}

TEST_F(Janitor, TouchesNothingWhenTheCampaignEndsOnItsOwn) {
  const pid_t group = sleeping_group();
  {
    CampaignJanitor janitor(dir_.string());
    janitor.watch_group(group);
  }
  EXPECT_TRUE(fs::exists(dir_ / "tmp/libFuzzerTemp.FuzzWithFork1.dir/job1.log"));
  EXPECT_TRUE(fs::exists(dir_ / "raw/finding-1.moefuzz.tmp.4242"));
  EXPECT_TRUE(fs::exists(dir_ / "corpus.new/def"));
  EXPECT_EQ(::kill(group, 0), 0) << "a dismissed janitor killed a group";
  ::kill(-group, SIGKILL);
  ::waitpid(group, nullptr, 0);
}

}  // namespace
}  // namespace moefuzz
