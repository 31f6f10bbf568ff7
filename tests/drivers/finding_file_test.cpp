// One findings format (drivers/finding_file.h): what `check` saves, what the shrinker writes and what
// the regression corpus reads are the same file, so a check finding drops into corpora/regressions/
// as it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/case.h"
#include "core/file_text.h"
#include "core/recipe_text.h"
#include "drivers/campaign.h"
#include "drivers/check_engine.h"
#include "drivers/finding_file.h"
#include "drivers/shrinker.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

TEST(FindingFile, HeaderRoundTripsAndTheRecipeStillParses) {
  CaseRecipe r;
  r.shape.tokens = 3;
  FindingHeader h{
      .kills = "SCALE1/combine", .kernel = "mutant/z1-rsf-twice", .message = "line one\nline two"};
  h.repro = "moefuzz replay /tmp/x.moefuzz --kernel mutant/z1-rsf-twice";
  h.notes = {"before: tokens 9", "after: tokens 3"};
  const std::string text = finding_text(to_text(r), h);
  EXPECT_EQ(text.rfind("MOEFUZZ v1\n# kills: SCALE1/combine\n# kernel: mutant/z1-rsf-twice\n"
                       "# message: line one line two\n# REPRO: ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("# before: tokens 9\n# after: tokens 3\n"), std::string::npos);
  const FindingHeader back = read_finding_header(text);
  EXPECT_EQ(back.kills, h.kills);
  EXPECT_EQ(back.kernel, h.kernel);
  EXPECT_EQ(back.message, "line one line two");
  EXPECT_EQ(back.repro, h.repro);
  EXPECT_EQ(to_text(parse_recipe(text, "finding")), to_text(r));
}

TEST(FindingFile, EmptyFieldsAreNotWrittenAndAbsentOnesReadEmpty) {
  const std::string text = finding_text("MOEFUZZ v1\ntokens = 2\n", {.kernel = "cpu"});
  EXPECT_EQ(text, "MOEFUZZ v1\n# kernel: cpu\ntokens = 2\n");
  const FindingHeader back = read_finding_header(text);
  EXPECT_EQ(back.kernel, "cpu");
  EXPECT_EQ(back.kills, "");
  EXPECT_EQ(back.repro, "");
}

TEST(FindingFile, OlderCheckFindingsNameTheirSignatureAsMoefuzzFinding) {
  const FindingHeader back =
      read_finding_header("MOEFUZZ v1\n# moefuzz finding: ORACLE/gemm1\n# kernel: cpu\n");
  EXPECT_EQ(back.kills, "ORACLE/gemm1");
}

// A check finding is a regression file: read back with the regression corpus' fields, it names the
// kernel and the signature, and the named kernel still fails with that signature on its recipe.
TEST(FindingFile, ACheckFindingIsARegressionFileAsItIs) {
  const std::string dir = (std::filesystem::temp_directory_path() / "moefuzz_finding_file_test").string();
  std::filesystem::remove_all(dir);
  const auto k = make_kernel("mutant/z1-rsf-twice");
  CampaignOptions o{.kernel_name = "mutant/z1-rsf-twice", .cases = 5, .seed = 1, .out_dir = dir};
  o.invariants = select_invariants("SCALE1");
  std::ostringstream log;
  const CampaignSummary s = run_campaign(*k, o, log);
  ASSERT_FALSE(s.findings.empty()) << log.str();
  const std::string text = file_text(s.findings.front().recipe_path);
  const FindingHeader h = read_finding_header(text);
  EXPECT_EQ(h.kills, s.findings.front().signature);
  EXPECT_EQ(h.kernel, "mutant/z1-rsf-twice");
  EXPECT_EQ(h.repro, s.findings.front().repro);
  const CaseReport again = check_case(*make_kernel(h.kernel), materialize(parse_recipe(text, "finding")),
                                      {.invariants = select_invariants("all")});
  bool killed = false;
  for (const auto& v : again.verdicts) killed |= v.failed() && v.signature() == h.kills;
  EXPECT_TRUE(killed) << h.kernel << " does not fail " << h.kills << " on its own finding";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moefuzz
