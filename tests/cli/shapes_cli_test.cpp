// `moefuzz check --shapes S` for every shape class with default settings: small, medium, large, and
// model:NAME for every model the CLI knows (the list is read from the CLI's own error message, so a
// new model is covered without editing this test). One case each, ORACLE only, to stay short. Every
// class must check on this machine with the default --max-case-bytes (a quarter of the available
// memory): a model layer that does not fit is checked with fewer routed experts, and says so. Every
// recipe in corpora/examples shows and checks (replay against the oracle) with default settings.
// The cap given on the command line reaches check and mutants.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/run_moefuzz.h"

namespace {

namespace fs = std::filesystem;

// The real DeepSeek-V3 layer takes ~15 s of CPU for one ORACLE case here; 300 s is a loaded-machine margin.
constexpr rlim_t kChildCpuSeconds = 300;

// "unknown model 'x' (known: a, b, c)" -> {a, b, c}
std::vector<std::string> known_models() {
  const RunResult r = run_moefuzz({"check", "--shapes", "model:no-such-model", "--cases", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::vector<std::string> out;
  const size_t start = r.output.find("(known: ");
  if (start == std::string::npos) return out;
  const std::string list = r.output.substr(start + 8, r.output.find(')', start) - start - 8);
  for (size_t a = 0, b; a < list.size(); a = b + 2) {
    b = list.find(", ", a);
    if (b == std::string::npos) b = list.size();
    out.push_back(list.substr(a, b - a));
  }
  return out;
}

class ShapesCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("shapes_cli_test_" + std::to_string(::getpid()));
  void SetUp() override { ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")); }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(ShapesCli, EveryShapeClassChecksWithDefaultSettings) {
  const std::vector<std::string> models = known_models();
  ASSERT_GE(models.size(), 4u) << "deepseek-v3, qwen3-moe, mixtral, deepseek-v4-hash at least";
  std::vector<std::string> shapes = {"small", "medium", "large"};
  for (const auto& m : models) shapes.push_back("model:" + m);
  int checked = 0;
  for (const auto& s : shapes) {
    SCOPED_TRACE(s);
    const RunResult r = ::run_moefuzz({"check", "--kernel", "cpu", "--shapes", s, "--cases", "1", "--seed",
                                       "1", "--invariants", "ORACLE", "--out", (dir_ / "out").string()},
                                      kChildCpuSeconds);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("no findings"), std::string::npos) << r.output;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(shapes.size()));
}

TEST_F(ShapesCli, EveryExampleShowsAndChecksWithDefaultSettings) {
  int examples = 0;
  for (const auto& e : fs::directory_iterator(MOEFUZZ_SOURCE_DIR "/corpora/examples")) {
    if (e.path().extension() != ".moefuzz") continue;
    SCOPED_TRACE(e.path().string());
    const RunResult shown = ::run_moefuzz({"show", e.path().string()});
    EXPECT_EQ(shown.exit_code, 0) << shown.output;
    EXPECT_NE(shown.output.find("description: "), std::string::npos) << shown.output;
    // Replay under the default --max-case-bytes, against the oracle (the correct kernel holds on
    // every example). ORACLE only: the metamorphic invariants re-run the kernel on transformed
    // copies, minutes per model-sized example on a loaded 2-core machine.
    const RunResult checked = ::run_moefuzz(
        {"replay", e.path().string(), "--kernel", "cpu", "--invariants", "ORACLE"}, kChildCpuSeconds);
    EXPECT_EQ(checked.exit_code, 0) << checked.output;
    ++examples;
  }
  EXPECT_GE(examples, 5);
}

TEST_F(ShapesCli, AModelLayerAboveTheCapIsCheckedWithFewerExperts) {
  // 1 GB: DeepSeek-V3's 6.4 GB layer halves to 32 routed experts (0.8 GB).
  const RunResult r = ::run_moefuzz(
      {"--max-case-bytes", "1000000000", "check", "--kernel", "cpu", "--shapes", "model:deepseek-v3",
       "--cases", "1", "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "out").string()},
      kChildCpuSeconds);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checking it with 32 of them"), std::string::npos) << r.output;
}

TEST_F(ShapesCli, TheCapReachesTheCampaign) {
  const RunResult r =
      ::run_moefuzz({"--max-case-bytes", "100000", "check", "--kernel", "cpu", "--shapes", "model:mixtral",
                     "--cases", "1", "--seed", "1", "--out", (dir_ / "out").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("above --max-case-bytes 100000 bytes"), std::string::npos) << r.output;
}

TEST_F(ShapesCli, TheCapReachesTheKillMatrix) {
  // z1 dies on the first small cases; under a 1000-byte cap no drawn case is checked, so it survives.
  const std::vector<std::string> args = {
      "mutants", "--mutant", "mutant/z1-rsf-twice", "--cases", "20", "--correct-cases", "1"};
  const RunResult killed = ::run_moefuzz(args);
  EXPECT_EQ(killed.exit_code, 0) << killed.output;
  std::vector<std::string> capped = {"--max-case-bytes", "1000"};
  capped.insert(capped.end(), args.begin(), args.end());
  const RunResult survived = ::run_moefuzz(capped);
  EXPECT_EQ(survived.exit_code, 1) << survived.output;
}

}  // namespace
