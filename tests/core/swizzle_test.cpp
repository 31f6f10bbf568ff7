// core/swizzle.h against an independent implementation of the layouts' TENSOR definitions
// (SPEC.md §1.8), written as explicit reshape + permute + contiguous index arithmetic:
//   128x4: sf_padded.reshape(Mp/128, 4, 32, Kbp/4, 4).permute(0, 3, 2, 1, 4)     (FlashInfer, vLLM)
//   batched 128x4: reshape(B, Mp/128, 4, 32, Kbp/4, 4).permute(0, 1, 4, 3, 2, 5) (SGLang swizzle_blockscale)
//   8x4:   sf_padded.reshape(Mp/8, 8, Kbp/4, 4).permute(0, 2, 1, 3)
// for many shapes, including rows and scale columns that are not multiples of 128 / 8 and 4.
// Checked: offsets, the swizzled buffers (padding bytes 0), round trips, and that each offset
// function is a bijection of the padded index space onto [0, padded size).
#include "core/swizzle.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/errors.h"

namespace moefuzz {
namespace {

// torch semantics: view a contiguous buffer with shape `dims`, permute its axes by `perm`, make it
// contiguous. Returns, for each position of the result, the linear index of the source element.
template <size_t N>
std::vector<int64_t> permuted_source_index(const std::array<int64_t, N>& dims,
                                           const std::array<int, N>& perm) {
  std::array<int64_t, N> src_stride{};
  int64_t total = 1;
  for (int i = static_cast<int>(N) - 1; i >= 0; --i) {
    src_stride[i] = total;
    total *= dims[i];
  }
  std::array<int64_t, N> out_dims{};
  for (size_t i = 0; i < N; ++i) out_dims[i] = dims[perm[i]];
  std::vector<int64_t> source(static_cast<size_t>(total));
  std::array<int64_t, N> idx{};  // multi-index into the permuted (output) tensor, row-major order
  for (int64_t pos = 0; pos < total; ++pos) {
    int64_t src = 0;
    for (size_t i = 0; i < N; ++i) src += idx[i] * src_stride[perm[i]];
    source[static_cast<size_t>(pos)] = src;
    for (int i = static_cast<int>(N) - 1; i >= 0; --i) {  // odometer increment
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return source;
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Linear [rows, cols] -> zero-padded [mp, kbp], row-major.
std::vector<uint8_t> pad(const std::vector<uint8_t>& linear, int64_t rows, int64_t cols, int64_t mp,
                         int64_t kbp) {
  std::vector<uint8_t> padded(static_cast<size_t>(mp * kbp), 0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t kb = 0; kb < cols; ++kb)
      padded[static_cast<size_t>(m * kbp + kb)] = linear[static_cast<size_t>(m * cols + kb)];
  return padded;
}

// Distinct non-zero bytes, so that a misplaced element or a non-zero pad is visible.
std::vector<uint8_t> numbered(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<uint8_t>(1 + i % 251);
  return v;
}

const std::vector<int64_t> kRows = {1, 2, 7, 8, 9, 31, 32, 33, 127, 128, 129, 200, 256, 257, 383};
const std::vector<int64_t> kScaleCols = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16};

TEST(Swizzle128x4, MatchesTheTensorPermuteDefinition) {
  for (int64_t rows : kRows) {
    for (int64_t cols : kScaleCols) {
      const int64_t mp = round_up(rows, 128), kbp = round_up(cols, 4);
      ASSERT_EQ(padded_rows_128x4(rows), mp);
      ASSERT_EQ(padded_scale_cols_128x4(cols), kbp);
      ASSERT_EQ(swizzled_128x4_size(rows, cols), mp * kbp);
      const std::vector<int64_t> source =
          permuted_source_index<5>({mp / 128, 4, 32, kbp / 4, 4}, {0, 3, 2, 1, 4});
      // Offsets: position p of the permuted tensor holds padded element source[p] = m * kbp + kb.
      for (int64_t p = 0; p < mp * kbp; ++p) {
        const int64_t m = source[p] / kbp, kb = source[p] % kbp;
        ASSERT_EQ(swizzled_128x4_offset(m, kb, cols), p)
            << "rows " << rows << " cols " << cols << " m " << m << " kb " << kb;
      }
      // Buffers: swizzle == the permuted padded tensor, padding bytes 0.
      const std::vector<uint8_t> linear = numbered(rows * cols);
      const std::vector<uint8_t> padded = pad(linear, rows, cols, mp, kbp);
      std::vector<uint8_t> expected(padded.size());
      for (size_t p = 0; p < expected.size(); ++p) expected[p] = padded[static_cast<size_t>(source[p])];
      const std::vector<uint8_t> swizzled = swizzle_128x4(linear, rows, cols);
      ASSERT_EQ(swizzled, expected) << "rows " << rows << " cols " << cols;
      ASSERT_EQ(unswizzle_128x4(swizzled, rows, cols), linear) << "rows " << rows << " cols " << cols;
    }
  }
}

TEST(Swizzle128x4, OffsetIsABijectionOntoThePaddedBuffer) {
  for (int64_t rows : kRows) {
    for (int64_t cols : kScaleCols) {
      const int64_t mp = padded_rows_128x4(rows), kbp = padded_scale_cols_128x4(cols);
      std::vector<int> hits(static_cast<size_t>(mp * kbp), 0);
      for (int64_t m = 0; m < mp; ++m) {
        for (int64_t kb = 0; kb < kbp; ++kb) {
          const int64_t at = swizzled_128x4_offset(m, kb, cols);
          ASSERT_TRUE(at >= 0 && at < mp * kbp) << m << " " << kb;
          ++hits[static_cast<size_t>(at)];
        }
      }
      for (int h : hits) ASSERT_EQ(h, 1) << "rows " << rows << " cols " << cols;
    }
  }
}

TEST(Swizzle128x4, BatchedOffsetMatchesTheSixDimensionalPermute) {
  for (int64_t batches : {1, 3}) {
    for (int64_t rows : {1, 129, 256}) {
      for (int64_t cols : {3, 4, 9}) {
        const int64_t mp = padded_rows_128x4(rows), kbp = padded_scale_cols_128x4(cols);
        const std::vector<int64_t> source =
            permuted_source_index<6>({batches, mp / 128, 4, 32, kbp / 4, 4}, {0, 1, 4, 3, 2, 5});
        for (int64_t p = 0; p < batches * mp * kbp; ++p) {
          const int64_t b = source[p] / (mp * kbp), m = source[p] % (mp * kbp) / kbp, kb = source[p] % kbp;
          ASSERT_EQ(swizzled_128x4_batched_offset(b, m, kb, rows, cols), p) << b << " " << m << " " << kb;
        }
      }
    }
  }
}

TEST(Swizzle8x4, MatchesTheTensorPermuteDefinition) {
  for (int64_t rows : kRows) {
    for (int64_t cols : kScaleCols) {
      const int64_t mp = round_up(rows, 8), kbp = round_up(cols, 4);
      ASSERT_EQ(swizzled_8x4_size(rows, cols), mp * kbp);
      const std::vector<int64_t> source = permuted_source_index<4>({mp / 8, 8, kbp / 4, 4}, {0, 2, 1, 3});
      std::vector<int> hits(static_cast<size_t>(mp * kbp), 0);
      for (int64_t p = 0; p < mp * kbp; ++p) {
        const int64_t m = source[p] / kbp, kb = source[p] % kbp;
        ASSERT_EQ(swizzled_8x4_offset(m, kb, cols), p) << "rows " << rows << " cols " << cols;
        ++hits[static_cast<size_t>(swizzled_8x4_offset(m, kb, cols))];
      }
      for (int h : hits) ASSERT_EQ(h, 1);
      const std::vector<uint8_t> linear = numbered(rows * cols);
      const std::vector<uint8_t> padded = pad(linear, rows, cols, mp, kbp);
      std::vector<uint8_t> expected(padded.size());
      for (size_t p = 0; p < expected.size(); ++p) expected[p] = padded[static_cast<size_t>(source[p])];
      const std::vector<uint8_t> swizzled = swizzle_8x4(linear, rows, cols);
      ASSERT_EQ(swizzled, expected);
      ASSERT_EQ(unswizzle_8x4(swizzled, rows, cols), linear);
    }
  }
}

TEST(Swizzle, SpecWorkedExample) {
  // SPEC.md §1.8 formula by hand: m = 130, kb = 5, Kb = 6 (Kbp = 8):
  // mTile 1 * 2 * 512 + kTile 1 * 512 + (130 % 32) * 16 + ((130 % 128) / 32) * 4 + 5 % 4.
  EXPECT_EQ(swizzled_128x4_offset(130, 5, 6), 1024 + 512 + 32 + 0 + 1);
  // 8x4: m = 9, kb = 5, Kb = 6: (9/8) * 2 * 32 + (5/4) * 32 + (9 % 8) * 4 + 5 % 4.
  EXPECT_EQ(swizzled_8x4_offset(9, 5, 6), 64 + 32 + 4 + 1);
}

TEST(Swizzle, RejectsBuffersThatDoNotMatchTheShape) {
  const std::vector<uint8_t> six(6, 1);
  EXPECT_THROW(swizzle_128x4(six, 2, 4), InputError);
  EXPECT_THROW(swizzle_128x4(six, -2, -3), InputError);
  EXPECT_THROW(swizzle_128x4(six, int64_t{1} << 40, 1), InputError);
  EXPECT_THROW(unswizzle_128x4(six, 2, 3), InputError);  // needs 128 * 4 bytes
  EXPECT_THROW(swizzle_8x4(six, 2, 4), InputError);
  EXPECT_THROW(unswizzle_8x4(six, 2, 3), InputError);
  EXPECT_EQ(swizzle_128x4(six, 2, 3).size(), 512u);
  EXPECT_EQ(swizzle_8x4(six, 2, 3).size(), 32u);
  EXPECT_TRUE(swizzle_128x4(std::vector<uint8_t>{}, 0, 0).empty());
}

}  // namespace
}  // namespace moefuzz
