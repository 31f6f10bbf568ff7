// `--junit FILE` on check, replay and mutants: the file is valid JUnit XML as CI servers read it
// (tests/cli/junit_check.py parses it with Python's xml.etree and checks every count), with one test
// case per invariant and one per finding. python3 is part of the set-up (scripts/), so its absence
// fails this test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/run_moefuzz.h"

namespace {

namespace fs = std::filesystem;

// The parsed test cases of a JUnit file; fails the test when the validator rejects it.
nlohmann::json junit_cases(const fs::path& file) {
  const std::string command =
      "python3 '" MOEFUZZ_SOURCE_DIR "/tests/cli/junit_check.py' '" + file.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return nlohmann::json::array();
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << file << ": " << out;
  return nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
}

int count(const nlohmann::json& cases, const std::string& result, const std::string& name_prefix = "") {
  int n = 0;
  for (const auto& c : cases)
    if (c.at("result") == result && c.at("name").get<std::string>().rfind(name_prefix, 0) == 0) ++n;
  return n;
}

class JunitCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("junit_cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz"));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(JunitCli, CheckHasOneCasePerInvariantAndPerFinding) {
  const fs::path xml = dir_ / "check.xml";
  const RunResult r = run_moefuzz({"check", "--kernel", "mutant/z1-rsf-twice", "--cases", "20", "--seed", "1",
                                   "--out", (dir_ / "out").string(), "--junit", xml.string()},
                                  120);
  ASSERT_EQ(r.exit_code, 1) << r.output;
  const nlohmann::json cases = junit_cases(xml);
  ASSERT_TRUE(cases.is_array()) << cases;
  EXPECT_GE(count(cases, "failure", "finding "), 1) << cases.dump(1);
  EXPECT_GE(count(cases, "failure", "SCALE1"), 1) << cases.dump(1);
  EXPECT_GE(count(cases, "pass", "STRUCT"), 1) << cases.dump(1);
  for (const auto& c : cases) {
    if (c.at("name").get<std::string>().rfind("finding ", 0) == 0) {
      EXPECT_NE(c.at("text").get<std::string>().find("REPRO: "), std::string::npos) << c;
    }
  }
  // No temporary file left beside it (written atomically).
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2) << "check.xml and out/ only";
}

TEST_F(JunitCli, ReplayHasEveryFileAndAnErrorForABadOne) {
  const fs::path xml = dir_ / "replay.xml", bad = dir_ / "bad & <odd>.moefuzz";
  std::ofstream(bad) << "MOEFUZZ v1\ntokens = \x01\n";
  const std::string good = MOEFUZZ_SOURCE_DIR "/corpora/examples/hostile_sigmoid.moefuzz";
  const RunResult r =
      run_moefuzz({"replay", good, bad.string(), "--kernel", "cpu", "--junit", xml.string()}, 120);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const nlohmann::json cases = junit_cases(xml);
  ASSERT_TRUE(cases.is_array()) << cases;
  EXPECT_GE(count(cases, "pass", "ORACLE"), 1) << cases.dump(1);
  EXPECT_EQ(count(cases, "error"), 1) << cases.dump(1);
}

TEST_F(JunitCli, MutantsHasOneCasePerMutantInvariantAndCorrectKernel) {
  const fs::path xml = dir_ / "mutants.xml";
  const RunResult r = run_moefuzz({"mutants", "--mutant", "mutant/z1-rsf-twice", "--time", "5",
                                   "--correct-cases", "2", "--junit", xml.string()},
                                  120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json cases = junit_cases(xml);
  ASSERT_TRUE(cases.is_array()) << cases;
  EXPECT_EQ(count(cases, "pass", "mutant/z1-rsf-twice"), 1) << cases.dump(1);
  EXPECT_GE(count(cases, "skipped"), 10) << "invariants: toothlessness not assessed on a subset";
  EXPECT_GE(count(cases, "pass", "cpu"), 1) << cases.dump(1);
  EXPECT_EQ(count(cases, "failure"), 0) << cases.dump(1);
}

}  // namespace
