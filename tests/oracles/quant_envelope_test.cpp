// The quantization envelope's two refinements of 2026-11-30 (oracles/bounds.cpp), on hand-built
// blocks: (1) with S_q and the block scale powers of two nothing in outScale rounds, so an exact E2M1
// tie admits only the tie rule's code (and a ties-away code is a witness), while any other S_q keeps
// the 2^-20 widening that admits both neighbours; (2) where the fast-math outScale may flush to +Inf
// the flushed codes (+-6, +6 for zero) are admitted exactly - as a union with the unflushed codes,
// not as their hull. And the block-wide SIMD code ranges against the element-wise ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/e4m3.h"
#include "core/rng.h"
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

// A hostile interval for element draw i of `s`: around a point on an E2M1 threshold once multiplied by
// `os` (the quantizer's S_q / block scale) or one float ulp beside it, a zero of either sign, a
// subnormal, a huge value, or anything in +-7 / os; a point in half the draws, else of radius up to
// |x| 2^-width_bits.
void hostile_interval(const Stream& s, uint64_t i, double os, int width_bits, double& lo, double& hi) {
  static constexpr double kThresholds[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0};
  double x = 0;
  switch (s.bits(i) % 6) {
    case 0:  // on a threshold once scaled, or one float ulp beside it
      x = kThresholds[s.bits(i + 1) % 8] / os;
      if (s.bits(i + 1) & 8) x = std::nextafter(static_cast<float>(x), 1e30f);
      break;
    case 1:
      x = (s.bits(i + 1) & 1) ? 0.0 : -0.0;
      break;
    case 2:
      x = std::ldexp(s.uniform(i + 1), -140 - static_cast<int>(s.bits(i + 1) % 30));
      break;
    case 3:
      x = std::ldexp(s.uniform(i + 1), 100 + static_cast<int>(s.bits(i + 1) % 30));
      break;
    default:
      x = (s.uniform(i + 1) * 14 - 7) / os;
  }
  if (s.bits(i + 1) & 16) x = -x;
  const bool point = (s.bits(i + 1) & 32) != 0;
  const double w =
      point ? 0.0
            : std::fabs(x) * std::ldexp(s.uniform(i + 2), -static_cast<int>(s.bits(i + 2) % width_bits));
  lo = x - w;
  hi = x + w;
}

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

// The envelope and nvfp4_admits take a block's unflushed code ranges four elements at a time (AVX2);
// they must equal the element-wise code ranges bit for bit on every kind of interval: ties of the
// E2M1 thresholds, float rounding boundaries, zeros of both signs, subnormal and huge values, wide
// intervals, both S_q kinds (power of two or not) and every finite block scale.
TEST(QuantEnvelope, BlockWideCodeRangesEqualTheElementWiseOnes) {
  const Stream s(7, "code-ranges");
  const float s_qs[] = {512.0f, 448.0f * 6.0f / 3.7f, 0x1p-20f, 1.0f, 0x1p100f};
  int64_t blocks = 0, differing_lanes = 0;
  for (uint64_t t = 0; t < 20000; ++t) {
    const float s_q = s_qs[t % 5];
    float sfd = e4m3_to_float(static_cast<uint8_t>(1 + s.bits(t * 40) % 0x7E));
    double lo[16], hi[16];
    const double os = static_cast<double>(s_q) / static_cast<double>(sfd);
    for (int k = 0; k < 16; ++k)
      hostile_interval(s, t * 40 + 1 + static_cast<uint64_t>(k) * 2, os, /*width_bits=*/40, lo[k], hi[k]);
    float simd_min[16], simd_max[16], one_min[16], one_max[16];
    const bool taken = nvfp4_unflushed_codes16(lo, hi, s_q, sfd, true, simd_min, simd_max);
    ASSERT_EQ(taken, nvfp4_unflushed_codes16(lo, hi, s_q, sfd, false, one_min, one_max));
    if (!taken) continue;  // a possible flush: the element-wise path only
    ++blocks;
    for (int k = 0; k < 16; ++k) {
      const bool same =
          std::memcmp(&simd_min[k], &one_min[k], 4) == 0 && std::memcmp(&simd_max[k], &one_max[k], 4) == 0;
      differing_lanes += same ? 0 : 1;
      EXPECT_TRUE(same) << "block " << t << " element " << k << ": [" << lo[k] << ", " << hi[k] << "] S_q "
                        << s_q << " sfd " << sfd << ": simd [" << simd_min[k] << ", " << simd_max[k]
                        << "], element-wise [" << one_min[k] << ", " << one_max[k] << "]";
      if (!same) return;
    }
  }
  EXPECT_GT(blocks, 10000) << "most blocks take the block-wide path";
  EXPECT_EQ(differing_lanes, 0);
}

