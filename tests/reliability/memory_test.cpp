// moefuzz's own allocation failure is a tool error (exit 2, the case saved), never a finding of the
// kernel: under an address-space limit too small for the check, a correct kernel is not reported
// FINITE (or anything else).
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

// Large enough that the check needs more than the limit, within the default --max-case-bytes.
const std::string kRecipe =
    "MOEFUZZ v1\ntokens = 20000\nhidden = 1024\ninter = 512\nexperts = 8\ntop_k = 2\n";
constexpr rlim_t kLimit = rlim_t{768}
                          << 20;  // 768 MiB of address space: the binary starts, the case does not fit

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

}  // namespace
}  // namespace reliability
