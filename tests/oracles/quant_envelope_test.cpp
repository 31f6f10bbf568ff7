// The quantization envelope's two refinements of 2026-11-30 (oracles/bounds.cpp), on hand-built
// blocks: (1) with S_q and the block scale powers of two nothing in outScale rounds, so an exact E2M1
// tie admits only the tie rule's code (and a ties-away code is a witness), while any other S_q keeps
// the 2^-20 widening that admits both neighbours; (2) where the fast-math outScale may flush to +Inf
// the flushed codes (+-6, +6 for zero) are admitted exactly - as a union with the unflushed codes,
// not as their hull.
#include <gtest/gtest.h>

#include <vector>

#include "core/e4m3.h"
#include "oracles/bounds.h"

namespace moefuzz {
namespace {

struct Block {
  std::vector<double> x = std::vector<double>(16, 0.0);
  std::vector<uint8_t> codes = std::vector<uint8_t>(16, 0x0);
  int64_t admits(float s_q, uint8_t scale) const {
    return nvfp4_admits(x, x, s_q, codes, std::vector<uint8_t>{scale});
  }
};

TEST(QuantEnvelope, PowerOfTwoScalesDecideExactTies) {
  // S_q = 2^9, amax 6/2^9 -> block scale exactly 1.0 (0x38); x1 * S_q / 1.0 = 0.25, the tie
  // between codes 0 (0.0, even) and 1 (0.5).
  Block b;
  b.x[0] = 6.0 / 512;
  b.x[1] = 0.25 / 512;
  b.codes[0] = 0x7;  // 6.0
  ASSERT_EQ(e4m3_from_float(1.0f), 0x38);
  EXPECT_EQ(b.admits(512.0f, 0x38), kAdmitted) << "RN-even code";
  b.codes[1] = 0x1;  // ties away from zero
  EXPECT_EQ(b.admits(512.0f, 0x38), 1) << "ties-away code must be a witness at element 1";
}

TEST(QuantEnvelope, OtherScalesKeepTheRcpWidening) {
  // S_q = 640 (not a power of two): amax 3/256 -> sf32 = 1.25 = block scale; S_q / 1.25 = 512, so
  // x1 = 0.25/512 again scales to the tie, but rcp.approx(640) may be off by an ulp: both codes.
  Block b;
  b.x[0] = 3.0 / 256;
  b.x[1] = 0.25 / 512;
  b.codes[0] = 0x7;
  const uint8_t scale = e4m3_from_float(1.25f);
  EXPECT_EQ(b.admits(640.0f, scale), kAdmitted);
  b.codes[1] = 0x1;
  EXPECT_EQ(b.admits(640.0f, scale), kAdmitted);
}

TEST(QuantEnvelope, FlushedOutScaleIsAdmittedAsAUnion) {
  // S_q = 3e38: the block scale saturates at 448 and rcp(S_q) flushes, so a fast-math kernel may
  // compute outScale = +Inf: nonzero elements give +-6 either way; a zero element gives 0 unflushed
  // or NaN -> +6 flushed - and nothing in between.
  Block b;
  b.x[0] = 1.0;
  b.x[1] = -0.3;
  b.codes[0] = 0x7;  // +6
  b.codes[1] = 0xF;  // -6
  EXPECT_EQ(b.admits(3.0e38f, kE4m3MaxCode), kAdmitted);
  b.codes[2] = 0x7;  // zero element, flushed: 0 * Inf = NaN -> +6
  EXPECT_EQ(b.admits(3.0e38f, kE4m3MaxCode), kAdmitted);
  b.codes[2] = 0x6;  // 4.0: neither outcome
  EXPECT_EQ(b.admits(3.0e38f, kE4m3MaxCode), 2);
  b.codes[2] = 0xF;  // -6 for a zero element: neither outcome
  EXPECT_EQ(b.admits(3.0e38f, kE4m3MaxCode), 2);
}

}  // namespace
}  // namespace moefuzz
