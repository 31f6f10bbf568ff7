// `moefuzz report DIR` end to end, in a real headless browser (Chromium, installed by
// scripts/install-deps.sh): a check of a mutant writes its findings and summary.json, the report
// page is loaded with `chromium --headless --dump-dom`, and the DOM the browser built must hold the
// summary table, each finding's signature, residual pattern and REPRO line, and what the run
// reached. A `<script>` inside a kernel's message must arrive as text, never run. A missing
// Chromium fails the test (CI installs it). A directory that is not moefuzz output exits 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/run_moefuzz.h"
#include "core/file_text.h"

namespace {

namespace fs = std::filesystem;

// The DOM after the page ran, as Chromium serializes it; "" with the reason in *error on failure.
std::string dump_dom(const fs::path& page, const fs::path& profile_dir, std::string* error) {
  // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --user-data-dir='" +
                              profile_dir.string() + "' --dump-dom 'file://" + page.string() +
                              "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return *error = "popen failed", "";
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status != 0) *error = "chromium exited with status " + std::to_string(status);
  return out;
}

class ReportCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("report_cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz"));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
};

TEST_F(ReportCli, FindingsAppearInTheBrowserAndScriptsStayText) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null 2>&1"), 0)
      << "chromium is not installed: scripts/install-deps.sh installs it (Debian package chromium)";
  const fs::path out = dir_ / "check";
  const RunResult check = run_moefuzz({"check", "--kernel", "mutant/z1-rsf-twice", "--cases", "10", "--seed",
                                       "1", "--invariants", "ORACLE,SCALE1", "--out", out.string()});
  ASSERT_EQ(check.exit_code, 1) << check.output;
  ASSERT_TRUE(fs::exists(out / "summary.json")) << check.output;
  // A kernel's message is data: a finding whose message holds markup (as a plugin's error text may).
  std::ofstream(out / "finding-900-ERROR_layer.moefuzz")
      << "MOEFUZZ v1\n# kills: ERROR/layer\n# kernel: evil\n"
         "# message: kernel error: <script>document.body.setAttribute('data-pwned','yes')</script><b "
         "id=\"bold\">x</b>\n"
         "# REPRO: moefuzz replay x --kernel evil\nseed = 1\n";

  const RunResult report = run_moefuzz({"report", out.string()});
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const fs::path page = out / "report.html";
  ASSERT_TRUE(fs::exists(page)) << report.output;
  const std::string html = moefuzz::file_text(page);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "the page fetches nothing";
  EXPECT_EQ(html.find("https://"), std::string::npos) << "the page fetches nothing";

  std::string error;
  const std::string dom = dump_dom(page, dir_ / "chromium-profile", &error);
  ASSERT_TRUE(error.empty()) << error << "\n" << dom;
  // The summary table, the mutant's finding with its residual pattern and a REPRO line that names the
  // saved recipe, and what the run reached.
  EXPECT_NE(dom.find("id=\"summary\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("<td>ORACLE</td>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("ORACLE/"), std::string::npos) << dom;
  // rsf applied twice: every element off by the drawn routed_scaling_factor.
  EXPECT_NE(dom.find("<dd class=\"residual\">constant factor: got = "), std::string::npos) << dom;
  EXPECT_NE(dom.find("REPRO: "), std::string::npos) << dom;
  EXPECT_NE(dom.find("finding-001-ORACLE"), std::string::npos) << dom;
  EXPECT_NE(dom.find("--kernel mutant/z1-rsf-twice"), std::string::npos) << dom;
  EXPECT_NE(dom.find("id=\"reached-routing\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("id=\"reached-hostile_corners\""), std::string::npos) << dom;
  // The injected markup: shown as text, not run, not parsed into elements. The control page proves
  // this browser runs such a script when it is markup, so its absence above means something.
  const fs::path control = dir_ / "control.html";
  std::ofstream(control)
      << "<!DOCTYPE html><html><body><script>document.body.setAttribute('data-pwned','yes')"
         "</script></body></html>\n";
  const std::string control_dom = dump_dom(control, dir_ / "chromium-profile", &error);
  ASSERT_NE(control_dom.find("data-pwned=\"yes\""), std::string::npos) << error << "\n" << control_dom;
  EXPECT_EQ(dom.find("data-pwned=\"yes\""), std::string::npos) << "the script ran:\n" << dom;
  EXPECT_NE(dom.find("&lt;script&gt;document.body.setAttribute"), std::string::npos) << dom;
  EXPECT_EQ(dom.find("<b id=\"bold\">"), std::string::npos) << dom;
}

TEST_F(ReportCli, ADriftDirectoryShowsItsPlot) {
  const fs::path out = dir_ / "drift";
  const RunResult drift = run_moefuzz({"drift", "--kernel", "cpu", "--layers", "4", "--out", out.string()});
  ASSERT_EQ(drift.exit_code, 0) << drift.output;
  ASSERT_TRUE(fs::exists(out / "drift.svg")) << drift.output;
  const RunResult report = run_moefuzz({"report", out.string()});
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string html = moefuzz::file_text(out / "report.html");
  EXPECT_NE(html.find("<h2>Drift</h2>"), std::string::npos) << html.substr(0, 2000);
  EXPECT_NE(html.find("src=\"data:image/svg+xml;base64,"), std::string::npos) << html.substr(0, 2000);
}

TEST_F(ReportCli, ADirectoryWithoutMoefuzzOutputExits2) {
  const RunResult missing = run_moefuzz({"report", (dir_ / "absent").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("is not a directory"), std::string::npos) << missing.output;
  const RunResult empty = run_moefuzz({"report", dir_.string()});
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("holds no moefuzz output"), std::string::npos) << empty.output;
  std::ofstream(dir_ / "summary.json") << "{ not json";
  const RunResult bad = run_moefuzz({"report", dir_.string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("is not valid JSON"), std::string::npos) << bad.output;
}

}  // namespace
