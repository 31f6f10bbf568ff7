// Output paths are checked before anything runs (exit 2, no case checked), only regular files are
// ever replaced (never a symlink, pipe or device; "-" is stdout), a run directory never overwrites
// earlier findings, and the default directory keys on the kernel's full identity.
#include <sys/stat.h>

#include "reliability/reliability_support.h"

namespace reliability {
namespace {

RunResult check(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"check", "--kernel", "cpu", "--cases", "3", "--seed", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_moefuzz(args);
}

// Nothing ran: the campaign's banner and summary never appeared.
void expect_refused_before_running(const RunResult& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.output;
  EXPECT_EQ(r.output.find("moefuzz check: kernel"), std::string::npos) << what << ": it ran\n" << r.output;
  EXPECT_NE(r.output.find("error:"), std::string::npos) << what << "\n" << r.output;
}

TEST_F(ReliabilityTest, BadJsonAndOutPathsAreRefusedBeforeTheRun) {
  const fs::path target = dir_ / "target.json";
  { std::ofstream(target) << "precious\n"; }
  fs::create_symlink(target, dir_ / "link.json");
  ASSERT_EQ(::mkfifo((dir_ / "pipe.json").c_str(), 0600), 0);
  fs::create_directories(dir_ / "a_dir");
  { std::ofstream(dir_ / "a_file") << "x"; }
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"symlink --json", {"--out", out(), "--json", (dir_ / "link.json").string()}},
      {"pipe --json", {"--out", out(), "--json", (dir_ / "pipe.json").string()}},
      {"device --json", {"--out", out(), "--json", "/dev/null"}},
      {"directory --json", {"--out", out(), "--json", (dir_ / "a_dir").string()}},
      {"missing folder --json", {"--out", out(), "--json", (dir_ / "no/such/s.json").string()}},
      {"--out is a file", {"--out", (dir_ / "a_file").string()}},
      {"--out under a file", {"--out", (dir_ / "a_file/sub").string()}},
  };
  for (const auto& [what, extra] : cases) expect_refused_before_running(check(extra), what);
  EXPECT_EQ(file_text(target), "precious\n") << "the symlink's target was written through";
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ / "pipe.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the pipe was replaced";
}

TEST_F(ReliabilityTest, DashMeansStdoutAndARegularFileIsReplacedAtomically) {
  const RunResult r = check({"--out", out(), "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"kernel\": \"cpu\""), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists("-")) << "a file named '-' was created";
  const fs::path json = dir_ / "s.json";
  { std::ofstream(json) << "old"; }
  ASSERT_EQ(check({"--out", out(), "--json", json.string()}).exit_code, 0);
  EXPECT_NO_THROW(json_of(json));
  EXPECT_TRUE(files_in(dir_, ".tmp").empty());
}

TEST_F(ReliabilityTest, ASecondRunIntoTheSameOutKeepsTheFirstRunsFindings) {
  const std::vector<std::string> args = {
      "check", "--kernel", "mutant/z1-rsf-twice", "--cases", "40", "--seed", "1", "--out", out()};
  ASSERT_EQ(run_moefuzz(args).exit_code, 1);
  const auto first = files_in(out(), ".moefuzz");
  ASSERT_FALSE(first.empty());
  std::vector<std::string> first_text;
  for (const auto& f : first) first_text.push_back(file_text(f));
  const RunResult again = run_moefuzz(args);
  ASSERT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("findings of an earlier run"), std::string::npos) << again.output;
  const auto second = files_in(out(), ".moefuzz");
  EXPECT_EQ(second.size(), 2 * first.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(file_text(first[i]), first_text[i]) << first[i];
}

TEST_F(ReliabilityTest, DefaultDirectoriesKeyOnTheKernelsFullIdentity) {
  ::setenv("TMPDIR", dir_.c_str(), 1);
  const RunResult a =
      run_moefuzz({"check", "--kernel", "mutant/z1-rsf-twice", "--cases", "40", "--seed", "1"});
  // The same plugin file under two folders: two identities.
  fs::create_directories(dir_ / "p1");
  fs::create_directories(dir_ / "p2");
  fs::copy_file(faulty_plugin("error"), dir_ / "p1/libk.so");
  fs::copy_file(faulty_plugin("error"), dir_ / "p2/libk.so");
  const RunResult b =
      run_moefuzz({"check", "--kernel", (dir_ / "p1/libk.so").string(), "--cases", "1", "--seed", "1"});
  const RunResult c =
      run_moefuzz({"check", "--kernel", (dir_ / "p2/libk.so").string(), "--cases", "1", "--seed", "1"});
  ::unsetenv("TMPDIR");
  EXPECT_EQ(a.exit_code, 1) << a.output;
  EXPECT_EQ(b.exit_code, 1) << b.output;
  EXPECT_EQ(c.exit_code, 1) << c.output;
  std::vector<std::string> dirs;
  for (const auto& d : files_in(dir_ / "moefuzz")) dirs.push_back(d.filename().string());
  ASSERT_EQ(dirs.size(), 3u) << ::testing::PrintToString(dirs);
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "mutant--z1-rsf-twice-seed1"), dirs.end())
      << ::testing::PrintToString(dirs);
}

}  // namespace
}  // namespace reliability
