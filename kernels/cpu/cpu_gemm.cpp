// GEMM1 and GEMM2 of the expert MLP (SPEC.md §3.2, §3.5), grouped by expert.
//
// Precision contract (like the block-scaled tensor-core MMA): per 16-element K block, the code
// products are summed exactly (E2M1 x E2M1 products are multiples of 1/4 up to 36, so 16 of them sum
// exactly in fp32), multiplied by sfa * sfw (exact: 4+4 significant bits) - so each block term is
// exact - and block terms are accumulated in fp32; then fl(alpha * acc) and the bf16 rounding point.
// W4A16 multiplies bf16 activations by the decoded weight codes instead; its 16-term partials round.
// bf16 weights (W16A16) take the W4A16 path with the bf16 values as "codes" and unit scales: fp32
// products (exact), 16-term fp32 partials, fp32 accumulation, alpha 1. MXFP4 weights (W4A16, gpt-oss)
// take the same path with e2m1 * 2^(scale - 127) as "codes" (the upcast of triton_kernels'
// upcast_from_mxfp, SPEC-formats.md §3.5: exact in fp32 and bf16 down to 0.5 x 2^-127 = 2^-128, a bf16
// subnormal that is kept; 2^128 and above is +-Inf, as bf16's multiply gives; scale 0xFF is a NaN
// block, the OCP decode, core/e8m0.h kOcp).
//
// Tactics (RunOptions::tactic) differ only in fp32 association of the block terms:
//   0: N tile 32, acc += term for every block in K order;
//   1: N tile 64, per 64-element K tile a partial sum of its 4 block terms, acc += partial.
//
// Vectorization: per expert and N tile the weight codes are decoded once to a [K, Ntile] float tile
// (N contiguous), so every inner loop is an independent-lane fp32 loop over n, summed two activation
// rows at a time without reassociating anything (kernels/cpu/tile_dot.h). W4A4 tiles hold code pairs
// as int8 instead (twice the E2M1 values): the exact 16-term block sums come from integer products
// (fp4_tile_dot_rows), the same bits from a quarter of the tile's bytes.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/e8m0.h"
#include "core/errors.h"
#include "core/mxfp4.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/deviation_hooks.h"
#include "kernels/cpu/index_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/tile_dot.h"

namespace moefuzz::cpu {
namespace {

struct Lut {
  float v[16];
  int8_t twice[16];    // 2 v[code]: an integer in [-12, 12] (fp4_tile_dot_rows' operands)
  uint16_t pair[256];  // a packed byte's two codes as twice their values: low nibble in the low byte
  explicit Lut(bool negative_zero_nonzero) {
    for (int c = 0; c < 16; ++c) v[c] = e2m1_to_float(static_cast<uint8_t>(c));
    if (negative_zero_nonzero) v[8] = -0.5f;  // format mutant: -0 code decoded as nonzero
    for (int c = 0; c < 16; ++c) twice[c] = static_cast<int8_t>(2.0f * v[c]);
    for (int b = 0; b < 256; ++b)
      pair[b] = static_cast<uint16_t>(static_cast<uint8_t>(twice[b & 0xF]) |
                                      static_cast<uint8_t>(twice[b >> 4]) << 8);
  }
};

int tile_n(const CpuConfig& cfg) { return cfg.tactic == 1 ? 64 : 32; }

// Row of the scale matrix actually read for weight row n (Z10 mutant: the partial last 128-row tile of
// the 128x4 swizzled layout is indexed with its 32x4 atom transposed; a row past the end reads the
// zero padding, reported as -1).
int64_t scale_row_read(int64_t n, int64_t rows, const CpuConfig& cfg) {
  if (!cfg.dev.swizzle_tail_transposed) return n;
  const int64_t base = rows / 128 * 128;
  if (n < base) return n;
  const int64_t local = n - base;
  const int64_t read = base + (local % 4) * 32 + local / 4;
  return read < rows ? read : -1;
}

// One weight matrix slice [n0, n0 + nt) of `w` for expert e, decoded into a [K, nt] tile.
struct WeightTile {
  std::vector<float> codes;     // [K, nt]
  std::vector<uint16_t> pairs;  // [K/2, nt] code pairs (fp4_tile_dot_rows), instead of codes
  std::vector<float> scales;    // [K/16, nt]
};

// lut[code] per lane for codes in [0, 16), the table in two registers (low: codes 0-7).
__attribute__((target("avx2"), always_inline)) inline __m256 lookup_fp4_avx2(__m256 low, __m256 high,
                                                                             __m256i code) {
  const __m256 is_high = _mm256_castsi256_ps(_mm256_slli_epi32(code, 28));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, code), _mm256_permutevar8x32_ps(high, code), is_high);
}

