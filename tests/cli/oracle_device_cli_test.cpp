// `--oracle-device cpu|gpu|auto` and MOEFUZZ_ORACLE_DEVICE (oracles/gpu/gpu_exact_dots.h): a bad value is
// a usage error; `gpu` without a usable GPU is exit 2 with one message (never a silent CPU run); with a
// GPU, a check with the GPU dots gives the same verdicts as with the CPU's; `auto` (the default) runs
// anywhere, with the same verdicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "oracles/gpu/gpu_exact_dots.h"
#include "run_moefuzz.h"

namespace {

const char* const kCheck[] = {"check", "--kernel", "cpu", "--cases", "6", "--seed", "5"};

std::vector<std::string> with(std::vector<std::string> front) {
  for (const char* a : kCheck) front.emplace_back(a);
  return front;
}

TEST(OracleDeviceCli, AnUnknownDeviceIsAUsageError) {
  const RunResult r = run_moefuzz({"--oracle-device", "tpu", "list"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::string out;
  EXPECT_EQ(run_shell_in(".", "MOEFUZZ_ORACLE_DEVICE=tpu '" + test_build_dir() + "/bin/moefuzz' list", &out),
            2);
  EXPECT_NE(out.find("oracle device must be 'cpu', 'gpu' or 'auto'"), std::string::npos) << out;
}

TEST(OracleDeviceCli, GpuWithoutAGpuIsExit2AndWithOneTheSameVerdicts) {
  std::string why;
  const bool gpu = moefuzz::gpu::gpu_exact_dots_available(&why);
  const RunResult cpu_run = run_moefuzz(with({"--oracle-device", "cpu"}), 120);
  ASSERT_EQ(cpu_run.exit_code, 0) << cpu_run.output;
  const RunResult flag = run_moefuzz(with({"--oracle-device", "gpu"}), 120);
  std::string env_out;
  std::string line = "MOEFUZZ_ORACLE_DEVICE=gpu '" + test_build_dir() + "/bin/moefuzz'";
  for (const char* a : kCheck) line += std::string(" ") + a;
  const int env_rc = run_shell_in(".", line, &env_out);
  if (!gpu) {
    EXPECT_EQ(flag.exit_code, 2) << flag.output;
    EXPECT_NE(flag.output.find("oracle device 'gpu' requested"), std::string::npos) << flag.output;
    EXPECT_EQ(env_rc, 2) << env_out;
    EXPECT_NE(env_out.find("oracle device 'gpu' requested"), std::string::npos) << env_out;
    // The flag wins over the environment.
    std::string cpu_out;
    std::string cpu_line =
        "MOEFUZZ_ORACLE_DEVICE=gpu '" + test_build_dir() + "/bin/moefuzz' --oracle-device cpu list";
    EXPECT_EQ(run_shell_in(".", cpu_line, &cpu_out), 0) << cpu_out;
    return;
  }
  EXPECT_EQ(flag.exit_code, 0) << flag.output;
  EXPECT_EQ(env_rc, 0) << env_out;
}

TEST(OracleDeviceCli, AutoIsTheDefaultAndRunsWithOrWithoutAGpu) {
  const RunResult cpu_run = run_moefuzz(with({"--oracle-device", "cpu"}), 120);
  const RunResult auto_run = run_moefuzz(with({"--oracle-device", "auto"}), 120);
  const RunResult default_run = run_moefuzz(with({}), 120);
  ASSERT_EQ(cpu_run.exit_code, 0) << cpu_run.output;
  EXPECT_EQ(auto_run.exit_code, 0) << auto_run.output;
  EXPECT_EQ(default_run.exit_code, 0) << default_run.output;
  // The verdict table (every invariant's counts and largest err/bound), without its time% column.
  const auto verdicts = [](const std::string& out) {
    std::istringstream in(out.substr(std::min(out.size(), out.find("\ninvariant "))));
    std::string line, table;
    std::getline(in, line);
    std::getline(in, line);  // the header
    while (std::getline(in, line) && !line.empty() && line.find("worker time") == std::string::npos) {
      std::istringstream cells(line);
      std::vector<std::string> row{std::istream_iterator<std::string>(cells), {}};
      if (!row.empty()) row.pop_back();
      for (const std::string& cell : row) table += cell + " ";
      table += "\n";
    }
    return table;
  };
  ASSERT_NE(verdicts(cpu_run.output).find("ORACLE"), std::string::npos) << cpu_run.output;
  EXPECT_EQ(verdicts(auto_run.output), verdicts(cpu_run.output));
  EXPECT_EQ(verdicts(default_run.output), verdicts(cpu_run.output));
}

}  // namespace
