// The check-engine commands of the moefuzz CLI, end to end through the built binary
// (MOEFUZZ_BINARY_DIR/bin/moefuzz): `check` on a correct kernel (exit 0, summary table, valid JSON),
// `check` on a mutant (exit 1, a finding written atomically with the report banner and a REPRO
// line), `replay` of that finding (exit 1 with the mutant, 0 with the correct kernel), usage errors
// (exit 2, one clear message), `mutants` and `drift`.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/run_moefuzz.h"
#include "core/file_text.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

// The longest command here (mutants with a 2 s budget plus its false-positive sweep) needs well
// under a minute of CPU; no address-space cap (the kill matrix may materialize large cases).
constexpr rlim_t kChildCpuSeconds = 120;

RunResult run_moefuzz(const std::vector<std::string>& args) { return ::run_moefuzz(args, kChildCpuSeconds); }

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The Z1-style mutant: routed_scaling_factor applied in the top-k and again in the combine.
constexpr const char* kMutant = "mutant/z1-rsf-twice";

class CheckCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("check_cli_test_" + std::to_string(::getpid()));
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs check on the mutant once per test and returns its finding's recipe file.
  fs::path mutant_finding() {
    const fs::path out = dir_ / "mutant";
    const RunResult r =
        run_moefuzz({"check", "--kernel", kMutant, "--cases", "40", "--seed", "1", "--out", out.string()});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    for (const auto& p : files_in(out))
      if (p.extension() == ".moefuzz") return p;
    ADD_FAILURE() << "no finding in " << out << "\n" << r.output;
    return {};
  }
};