// Columns [0, rows) of a [K, nt] tile from `rows` consecutive packed FP4 weight rows starting at
// `first` (row_bytes = K/2 each, a multiple of 8): eight rows per gather of one 4-byte word each, so
// one gather gives eight K values of eight columns; each code is looked up in the 16-entry table by
// two in-register permutes (codes 0-7 and 8-15) and a blend on bit 3.
__attribute__((target("avx2"))) void decode_fp4_rows_avx2(const uint8_t* first, int64_t row_bytes,
                                                          int64_t rows, int64_t nt, const Lut& lut,
                                                          float* codes) {
  const __m256 low = _mm256_loadu_ps(lut.v), high = _mm256_loadu_ps(lut.v + 8);
  const __m256i nibble = _mm256_set1_epi32(0xF);
  for (int64_t j0 = 0; j0 < rows; j0 += 8) {
    const __m256i offsets = _mm256_mullo_epi32(
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(j0)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
        _mm256_set1_epi32(static_cast<int>(row_bytes)));
    for (int64_t k4 = 0; k4 < row_bytes; k4 += 4) {
      const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(first + k4), offsets, 1);
      for (int b = 0; b < 4; ++b) {
        const __m256i byte = _mm256_srli_epi32(words, 8 * b);
        float* even = codes + 2 * (k4 + b) * nt + j0;
        _mm256_storeu_ps(even, lookup_fp4_avx2(low, high, _mm256_and_si256(byte, nibble)));
        _mm256_storeu_ps(even + nt,
                         lookup_fp4_avx2(low, high, _mm256_and_si256(_mm256_srli_epi32(byte, 4), nibble)));
      }
    }
  }
}

// The tile's block scales (0 past N, and where a mutated scale row is read past the end).
void decode_tile_scales(const Nvfp4Matrix& w, const Nvfp4Matrix& scale_src, int64_t n0, int64_t nt,
                        const CpuConfig& cfg, WeightTile& tile) {
  const int64_t Kb = w.cols / 16;
  const int64_t valid = std::clamp<int64_t>(w.rows - n0, 0, nt);
  tile.scales.resize(static_cast<size_t>(Kb * nt));
  const std::array<float, 256>& scale_value = e4m3_values();
  for (int64_t j = 0; j < nt; ++j) {
    const int64_t sr = j < valid ? scale_row_read(n0 + j, w.rows, cfg) : -1;
    for (int64_t kb = 0; kb < Kb; ++kb)
      tile.scales[static_cast<size_t>(kb * nt + j)] = sr < 0 ? 0.0f : scale_value[scale_src.scale(sr, kb)];
  }
}

