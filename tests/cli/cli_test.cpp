// The moefuzz CLI's user-facing contract: exit codes (0 ok, 2 bad usage or input), one-line error
// messages, and that a hostile recipe claiming terabytes is rejected fast with little memory.
// Runs the built binary (MOEFUZZ_BINARY_DIR/bin/moefuzz) in a child process.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/run_moefuzz.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

namespace {

namespace fs = std::filesystem;

// A child under RLIMIT_AS (address space) and RLIMIT_CPU: the whole CLI needs ~50 MiB.
constexpr rlim_t kChildAddressSpace = rlim_t{1} << 30;
constexpr rlim_t kChildCpuSeconds = 60;

RunResult run_moefuzz(const std::vector<std::string>& args) {
  return ::run_moefuzz(args, kChildCpuSeconds, kChildAddressSpace);
}

class Cli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // Exit 2 with exactly one line, "moefuzz: error: <file>...<expected>".
  void expect_input_error(const RunResult& r, const std::string& expected) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(r.output.starts_with("moefuzz: error: ")) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  }
};

TEST_F(Cli, ShowPrintsEveryExample) {
  const fs::path examples = fs::path(MOEFUZZ_SOURCE_DIR) / "corpora" / "examples";
  int shown = 0;
  for (const auto& entry : fs::directory_iterator(examples)) {
    if (entry.path().extension() != ".moefuzz") continue;
    SCOPED_TRACE(entry.path().string());
    // Default settings: show prints every example, model-sized ones included.
    const auto r = run_moefuzz({"show", entry.path().string()});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("MOEFUZZ v1\nseed = "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("description: tokens "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("estimated size: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("tensors:"), std::string::npos) << r.output;
    ++shown;
  }
  EXPECT_GE(shown, 5);
}

TEST_F(Cli, ShowOfASmallCasePrintsTensorStatistics) {
  const auto r = run_moefuzz({"show", MOEFUZZ_SOURCE_DIR "/corpora/examples/hostile_sigmoid.moefuzz"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t stats = r.output.find("tensors:\n");
  ASSERT_NE(stats, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hidden", stats), std::string::npos) << r.output;
}

TEST_F(Cli, ModelSizedCaseShowsAndItsStatisticsObeyTheCap) {
  const std::string ds = MOEFUZZ_SOURCE_DIR "/corpora/examples/deepseek_v3.moefuzz";
  const auto r = run_moefuzz({"show", ds});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("statistics skipped"), std::string::npos) << r.output;
  expect_input_error(run_moefuzz({"show", "--stats", ds, "--max-case-bytes", "1000000"}),
                     "raise it with --max-case-bytes");
}

TEST_F(Cli, MalformedTruncatedAndUnknownVersionExitTwo) {
  expect_input_error(run_moefuzz({"show", write("bad.moefuzz", "MOEFUZZ v1\ntokens = 4\nexperts = many\n")}),
                     "bad.moefuzz:3: field 'experts'");
  expect_input_error(run_moefuzz({"show", write("cut.moefuzz", "MOEFUZZ v1\ntokens = ")}),
                     "cut.moefuzz:2: field 'tokens': missing value");
  expect_input_error(run_moefuzz({"show", write("v9.moefuzz", "MOEFUZZ v9\n")}),
                     "v9.moefuzz:1: unknown version");
  expect_input_error(run_moefuzz({"show", write("bin.moefuzz", std::string("\x7F"
                                                                           "ELF\0\0\0",
                                                                           7))}),
                     "bin.moefuzz:1:");
  expect_input_error(run_moefuzz({"show", (dir_ / "absent.moefuzz").string()}), "cannot open");
}

TEST_F(Cli, TerabyteClaimIsRejectedFastWithLittleMemory) {
  const std::string path = write("huge.moefuzz", "MOEFUZZ v1\ntokens = 16777216\nhidden = 1048576\n");
  // show prints the claim's size without allocating it; --stats would materialize it: refused.
  const auto shown = run_moefuzz({"show", path});
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_NE(shown.output.find("estimated size: "), std::string::npos) << shown.output;
  EXPECT_LT(shown.max_rss_kib, 256 * 1024) << "peak RSS " << shown.max_rss_kib << " KiB";
  const auto r = run_moefuzz({"show", "--stats", path});
  expect_input_error(r, "--max-case-bytes");
  // Derived limits: the CLI's own footprint is tens of MiB; anything near the claim (32 TiB of
  // hidden states alone) would be killed by RLIMIT_AS long before. 256 MiB and 10 s leave a wide
  // margin for a loaded 2-core CI machine while catching any allocation proportional to the claim.
  EXPECT_LT(r.max_rss_kib, 256 * 1024) << "peak RSS " << r.max_rss_kib << " KiB";
  EXPECT_LT(r.seconds, 10.0);
}

TEST_F(Cli, MaxCaseBytesIsAGlobalOption) {
  const std::string hostile = MOEFUZZ_SOURCE_DIR "/corpora/examples/hostile_sigmoid.moefuzz";
  expect_input_error(run_moefuzz({"--max-case-bytes", "1000", "show", hostile}), "limit is 1000 bytes");
  expect_input_error(run_moefuzz({"show", hostile, "--max-case-bytes", "1000"}), "limit is 1000 bytes");
  EXPECT_EQ(run_moefuzz({"--max-case-bytes", "-5", "show", hostile}).exit_code, 2);
  EXPECT_EQ(run_moefuzz({"--max-case-bytes", "99999999999999999999999", "show", hostile}).exit_code, 2);
}

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_moefuzz({}).exit_code, 2);
  EXPECT_EQ(run_moefuzz({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(run_moefuzz({"show"}).exit_code, 2);
  EXPECT_EQ(run_moefuzz({"show", "--no-such-flag", "x.moefuzz"}).exit_code, 2);
  EXPECT_EQ(run_moefuzz({"--help"}).exit_code, 0);
}

}  // namespace