// The whole envelope of a row (hull over the admissible scale bytes, representative codes) on the AVX2
// path and element by element: the same bits in every field, on rows of hostile blocks (values on
// and beside the E2M1 thresholds, zeros of both signs, subnormal and huge values, wide intervals that
// admit several scale bytes) under scales that do and do not allow a flush.
// Row t of hostile blocks (1 to 4 blocks of 16 elements), the scale it is quantized under, and each
// element's stream index (for a test's own draws per element).
struct HostileRow {
  float s_q = 0;
  std::vector<double> lo, hi;
  std::vector<uint64_t> keys;
};
HostileRow hostile_row(const Stream& s, uint64_t t) {
  const float s_qs[] = {512.0f, 448.0f * 6.0f / 3.7f, 0x1p-20f, 1.0f, 0x1p100f, 3.0e38f};
  HostileRow row;
  row.s_q = s_qs[t % 6];
  const size_t n = 16 * (1 + s.bits(t * 1000) % 4);
  row.lo.resize(n);
  row.hi.resize(n);
  row.keys.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const uint64_t i = t * 1000 + 1 + k * 3;
    const double os = 64.0 / std::ldexp(1.0, static_cast<int>(s.bits(i) % 24) - 12);  // a power of two
    hostile_interval(s, i, os, /*width_bits=*/30, row.lo[k], row.hi[k]);
    row.keys[k] = i;
  }
  return row;
}

TEST(QuantEnvelope, Avx2EnvelopeEqualsTheElementWiseOne) {
  const Stream s(11, "envelopes");
  int64_t determinate = 0, codes = 0, nonzero = 0;
  for (uint64_t t = 0; t < 3000; ++t) {
    const HostileRow row = hostile_row(s, t);
    const std::vector<double>&lo = row.lo, &hi = row.hi;
    const float s_q = row.s_q;
    const size_t n = lo.size();
    std::vector<double> center(n);
    for (size_t k = 0; k < n; ++k) {
      const double x = lo[k] + (hi[k] - lo[k]) / 2;
      const uint64_t where = s.bits(row.keys[k] + 2) >> 40;
      center[k] = where % 3 == 0 ? lo[k] : where % 3 == 1 ? hi[k] : x;
    }
    const Nvfp4Envelope simd = nvfp4_envelope(lo, hi, center, s_q, /*simd=*/true);
    const Nvfp4Envelope plain = nvfp4_envelope(lo, hi, center, s_q, /*simd=*/false);
    ASSERT_EQ(simd.indeterminate, plain.indeterminate);
    ASSERT_EQ(simd.center_codes, plain.center_codes) << "row " << t;
    ASSERT_EQ(simd.center_scales, plain.center_scales) << "row " << t;
    ASSERT_EQ(simd.scale_lo, plain.scale_lo) << "row " << t;
    ASSERT_EQ(simd.scale_hi, plain.scale_hi) << "row " << t;
    ASSERT_EQ(0, std::memcmp(simd.lo.data(), plain.lo.data(), n * sizeof(double))) << "row " << t;
    ASSERT_EQ(0, std::memcmp(simd.hi.data(), plain.hi.data(), n * sizeof(double))) << "row " << t;
    if (plain.indeterminate) continue;
    ++determinate;
    codes += static_cast<int64_t>(n);
    for (uint8_t c : plain.center_codes) nonzero += (c & 0x7) != 0 ? 1 : 0;
  }
  // Not vacuous: most rows have an envelope, and many of its representative codes are not zero.
  EXPECT_GT(determinate, 2000);
  EXPECT_GT(nonzero, codes / 5);
}

// nvfp4_admits on the AVX2 path (the block scale range's maxima four lanes at a time, the unflushed
// code ranges) and element by element: the same verdict, the same first offending element or block,
// for codes and scale bytes that are admitted (the envelope's representative) and for ones moved off
// it (a code or a scale byte changed).
TEST(QuantEnvelope, Avx2AdmissionEqualsTheElementWiseOne) {
  const Stream s(12, "admission");
  int64_t admitted = 0, code_rejected = 0, scale_rejected = 0;
  for (uint64_t t = 0; t < 3000; ++t) {
    HostileRow row = hostile_row(s, t);
    std::vector<double>&lo = row.lo, &hi = row.hi;
    const float s_q = row.s_q;
    const size_t n = lo.size();
    std::vector<double> center(n);
    for (size_t k = 0; k < n; ++k) {
      if (t % 4 == 3 && (t / 4 % 2 == 0 || k % 2 == 0)) {  // intervals around zero: amax_lo may be 0
        const double m = std::fabs(hi[k]) + std::fabs(lo[k]);
        lo[k] = -m * 0.75;
        hi[k] = m;
      }
      center[k] = lo[k] + (hi[k] - lo[k]) / 2;
    }
    const Nvfp4Envelope env = nvfp4_envelope(lo, hi, center, s_q);
    if (env.indeterminate) continue;
    std::vector<uint8_t> codes = env.center_codes, scales = env.center_scales;
    const uint64_t move = s.bits(t * 1000 + 999);
    if (move % 3 == 1) codes[move / 3 % n] ^= static_cast<uint8_t>(1 + (move >> 32) % 7);
    if (move % 3 == 2) scales[move / 3 % (n / 16)] += static_cast<uint8_t>((move >> 32) % 2 ? 1 : 0xFF);
    const int64_t simd = nvfp4_admits(lo, hi, s_q, codes, scales, /*simd=*/true);
    const int64_t plain = nvfp4_admits(lo, hi, s_q, codes, scales, /*simd=*/false);
    ASSERT_EQ(simd, plain) << "row " << t;
    (plain == kAdmitted ? admitted : plain < 0 ? scale_rejected : code_rejected)++;
  }
  // Not vacuous: admitted rows and both kinds of rejection occur often.
  EXPECT_GT(admitted, 500);
  EXPECT_GT(code_rejected, 100);
  EXPECT_GT(scale_rejected, 100);
}

}  // namespace
}  // namespace moefuzz
