#include "core/nvfp4_weight_draw.h"

#include <immintrin.h>

#include <array>
#include <bit>
#include <cstring>

#include "core/cpu_features.h"
#include "core/e4m3.h"

namespace moefuzz {
namespace {

// Code distribution of a realistically quantized Gaussian block: y = |g| * 6 / 2.1 (a block of 16
// normals has amax ~ 2.1 sigma), rounded by the E2M1 thresholds. P(|code| = m) from the half-normal
// CDF at threshold / 2.86: {0.070, 0.137, 0.131, 0.121, 0.158, 0.161, 0.140, 0.080}, times 64 and
// rounded so the counts sum to 64 (6 bits of a 7-bit draw; the 7th is the sign).
constexpr std::array<int, 8> kCodeCounts = {5, 9, 8, 8, 10, 10, 9, 5};
constexpr int kBitsPerCode = 7;
constexpr uint64_t kPairMask = (uint64_t{1} << (2 * kBitsPerCode)) - 1;

// Code byte of each 7-bit field: the magnitude its low 6 bits pick by kCodeCounts, sign 0x8 from bit 6.
const std::array<uint8_t, 128>& code_table() {
  static const std::array<uint8_t, 128> table = [] {
    std::array<uint8_t, 128> code_of{};
    for (int b = 0; b < 128; ++b) {
      int u = b & 0x3F, m = 0;
      while (u >= kCodeCounts[static_cast<size_t>(m)]) u -= kCodeCounts[static_cast<size_t>(m++)];
      code_of[static_cast<size_t>(b)] = static_cast<uint8_t>(m | ((b & 0x40) ? 0x8 : 0x0));
    }
    return code_of;
  }();
  return table;
}

// 14 random bits -> one packed byte (two codes), by table: one lookup per output byte.
const std::array<uint8_t, kPairMask + 1>& packed_pair_table() {
  static const std::array<uint8_t, kPairMask + 1> table = [] {
    const std::array<uint8_t, 128>& code_of = code_table();
    std::array<uint8_t, kPairMask + 1> t{};
    for (size_t w = 0; w <= kPairMask; ++w)
      t[w] = static_cast<uint8_t>(code_of[w & 0x7F] | (code_of[w >> 7] << 4));
    return t;
  }();
  return table;
}

// 256 scale bytes for the kNormal block-scale draw: block amax between 1.3 and 3 sigma with
// amax(W) = 5 sigma, i.e. E4M3 value 448 * (1.3 + 1.7 u) / 5, u = (i + 0.5) / 256.
const std::array<uint8_t, 256>& normal_scale_table() {
  static const std::array<uint8_t, 256> table = [] {
    std::array<uint8_t, 256> t{};
    for (int i = 0; i < 256; ++i)
      t[static_cast<size_t>(i)] =
          e4m3_from_float(static_cast<float>(448.0 * (1.3 + 1.7 * (i + 0.5) / 256.0) / 5.0));
    return t;
  }();
  return table;
}

// Scale byte of each top byte of c1 under profile p, as finish_block picks it (before a zero block's
// rules): wide and tiny scales 1 + 0x7D s / 0xFF (1..0x7E, all finite > 0), else the kNormal table.
const std::array<uint8_t, 256>& scale_table(WeightProfile p) {
  static const std::array<uint8_t, 256> any = [] {
    std::array<uint8_t, 256> t{};
    for (unsigned b = 0; b < 256; ++b) t[b] = static_cast<uint8_t>(1 + (b * 0x7Du) / 0xFFu);
    return t;
  }();
  const bool any_scale = p == WeightProfile::kWideScales || p == WeightProfile::kTinyScales;
  return any_scale ? any : normal_scale_table();
}

static_assert(std::endian::native == std::endian::little, "the packed word is stored little-endian");

// The block's 8 packed bytes as one little-endian word from its two draws: code i (7-bit field at
// bit 7 (i % 8) of c0 for i < 8, else of c1) at bits [4i, 4i + 4), low nibble first as in
// Nvfp4Matrix::packed.
uint64_t packed_codes(uint64_t c0, uint64_t c1) {
  const auto& pairs = packed_pair_table();
  const auto pair = [&](uint64_t c, int j) {  // packed byte j (0..3) of draw c; constant shifts
    return static_cast<uint64_t>(pairs[(c >> (2 * kBitsPerCode * j)) & kPairMask]);
  };
  return pair(c0, 0) | pair(c0, 1) << 8 | pair(c0, 2) << 16 | pair(c0, 3) << 24 | pair(c1, 0) << 32 |
         pair(c1, 1) << 40 | pair(c1, 2) << 48 | pair(c1, 3) << 56;
}

// A kZeroBlocks block whose rule draw says so (1 in 4) becomes all zero: codes 0x0 or 0x8 (-0), the
// scale byte as ModelOpt writes it (0x38 = 1.0: "pbs[pbs == 0] = 1.0"), 0x00, or left as drawn. The
// code bits are free to reuse here. Overwrites what the block's store wrote; other blocks keep it.
__attribute__((always_inline)) inline void finish_zero_block(uint64_t c0, uint64_t c1, int64_t blk,
                                                             Nvfp4Matrix& m) {
  if (((c0 >> 56 >> 5) & 3) != 0) return;
  uint64_t codes = 0;
  for (int i = 0; i < kNvfp4BlockSize; ++i) codes |= ((c0 >> i) & 1) << (4 * i + 3);
  std::memcpy(m.packed.data() + blk * (kNvfp4BlockSize / 2), &codes, sizeof(codes));
  const uint64_t rule = (c1 & 0xFFFF) % 3;
  if (rule == 0) m.scales[static_cast<size_t>(blk)] = 0x38;
  if (rule == 1) m.scales[static_cast<size_t>(blk)] = 0x00;
}

// Everything of block blk but its codes word: the block max, the scale, a zero block. Stores both.
// `scales` is scale_table(p), looked up once per matrix. Inlined into the block loop (a call per
// block, and the table's guard, were most of its cost).
__attribute__((always_inline)) inline void finish_block(WeightProfile p, const uint8_t* scales, uint64_t c0,
                                                        uint64_t c1, uint64_t codes, int64_t blk,
                                                        Nvfp4Matrix& m) {
  const uint64_t head = c0 >> 56;
  // One element per block carries the block max (+-6), as a quantized block does.
  const int max_shift = 4 * static_cast<int>(head & 15);
  codes = (codes & ~(uint64_t{0xF} << max_shift)) | (uint64_t{(head & 16) ? 0xFu : 0x7u} << max_shift);
  std::memcpy(m.packed.data() + blk * (kNvfp4BlockSize / 2), &codes, sizeof(codes));
  m.scales[static_cast<size_t>(blk)] = scales[c1 >> 56];
  if (p == WeightProfile::kZeroBlocks) finish_zero_block(c0, c1, blk, m);
}

#define MOEFUZZ_AVX512_VBMI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi")))
// GCC 12's avx512fintrin.h passes _mm512_undefined_* operands to its builtins, which
// -W(maybe-)uninitialized reports in every caller (a header false positive, not this file's).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// mix64 (core/rng.h) of eight words.
MOEFUZZ_AVX512_VBMI inline __m512i mix64_x8(__m512i z) {
  z = _mm512_add_epi64(z, _mm512_set1_epi64(static_cast<long long>(kSplitMixGamma)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                         _mm512_set1_epi64(static_cast<long long>(kSplitMixMul1)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                         _mm512_set1_epi64(static_cast<long long>(kSplitMixMul2)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// The 4 packed bytes of each of eight draws (packed_codes' half from one draw), as eight 32-bit words:
// the 7-bit fields at bits 0, 7, ..., 49 (one multishift), their code bytes (one 128-entry table
// lookup), then codes 2j and 2j + 1 into byte j.
MOEFUZZ_AVX512_VBMI inline __m256i packed_halves(__m512i draws, __m512i table_lo, __m512i table_hi) {
  const __m512i offsets = _mm512_set1_epi64(0x312A231C150E0700ll);  // bytes 0, 7, 14, ..., 49
  const __m512i fields =
      _mm512_and_si512(_mm512_multishift_epi64_epi8(offsets, draws), _mm512_set1_epi8(0x7F));
  const __m512i codes = _mm512_permutex2var_epi8(table_lo, fields, table_hi);
  const __m512i pairs =
      _mm512_and_si512(_mm512_or_si512(codes, _mm512_srli_epi16(codes, 4)), _mm512_set1_epi16(0xFF));
  return _mm512_cvtepi16_epi8(pairs);
}

// Blocks [0, blocks / 8 * 8) eight at a time, all of finish_block's work in the lanes but a zero
// block's rules (kZeroBlocks, 1 block in 4), which finish_zero_block applies afterwards. Returns the
// first block left.
MOEFUZZ_AVX512_VBMI int64_t draw_blocks_avx512(const Stream& s, WeightProfile p, int64_t blocks,
                                               Nvfp4Matrix& m) {
  const __m512i table_lo = _mm512_loadu_si512(code_table().data()),
                table_hi = _mm512_loadu_si512(code_table().data() + 64);
  const uint8_t* scales = scale_table(p).data();
  const __m512i scales_0 = _mm512_loadu_si512(scales), scales_1 = _mm512_loadu_si512(scales + 64),
                scales_2 = _mm512_loadu_si512(scales + 128), scales_3 = _mm512_loadu_si512(scales + 192);
  constexpr uint64_t kStep = kSplitMixGamma;  // Stream::bulk_bits' stride
  // Draw index 2 blk of lane k (blk = base + k): key + (2 base + 2k) * kStep, advanced 16 kStep a round.
  __m512i z0 = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(s.key())),
                                _mm512_mullo_epi64(_mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                                                   _mm512_set1_epi64(static_cast<long long>(kStep))));
  const __m512i step1 = _mm512_set1_epi64(static_cast<long long>(kStep)),
                step16 = _mm512_set1_epi64(static_cast<long long>(16 * kStep));
  const __m512i nibble = _mm512_set1_epi64(0xF), seven = _mm512_set1_epi64(0x7);
  const bool zero_blocks = p == WeightProfile::kZeroBlocks;
  uint8_t* packed = m.packed.data();
  uint8_t* scale_out = m.scales.data();
  const int64_t end = blocks / 8 * 8;
  for (int64_t base = 0; base < end; base += 8) {
    const __m512i d0 = mix64_x8(z0), d1 = mix64_x8(_mm512_add_epi64(z0, step1));
    z0 = _mm512_add_epi64(z0, step16);
    __m512i w =
        _mm512_or_si512(_mm512_cvtepu32_epi64(packed_halves(d0, table_lo, table_hi)),
                        _mm512_slli_epi64(_mm512_cvtepu32_epi64(packed_halves(d1, table_lo, table_hi)), 32));
    // The block max: nibble (head & 15) of the word becomes 0xF (head & 16) or 0x7, head = d0's top byte.
    const __m512i head = _mm512_srli_epi64(d0, 56);
    const __m512i shift = _mm512_slli_epi64(_mm512_and_si512(head, nibble), 2);
    const __m512i max_code =
        _mm512_or_si512(seven, _mm512_srli_epi64(_mm512_and_si512(head, _mm512_set1_epi64(16)), 1));
    w = _mm512_or_si512(_mm512_andnot_si512(_mm512_sllv_epi64(nibble, shift), w),
                        _mm512_sllv_epi64(max_code, shift));
    _mm512_storeu_si512(packed + base * (kNvfp4BlockSize / 2), w);
    // The scale: the table entry of d1's top byte (byte 7 of each lane), from its two 128-byte halves.
    const __m512i low = _mm512_permutex2var_epi8(scales_0, d1, scales_1),
                  high = _mm512_permutex2var_epi8(scales_2, d1, scales_3);
    const __m512i picked = _mm512_mask_blend_epi8(_mm512_movepi8_mask(d1), low, high);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(scale_out + base),
                     _mm512_cvtepi64_epi8(_mm512_srli_epi64(picked, 56)));
    if (zero_blocks) {
      alignas(64) uint64_t c0[8], c1[8];
      _mm512_store_si512(c0, d0);
      _mm512_store_si512(c1, d1);
      for (int k = 0; k < 8; ++k) finish_zero_block(c0[k], c1[k], base + k, m);
    }
  }
  return end;
}

}  // namespace

void draw_nvfp4_weights(const Stream& s, WeightProfile p, Nvfp4Matrix& m, bool simd) {
  const int64_t blocks = m.rows * m.blocks_per_row();
  // Two 64-bit draws per block: 16 codes x 7 bits in the low 56 bits of each, then c0's top byte
  // places the block max (place 4 bits, sign 1, zero-block choice 2) and c1's top byte is the scale.
  int64_t blk = simd && cpu_has_avx512_vbmi() ? draw_blocks_avx512(s, p, blocks, m) : 0;
  const uint8_t* scales = scale_table(p).data();
  for (; blk < blocks; ++blk) {
    const uint64_t c0 = s.bulk_bits(static_cast<uint64_t>(blk) * 2),
                   c1 = s.bulk_bits(static_cast<uint64_t>(blk) * 2 + 1);
    finish_block(p, scales, c0, c1, packed_codes(c0, c1), blk, m);
  }
  // Tiny scales: guarantee an E4M3 subnormal scale byte (0x01..0x07) in every matrix.
  if (p == WeightProfile::kTinyScales && blocks > 0)
    m.scales[0] = static_cast<uint8_t>(1 + s.child("subnormal").bits(0) % 7);
}

}  // namespace moefuzz
