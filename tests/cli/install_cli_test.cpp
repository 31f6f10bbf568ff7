// `cmake --install` end to end: the build tree is installed into a temporary prefix, and the
// installed binary is used as a user would, from another directory: `--version`, a short check of a
// mutant, and the REPRO line it prints run as printed by /bin/sh (it names the installed binary
// and absolute paths, so it replays the finding: exit 1). The plugin header and the Python package
// land where docs/decisions.md says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/run_moefuzz.h"

namespace {

namespace fs = std::filesystem;

class InstallCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("install_cli_test_" + std::to_string(::getpid()));
  fs::path prefix_ = dir_ / "prefix";
  fs::path elsewhere_ = dir_ / "elsewhere";
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(elsewhere_);
  }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(InstallCli, InstalledBinaryChecksAndItsReproRunsAsPrinted) {
  std::string out;
  ASSERT_EQ(
      run_shell_in(elsewhere_, "cmake --install '" MOEFUZZ_BINARY_DIR "' --prefix '" + prefix_.string() + "'",
                   &out),
      0)
      << out;
  const fs::path bin = prefix_ / "bin/moefuzz";
  ASSERT_TRUE(fs::exists(bin)) << out;
  EXPECT_TRUE(fs::exists(prefix_ / "include/moefuzz/plugin.h")) << out;
  EXPECT_TRUE(fs::exists(prefix_ / "lib/moefuzz/python/moefuzz/worker.py")) << out;
  EXPECT_TRUE(fs::exists(prefix_ / "lib/moefuzz/python/pyproject.toml")) << out;

  out.clear();
  ASSERT_EQ(run_shell_in(elsewhere_, "'" + bin.string() + "' --version", &out), 0) << out;
  EXPECT_NE(out.find(MOEFUZZ_PROJECT_VERSION), std::string::npos) << out;

  out.clear();
  EXPECT_EQ(run_shell_in(elsewhere_,
                         "'" + bin.string() +
                             "' check --kernel mutant/z1-rsf-twice --cases 10 --seed 1 --invariants ORACLE "
                             "--out findings",
                         &out),
            1)
      << out;
  const std::string repro = repro_line(out);
  ASSERT_FALSE(repro.empty()) << out;
  // The installed binary names itself (not the build tree's, not a bare `moefuzz` off PATH).
  EXPECT_EQ(repro.rfind(bin.string() + " replay ", 0), 0u) << repro;
  fs::create_directories(dir_ / "another");
  std::string replayed;
  EXPECT_EQ(run_shell_in(dir_ / "another", repro, &replayed), 1) << repro << "\n" << replayed;
  EXPECT_NE(replayed.find("CHECK FAILED"), std::string::npos) << replayed;
}

}  // namespace