TEST_F(CheckCli, CorrectKernelPassesWithSummaryTableAndJson) {
  const fs::path out = dir_ / "cpu", json = dir_ / "summary.json";
  const RunResult r = run_moefuzz({"check", "--kernel", "cpu", "--cases", "20", "--seed", "1", "--out",
                                   out.string(), "--json", json.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("invariant"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("max err/bound"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ORACLE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no findings"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(json));
  const nlohmann::json j = nlohmann::json::parse(moefuzz::file_text(json));  // throws (fails) on invalid JSON
  EXPECT_EQ(j.at("kernel"), "cpu");
  EXPECT_EQ(j.at("seed"), 1);
  EXPECT_EQ(j.at("cases"), 20);
  EXPECT_TRUE(j.at("findings").empty());
  EXPECT_TRUE(j.at("invariants").contains("ORACLE"));
  EXPECT_EQ(j.at("invariants").at("ORACLE").at("fail"), 0);
  // A passing campaign writes no finding: only the summary that `moefuzz report` reads, the same JSON.
  ASSERT_EQ(files_in(out).size(), 1u) << "a passing campaign writes no finding";
  EXPECT_EQ(files_in(out).front().filename(), "summary.json");
  EXPECT_EQ(nlohmann::json::parse(moefuzz::file_text(out / "summary.json")), j);
}

TEST_F(CheckCli, SameSeedSameSummary) {
  const fs::path a = dir_ / "a.json", b = dir_ / "b.json";
  for (const auto& p : {a, b})
    run_moefuzz({"check", "--kernel", "cpu", "--cases", "5", "--seed", "9", "--out", (dir_ / "o").string(),
                 "--json", p.string()});
  nlohmann::json ja = nlohmann::json::parse(moefuzz::file_text(a)),
                 jb = nlohmann::json::parse(moefuzz::file_text(b));
  // Where the time went: the kernel's runs and the oracle's evaluations each took some of it.
  for (const char* phase : {"kernel", "oracle", "generation", "other"})
    EXPECT_GE(ja.at("seconds_by_phase").at(phase).get<double>(), 0.0) << phase;
  EXPECT_GT(ja.at("seconds_by_phase").at("kernel").get<double>(), 0.0);
  EXPECT_GT(ja.at("seconds_by_phase").at("oracle").get<double>(), 0.0);
  for (const char* timing : {"seconds", "seconds_by_invariant", "seconds_by_phase"}) {
    ASSERT_TRUE(ja.contains(timing)) << timing;
    ja.erase(timing);
    jb.erase(timing);
  }
  EXPECT_EQ(ja, jb);
}

// --weight-format checks only drawn cases of one weight format: the bf16-only mutant is caught among
// bf16 cases and is the correct kernel among NVFP4 ones; the others are passed over as unsupported.
TEST_F(CheckCli, WeightFormatSelectsTheDrawnCases) {
  const fs::path bf16_json = dir_ / "bf16.json", nvfp4_json = dir_ / "nvfp4.json";
  const RunResult bf16 =
      run_moefuzz({"check", "--kernel", "mutant/b7-ragged-k-tile-dropped", "--weight-format", "bf16",
                   "--cases", "8", "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "b").string(),
                   "--json", bf16_json.string()});
  EXPECT_EQ(bf16.exit_code, 1) << bf16.output;
  const RunResult nvfp4 =
      run_moefuzz({"check", "--kernel", "mutant/b7-ragged-k-tile-dropped", "--weight-format", "nvfp4",
                   "--cases", "8", "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "n").string(),
                   "--json", nvfp4_json.string()});
  EXPECT_EQ(nvfp4.exit_code, 0) << nvfp4.output;
  for (const auto& p : {bf16_json, nvfp4_json}) {
    const nlohmann::json j = nlohmann::json::parse(moefuzz::file_text(p));
    EXPECT_EQ(j.at("cases"), 8);
    EXPECT_GT(j.at("unsupported").get<int64_t>(), 0) << "the other format's draws are passed over";
  }
  EXPECT_EQ(run_moefuzz({"check", "--weight-format", "fp8", "--cases", "1"}).exit_code, 2);
}

// --weight-format mxfp4: the MXFP4-only M1 mutant (last block scale read as 0xFF) is caught among
// MXFP4 cases and is the correct kernel among bf16 ones.
TEST_F(CheckCli, WeightFormatMxfp4SelectsTheDrawnCases) {
  const RunResult mx =
      run_moefuzz({"check", "--kernel", "mutant/m1-mx-scale-tail-unmasked", "--weight-format", "mxfp4",
                   "--cases", "30", "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "m").string()});
  EXPECT_EQ(mx.exit_code, 1) << mx.output;
  // The same selection on the correct kernel: the MXFP4 cases pass (the mutant declines every other
  // format, as an MXFP4-only kernel would).
  const RunResult cpu =
      run_moefuzz({"check", "--kernel", "cpu", "--weight-format", "mxfp4", "--cases", "8", "--seed", "1",
                   "--invariants", "ORACLE", "--out", (dir_ / "c").string()});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.output;
  EXPECT_NE(cpu.output.find("8 cases in"), std::string::npos) << cpu.output;
}

// --expert-bias checks only drawn cases with expert biases: the M5 mutant (b1 dropped) is caught among
// them, and cpu-matmul-ogs (the CPU pipeline under the triton-matmul-ogs contract) passes such cases.
TEST_F(CheckCli, ExpertBiasSelectsTheDrawnCases) {
  const RunResult m5 =
      run_moefuzz({"check", "--kernel", "mutant/m5-fc1-bias-dropped", "--expert-bias", "--cases", "4",
                   "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "m5").string()});
  EXPECT_EQ(m5.exit_code, 1) << m5.output;
  const fs::path json = dir_ / "bias.json";
  const RunResult cpu =
      run_moefuzz({"check", "--kernel", "cpu-matmul-ogs", "--expert-bias", "--cases", "6", "--seed", "1",
                   "--out", (dir_ / "cb").string(), "--json", json.string()});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.output;
  const nlohmann::json j = nlohmann::json::parse(moefuzz::file_text(json));
  EXPECT_EQ(j.at("cases"), 6);
  EXPECT_GE(j.at("invariants").at("ORACLE").at("pass").get<int64_t>(), 4) << j.dump();
}

// --weight-format fp8_block: the FP8-only F9 mutant (the up half's weight-scale block row shifted) is
// caught among FP8 layers, and the correct kernel passes the same cases non-vacuously.
TEST_F(CheckCli, WeightFormatFp8BlockSelectsTheDrawnCases) {
  const RunResult f9 =
      run_moefuzz({"check", "--kernel", "mutant/f9-scale-block-row-offset", "--weight-format", "fp8_block",
                   "--cases", "6", "--seed", "1", "--invariants", "ORACLE", "--out", (dir_ / "f").string()});
  EXPECT_EQ(f9.exit_code, 1) << f9.output;
  const fs::path json = dir_ / "fp8.json";
  const RunResult cpu =
      run_moefuzz({"check", "--kernel", "cpu", "--weight-format", "fp8_block", "--cases", "6", "--seed", "1",
                   "--invariants", "ORACLE", "--out", (dir_ / "c8").string(), "--json", json.string()});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.output;
  const nlohmann::json j = nlohmann::json::parse(moefuzz::file_text(json));
  EXPECT_EQ(j.at("cases"), 6);
  EXPECT_GT(j.at("invariants").at("ORACLE").at("pass").get<int64_t>(), 0) << cpu.output;
}

TEST_F(CheckCli, MutantIsCaughtAndItsFindingReplays) {
  const fs::path recipe = mutant_finding();
  ASSERT_FALSE(recipe.empty());
  // Written atomically: the recipe and its report, no temporary left behind.
  fs::path report = recipe;
  report.replace_extension(".txt");
  ASSERT_TRUE(fs::exists(report));
  for (const auto& p : files_in(recipe.parent_path()))
    EXPECT_TRUE(p.extension() == ".moefuzz" || p.extension() == ".txt" || p.filename() == "summary.json")
        << "stray file " << p;
  const std::string text = moefuzz::file_text(report);
  EXPECT_EQ(text.rfind("==== moefuzz: CHECK FAILED ====", 0), 0u) << text;
  EXPECT_NE(text.find(std::string("kernel: ") + kMutant), std::string::npos) << text;
  // The binary by its absolute path (tests do not put it on PATH), the recipe absolute.
  const std::string program = fs::canonical(MOEFUZZ_BINARY_DIR "/bin/moefuzz").string();
  EXPECT_NE(text.find("REPRO: " + program + " replay " + fs::absolute(recipe).lexically_normal().string() +
                      " --kernel " + kMutant),
            std::string::npos)
      << text;
  const std::string header = moefuzz::file_text(recipe);
  EXPECT_NE(header.find(std::string("# kernel: ") + kMutant), std::string::npos);
  EXPECT_NE(header.find("# REPRO: "), std::string::npos);

  // The file names its kernel: replay without --kernel uses it and fails again.
  const RunResult again = run_moefuzz({"replay", recipe.string()});
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("CHECK FAILED"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("REPRO:"), std::string::npos) << again.output;
  const RunResult mutant = run_moefuzz({"replay", recipe.string(), "--kernel", kMutant});
  EXPECT_EQ(mutant.exit_code, 1) << mutant.output;
  const RunResult fixed = run_moefuzz({"replay", recipe.string(), "--kernel", "cpu"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.output;
  EXPECT_NE(fixed.output.find("all"), std::string::npos) << fixed.output;
}

// --profile is an input of the check: the cpu kernel (sglang-cutlass-fp4, rsf applied by the top-k)
// checked under sglang-triton (rsf applied by the combine) must fail the routed-scale checks (its
// top-k weights carry rsf: ORACLE/route), and the finding's report and REPRO state the profile in
// force; under its own profile the same campaign passes.
TEST_F(CheckCli, ProfileIsTheContractChecked) {
  const fs::path other = dir_ / "other", own = dir_ / "own";
  const RunResult wrong =
      run_moefuzz({"check", "--kernel", "cpu", "--profile", "sglang-triton", "--invariants", "ORACLE,SCALE1",
                   "--cases", "20", "--seed", "1", "--out", other.string()});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_TRUE(wrong.output.find("FINDING ORACLE/") != std::string::npos ||
              wrong.output.find("FINDING SCALE1/") != std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("--profile sglang-triton"), std::string::npos) << wrong.output;
  bool reported = false;
  for (const auto& p : files_in(other))
    if (p.extension() == ".txt") {
      const std::string text = moefuzz::file_text(p);
      EXPECT_NE(text.find("applied in combine (per the profile)"), std::string::npos) << text;
      EXPECT_NE(text.find("profile sglang-triton"), std::string::npos) << text;
      reported = true;
    }
  EXPECT_TRUE(reported) << "no finding report in " << other;
  const RunResult right =
      run_moefuzz({"check", "--kernel", "cpu", "--profile", "sglang-cutlass-fp4", "--invariants",
                   "ORACLE,SCALE1", "--cases", "20", "--seed", "1", "--out", own.string()});
  EXPECT_EQ(right.exit_code, 0) << right.output;
}

// `list --json` prints every profile with all its fields (the contract --profile selects).
TEST_F(CheckCli, ListJsonPrintsEachProfilesFields) {
  const RunResult r = run_moefuzz({"list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_GE(j.at("profiles").size(), 7u);
  for (const auto& p : j.at("profiles")) {
    for (const char* field :
         {"name", "w13_order", "rsf_in_topk", "routing_weight_dtype", "renorm_epsilon", "tie_rule",
          "quantizer", "zero_scale_rule", "combine", "sigmoid_form", "fp8_act_quant", "fp8_mma_accum_bits",
          "fp8_dots_per_block", "fp8_scale_order", "sources"})
      EXPECT_TRUE(p.contains(field)) << p.value("name", "?") << " lacks " << field;
    if (p.at("name") == "sglang-cutlass-fp4") {
      EXPECT_EQ(p.at("renorm_epsilon").get<double>(), 1e-20);
      EXPECT_EQ(p.at("rsf_in_topk"), true);
      EXPECT_EQ(p.at("fp8_mma_accum_bits"), 24);  // the cpu kernel's fp32 accumulation
    }
    if (p.at("name") == "sglang-triton") {
      EXPECT_EQ(p.at("fp8_act_quant"), "triton");
    }
  }
}

// Usage errors: exit 2 and one message naming what is wrong (no report, no usage dump).
TEST_F(CheckCli, BadUsageExitsTwoWithOneClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"check", "--kernel", "no-such-kernel", "--cases", "1"}, "no-such-kernel"},
      {{"check", "--invariants", "NOPE", "--cases", "1"}, "NOPE"},
      {{"check", "--shapes", "huge", "--cases", "1"}, "huge"},
      {{"check", "--cases", "-3"}, "--cases"},
      {{"check", "--bogus-flag"}, "--bogus-flag"},
      {{"replay", (dir_ / "missing.moefuzz").string()}, "missing.moefuzz"},
      {{"mutants", "--mutant", "mutant/no-such", "--time", "1"}, "mutant/no-such"},
      {{"drift", "--mode", "sideways"}, "sideways"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_moefuzz(c.args);
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_LE(std::count(r.output.begin(), r.output.end(), '\n'), 3) << "one clear message, not a dump:\n"
                                                                     << r.output;
    EXPECT_EQ(r.output.find("CHECK FAILED"), std::string::npos) << r.output;
  }
}

TEST_F(CheckCli, MutantsRunsTheKillMatrixForOneMutant) {
  const fs::path json = dir_ / "matrix.json";
  const RunResult r = run_moefuzz(
      {"mutants", "--mutant", kMutant, "--time", "2", "--correct-cases", "2", "--json", json.string()});
  // A subset is judged on its own mutants (toothlessness needs the full zoo): z1 dies, so it is green.
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(kMutant), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(json));
  EXPECT_NO_THROW({
    const nlohmann::json parsed = nlohmann::json::parse(moefuzz::file_text(json));
    EXPECT_FALSE(parsed.is_null());
  });
}

TEST_F(CheckCli, DriftWritesCsvAndPlot) {
  const fs::path out = dir_ / "drift";
  const RunResult r = run_moefuzz({"drift", "--kernel", "cpu", "--layers", "4", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(out / "drift.csv")) << r.output;
  EXPECT_GT(fs::file_size(out / "drift.csv"), 0u);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(fs::exists(out / "drift.svg")) << r.output;
  }
}

}  // namespace
