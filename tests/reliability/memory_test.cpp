// moefuzz's own allocation failure is a tool error (exit 2, the case saved), never a finding of the
// kernel: under an address-space limit too small for the check, a correct kernel is not reported
// FINITE (or anything else).
#include "core/memory_budget.h"
#include "core/recipe_text.h"
#include "properties/gen/recipe_gen.h"
#include "reliability/reliability_support.h"

namespace reliability {
namespace {

#if defined(__SANITIZE_ADDRESS__)
// ASan reserves terabytes of shadow address space: RLIMIT_AS cannot be used (run_moefuzz ignores it).
#define MOEFUZZ_NO_ADDRESS_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOEFUZZ_NO_ADDRESS_LIMIT 1
#endif
#endif

// Large enough that the check needs more than the limit (its peak is ~1.3 GB), within the default
// --max-case-bytes and the memory estimate_check_bytes says it needs (5.8 GB: a machine like CI's).
const std::string kRecipe = "MOEFUZZ v1\ntokens = 4000\nhidden = 1024\ninter = 512\nexperts = 8\ntop_k = 2\n";
// 512 MiB of address space: the binary starts and the case materializes (~20 MB), the check's buffers
// do not fit within a few seconds of its start (at 768 MiB the first failing allocation came ~30 s in).
constexpr rlim_t kLimit = rlim_t{512} << 20;

TEST_F(ReliabilityTest, OwnAllocationFailureIsExitTwoNeverAFinding) {
#ifdef MOEFUZZ_NO_ADDRESS_LIMIT
  GTEST_SKIP() << "address-space limits do not apply under ASan";
#else
  const fs::path file = dir_ / "big.moefuzz";
  { std::ofstream(file) << kRecipe; }
  const RunResult r = run_moefuzz({"replay", file.string(), "--kernel", "cpu"}, 60, kLimit);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << "blamed on the kernel:\n" << r.output;
  EXPECT_NE(r.output.find("out of memory in moefuzz"), std::string::npos) << r.output;
#endif
}

// estimate_check_bytes is an upper bound of the real peak: peak resident memory (ru_maxrss of a
// child `moefuzz replay` running every invariant on the cpu kernel) <= estimate x 1 + 0 (the
// estimate carries the process's own memory as a term). The recipes sweep the generators' shape
// space (small and medium draws) and hostile shapes that stress one dimension each (tokens,
// experts, hidden, inter, top_k); the sizes keep the whole sweep near 30 s on 2 cores.
TEST_F(ReliabilityTest, CheckPeakMemoryStaysWithinItsEstimate) {
  std::vector<moefuzz::CaseRecipe> recipes;
  for (const char* shapes : {"small", "medium"}) {
    const auto g = moefuzz::gen::recipe_for(shapes);
    for (uint64_t index = 0; index < 4; ++index) recipes.push_back(moefuzz::gen::sample(g, 3, index, 100));
  }
  const std::vector<std::string> hostile = {
      "tokens = 1000\n",                                  // many tokens, the default small layer
      "tokens = 8\nexperts = 1024\ntop_k = 8\n",          // many experts
      "tokens = 4\nhidden = 4096\ninter = 64\n",          // wide hidden
      "tokens = 4\nhidden = 64\ninter = 4096\n",          // wide inter
      "tokens = 32\nexperts = 256\ntop_k = 256\n",        // every expert selected
      "tokens = 64\nshared_experts = 8\nhidden = 256\n",  // separate shared experts
  };
  for (const auto& text : hostile)
    recipes.push_back(moefuzz::parse_recipe("MOEFUZZ v1\n" + text, "<hostile>"));
  int checked = 0;
  for (size_t i = 0; i < recipes.size(); ++i) {
    moefuzz::CaseRecipe r = recipes[i];
    r.profile = "sglang-cutlass-fp4";
    ASSERT_EQ(moefuzz::validate(r), "") << moefuzz::to_text(r);
    const fs::path file = dir_ / ("m" + std::to_string(i) + ".moefuzz");
    { std::ofstream(file) << moefuzz::to_text(r); }
    const RunResult run = run_moefuzz({"replay", file.string(), "--kernel", "cpu"}, 120);
    ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.output;  // checked (findings are not ours)
    const int64_t peak = run.max_rss_kib * 1024, estimate = moefuzz::estimate_check_bytes(r);
    EXPECT_LE(peak, estimate) << moefuzz::to_text(r) << "peak " << peak << " > estimate " << estimate;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(recipes.size()));
}

// A recipe whose check cannot fit the memory available is refused up front (exit 2, no allocation):
// the million-token layer was estimated at 153 MiB of case and grew past 9 GB of RSS.
TEST_F(ReliabilityTest, ACheckThatCannotFitIsRefusedBeforeAllocating) {
  const fs::path file = dir_ / "million.moefuzz";
  { std::ofstream(file) << "MOEFUZZ v1\ntokens = 1000000\n"; }
  const moefuzz::CaseRecipe r = moefuzz::parse_recipe(file_text(file), file.string());
  if (moefuzz::estimate_check_bytes(r) <= moefuzz::available_memory_bytes())
    GTEST_SKIP() << "this machine has the memory to check it";  // > 200 GB available
  const RunResult run = run_moefuzz({"replay", file.string(), "--kernel", "cpu"}, 60);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("estimate_check_bytes"), std::string::npos) << run.output;
  EXPECT_LT(run.max_rss_kib, 512 * 1024) << "allocated before refusing";
}

}  // namespace
}  // namespace reliability
