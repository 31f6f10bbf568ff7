// `moefuzz check -j N` (drivers/campaign.h, CampaignOptions::jobs): the cases, verdicts, tallies and
// findings - the files, their names and numbering, their contents - are the same for 1 and 3 worker
// threads, on a mutant that produces findings and on a correct kernel. And the ordered worker pool
// under it (drivers/ordered_parallel.h) commits in index order, stops where told and rethrows a
// worker's exception at its index.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <unistd.h>

#include "core/file_text.h"
#include "drivers/campaign.h"
#include "drivers/ordered_parallel.h"
#include "kernels/registry.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

// File name -> contents, with the run's own directory spelled out of the contents (REPRO lines name
// the finding's path).
std::map<std::string, std::string> files_in(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = moefuzz::file_text(e.path());
    for (size_t at; (at = text.find(dir.string())) != std::string::npos;)
      text.replace(at, dir.string().size(), "<dir>");
    out[e.path().filename().string()] = text;
  }
  return out;
}

struct CampaignRun {
  CampaignSummary summary;
  std::map<std::string, std::string> files;
  std::string log;
};

CampaignRun run_with_jobs(const std::string& kernel_name, int jobs, int64_t cases, uint64_t seed) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("parallel_check_" + std::to_string(::getpid()) + "_" + std::to_string(seed) + "_" +
                        std::to_string(jobs) + "_" + std::to_string(std::hash<std::string>{}(kernel_name)));
  fs::remove_all(dir);
  const auto kernel = make_kernel(kernel_name);
  CampaignOptions o;
  o.kernel_name = kernel_name;
  o.cases = cases;
  o.seed = seed;
  o.invariants = select_invariants("all");
  o.out_dir = dir.string();
  o.jobs = jobs;
  o.worker_kernel = [kernel_name](int) { return make_kernel(kernel_name); };
  std::ostringstream log;
  CampaignRun r;
  r.summary = run_campaign(*kernel, o, log);
  r.log = log.str();
  for (size_t at; (at = r.log.find(dir.string())) != std::string::npos;)
    r.log.replace(at, dir.string().size(), "<dir>");
  if (fs::exists(dir)) r.files = files_in(dir);
  fs::remove_all(dir);
  return r;
}

void expect_same(const CampaignRun& a, const CampaignRun& b) {
  EXPECT_EQ(a.summary.cases, b.summary.cases);
  EXPECT_EQ(a.summary.unsupported, b.summary.unsupported);
  EXPECT_EQ(a.summary.last_unsupported, b.summary.last_unsupported);
  ASSERT_EQ(a.summary.tallies.size(), b.summary.tallies.size());
  for (const auto& [code, t] : a.summary.tallies) {
    SCOPED_TRACE(code);
    ASSERT_TRUE(b.summary.tallies.count(code));
    const InvariantTally& u = b.summary.tallies.at(code);
    EXPECT_EQ(t.passed, u.passed);
    EXPECT_EQ(t.failed, u.failed);
    EXPECT_EQ(t.skipped, u.skipped);
    EXPECT_EQ(t.vacuous, u.vacuous);
    EXPECT_EQ(t.not_evaluated, u.not_evaluated);
    EXPECT_EQ(t.max_ratio, u.max_ratio);  // bit for bit: the same verdicts
  }
  ASSERT_EQ(a.summary.findings.size(), b.summary.findings.size());
  for (size_t i = 0; i < a.summary.findings.size(); ++i) {
    EXPECT_EQ(a.summary.findings[i].signature, b.summary.findings[i].signature);
    EXPECT_EQ(a.summary.findings[i].occurrences, b.summary.findings[i].occurrences);
    EXPECT_EQ(fs::path(a.summary.findings[i].recipe_path).filename(),
              fs::path(b.summary.findings[i].recipe_path).filename());
  }
  EXPECT_EQ(a.files, b.files);  // same names, same numbering, same contents
  EXPECT_EQ(a.log, b.log);      // the same FINDING lines in the same order
}

