// A faulty kernel is a finding of its own class, never a crash of moefuzz and never a failure of
// every invariant: one finding per signature (CRASH/layer, HANG/supports, ...), counted once per
// case, the case's invariants "not evaluated", the report free of meaningless numbers, the finding
// replayable. Every faulty-plugin class of examples/plugin_faulty, in `check` and `replay`.
#include "reliability/reliability_support.h"

namespace reliability {
namespace {

struct FaultCase {
  std::string plugin;     // examples/plugin_faulty fault
  std::string signature;  // the one finding
};

// Names the fault in ctest's list and gtest's messages instead of dumping the struct's bytes.
void PrintTo(const FaultCase& fc, std::ostream* os) { *os << fc.plugin << " -> " << fc.signature; }

class KernelFaults : public ReliabilityTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(KernelFaults, OneFindingOfItsClassAndEveryInvariantNotEvaluated) {
  const FaultCase& fc = GetParam();
  const std::string json = out("summary.json");
  const RunResult r = run_moefuzz({"check", "--kernel", faulty_plugin(fc.plugin), "--cases", "3", "--seed",
                                   "1", "--out", out(), "--json", json});
  ASSERT_EQ(r.exit_code, 1) << r.output;  // a finding, not exit 134 (terminate) nor 2
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  const nlohmann::json j = json_of(json);
  ASSERT_EQ(j.at("findings").size(), 1u) << j.dump(2);
  const nlohmann::json& f = j.at("findings")[0];
  EXPECT_EQ(f.at("signature"), fc.signature) << j.dump(2);
  EXPECT_EQ(f.at("occurrences"), 3) << "every case faults; one signature counted per case";
  const std::string fault_class = fc.signature.substr(0, fc.signature.find('/'));
  for (const auto& [code, t] : j.at("invariants").items()) {
    if (code == fault_class) {
      EXPECT_EQ(t.at("fail"), 3) << code;
    } else {
      EXPECT_EQ(t.at("fail"), 0) << code << ": a kernel fault is not a failure of " << code;
      EXPECT_EQ(t.at("pass"), 0) << code << ": nothing was evaluated on a faulting kernel";
      EXPECT_EQ(t.at("not_evaluated"), 3) << code;
    }
  }
  // The report says what happened, without "got 0 expected 0 bound 0".
  const std::string report = file_text(f.at("report").get<std::string>());
  EXPECT_NE(report.find("check: " + fault_class), std::string::npos) << report;
  EXPECT_EQ(report.find("got 0"), std::string::npos) << report;
  // Replayable: the finding fails again with the same class.
  const RunResult replay = run_moefuzz({"replay", f.at("recipe").get<std::string>()});
  EXPECT_EQ(replay.exit_code, 1) << replay.output;
  EXPECT_NE(replay.output.find("check: " + fault_class), std::string::npos) << replay.output;
  EXPECT_NE(replay.output.find("not-eval"), std::string::npos) << replay.output;
}

INSTANTIATE_TEST_SUITE_P(
    EveryFaultyPluginClass, KernelFaults,
    ::testing::Values(FaultCase{"crash", "CRASH/layer"}, FaultCase{"hang", "HANG/layer"},
                      FaultCase{"exit", "BAD-RESULT/layer"}, FaultCase{"error", "ERROR/layer"},
                      FaultCase{"supports_hang", "HANG/supports"},
                      FaultCase{"supports_crash", "CRASH/supports"}, FaultCase{"oom", "OOM/layer"},
                      FaultCase{"bad_ids", "BAD-RESULT/route"}, FaultCase{"input_write", "BAD-RESULT/layer"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.plugin; });

// Under `check -j`, one worker forks a plugin's child while another may be first-building a
// process-wide table (the profiles): a child that then needed that table waited forever on the
// other thread's guard, and moefuzz reported its own deadlock as the kernel's HANG/supports about
// one run in five. Fresh processes, so every run races the first use again.
TEST_F(ReliabilityTest, ParallelWorkersNeverHandTheirChildAHeldLock) {
  // A deadlocked child never ends, so a 10 s timeout still fails the run; the fixture's 1 s could
  // also expire on a busy machine for 240 correct calls.
  ::setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "10", 1);
  for (int run = 0; run < 40; ++run) {
    const std::string json = out("s" + std::to_string(run) + ".json");
    const RunResult r =
        run_moefuzz({"check", "--kernel", faulty_plugin("bad_ids"), "--cases", "3", "-j", "2", "--seed",
                     std::to_string(run + 1), "--out", out("o" + std::to_string(run)), "--json", json});
    ASSERT_EQ(r.exit_code, 1) << r.output;
    const nlohmann::json j = json_of(json);
    ASSERT_EQ(j.at("findings").size(), 1u) << "run " << run << ": " << j.dump(2);
    EXPECT_EQ(j.at("findings")[0].at("signature"), "BAD-RESULT/route") << j.dump(2);
  }
}

// A hang costs one timeout per case, not one per invariant (14 invariants x the timeout before).
TEST_F(ReliabilityTest, AHangCostsOneTimeoutPerCase) {
  const RunResult r = run_moefuzz({"check", "--kernel", faulty_plugin("hang"), "--cases", "2", "--seed", "1",
                                   "--out", out(), "--invariants", "all"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // 2 cases x 1 s timeout, plus start-up; one timeout per invariant would be 2 x 14 s.
  EXPECT_LT(r.seconds, 8.0) << r.output;
}

// --time is honoured within one case's timeout, even when every call hangs.
TEST_F(ReliabilityTest, TimeIsHonouredWithinOneTimeout) {
  const RunResult r =
      run_moefuzz({"check", "--kernel", faulty_plugin("hang"), "--time", "2", "--seed", "1", "--out", out()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_LT(r.seconds, 2.0 + 1.0 + 2.0) << "--time 2, timeout 1 s, 2 s for start-up on a busy machine";
}

// A NaN-writing plugin is not a fault: its output is compared, and the invariants find it.
TEST_F(ReliabilityTest, NanOutputIsAnInvariantFindingNotAFault) {
  const std::string json = out("s.json");
  const RunResult r = run_moefuzz({"check", "--kernel", faulty_plugin("nan"), "--cases", "2", "--seed", "1",
                                   "--out", out(), "--json", json});
  ASSERT_EQ(r.exit_code, 1) << r.output;
  const nlohmann::json j = json_of(json);
  ASSERT_FALSE(j.at("findings").empty());
  for (const auto& f : j.at("findings")) {
    const std::string sig = f.at("signature");
    for (const char* fault : {"CRASH/", "HANG/", "BAD-RESULT/", "ERROR/", "OOM/"})
      EXPECT_NE(sig.rfind(fault, 0), 0u) << sig;
  }
}

}  // namespace
}  // namespace reliability
