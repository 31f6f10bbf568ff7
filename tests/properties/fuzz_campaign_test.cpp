// The campaign orchestrator's parts that need no fuzz build (properties/fuzz_campaign.h): a missing
// fuzz target is a clear InputError naming how to build it, and raw findings (as fuzz targets save
// them) are deduplicated by signature and shrunk, also on resume.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/case.h"
#include "core/errors.h"
#include "kernels/registry.h"
#include "properties/campaign.h"
#include "properties/check_engine.h"
#include "properties/fuzz_campaign.h"
#include "properties/shrinker.h"

namespace moefuzz {
namespace {
namespace fs = std::filesystem;

TEST(FuzzCampaign, MissingTargetSaysHowToBuildIt) {
  try {
    fuzz_target_binary("/nonexistent/bin", "moe_layer");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cmake --preset fuzz && cmake --build --preset fuzz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("moe_layer_fuzzer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fuzz_target_binary("/bin", "../sh"), InputError);
  EXPECT_THROW(run_fuzz_campaign({.target = "moe_layer", .out_dir = "/tmp/x", .bin_dir = "/nonexistent"}, std::cerr), InputError);
}

TEST(FuzzCampaign, HarvestDeduplicatesBySignatureAndResumes) {
  const fs::path dir = fs::temp_directory_path() / ("moefuzz-harvest-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto k = make_kernel("mutant/z1-rsf-twice");
  CaseRecipe r;
  r.profile = k->profile();
  r.routing.routed_scaling_factor = 2.5;
  // Two raw findings of the same signature (different seeds), as a fuzz target saves them.
  for (uint64_t seed : {1, 2}) {
    r.seed = seed;
    const CaseReport rep = check_case(*k, materialize(r), {.invariants = select_invariants("all")});
    ASSERT_TRUE(rep.failed());
    save_finding(r, rep.first_failure(), k->name(), (dir / "raw").string(), static_cast<int64_t>(seed));
  }
  const auto first = harvest_findings((dir / "raw").string(), (dir / "findings").string(), "cpu", 10, std::cerr);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(fs::exists(first[0].path));
  // Resume: findings/ already holds the signature, nothing new.
  EXPECT_TRUE(harvest_findings((dir / "raw").string(), (dir / "findings").string(), "cpu", 10, std::cerr).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moefuzz