// The tile is written one K row at a time (nt contiguous floats) from the nt weight rows' bytes:
// at a few activation rows per expert (small cases) decoding costs more than the dots, and a
// column-at-a-time walk stored every value nt floats away from the last.
void decode_tile(const Nvfp4Matrix& w, const Nvfp4Matrix& scale_src, int64_t n0, int64_t nt, const Lut& lut,
                 const CpuConfig& cfg, WeightTile& tile) {
  constexpr int64_t kMaxTile = 64;
  if (nt > kMaxTile) throw std::logic_error("decode_tile: the tile is wider than 64 columns");
  const int64_t K = w.cols;
  const int64_t valid = std::clamp<int64_t>(w.rows - n0, 0, nt);  // past N: zero weights
  tile.codes.resize(static_cast<size_t>(K * nt));
  const uint8_t* rows[kMaxTile];
  for (int64_t j = 0; j < valid; ++j) rows[j] = w.packed.data() + (n0 + j) * (K / 2);
  static const bool simd = cpu_has_avx2();
  // Groups of eight rows by AVX2 gathers, the rest (and every row without AVX2) one byte at a time.
  const int64_t gathered = simd && valid * (K / 2) < (int64_t{1} << 31) ? valid / 8 * 8 : 0;
  if (gathered > 0) decode_fp4_rows_avx2(rows[0], K / 2, gathered, nt, lut, tile.codes.data());
  for (int64_t k2 = 0; k2 < K / 2; ++k2) {
    float* even = tile.codes.data() + 2 * k2 * nt;
    float* odd = even + nt;
    for (int64_t j = gathered; j < valid; ++j) {
      const uint8_t byte = rows[j][k2];
      even[j] = lut.v[byte & 0xF];
      odd[j] = lut.v[byte >> 4];
    }
    std::fill(even + valid, even + nt, 0.0f);
    std::fill(odd + valid, odd + nt, 0.0f);
  }
  decode_tile_scales(w, scale_src, n0, nt, cfg, tile);
}

// Columns [0, rows) (a multiple of 8) of a [K/2, nt] pair tile from `rows` consecutive packed FP4
// weight rows of k2s bytes each (a multiple of 8): per 8 rows and 8 packed bytes, each row's bytes
// become 8 pairs (two 16-entry byte lookups and an interleave) and an 8 x 8 transpose of the 16-bit
// pairs turns rows into the tile's K rows.
__attribute__((target("avx2"))) void decode_pair_rows_avx2(const uint8_t* first, int64_t k2s, int64_t rows,
                                                           int64_t nt, const Lut& lut, uint16_t* pairs) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lut.twice));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  for (int64_t j0 = 0; j0 < rows; j0 += 8)
    for (int64_t k0 = 0; k0 < k2s; k0 += 8) {
      __m128i r[8];
      for (int j = 0; j < 8; ++j) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(first + (j0 + j) * k2s + k0));
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(bytes, nibble));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble));
        r[j] = _mm_unpacklo_epi8(lo, hi);  // pair q: codes 2 (k0 + q) and 2 (k0 + q) + 1
      }
      __m128i t[8], u[8];
      for (int j = 0; j < 4; ++j) {
        t[2 * j] = _mm_unpacklo_epi16(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm_unpackhi_epi16(r[2 * j], r[2 * j + 1]);
      }
      for (int j = 0; j < 2; ++j) {
        u[4 * j] = _mm_unpacklo_epi32(t[4 * j], t[4 * j + 2]);
        u[4 * j + 1] = _mm_unpackhi_epi32(t[4 * j], t[4 * j + 2]);
        u[4 * j + 2] = _mm_unpacklo_epi32(t[4 * j + 1], t[4 * j + 3]);
        u[4 * j + 3] = _mm_unpackhi_epi32(t[4 * j + 1], t[4 * j + 3]);
      }
      for (int q = 0; q < 4; ++q) {
        uint16_t* out = pairs + (k0 + 2 * q) * nt + j0;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi64(u[q], u[q + 4]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + nt), _mm_unpackhi_epi64(u[q], u[q + 4]));
      }
    }
}

// The same tile as code pairs for fp4_tile_dot_rows: one table lookup per packed byte.
void decode_tile_pairs(const Nvfp4Matrix& w, const Nvfp4Matrix& scale_src, int64_t n0, int64_t nt,
                       const Lut& lut, const CpuConfig& cfg, WeightTile& tile) {
  const int64_t K2 = w.cols / 2;
  const int64_t valid = std::clamp<int64_t>(w.rows - n0, 0, nt);  // past N: zero weights
  tile.pairs.resize(static_cast<size_t>(K2 * nt));
  const uint8_t* first = w.packed.data() + n0 * K2;
  static const bool simd = cpu_has_avx2();
  const int64_t gathered = simd && K2 % 8 == 0 ? valid / 8 * 8 : 0;
  if (gathered > 0) decode_pair_rows_avx2(first, K2, gathered, nt, lut, tile.pairs.data());
  for (int64_t k2 = 0; k2 < K2; ++k2) {
    uint16_t* out = tile.pairs.data() + k2 * nt;
    for (int64_t j = gathered; j < valid; ++j) out[j] = lut.pair[first[j * K2 + k2]];
    std::fill(out + valid, out + nt, uint16_t{0});
  }
  decode_tile_scales(w, scale_src, n0, nt, cfg, tile);
}

