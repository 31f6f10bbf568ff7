#pragma once
// Shared by the reliability suite (tests/reliability/, ctest label `reliability`): the built binary
// and faulty plugins, a fresh temporary folder per test, and small file helpers.
//
// Example:
//   TEST_F(ReliabilityTest, X) {
//     const RunResult r = run_moefuzz({"check", "--kernel", faulty_plugin("crash"), "--out", out()});
//     EXPECT_EQ(r.exit_code, 1) << r.output;
//   }
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_moefuzz.h"
#include "core/file_text.h"

namespace reliability {

namespace fs = std::filesystem;
using moefuzz::file_text;

// A faulty plugin (examples/plugin_faulty): "crash", "hang", "exit", "error", "supports_hang", ...
inline std::string faulty_plugin(const std::string& fault) {
  return MOEFUZZ_BINARY_DIR "/lib/libmoefuzz_faulty_" + fault + ".so";
}

inline std::vector<fs::path> files_in(const fs::path& dir, const std::string& suffix = "") {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (suffix.empty() || (name.size() >= suffix.size() &&
                           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ReliabilityTest : public ::testing::Test {
 protected:
  fs::path dir_ =
      fs::path(::testing::TempDir()) / ("reliability_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    ASSERT_TRUE(fs::exists(faulty_plugin("crash"))) << "build moefuzz_faulty_plugins first";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A hang costs one timeout: keep it short (the variable is what a user sets too).
    ::setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "1", 1);
  }
  void TearDown() override {
    ::unsetenv("MOEFUZZ_PLUGIN_TIMEOUT_S");
    fs::remove_all(dir_);
  }
  std::string out(const std::string& name = "out") const { return (dir_ / name).string(); }
  static nlohmann::json json_of(const fs::path& p) { return nlohmann::json::parse(file_text(p)); }
};

}  // namespace reliability
