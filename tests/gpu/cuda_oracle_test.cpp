// The `cuda` kernel through the project's real check engine: the same campaign (random recipes,
// every invariant, the layer oracle of oracles/layer_ref) that `moefuzz check --kernel cuda` runs,
// and the CUDA mutant classes (`cuda-mutant/...`, kernels/cuda/cuda_mutants.cpp) killed by the
// invariants they name. Skips visibly without a GPU.
//
// Knobs (scripts/gpu-host.sh sets them; docs/gpu.md has the recorded numbers):
//   MOEFUZZ_GPU_CASES=N   cases for the campaign (default 200; the 10^4 run uses the CLI in parallel)
//   MOEFUZZ_GPU_SEED=S    root seed (default 1)
//   MOEFUZZ_GPU_LARGE=1   also the OVF tier: the expert-stride probe crossing 2^31 (~6.5 GB of weights)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>

#include "drivers/campaign.h"
#include "kernels/registry.h"
#include "properties/invariant.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/moe_pipeline.h"
#include "support/require_gpu.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaOracle, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled"; }
#else
namespace moefuzz {
namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

CampaignSummary campaign(const std::string& kernel_name, const std::string& invariants, int64_t cases,
                         uint64_t seed) {
  const auto kernel = make_kernel(kernel_name);
  CampaignOptions o;
  o.kernel_name = kernel_name;
  o.cases = cases;
  o.seed = seed;
  o.invariants = select_invariants(invariants);
  o.out_dir = ::testing::TempDir() + "moefuzz-gpu-" + std::to_string(seed);
  return run_campaign(*kernel, o, std::cerr);
}

std::set<std::string> killing_invariants(const CampaignSummary& s) {
  std::set<std::string> out;
  for (const auto& [code, t] : s.tallies)
    if (t.failed > 0) out.insert(code);
  return out;
}

// Zero false positives: the correct kernel passes every invariant on random recipes.
TEST(CudaOracle, RandomCampaignPasses) {
  MOEFUZZ_REQUIRE_GPU();
  const CampaignSummary s =
      campaign("cuda", "all", env_int("MOEFUZZ_GPU_CASES", 200), env_int("MOEFUZZ_GPU_SEED", 1));
  std::cout << format_summary_table(s);
  EXPECT_GT(s.cases, 0);
  for (const auto& f : s.findings) ADD_FAILURE() << f.signature << " x" << f.occurrences << "  " << f.repro;
}

// Teeth on the GPU path: each small-shape CUDA mutant is killed by one of its expected killers.
TEST(CudaOracle, MutantsAreKilled) {
  MOEFUZZ_REQUIRE_GPU();
  for (const auto& e : kernel_registry()) {
    if (e.name.rfind("cuda-mutant/", 0) != 0) continue;
    const auto k = e.make();
    const auto killers = k->expected_killers();
    if (killers == std::vector<std::string>{"OVF"}) continue;  // large tier: OvfTierKillsInt32Offsets
    const CampaignSummary s = campaign(e.name, "all", 100, 7);
    const auto killed_by = killing_invariants(s);
    const bool killed = std::any_of(killers.begin(), killers.end(),
                                    [&](const std::string& c) { return killed_by.count(c) > 0; });
    std::string seen;
    for (const auto& c : killed_by) seen += c + " ";
    std::cout << "[cuda-mutant] " << e.name << " killed by: " << (seen.empty() ? "nothing" : seen) << "\n";
    EXPECT_TRUE(killed) << e.name << " survived 100 cases (killed by: " << seen << ")";
  }
}

// OVF values past 2^31 on the GPU: the correct kernel passes the probe, the int32 mutant fails it.
TEST(CudaOracle, OvfTierKillsInt32Offsets) {
  MOEFUZZ_REQUIRE_GPU();
  if (!env_on("MOEFUZZ_GPU_LARGE"))
    GTEST_SKIP() << "opt-in: MOEFUZZ_GPU_LARGE=1 (~6.5 GB expert-stride probe)";
  const CampaignSummary good = campaign("cuda", "OVF", 1, 3);
  std::cout << format_summary_table(good);
  EXPECT_TRUE(good.findings.empty()) << "cuda fails OVF";
  EXPECT_EQ(good.tallies.at("OVF").passed, 1);
  const CampaignSummary bad = campaign("cuda-mutant/z7-int32-offsets", "OVF", 1, 3);
  std::cout << format_summary_table(bad);
  EXPECT_EQ(killing_invariants(bad).count("OVF"), 1u) << "int32-offset mutant survived the OVF tier";
}

}  // namespace
}  // namespace moefuzz
#endif