// The same tile from bf16 weights (weight_format bf16): values as codes, unit scales.
void decode_tile(const Bf16Matrix& w, int64_t n0, int64_t nt, const CpuConfig& cfg, WeightTile& tile) {
  const int64_t K = w.cols;
  // B7 mutant (vLLM #42436, a tensor-descriptor fused_moe miscompiling a ragged last K tile): the
  // elements past the last full 64-wide K tile contribute nothing.
  const int64_t k_end = cfg.dev.ragged_k_tile_dropped ? K / 64 * 64 : K;
  tile.codes.assign(static_cast<size_t>(K * nt), 0.0f);
  tile.scales.assign(static_cast<size_t>(K / 16 * nt), 1.0f);
  for (int64_t j = 0; j < nt; ++j) {
    if (n0 + j >= w.rows) continue;  // tile overhang past N: zero weights
    for (int64_t k = 0; k < k_end; ++k) tile.codes[k * nt + j] = w.value(n0 + j, k);
  }
}

// The same tile from MXFP4 weights (weight_format mxfp4): decoded values as codes, unit scales.
void decode_tile(const Mxfp4Quantized& w, int64_t n0, int64_t nt, const CpuConfig& cfg, WeightTile& tile) {
  const int64_t K = w.cols;
  tile.codes.assign(static_cast<size_t>(K * nt), 0.0f);
  tile.scales.assign(static_cast<size_t>(K / 16 * nt), 1.0f);
  for (int64_t j = 0; j < nt; ++j) {
    const int64_t n = n0 + j;
    if (n >= w.rows) continue;  // tile overhang past N: zero weights
    for (int64_t kb = 0; kb < w.scale_cols; ++kb) {
      uint8_t code = w.scale(n, kb);
      // M1 mutant (vLLM #47303): scales are loaded in pairs of blocks (64 elements of K, as in the
      // Hopper-swizzled layout padded to 2 blocks) without a K mask: the last block of a K that is not
      // a multiple of 64 shares its load with the padding, read as 0xFF.
      if (cfg.dev.mx_scale_tail_unmasked && K % 64 != 0 && kb == w.scale_cols - 1) code = kE8m0NaNCode;
      float scale = e8m0_to_float(code);
      // M4 mutant (sglang #25519): the NaN sentinel tested on the decoded float as `== 128` (2^7, code
      // 134) instead of on the byte: 2^7 becomes NaN and 0xFF decodes by exponent shift to +Inf.
      if (cfg.dev.mx_nan_sentinel_on_float)
        scale = code == kE8m0NaNCode ? INFINITY : scale == 128.0f ? NAN : scale;
      const int64_t k0 = kb * kMxfp4BlockSize, k1 = std::min(K, k0 + kMxfp4BlockSize);
      for (int64_t k = k0; k < k1; ++k) tile.codes[k * nt + j] = e2m1_to_float(w.code(n, k)) * scale;
    }
  }
}

// Activation operand of one expanded row: decoded codes (W4A4) or bf16 values (W4A16), plus the
// per-block scale (1 for W4A16).
struct ActRow {
  std::vector<float> x;
  std::vector<int8_t> x2;  // twice the code values instead of x, for fp4_tile_dot_rows
  std::vector<float> s;
};

