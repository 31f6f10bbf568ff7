// The campaign orchestrator's parts that need no fuzz build (drivers/fuzz_campaign.h): a missing
// fuzz target is a clear InputError naming how to build it, and raw findings (as fuzz targets save
// them) are deduplicated by signature and shrunk, also on resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/case.h"
#include "core/errors.h"
#include "drivers/campaign.h"
#include "drivers/check_engine.h"
#include "drivers/fuzz_campaign.h"
#include "drivers/shrinker.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {
namespace fs = std::filesystem;

TEST(FuzzCampaign, MissingTargetSaysHowToBuildIt) {
  try {
    fuzz_target_binary("/nonexistent/bin", "moe_layer");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cmake --preset fuzz && cmake --build --preset fuzz"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("moe_layer_fuzzer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fuzz_target_binary("/bin", "../sh"), InputError);
  EXPECT_THROW(
      run_fuzz_campaign({.target = "moe_layer", .out_dir = "/tmp/x", .bin_dir = "/nonexistent"}, std::cerr),
      InputError);
}

TEST(FuzzCampaign, HarvestDeduplicatesBySignatureAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("moefuzz-harvest-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto k = make_kernel("mutant/z1-rsf-twice");
  CaseRecipe r;
  r.profile = k->profile();
  r.routing.routed_scaling_factor = 2.5;
  // Two raw findings of the same signature (different seeds), as a fuzz target saves them.
  for (uint64_t seed : {1, 2}) {
    r.seed = seed;
    const CaseReport rep = check_case(*k, materialize(r), {.invariants = select_invariants("all")});
    ASSERT_TRUE(rep.failed());
    save_finding(r, rep.first_failure(), k->name(), (dir / "raw").string(), static_cast<int64_t>(seed));
  }
  const auto first =
      harvest_findings((dir / "raw").string(), (dir / "findings").string(), "cpu", 10, std::cerr);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(fs::exists(first[0].path));
  // Resume: findings/ already holds the signature, nothing new.
  EXPECT_TRUE(
      harvest_findings((dir / "raw").string(), (dir / "findings").string(), "cpu", 10, std::cerr).empty());
  fs::remove_all(dir);
}

// Status lines as libFuzzer prints them (captured from moe_layer_fuzzer -fork=1 and a plain run): in
// fork mode "#N" is the executions of all jobs so far, not the job number (the H200 campaign summary
// once reported 40,744 "fork jobs" and 0 execs from this confusion).
TEST(FuzzCampaign, ReadsExecutionsAndJobsFromLibFuzzerLogs) {
  FuzzCampaignSummary s;
  accumulate_libfuzzer_log(
      "#226: cov: 10221 ft: 10221 corp: 11 exec/s 113 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0\n"
      "#1271: cov: 16641 ft: 17678 corp: 445 exec/s 89 oom/timeout/crash: 0/0/3 time: 19s job: 4 dft_time: "
      "0\n",
      s);
  EXPECT_EQ(s.execs, 1271);
  EXPECT_EQ(s.jobs, 4);
  EXPECT_EQ(s.coverage, 16641);
  EXPECT_EQ(s.features, 17678);
  EXPECT_EQ(s.corpus, 445);
  EXPECT_EQ(s.crashes, 3);
  // A second process adds its executions, jobs and crashes; coverage is the larger of the two.
  accumulate_libfuzzer_log(
      "#500: cov: 100 ft: 200 corp: 10 exec/s 50 oom/timeout/crash: 0/0/1 time: 9s job: 2 dft_time: 0\n", s);
  EXPECT_EQ(s.execs, 1771);
  EXPECT_EQ(s.jobs, 6);
  EXPECT_EQ(s.coverage, 16641);
  EXPECT_EQ(s.crashes, 4);

  FuzzCampaignSummary one;  // a single process: its final stats win over the last status line
  accumulate_libfuzzer_log(
      "#2048\tpulse  cov: 120 ft: 300 corp: 20/4Kb lim: 4096 exec/s: 1024 rss: 40Mb\n"
      "#2100\tNEW    cov: 121 ft: 301 corp: 21/4Kb lim: 4096 exec/s: 1000 rss: 40Mb L: 9/40 MS: 1 Custom-\n"
      "moefuzz-features: reached 17 of 120 semantic buckets\n"
      "stat::number_of_executed_units: 2200\n",
      one);
  EXPECT_EQ(one.execs, 2200);
  EXPECT_EQ(one.jobs, 0);
  EXPECT_EQ(one.coverage, 121);
  EXPECT_EQ(one.semantic, "reached 17 of 120 semantic buckets");
}

TEST(FuzzCampaign, ReadsTheTargetsOptionsFileLikeClusterFuzz) {
  const fs::path dir = fs::temp_directory_path() / "moefuzz-options-test";
  fs::create_directories(dir);
  const std::string path = (dir / "t_fuzzer.options").string();
  {
    std::ofstream f(path);
    f << "[libfuzzer]\n# a comment\nmax_len = 4096\ndict = t_fuzzer.dict\n  entropic=0  "
         "\n\n[asan]\ndetect_leaks = 0\n";
  }
  const std::vector<std::string> flags = libfuzzer_flags_from_options(path);
  ASSERT_EQ(flags.size(), 3u);
  EXPECT_EQ(flags[0], "-max_len=4096");
  EXPECT_EQ(flags[1], "-dict=" + (fs::absolute(dir) / "t_fuzzer.dict").string());
  EXPECT_EQ(flags[2], "-entropic=0");  // [asan] is not libFuzzer's
  EXPECT_TRUE(libfuzzer_flags_from_options((dir / "missing.options").string()).empty());
  {
    std::ofstream f(path);
    f << "[libfuzzer]\n-max_len; rm = 1\n";
  }
  EXPECT_THROW(libfuzzer_flags_from_options(path), InputError);
  // The repository's own files parse, and each names its dictionary.
  for (const char* t : {"recipe_parser_fuzzer", "nvfp4_fuzzer", "routing_fuzzer", "moe_layer_fuzzer"}) {
    const std::vector<std::string> own =
        libfuzzer_flags_from_options(std::string(MOEFUZZ_SOURCE_DIR) + "/fuzz/" + t + ".options");
    EXPECT_TRUE(std::any_of(own.begin(), own.end(), [](const std::string& x) {
      return x.rfind("-dict=", 0) == 0;
    })) << t;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moefuzz
