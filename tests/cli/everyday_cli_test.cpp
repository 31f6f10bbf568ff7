// The everyday CLI, end to end through the built binary: `--version`; a misspelled command or option
// named with its nearest known name (exit 2); `replay A B C` reporting the good files past a bad one
// and exiting 2 at the end; duplicated --invariants names counted once; `mutants --mutant X` green
// when X dies; REPRO lines that run as printed from another directory, with a plugin given by a
// relative path stored absolute.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
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

constexpr const char* kMutant = "mutant/z1-rsf-twice";

class EverydayCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("everyday_cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(dir_ / "elsewhere");
  }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(EverydayCli, VersionNamesTheProjectVersion) {
  const RunResult r = run_moefuzz({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("moefuzz " MOEFUZZ_PROJECT_VERSION, 0), 0u) << r.output;
}

TEST_F(EverydayCli, MisspelledCommandOrOptionGetsASuggestion) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"chek"}, "unknown command 'chek'; did you mean 'check'?"},
      {{"replya", "x.moefuzz"}, "did you mean 'replay'?"},
      {{"check", "--casse", "3"}, "unknown option '--casse' for 'moefuzz check'; did you mean '--cases'?"},
      {{"check", "--kernel", "cpu", "--invariant=ORACLE"}, "did you mean '--invariants'?"},
      {{"--max-case-byte", "10", "show", "x"}, "did you mean '--max-case-bytes'?"},
      {{"frobnicate"}, "unknown command 'frobnicate' (moefuzz --help lists the commands)"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_moefuzz(c.args);
    SCOPED_TRACE(c.args[0]);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "one line:\n" << r.output;
  }
  // A global option's value and a command's own positional words are not mistaken for commands.
  EXPECT_EQ(run_moefuzz({"--max-case-bytes", "100000000", "list"}).exit_code, 0);
}

TEST_F(EverydayCli, ReplayReportsEveryGoodFileAndExitsTwoForABadOne) {
  const fs::path good = fs::path(MOEFUZZ_SOURCE_DIR) / "corpora/examples/hostile_sigmoid.moefuzz";
  const fs::path bad = dir_ / "bad.moefuzz";
  std::ofstream(bad) << "MOEFUZZ v1\ntokens = banana\n";
  const RunResult r = run_moefuzz({"replay", good.string(), bad.string(), good.string(), "--kernel", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.moefuzz"), std::string::npos) << r.output;
  // Both good files (before and after the bad one) were replayed.
  size_t held = 0;
  for (size_t at = r.output.find("checks held"); at != std::string::npos;
       at = r.output.find("checks held", at + 1))
    ++held;
  EXPECT_EQ(held, 2u) << r.output;
  EXPECT_NE(r.output.find("1 of 3 files could not be replayed"), std::string::npos) << r.output;
  // All good: 0.
  EXPECT_EQ(run_moefuzz({"replay", good.string(), good.string(), "--kernel", "cpu"}).exit_code, 0);
}

TEST_F(EverydayCli, DuplicatedInvariantNamesAreCountedOnce) {
  const fs::path once = dir_ / "once.json", twice = dir_ / "twice.json";
  for (const auto& [list, json] : {std::pair{"ORACLE", once}, std::pair{"ORACLE,ORACLE,ORACLE", twice}}) {
    const RunResult r =
        run_moefuzz({"check", "--kernel", "cpu", "--cases", "3", "--seed", "5", "--invariants", list, "--out",
                     (dir_ / "o").string(), "--json", json.string()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto a = nlohmann::json::parse(moefuzz::file_text(once)),
             b = nlohmann::json::parse(moefuzz::file_text(twice));
  EXPECT_EQ(b.at("invariants").at("ORACLE").at("pass"), 3) << b.dump();
  EXPECT_EQ(a.at("invariants"), b.at("invariants"));
}

TEST_F(EverydayCli, MutantSubsetIsGreenWhenItsMutantDies) {
  const RunResult r = run_moefuzz({"mutants", "--mutant", kMutant, "--time", "5", "--correct-cases", "2"},
                                  /*cpu_seconds=*/120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kill matrix: GREEN"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("toothless invariants not assessed"), std::string::npos) << r.output;
}

TEST_F(EverydayCli, ReproRunsAsPrintedFromAnotherDirectoryWithARelativePluginPath) {
  // The plugin by a path relative to the working directory, as a user types it.
  const fs::path lib_dir = MOEFUZZ_PLUGIN_LIB_DIR;
  ASSERT_TRUE(fs::exists(lib_dir / "libmoefuzz_faulty_pattern.so"));
  const fs::path out = dir_ / "findings";
  std::string output;
  const std::string check = std::string("'") + MOEFUZZ_BINARY_DIR + "/bin/moefuzz' check --kernel " +
                            "./libmoefuzz_faulty_pattern.so --cases 2 --seed 1 --out '" + out.string() + "'";
  ASSERT_EQ(run_shell_in(lib_dir, check, &output), 1) << output;
  const std::string repro = repro_line(output);
  ASSERT_FALSE(repro.empty()) << output;
  // Stored absolute: the finding's header and its REPRO name the plugin by its absolute path.
  const std::string absolute_plugin = fs::canonical(lib_dir / "libmoefuzz_faulty_pattern.so").string();
  EXPECT_NE(repro.find("--kernel " + absolute_plugin), std::string::npos) << repro;
  fs::path recipe;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().extension() == ".moefuzz") recipe = e.path();
  ASSERT_FALSE(recipe.empty());
  EXPECT_NE(moefuzz::file_text(recipe).find("# kernel: " + absolute_plugin + "\n"), std::string::npos);
  // As printed, from a directory where neither the binary nor the plugin is: the finding fails again.
  std::string replayed;
  EXPECT_EQ(run_shell_in(dir_ / "elsewhere", repro, &replayed), 1) << repro << "\n" << replayed;
  EXPECT_NE(replayed.find("CHECK FAILED"), std::string::npos) << replayed;
  // And replaying the stored file without --kernel from there finds the plugin through its header.
  std::string by_header;
  EXPECT_EQ(
      run_shell_in(dir_ / "elsewhere",
                   std::string("'") + MOEFUZZ_BINARY_DIR + "/bin/moefuzz' replay '" + recipe.string() + "'",
                   &by_header),
      1)
      << by_header;
}

}  // namespace