TEST(ParallelCheck, MutantFindingsDoNotDependOnJobs) {
  const CampaignRun one = run_with_jobs("mutant/z1-rsf-twice", 1, 30, 5);
  const CampaignRun three = run_with_jobs("mutant/z1-rsf-twice", 3, 30, 5);
  ASSERT_FALSE(one.summary.findings.empty())
      << "the mutant must produce findings for the comparison to mean anything";
  EXPECT_EQ(one.summary.cases, 30);
  expect_same(one, three);
}

// Kernels whose results depend on their earlier calls (a race that follows the run count, an
// autotuner that switches on a shape's third call): every worker has its own instance, so the history
// a case sees must not depend on which worker checks it or what that worker checked before.
TEST(ParallelCheck, KernelsWithCallHistoryGiveTheSameFindingsForAnyJobs) {
  for (const char* name : {"mutant/z6-racy-combine", "mutant/autotune-switch"}) {
    SCOPED_TRACE(name);
    const CampaignRun one = run_with_jobs(name, 1, 30, 5);
    ASSERT_FALSE(one.summary.findings.empty())
        << "the mutant must produce findings for the comparison to mean anything";
    EXPECT_EQ(one.summary.cases, 30);
    expect_same(one, run_with_jobs(name, 3, 30, 5));
    expect_same(one, run_with_jobs(name, 2, 30, 5));
  }
}

TEST(ParallelCheck, CorrectKernelTalliesDoNotDependOnJobs) {
  const CampaignRun one = run_with_jobs("cpu", 1, 30, 9);
  const CampaignRun three = run_with_jobs("cpu", 3, 30, 9);
  EXPECT_TRUE(one.summary.findings.empty());
  EXPECT_EQ(one.summary.cases, 30);
  expect_same(one, three);
}

TEST(OrderedParallel, CommitsInIndexOrderAndStops) {
  for (int jobs : {1, 2, 5}) {
    std::vector<uint64_t> committed;
    std::atomic<int> started{0};
    run_in_index_order<uint64_t>(
        jobs, [&](int) { ++started; },
        [](int, uint64_t i) {
          // Later indices finish first: the commit order must not follow the finish order.
          std::this_thread::sleep_for(std::chrono::microseconds(200 * (i % 3)));
          return i * i;
        },
        [&](uint64_t i, uint64_t& v) {
          EXPECT_EQ(v, i * i);
          committed.push_back(i);
          return committed.size() < 25;
        });
    ASSERT_EQ(committed.size(), 25u) << "jobs " << jobs;
    for (uint64_t i = 0; i < committed.size(); ++i) EXPECT_EQ(committed[i], i) << "jobs " << jobs;
    EXPECT_EQ(started.load(), jobs);
  }
}

TEST(OrderedParallel, RethrowsAWorkersExceptionAtItsIndex) {
  for (int jobs : {1, 3}) {
    std::vector<uint64_t> committed;
    EXPECT_THROW(run_in_index_order<int>(
                     jobs, [](int) {},
                     [](int, uint64_t i) {
                       if (i == 7) throw std::runtime_error("seven");
                       return 0;
                     },
                     [&](uint64_t i, int&) {
                       committed.push_back(i);
                       return true;
                     }),
                 std::runtime_error);
    EXPECT_EQ(committed.size(), 7u) << "every index before the failing one is committed, none after";
  }
}

TEST(OrderedParallel, RethrowsAStartFailure) {
  EXPECT_THROW(run_in_index_order<int>(
                   3,
                   [](int w) {
                     if (w == 1) throw std::runtime_error("no kernel for worker 1");
                   },
                   [](int, uint64_t) { return 0; }, [](uint64_t, int&) { return true; }),
               std::runtime_error);
}

}  // namespace
}  // namespace moefuzz
