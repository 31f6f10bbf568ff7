// `moefuzz mutants` on the user's own kernels: a plugin .so given by path is scored like the zoo - the
// invariants' kill matrix and, with --baselines, the upstream-style checkers - and reported in the
// JSON; a correct registry kernel given as --mutant is refused with exit 2; a GPU mutant named gets
// its row, which says why where it ran no case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/run_moefuzz.h"
#include "core/file_text.h"

namespace {

namespace fs = std::filesystem;

class MutantsCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("mutants_cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(MutantsCli, PluginMutantIsScoredWithTheBaselines) {
  // The pattern plugin writes a fixed function of the indices: a faulty kernel that declares no
  // expected killers (a C plugin cannot), so whichever invariant kills it first counts.
  const fs::path plugin = fs::path(MOEFUZZ_PLUGIN_LIB_DIR) / "libmoefuzz_faulty_pattern.so";
  ASSERT_TRUE(fs::exists(plugin)) << plugin;
  const fs::path json = dir_ / "matrix.json";
  const RunResult r = run_moefuzz({"mutants", "--mutant", plugin.string(), "--baselines", "--time", "5",
                                   "--correct-cases", "1", "--json", json.string()},
                                  /*cpu_seconds=*/300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kill matrix: GREEN"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(moefuzz::file_text(json));
  ASSERT_EQ(j.at("mutants").size(), 1u) << j.dump(2);
  const auto& row = j.at("mutants").at(0);
  EXPECT_EQ(row.at("mutant"), plugin.string());
  EXPECT_TRUE(row.at("killed_as_declared").get<bool>()) << row.dump(2);
  EXPECT_FALSE(row.at("first_killer").get<std::string>().empty()) << row.dump(2);
  // Its output is nowhere near the layer's: even the tame upstream checks catch it.
  EXPECT_TRUE(row.at("baselines").at("allclose").get<bool>()) << row.dump(2);
  EXPECT_TRUE(row.at("baselines").at("check_accuracy").get<bool>()) << row.dump(2);
}

// A GPU mutant of the registry runs only where named. Named, it gets its row: killed where a GPU is
// (GREEN); without one, a row of no cases that says why, and the mutant survives (RED). The matrix
// once dropped the row and called the empty selection GREEN.
TEST_F(MutantsCli, NamedGpuMutantGetsItsRowWithOrWithoutAGpu) {
  const fs::path json = dir_ / "gpu-matrix.json";
  const RunResult r = run_moefuzz({"mutants", "--mutant", "cuda-mutant/z1-rsf-twice", "--time", "30",
                                   "--correct-cases", "1", "--json", json.string()},
                                  /*cpu_seconds=*/300);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  const auto j = nlohmann::json::parse(moefuzz::file_text(json));
  ASSERT_EQ(j.at("mutants").size(), 1u) << j.dump(2);
  const auto& row = j.at("mutants").at(0);
  EXPECT_EQ(row.at("mutant"), "cuda-mutant/z1-rsf-twice");
  if (row.at("cases").get<int64_t>() == 0) {
    std::printf("mutants-cli: no GPU here: the GPU mutant's row ran no case\n");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(row.at("first_refusal").get<std::string>().find("cuda"), std::string::npos) << row.dump(2);
    EXPECT_NE(r.output.find("cuda-mutant/z1-rsf-twice ran no case: no drawn case was in its domain (cuda"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("SURVIVING mutants: cuda-mutant/z1-rsf-twice"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("kill matrix: RED"), std::string::npos) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(row.at("killed_as_declared").get<bool>()) << row.dump(2);
    EXPECT_NE(r.output.find("kill matrix: GREEN"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(j.at("green").get<bool>() && row.at("cases").get<int64_t>() == 0) << j.dump(2);
}

TEST_F(MutantsCli, CorrectRegistryKernelIsNotAMutant) {
  const RunResult r = run_moefuzz({"mutants", "--mutant", "cpu", "--baselines"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'cpu' is a correct registry kernel"), std::string::npos) << r.output;
}

TEST_F(MutantsCli, MissingPluginIsBadInput) {
  const RunResult r = run_moefuzz({"mutants", "--mutant", (dir_ / "no-such.so").string(), "--baselines"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

}  // namespace
