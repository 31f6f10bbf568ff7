// Former false positives (corpora/false-positives/, README there): each file is a finding that
// `moefuzz check` once reported on a CORRECT kernel. The kernel named in its `# kernel:` line must
// now pass the invariant named in its `# kills:` line, with that invariant evaluated (a skip or a
// vacuous verdict would hide the case, not fix it).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/file_text.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "drivers/finding_file.h"
#include "kernels/registry.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> former_false_positives() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(MOEFUZZ_SOURCE_DIR) / "corpora" / "false-positives"))
    if (e.path().extension() == ".moefuzz") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(FormerFalsePositives, EveryCorrectKernelPassesItsCase) {
  const auto files = former_false_positives();
  ASSERT_GE(files.size(), 5u) << "corpora/false-positives/ lost its cases";
  for (const auto& path : files) {
    SCOPED_TRACE(path.filename().string());
    const std::string text = file_text(path);
    const FindingHeader h = read_finding_header(text);
    ASSERT_FALSE(h.kernel.empty());
    const std::string code = h.kills.substr(0, h.kills.find('/'));
    ASSERT_FALSE(code.empty()) << "no `# kills:` line";
    const auto kernel = make_kernel(h.kernel);
    const CaseRecipe r = parse_recipe(text, path.string());
    const Case c = materialize(r);
    const CaseReport rep = check_case(*kernel, c, CheckOptions{.invariants = {&invariant_by_code(code)}});
    ASSERT_EQ(rep.verdicts.size(), 1u);
    const Verdict& v = rep.verdicts[0];
    EXPECT_EQ(v.outcome, Outcome::kPass) << h.kernel << " " << v.signature() << ": " << v.message;
    EXPECT_GT(v.compared, 0) << "vacuous: the invariant judged nothing";
  }
}

}  // namespace
}  // namespace moefuzz
