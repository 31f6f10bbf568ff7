// Hostile recipes and flags: each is one clear message and exit 2 (bad input, nothing blamed on a
// kernel), never a crash, a hang or a finding; a plugin path that is not a plugin is exit 2 too.
#include "reliability/reliability_support.h"

namespace reliability {
namespace {

const std::string kV1 = "MOEFUZZ v1\n";

struct Hostile {
  std::string name;
  std::string recipe;   // written to a file and replayed
  std::string message;  // a piece of the one-line error
};

class HostileRecipes : public ReliabilityTest, public ::testing::WithParamInterface<Hostile> {};

TEST_P(HostileRecipes, ExitTwoWithOneMessage) {
  const Hostile& h = GetParam();
  const fs::path file = dir_ / "hostile.moefuzz";
  { std::ofstream(file, std::ios::binary) << h.recipe; }
  const RunResult r = run_moefuzz({"replay", file.string(), "--kernel", "cpu"}, /*cpu_seconds=*/30);
  EXPECT_EQ(r.exit_code, 2) << h.name << "\n" << r.output;
  EXPECT_NE(r.output.find("moefuzz: error:"), std::string::npos) << h.name << "\n" << r.output;
  EXPECT_NE(r.output.find(h.message), std::string::npos) << h.name << "\n" << r.output;
  EXPECT_LT(r.output.size(), 4096u) << h.name << ": one message, not a dump";
}

std::string big(const std::string& field, const std::string& value) {
  return kV1 + field + " = " + value + "\n";
}

INSTANTIATE_TEST_SUITE_P(
    ThirtyOrMore, HostileRecipes,
    ::testing::Values(
        Hostile{"empty", "", "MOEFUZZ v1"}, Hostile{"wrong magic", "MOEFUZZ v9\n", "MOEFUZZ v1"},
        Hostile{"binary", std::string("\x00\xff\x7f\x01", 4), "NUL byte"},
        Hostile{"tokens over the cap", big("tokens", "16777217"), "tokens"},
        Hostile{"hidden over the cap", big("hidden", "1048592"), "hidden"},
        Hostile{"hidden not /16", big("hidden", "72"), "hidden"},
        Hostile{"negative tokens", big("tokens", "-1"), "tokens"},
        Hostile{"zero experts", big("experts", "0"), "experts"},
        Hostile{"top_k above experts", big("top_k", "999"), "top_k"},
        Hostile{"int overflow", big("tokens", "99999999999999999999999"), "tokens"},
        Hostile{"rsf nan", big("routed_scaling_factor", "nan"), "routed_scaling_factor"},
        Hostile{"rsf inf", big("routed_scaling_factor", "inf"), "routed_scaling_factor"},
        Hostile{"rsf negative", big("routed_scaling_factor", "-2.5"), "routed_scaling_factor"},
        Hostile{"rsf zero", big("routed_scaling_factor", "0"), "routed_scaling_factor"},
        Hostile{"rsf subnormal fp32", big("routed_scaling_factor", "1e-40"), "routed_scaling_factor"},
        Hostile{"case over max-case-bytes", kV1 + "tokens = 4000000\nhidden = 7168\n", "max-case-bytes"},
        Hostile{"rsf smallest double", big("routed_scaling_factor", "4.9e-324"), "routed_scaling_factor"},
        Hostile{"rsf just below fp32 normal", big("routed_scaling_factor", "1.17e-38"),
                "routed_scaling_factor"},
        Hostile{"rsf above fp32", big("routed_scaling_factor", "3.5e38"), "routed_scaling_factor"},
        Hostile{"rsf out of double", big("routed_scaling_factor", "1e999"), "routed_scaling_factor"},
        Hostile{"ratio nan", big("gate_up_scale_ratio", "nan"), "gate_up_scale_ratio"},
        Hostile{"limit zero", big("swiglu_limit", "0"), "swiglu_limit"},
        Hostile{"alpha inf", big("swiglu_alpha", "inf"), "swiglu_alpha"},
        Hostile{"unknown field", big("no_such_field", "1"), "no_such_field"},
        Hostile{"unknown routing", big("routing", "magic"), "routing"},
        Hostile{"unknown values profile", big("values.logits", "whatever"), "values.logits"},
        Hostile{"n_group not dividing", kV1 + "experts = 8\nn_group = 3\n", "n_group"},
        Hostile{"fused without shared", big("shared_fusion", "fused"), "shared_fusion"},
        Hostile{"edit unknown tensor", kV1 + "edit nowhere[0] = 1\n", "edit"},
        Hostile{"edit out of range", kV1 + "edit logits[99999, 0] = 1\n", "edit"},
        Hostile{"duplicate field", kV1 + "tokens = 2\ntokens = 3\n", "tokens"},
        Hostile{"very long line", kV1 + "tokens = " + std::string(100000, '9') + "\n",
                "longer than the limit"},
        Hostile{"vocab negative", big("vocab", "-1"), "vocab"}),
    [](const ::testing::TestParamInfo<Hostile>& info) {
      std::string n = info.param.name;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

struct HostileFlags {
  std::string name;
  std::vector<std::string> args;
};

class HostileCommandLines : public ReliabilityTest, public ::testing::WithParamInterface<HostileFlags> {};

TEST_P(HostileCommandLines, ExitTwoNeverAFindingNeverACrash) {
  const RunResult r = run_moefuzz(GetParam().args, /*cpu_seconds=*/30);
  EXPECT_EQ(r.exit_code, 2) << GetParam().name << "\n" << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Flags, HostileCommandLines,
    ::testing::Values(
        HostileFlags{"unknown kernel", {"check", "--kernel", "no-such-kernel", "--cases", "1"}},
        HostileFlags{"plugin path that is not a plugin",
                     {"check", "--kernel", "/etc/passwd.so", "--cases", "1"}},
        HostileFlags{"plugin wrong abi",
                     {"check", "--kernel", MOEFUZZ_BINARY_DIR "/lib/libmoefuzz_faulty_abi.so"}},
        HostileFlags{"plugin without symbol",
                     {"check", "--kernel", MOEFUZZ_BINARY_DIR "/lib/libmoefuzz_faulty_no_symbol.so"}},
        HostileFlags{"negative cases", {"check", "--cases", "-5"}},
        HostileFlags{"time not a number", {"check", "--time", "soon"}},
        HostileFlags{"unknown invariant", {"check", "--invariants", "NOPE", "--cases", "1"}},
        HostileFlags{"unknown shapes", {"check", "--shapes", "gigantic", "--cases", "1"}},
        HostileFlags{"max case bytes zero", {"--max-case-bytes", "0", "check", "--cases", "1"}},
        HostileFlags{"max case bytes overflow", {"--max-case-bytes", "99999999999999999999", "check"}},
        HostileFlags{"replay missing file", {"replay", "/no/such/file.moefuzz"}},
        HostileFlags{"unknown mutant", {"mutants", "--mutant", "mutant/nope", "--cases", "1"}},
        HostileFlags{"unknown mutant again", {"mutants", "--mutant", "cuda-mutant/nope", "--cases", "1"}}),
    [](const ::testing::TestParamInfo<HostileFlags>& info) {
      std::string n = info.param.name;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST_F(ReliabilityTest, MalformedPluginTimeoutIsExitTwo) {
  ::setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "soon", 1);
  const RunResult r =
      run_moefuzz({"check", "--kernel", faulty_plugin("pattern"), "--cases", "1", "--out", out()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("MOEFUZZ_PLUGIN_TIMEOUT_S"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace reliability
