// Every minimized finding in corpora/regressions/ is replayed: the kernel it names (`# kernel:`)
// still fails with the signature it names (`# kills:`), and its correct twin (`cpu`, or the built-in
// kernel claiming the same profile) passes every cheap invariant on it (zero false positives).
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

std::vector<std::string> regression_files() {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(MOEFUZZ_SOURCE_DIR) / "corpora/regressions";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".moefuzz") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string twin_of(const Kernel& k) {
  if (make_kernel("cpu")->profile() == k.profile()) return "cpu";
  for (const auto& e : kernel_registry())
    if (e.kind == KernelKind::kBuiltin && e.make()->profile() == k.profile()) return e.name;
  return "";
}

class Regression : public ::testing::TestWithParam<std::string> {};

TEST_P(Regression, NamedKernelStillFailsAndTwinPasses) {
  const std::string text = file_text(GetParam());
  const FindingHeader header = read_finding_header(text);
  const std::string kernel = header.kernel, sig = header.kills;
  ASSERT_FALSE(kernel.empty()) << "missing '# kernel:' header";
  ASSERT_FALSE(sig.empty()) << "missing '# kills:' header";
  const CaseRecipe r = parse_recipe(text, GetParam());
  const Case c = materialize(r);
  const auto k = make_kernel(kernel);
  ASSERT_EQ(k->supports(r), "");
  const CaseReport bad = check_case(*k, c, {.invariants = select_invariants("all")});
  bool killed = false;
  for (const auto& v : bad.verdicts) killed |= v.failed() && v.signature() == sig;
  EXPECT_TRUE(killed) << kernel << " no longer fails with " << sig;

  const std::string twin = twin_of(*k);
  ASSERT_FALSE(twin.empty()) << "no correct kernel claims " << k->profile();
  const auto good = make_kernel(twin);
  const CaseReport ok = check_case(*good, c, {.invariants = select_invariants("all")});
  EXPECT_FALSE(ok.failed()) << twin << " fails "
                            << (ok.failed()
                                    ? ok.first_failure().signature() + ": " + ok.first_failure().message
                                    : "");
}

INSTANTIATE_TEST_SUITE_P(Corpus, Regression, ::testing::ValuesIn(regression_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = std::filesystem::path(p.param).stem().string();
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Regressions, CorpusIsNotEmpty) { EXPECT_GE(regression_files().size(), 5u); }

}  // namespace
}  // namespace moefuzz