// `product` names the packed rows' index product (kExpandedInput or kFc2Input): the row actually read
// is row r unless a narrowed product lands in another row's slot.
// `twice`: the codes as twice their values (ActRow::x2) where `q` holds them.
void load_act_row(const std::optional<QuantizedRows>& q, const float* plain, int64_t r, int64_t K,
                  IndexProduct product, const CpuConfig& cfg, const Lut& lut, bool twice, ActRow& a) {
  a.s.resize(static_cast<size_t>(K / 16));
  if (q) {
    const int64_t read = cpu_unit_read(cfg, product, r, K / 2, q->rows, cfg.slots);
    const uint8_t* row = q->packed.data() + read * K / 2;
    if (twice) {
      a.x2.resize(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; k += 2) std::memcpy(&a.x2[k], &lut.pair[row[k / 2]], 2);
    } else {
      a.x.resize(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; k += 2)
        a.x[k] = lut.v[row[k / 2] & 0xF], a.x[k + 1] = lut.v[row[k / 2] >> 4];
    }
    for (int64_t kb = 0; kb < K / 16; ++kb) a.s[kb] = e4m3_to_float(q->scales[read * K / 16 + kb]);
  } else {
    a.x.resize(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) a.x[k] = plain[k];
    for (int64_t kb = 0; kb < K / 16; ++kb) a.s[kb] = 1.0f;
  }
}

float act_dequant_scale(const std::vector<float>& s_q, int64_t e) {
  return 1.0f / (s_q.size() == 1 ? s_q[0] : s_q[static_cast<size_t>(e)]);
}

// One matrix `w` (N = w.rows) for the rows of expert e, writing out[off(r) + col0 + n], where off is
// the output's index product `product` with row stride ldo. `dense` (non-null for bf16 weights) or
// `mx` (MXFP4 weights) replaces w and scale_src. `bias` (empty: none) is added to the fp32 result
// before the rounding point (recipe expert_bias). `load(r, twice, row)` reads activation row r, its
// codes as twice their values when `twice` (fp4_activations: W4A4, whose tiles take
// fp4_tile_dot_rows).
void expert_matmul(const std::vector<int64_t>& rows, const Nvfp4Matrix& w, const Nvfp4Matrix& scale_src,
                   const Bf16Matrix* dense, const Mxfp4Quantized* mx, std::span<const float> bias,
                   float alpha, bool fp4_activations, const std::function<void(int64_t, bool, ActRow&)>& load,
                   IndexProduct product, int64_t ldo, int64_t col0, bool round, const CpuConfig& cfg,
                   const Lut& lut, std::vector<float>& out) {
  const int64_t out_rows = static_cast<int64_t>(out.size()) / ldo;
  const int64_t K = dense ? dense->cols : mx ? mx->cols : w.cols;
  const int64_t N = dense ? dense->rows : mx ? mx->rows : w.rows, nt = tile_n(cfg);
  WeightTile tile;
  const bool pairs =
      fp4_activations && dense == nullptr && mx == nullptr && nt % 32 == 0 && fp4_tile_dot_available();
  std::vector<ActRow> acts(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) load(rows[i], pairs, acts[i]);
  const TileDotShape shape{
      .K = K,
      .nt = nt,
      .group = cfg.tactic == 1 ? 4 : 1,
      // TACTIC mutant: tactic 1 reads its 64-K tile's first block scale for all four blocks.
      .first_scale_of_group = cfg.dev.tactic1_group_scale && cfg.tactic == 1,
      // ORACLE mutant: the default tactic holds its accumulator in bf16 registers (a
      // bf16 conversion where fp32 accumulation is meant); the other tactic is correct,
      // so TACTIC passes.
      .bf16_accumulator = cfg.dev.bf16_accumulator_default && cfg.tactic == 0};
  const bool simd = cpu_has_avx2();
  // A 64-bit index product (every correct configuration) stores each row's outputs contiguously.
  const bool contiguous = cfg.dev.index_widths[static_cast<size_t>(product)] == IndexWidth::k64;
  std::vector<float> acc(static_cast<size_t>(2 * nt));
  for (int64_t n0 = 0; n0 < N; n0 += nt) {
    if (dense != nullptr)
      decode_tile(*dense, n0, nt, cfg, tile);
    else if (mx != nullptr)
      decode_tile(*mx, n0, nt, cfg, tile);
    else if (pairs)
      decode_tile_pairs(w, scale_src, n0, nt, lut, cfg, tile);
    else
      decode_tile(w, scale_src, n0, nt, lut, cfg, tile);
    for (size_t i0 = 0; i0 < rows.size(); i0 += 2) {  // two rows per pass: independent sums
      const int pair = rows.size() - i0 >= 2 ? 2 : 1;
      const float* sa[2] = {acts[i0].s.data(), acts[i0 + pair - 1].s.data()};
      float* const accs[2] = {acc.data(), acc.data() + nt};
      if (pairs) {
        const int8_t* x2[2] = {acts[i0].x2.data(), acts[i0 + pair - 1].x2.data()};
        fp4_tile_dot_rows(pair, x2, sa, tile.pairs.data(), tile.scales.data(), shape, accs);
      } else {
        const float* x[2] = {acts[i0].x.data(), acts[i0 + pair - 1].x.data()};
        tile_dot_rows(pair, x, sa, tile.codes.data(), tile.scales.data(), shape, accs, simd);
      }
      for (int r = 0; r < pair; ++r) {
        const size_t i = i0 + static_cast<size_t>(r);
        if (contiguous) {  // the same stores as the loop below, in loops the compiler vectorizes
          float* dst = out.data() + rows[i] * ldo + col0 + n0;
          const float* a = accs[r];
          const int64_t width = std::min(nt, N - n0);
          if (bias.empty()) {
            for (int64_t j = 0; j < width; ++j) dst[j] = alpha * a[j];
          } else {
            for (int64_t j = 0; j < width; ++j) dst[j] = alpha * a[j] + bias[static_cast<size_t>(n0 + j)];
          }
          if (round)
            for (int64_t j = 0; j < width; ++j) dst[j] = round_to_bf16(dst[j]);
          continue;
        }
        for (int64_t j = 0; j < nt && n0 + j < N; ++j) {
          const int64_t idx = cpu_offset(cfg, product, rows[i], ldo, col0 + n0 + j, out_rows);
          if (idx < 0) continue;  // a narrowed offset left the buffer: the store is lost
          float y = alpha * accs[r][j];
          if (!bias.empty()) y += bias[static_cast<size_t>(n0 + j)];
          out[static_cast<size_t>(idx)] = round ? round_to_bf16(y) : y;
        }
      }
    }
  }
}

}  // namespace

