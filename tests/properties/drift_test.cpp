// DRIFT has teeth where single calls see nothing (BUGZOO Z13): the Z13 mutant's output bf16 conversion
// rounds exact ties toward zero. Each single call passes ORACLE (a tie is admissible both ways), the
// layered drift run finds the shrinking bias, and the correct `cpu` kernel passes the same run. The
// CLI writes the CSV and the SVG plot for the pair.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "core/case.h"
#include "core/rng.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/drift.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

constexpr const char* kZ13 = "mutant/z13-bf16-truncated-combine";

// The drift harness's default shape: two slots per token, so outputs are sums of two bf16 products
// (exact ties are frequent), rsf 2.5 as DeepSeek-V3.
CaseRecipe drift_recipe(uint64_t seed) {
  CaseRecipe r;
  r.seed = seed;
  r.profile = "sglang-cutlass-fp4";
  r.shape = Shape{.tokens = 16, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
  r.routing.routed_scaling_factor = 2.5;
  return r;
}

TEST(Drift, Z13PassesSingleCallOracle) {
  const auto z13 = make_kernel(kZ13);
  const auto cpu = make_kernel("cpu");
  CheckOptions o{.invariants = {&invariant_by_code("ORACLE")}};
  int differing = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Case c = materialize(drift_recipe(seed));
    const CaseReport rep = check_case(*z13, c, o);
    ASSERT_EQ(rep.verdicts.size(), 1u);
    EXPECT_EQ(rep.verdicts[0].outcome, Outcome::kPass) << "seed " << seed << ": " << rep.verdicts[0].message;
    LayerResult a, b;
    z13->run_layer(c, {}, a);
    cpu->run_layer(c, {}, b);
    differing += a.output != b.output;
  }
  EXPECT_GT(differing, 0) << "the mutant must actually deviate from cpu";
}

TEST(Drift, KillsZ13AndPassesCpu) {
  for (uint64_t seed : {1, 2}) {
    const DriftReport bad = run_layer_drift(*make_kernel(kZ13), drift_recipe(seed), 24);
    EXPECT_TRUE(bad.verdict.failed()) << "seed " << seed;
    std::cout << kZ13 << " seed " << seed << ": " << bad.verdict.message << "\n";
    for (const auto& p : bad.points) EXPECT_LE(p.max_single_ratio, 1.0) << "layer " << p.index;
    const DriftReport good = run_layer_drift(*make_kernel("cpu"), drift_recipe(seed), 24);
    EXPECT_FALSE(good.verdict.failed()) << "seed " << seed << ": " << good.verdict.message;
  }
}

TEST(Drift, CliWritesCsvAndPlot) {
  const std::string bin = std::string(MOEFUZZ_BINARY_DIR) + "/bin/moefuzz";
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "build the moefuzz target first: " << bin;
  const auto dir = std::filesystem::temp_directory_path() / ("moefuzz-drift-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cmd = bin + " drift --kernel cpu --kernel " + kZ13 + " --layers 16 --out " +
                          dir.string() + " > " + (dir.string() + ".log") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1) << "the mutant fails DRIFT, so the command exits 1";
  std::ifstream csv(dir / "drift.csv");
  ASSERT_TRUE(csv.good());
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("kernel,mode,index", 0), 0u);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    std::ifstream svg(dir / "drift.svg");
    std::string first;
    std::getline(svg, first);
    EXPECT_NE(first.find("<?xml"), std::string::npos) << "drift.svg is not an SVG";
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir.string() + ".log");
}

}  // namespace
}  // namespace moefuzz
