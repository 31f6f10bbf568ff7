// `moefuzz replay --ledger FILE` (drivers/findings_ledger.h): the repository's ledger
// (corpora/ledger.json) replays clean; a failure not in the ledger is a NEW finding (exit 1); an
// expected failure that passes is an UNEXPECTED PASS (exit 1); a fixed entry passes (exit 0) and
// fails as a REGRESSION when the bug returns (exit 1); a malformed ledger is bad input (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/run_moefuzz.h"

namespace {

namespace fs = std::filesystem;

class LedgerCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("ledger_cli_test_" + std::to_string(::getpid()));
  fs::path finding_ = dir_ / "z1.moefuzz";  // fails on mutant/z1-rsf-twice (its header), passes on cpu
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz"));
    fs::create_directories(dir_);
    fs::copy_file(MOEFUZZ_SOURCE_DIR "/corpora/regressions/z1-rsf-twice.moefuzz", finding_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string ledger(const std::string& findings) {
    const fs::path p = dir_ / "ledger.json";
    std::ofstream(p) << "{\"findings\": [" << findings << "]}\n";
    return p.string();
  }
};

TEST_F(LedgerCli, TheRepositoryLedgerReplaysClean) {
  const RunResult r = run_moefuzz({"replay", "--ledger", MOEFUZZ_SOURCE_DIR "/corpora/ledger.json"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no violation"), std::string::npos) << r.output;
}

TEST_F(LedgerCli, AFailureNotInTheLedgerIsNew) {
  const RunResult r = run_moefuzz({"replay", finding_.string(), "--ledger", ledger("")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("NEW finding SCALE1/output"), std::string::npos) << r.output;
}

TEST_F(LedgerCli, AnExpectedFailureThatPassesIsAnUnexpectedPass) {
  const std::string l =
      ledger(R"({"file": "z1.moefuzz", "signature": "SCALE1/output", "status": "expected-fail"})");
  EXPECT_EQ(run_moefuzz({"replay", "--ledger", l}).exit_code, 0);  // still fails: known
  const RunResult r = run_moefuzz({"replay", "--ledger", l, "--kernel", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("UNEXPECTED PASS"), std::string::npos) << r.output;
}

TEST_F(LedgerCli, AFixedEntryPassesAndItsReturnIsARegression) {
  const std::string l = ledger(R"({"file": "z1.moefuzz", "signature": "SCALE1/output", "status": "fixed"})");
  EXPECT_EQ(run_moefuzz({"replay", "--ledger", l, "--kernel", "cpu"}).exit_code, 0);
  const RunResult r = run_moefuzz({"replay", "--ledger", l});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("REGRESSION"), std::string::npos) << r.output;
}

TEST_F(LedgerCli, AChangedSignatureIsAViolation) {
  const std::string l = ledger(R"({"file": "z1.moefuzz", "signature": "DUP/output", "status": "open"})");
  const RunResult r = run_moefuzz({"replay", "--ledger", l});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("CHANGED signature"), std::string::npos) << r.output;
}

TEST_F(LedgerCli, AMalformedLedgerIsBadInput) {
  for (const std::string& entries : {std::string(R"({"file": "z1.moefuzz", "status": "maybe"})"),
                                     std::string(R"({"file": "z1.moefuzz", "status": "open"})"),
                                     std::string(R"({"signature": "X/y", "status": "open"})")}) {
    const RunResult r = run_moefuzz({"replay", "--ledger", ledger(entries)});
    EXPECT_EQ(r.exit_code, 2) << entries << "\n" << r.output;
    EXPECT_NE(r.output.find("--ledger"), std::string::npos) << r.output;
  }
  EXPECT_EQ(run_moefuzz({"replay", "--ledger", (dir_ / "missing.json").string()}).exit_code, 2);
}

}  // namespace