std::vector<float> cpu_gemm1(const Case& c, const RoutingDecision& route,
                             const std::optional<QuantizedRows>& fc1_input, const CpuConfig& cfg) {
  const int64_t H = cfg.hidden, I = cfg.inter, rows = route.tokens * route.slots;
  const int64_t total = static_cast<int64_t>(c.experts.size());
  std::vector<float> out(static_cast<size_t>(rows * 2 * I), 0.0f);
  std::vector<float> x;
  if (!fc1_input) {
    x.resize(c.hidden.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = bf16_to_float(c.hidden[i]);
  }
  const Lut lut(cfg.dev.negative_zero_nonzero);
  const auto by_expert = rows_by_expert(route, total, cfg);
  parallel_for(total, cfg.threads, [&](int64_t e) {
    if (by_expert[e].empty()) return;
    const ExpertWeights& ew = c.experts[e];
    // Z12: every expert reads expert 0's scales. OVF: the w13 weights and block scales are found at
    // e x stride of their arenas (another expert's past 2^31 when the product is narrowed).
    const ExpertWeights& scale_src =
        c.experts[cfg.dev.expert0_weight_scales ? 0 : expert_read(cfg, IndexProduct::kExpertScales, e, c)];
    const ExpertWeights& packed_src = c.experts[expert_read(cfg, IndexProduct::kExpertW13, e, c)];
    float a_d = fc1_input ? act_dequant_scale(c.a1_scale, e) : 1.0f;
    if (fc1_input && cfg.dev.dynamic_act_scale)  // BATCH mutant: dequantize with its dynamic scale
      if (const float d = dynamic_batch_act_scale(c.hidden); d > 0) a_d = 1.0f / d;
    const float alpha_gate = a_d * ew.gate.global_dequant;
    const float alpha_up =
        a_d * (cfg.dev.up_uses_gate_global ? ew.gate.global_dequant : ew.up.global_dequant);  // Z11
    auto load = [&](int64_t r, bool twice, ActRow& a) {
      load_act_row(fc1_input, fc1_input ? nullptr : x.data() + (r / route.slots) * H, r, H,
                   IndexProduct::kExpandedInput, cfg, lut, twice, a);
    };
    // The backend's w13 order only changes which half is computed first; columns stay semantic.
    const bool up_first = cfg.w13_order == W13Order::kUpGate;
    const bool bf16 = c.recipe.quant.weights == WeightFormat::kBf16;
    const bool mxfp4 = c.recipe.quant.weights == WeightFormat::kMxfp4;
    for (int half = 0; half < 2; ++half) {
      const bool is_up = (half == 0) == up_first;
      const Bf16Matrix* dense = bf16 ? (is_up ? &packed_src.bf16.up : &packed_src.bf16.gate) : nullptr;
      const Mxfp4Quantized* mx = mxfp4 ? (is_up ? &packed_src.mx.up : &packed_src.mx.gate) : nullptr;
      // M5 mutant (flashinfer#3423): the FC1 bias is accepted but never added.
      const std::vector<float>& bias = is_up ? packed_src.up_bias : packed_src.gate_bias;
      expert_matmul(by_expert[e], is_up ? packed_src.up : packed_src.gate,
                    is_up ? scale_src.up : scale_src.gate, dense, mx,
                    cfg.dev.fc1_bias_dropped ? std::span<const float>() : std::span<const float>(bias),
                    is_up ? alpha_up : alpha_gate, fc1_input.has_value(), load, IndexProduct::kGemm1Out,
                    2 * I, is_up ? I : 0, cfg.bf16_after_gemm1, cfg, lut, out);
    }
  });
  return out;
}

std::vector<float> cpu_gemm2(const Case& c, const RoutingDecision& route,
                             const std::optional<QuantizedRows>& fc2_input, std::span<const float> activation,
                             const CpuConfig& cfg) {
  const int64_t H = cfg.hidden, I = cfg.inter, rows = route.tokens * route.slots;
  const int64_t total = static_cast<int64_t>(c.experts.size());
  std::vector<float> out(static_cast<size_t>(rows * H), 0.0f);
  const Lut lut(cfg.dev.negative_zero_nonzero);
  const auto by_expert = rows_by_expert(route, total, cfg);
  // PAD mutant: Z10's transposed tail tile on the down projection only (its H rows).
  CpuConfig down_cfg = cfg;
  down_cfg.dev.swizzle_tail_transposed =
      cfg.dev.swizzle_tail_transposed || cfg.dev.down_swizzle_tail_transposed;
  parallel_for(total, cfg.threads, [&](int64_t e) {
    if (by_expert[e].empty()) return;
    // PERM mutant: an off-by-one in the per-expert w2 pointer table - the routed experts' last one
    // (E - 1) reads expert E - 2's whole down projection (weights, block and global scales).
    const int64_t src = cfg.dev.last_expert_neighbour_down && e == cfg.experts - 1 && e > 0 ? e - 1 : e;
    const ExpertWeights& ew = c.experts[src];
    const ExpertWeights& scale_src = c.experts[cfg.dev.expert0_weight_scales ? 0 : src];
    const ExpertWeights& packed_src =
        src != e ? ew : c.experts[expert_read(cfg, IndexProduct::kExpertW2, e, c)];
    float alpha = (fc2_input ? act_dequant_scale(c.a2_scale, e) : 1.0f) * ew.down.global_dequant;
    if (cfg.dev.down_global_twice) alpha *= ew.down.global_dequant;  // GSCALE mutant: applied twice
    auto load = [&](int64_t r, bool twice, ActRow& a) {
      load_act_row(fc2_input, fc2_input ? nullptr : activation.data() + r * I, r, I, IndexProduct::kFc2Input,
                   cfg, lut, twice, a);
    };
    const Bf16Matrix* dense = c.recipe.quant.weights == WeightFormat::kBf16 ? &packed_src.bf16.down : nullptr;
    const Mxfp4Quantized* mx = c.recipe.quant.weights == WeightFormat::kMxfp4 ? &packed_src.mx.down : nullptr;
    expert_matmul(by_expert[e], packed_src.down, scale_src.down, dense, mx, packed_src.down_bias, alpha,
                  fc2_input.has_value(), load, IndexProduct::kGemm2Out, H, 0, cfg.bf16_after_gemm2, down_cfg,
                  lut, out);
  });
  return out;
}

}  // namespace moefuzz::cpu
