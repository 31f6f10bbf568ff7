#include "core/value_profiles.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/fp8_block_quant.h"
#include "core/mxfp4.h"
#include "core/nvfp4_weight_draw.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

// ---- helpers ---------------------------------------------------------------------------------------

uint16_t to_bf16(double v) { return bf16_from_float(static_cast<float>(v)); }

// Fisher-Yates permutation of 0..n-1 driven by `s` (index i draws from s.uniform_int(i, ...)).
std::vector<int64_t> shuffled(int64_t n, const Stream& s) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(p[static_cast<size_t>(i)],
              p[static_cast<size_t>(s.uniform_int(static_cast<uint64_t>(i), 0, i))]);
  return p;
}

bool grouped(const CaseRecipe& r) {
  return r.routing.mode == RoutingMode::kSigmoidGrouped && r.shape.n_group > 1;
}

std::vector<uint8_t> membership(int64_t n, const std::vector<int64_t>& ids) {
  std::vector<uint8_t> m(static_cast<size_t>(n), 0);
  for (int64_t e : ids) m[static_cast<size_t>(e)] = 1;
  return m;
}

// ---- hidden ----------------------------------------------------------------------------------------

// Thresholds profile: each 16-block gets a max element +-6 * 2^j, so (with S_q = 512 = 2^9) the fast,
// exact and reference quantizers all compute sf32 = 2^(9+j) exactly (fl(6 * RN(1/6)) = 1), an exact
// E4M3 power of two for j in [-8, -1], and outScale = 2^-j. An element t * 2^j then scales to exactly
// t: the E2M1 decision thresholds (ties) and grid points are hit on every quantizer variant.
void draw_hidden_thresholds(const CaseRecipe& r, std::vector<uint16_t>& out) {
  const int64_t h = r.shape.hidden, blocks = r.shape.tokens * h / kNvfp4BlockSize;
  const Stream s(r.seed, "hidden.thresholds");
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const uint64_t head = s.bits(static_cast<uint64_t>(blk) * 17);
    const int j = -1 - static_cast<int>(head % 8);  // block max 6 * 2^j <= 3 < planted amax
    const int64_t max_pos = static_cast<int64_t>((head >> 8) % 16);
    for (int64_t i = 0; i < kNvfp4BlockSize; ++i) {
      const uint64_t b = s.bits(static_cast<uint64_t>(blk) * 17 + 1 + static_cast<uint64_t>(i));
      const double sign = (b & 1) ? -1.0 : 1.0;
      double unit;  // the value after scaling by outScale = 2^-j
      if (i == max_pos) {
        unit = kE2m1Max;
      } else if ((b >> 1) % 8 < 7) {
        unit = kE2m1Thresholds[(b >> 1) % 8];
      } else {
        unit = kE2m1Magnitudes[(b >> 4) % 8];
      }
      out[static_cast<size_t>(blk * kNvfp4BlockSize + i)] = to_bf16(sign * std::ldexp(unit, j));
    }
  }
  // The planted global amax fixes the calibrated S_q (kThresholdsA1Scale).
  const int64_t pos = s.child("amax").uniform_int(0, 0, h - 1);
  out[static_cast<size_t>(pos)] =
      to_bf16((s.child("amax").bits(1) & 1) ? -kThresholdsHiddenAmax : kThresholdsHiddenAmax);
}

// ---- logits ----------------------------------------------------------------------------------------

double base_logit(LogitProfile p, const Stream& s, uint64_t i) {
  switch (p) {
    case LogitProfile::kAllNegative:
      return -(0.25 + 2.0 * std::fabs(s.normal(i)));  // < -0.25
    case LogitProfile::kVeryNegative:
      return -(95.0 + 25.0 * s.uniform(i));  // [-120, -95]: fp32 sigmoid underflows (Z5)
    case LogitProfile::kLarge:
      return 64.0 * s.normal(i);  // |x| up to 384: exp overflows without max-subtraction
    case LogitProfile::kNormal:
    case LogitProfile::kTies:
    case LogitProfile::kNearTies:
      break;
  }
  return s.normal(i);
}

// Logit given to a steered expert: tier 2 = hot, 1 = companion, -1 = cold. The offset keeps the
// expert's own order inside a tier (scaled by 2^-8 so tiers never overlap: ranges stay < 2048), and
// the tier values keep the profile's sign (all_negative stays < 0, very_negative stays <= -90).
double steered_logit(LogitProfile p, int tier, double v, double row_max, double row_min) {
  if (tier < 0) return row_min - 8.0 + (v - row_min) * 0x1p-8;
  const double offset = (v - row_max) * 0x1p-8;  // <= 0
  switch (p) {
    case LogitProfile::kAllNegative:
      return row_max / (tier == 2 ? 4.0 : 2.0) + offset;
    case LogitProfile::kVeryNegative:
      return (tier == 2 ? -90.0 : -92.5) + offset;
    default:
      return row_max + 8.0 * tier + offset;
  }
}

void place_ties(const CaseRecipe& r, std::vector<float>& logits) {
  const int64_t t_count = r.shape.tokens, e_count = r.shape.experts, k = r.shape.top_k;
  if (k >= e_count) return;  // every expert is selected: there is no k-th boundary
  const Stream s(r.seed, "logits.ties");
  std::vector<int64_t> order(static_cast<size_t>(e_count));
  for (int64_t t = 0; t < t_count; ++t) {
    float* row = logits.data() + t * e_count;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    const float kth = row[order[static_cast<size_t>(k - 1)]];
    if (r.values.logits == LogitProfile::kTies) {
      row[order[static_cast<size_t>(k)]] = kth;
      // Half of the tokens get a three-way tie across the boundary.
      if (k + 1 < e_count && (s.bits(static_cast<uint64_t>(t)) & 1))
        row[order[static_cast<size_t>(k + 1)]] = kth;
    } else {
      row[order[static_cast<size_t>(k)]] = std::nextafter(kth, -std::numeric_limits<float>::infinity());
    }
  }
}

// ---- weights ---------------------------------------------------------------------------------------

// S_d of a kNormal matrix with reduction length K: ModelOpt's amax(W) / 2688 with amax(W) ~ 5 sigma
// and sigma = 1/sqrt(K) (sqrt is correctly rounded IEEE, not a libm approximation).
float normal_global_dequant(int64_t k) {
  return static_cast<float>(5.0 / std::sqrt(static_cast<double>(k)) / (448.0 * 6.0));
}

void fill_matrix(const CaseRecipe& r, const Stream& s, Nvfp4Matrix& m) {
  draw_nvfp4_weights(s, r.values.weights, m);
}

// bf16 weights (weight_format bf16) drawn through the NVFP4 draw, so every weight profile keeps its
// meaning (zero blocks, wide or tiny block magnitudes, expert spread): each element is its NVFP4
// value times a jitter in [3/4, 5/4) (fresh bf16 mantissas instead of 8 code magnitudes), rounded to
// bf16. Under tiny_scales each matrix is further scaled by 2^-s, s in [0, 48], so the smallest
// weights reach bf16 subnormals (where kernels that flush to zero differ).
// Elements [c0, c1) of one bf16 weight row: element idx = row_start + c takes 16 bits of the draw
// s.bulk_bits(idx / 4) as its jitter.
void bf16_weight_elements(const float* row, const Stream& s, uint64_t row_start, int64_t c0, int64_t c1,
                          float extra, uint16_t* out) {
  uint64_t bits = 0;  // one 64-bit draw serves four consecutive elements (16 bits each)
  for (int64_t c = c0; c < c1; ++c) {
    const uint64_t idx = row_start + static_cast<uint64_t>(c);
    if (c == c0 || idx % 4 == 0) bits = s.bulk_bits(idx / 4);
    const uint64_t own = bits >> (16 * (idx % 4));
    const float jitter = 0.75f + static_cast<float>(own & 0xFFFF) * 0x1p-17f;  // [0.75, 1.25)
    out[c] = bf16_from_float(row[c] * jitter * extra);
  }
}

// The same eight elements at a time (AVX2): the same float operations in the same order and
// bf16_from_float's rounding on the bits, so the same values. row_start must be a multiple of 4.
__attribute__((target("avx2"))) void bf16_weight_row_avx2(const float* row, const Stream& s,
                                                          uint64_t row_start, int64_t cols, float extra,
                                                          uint16_t* out) {
  const int64_t c8 = cols / 8 * 8;
  const __m256 scale = _mm256_set1_ps(0x1p-17f), base = _mm256_set1_ps(0.75f), times = _mm256_set1_ps(extra);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf_bits = _mm256_set1_epi32(0x7F800000),
                one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7FFF),
                quiet = _mm256_set1_epi32(0x0040);
  for (int64_t c = 0; c < c8; c += 8) {
    const uint64_t draw = (row_start + static_cast<uint64_t>(c)) / 4;
    const __m128i fields = _mm_set_epi64x(static_cast<long long>(s.bulk_bits(draw + 1)),
                                          static_cast<long long>(s.bulk_bits(draw)));
    const __m256 jitter =
        _mm256_add_ps(base, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(fields)), scale));
    const __m256 x = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(row + c), jitter), times);
    // bf16_from_float (core/bf16.h): RNE on the dropped 16 bits; a NaN quiet with its sign.
    const __m256i u = _mm256_castps_si256(x);
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i rne =
        _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(high, one))), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf_bits);
    const __m256i b = _mm256_blendv_epi8(rne, _mm256_or_si256(high, quiet), nan);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(b, b), _MM_SHUFFLE(3, 1, 2, 0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c), _mm256_castsi256_si128(packed));
  }
  bf16_weight_elements(row, s, row_start, c8, cols, extra, out);
}

Bf16Matrix bf16_weights_from(const Nvfp4Matrix& m, const Stream& s, WeightProfile p) {
  Bf16Matrix out(m.rows, m.cols);
  const float extra = p == WeightProfile::kTinyScales
                          ? std::ldexp(1.0f, -static_cast<int>(s.child("tiny").uniform_int(0, 0, 48)))
                          : 1.0f;
  const bool simd = cpu_has_avx2() && m.cols % 4 == 0;  // every row then starts at a draw boundary
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    m.dequant_row(r, row.data());  // one row at a time: it stays in L1 (a gpt-oss matrix would not)
    const uint64_t row_start = static_cast<uint64_t>(r * m.cols);
    uint16_t* o = out.bits.data() + row_start;
    if (simd)
      bf16_weight_row_avx2(row.data(), s, row_start, m.cols, extra, o);
    else
      bf16_weight_elements(row.data(), s, row_start, 0, m.cols, extra, o);
  }
  return out;
}

// MXFP4 weights (weight_format mxfp4) drawn through the NVFP4 draw like the bf16 ones: the NVFP4
// matrix's dequantized values quantized by triton_kernels' downcast_to_mxfp rule (core/mxfp4.h,
// kTritonRoundUp; an all-zero block gets scale code 0 and zero codes, as there). To reach the E8M0
// corners (SPEC-formats.md §5.5: codes 1 and 253-254): under tiny_scales every nonzero scale code moves
// down by d in [0, 64] (at least code 1), under wide_scales up by u in [0, 160] (at most 0xFE, so
// weights up to 6 * 2^127 = Inf in fp32), or for half the matrices by what moves the largest to 134. Code 0
// of a nonzero block and 0xFF come only from edits.
constexpr int kM4Corner = 134;

Mxfp4Quantized mxfp4_weights_from(const Nvfp4Matrix& m, const Stream& s, WeightProfile p) {
  Mxfp4Quantized q;  // quantized one row at a time (quantize_mxfp4 works row by row as well)
  q.rows = m.rows;
  q.cols = m.cols;
  q.scale_cols = (m.cols + kMxfp4BlockSize - 1) / kMxfp4BlockSize;
  q.codes.resize(static_cast<size_t>(m.rows * m.cols));
  q.scales.resize(static_cast<size_t>(m.rows * q.scale_cols));
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    m.dequant_row(r, row.data());  // one row at a time: it stays in L1 (a gpt-oss matrix would not)
    const Mxfp4Quantized one = quantize_mxfp4(row, 1, m.cols);
    std::copy(one.codes.begin(), one.codes.end(), q.codes.begin() + r * m.cols);
    std::copy(one.scales.begin(), one.scales.end(), q.scales.begin() + r * q.scale_cols);
  }
  int shift = 0;
  if (p == WeightProfile::kTinyScales) shift = -static_cast<int>(s.child("tiny").uniform_int(0, 0, 64));
  if (p == WeightProfile::kWideScales) {
    shift = static_cast<int>(s.child("wide").uniform_int(0, 0, 160));
    // Half the matrices instead move their largest code to 134 (2^7 = 128.0f: the float that a NaN
    // test on the decoded scale, `== 128`, collides with; SPEC-formats.md §4 M4).
    if (s.child("wide").uniform_int(1, 0, 1) == 1) {
      const uint8_t top = *std::max_element(q.scales.begin(), q.scales.end());
      if (top != 0) shift = kM4Corner - top;
    }
  }
  for (uint8_t& code : q.scales)
    if (code != 0 && shift != 0) code = static_cast<uint8_t>(std::clamp(code + shift, 1, int{kE8m0MaxCode}));
  return q;
}

// FP8 block weights (weight_format fp8_block) drawn through the bf16 draw, so every weight profile keeps
// its meaning, then quantized by DeepGEMM's reference rule (core/fp8_block_quant.h; UE8M0 scales when
// the recipe says). The 128x128 blocks get what each profile means at their granularity:
//   zero_blocks: one block in 4 is all zero (amax floored at 1e-4: scale 1e-4/448, all codes 0);
//   wide_scales: each block's magnitude times 2^u, u in [-12, 12] (block scales spread by 2^24 in one
//     matrix), and one block in 4 saturates: every element at +-amax, so every code is +-448 (0x7E/0xFE);
//   tiny_scales: drawn at normal magnitude (the NVFP4 tiny global scale would push every block under
//     the 1e-4 amax floor: zero codes, not tiny scales), then all scales of the matrix times the power
//     of two that puts the largest in [2^t, 2^(t+1)), t in [-40, -20] (1e-12 .. 2e-6; weight scales
//     ~1e-8 made trtllm_fp8_block_scale_moe inaccurate, SPEC-formats.md §4 F6). Powers of two keep
//     UE8M0 scales powers of two, and the codes stay those of the quantizer.
constexpr int kFp8WideSpread = 12;
constexpr int kFp8TinyTop[2] = {-40, -20};

Fp8BlockQuantized fp8_weights_from(Nvfp4Matrix m, const Stream& s, WeightProfile p, bool ue8m0) {
  const bool tiny = p == WeightProfile::kTinyScales;
  if (tiny) m.global_dequant = normal_global_dequant(m.cols);
  const Bf16Matrix b = bf16_weights_from(m, s, tiny ? WeightProfile::kNormal : p);
  std::vector<float> x(b.bits.size());
  for (size_t j = 0; j < x.size(); ++j) x[j] = bf16_to_float(b.bits[j]);
  const int64_t block_rows = (m.rows + kFp8WeightBlock - 1) / kFp8WeightBlock;
  const int64_t block_cols = (m.cols + kFp8WeightBlock - 1) / kFp8WeightBlock;
  const Stream zero_s = s.child("zero"), wide_s = s.child("wide");
  for (int64_t bn = 0; bn < block_rows; ++bn)
    for (int64_t bk = 0; bk < block_cols; ++bk) {
      const uint64_t blk = static_cast<uint64_t>(bn * block_cols + bk);
      const bool zero = p == WeightProfile::kZeroBlocks && zero_s.uniform_int(blk, 0, 3) == 0;
      const bool wide = p == WeightProfile::kWideScales;
      if (!zero && !wide) continue;
      const float factor =
          wide ? std::ldexp(1.0f,
                            static_cast<int>(wide_s.uniform_int(2 * blk, -kFp8WideSpread, kFp8WideSpread)))
               : 0.0f;
      const bool saturate = wide && wide_s.uniform_int(2 * blk + 1, 0, 3) == 0;
      const int64_t r_end = std::min(m.rows, (bn + 1) * kFp8WeightBlock);
      const int64_t c_end = std::min(m.cols, (bk + 1) * kFp8WeightBlock);
      float amax = 0;
      for (int64_t r = bn * kFp8WeightBlock; r < r_end; ++r)
        for (int64_t c = bk * kFp8WeightBlock; c < c_end; ++c) {
          float& v = x[static_cast<size_t>(r * m.cols + c)];
          v *= factor;
          amax = std::max(amax, std::fabs(v));
        }
      if (!saturate) continue;
      for (int64_t r = bn * kFp8WeightBlock; r < r_end; ++r)
        for (int64_t c = bk * kFp8WeightBlock; c < c_end; ++c) {
          float& v = x[static_cast<size_t>(r * m.cols + c)];
          v = std::copysign(amax, v);
        }
    }
  Fp8BlockQuantized q = quantize_fp8_block_weight(x, m.rows, m.cols, ue8m0);
  if (tiny && !q.scales.empty()) {
    const float top = *std::max_element(q.scales.begin(), q.scales.end());
    const int target = static_cast<int>(s.child("tiny").uniform_int(0, kFp8TinyTop[0], kFp8TinyTop[1]));
    const int shift = target - std::ilogb(top);
    for (float& scale : q.scales) scale = std::ldexp(scale, shift);
  }
  return q;
}

}  // namespace

// ---- public ----------------------------------------------------------------------------------------

LoadSteering load_steering(const CaseRecipe& r) {
  LoadSteering out;
  const int64_t e_count = r.shape.experts, k = r.shape.top_k;
  const bool groups = grouped(r);
  const int64_t n_group = groups ? r.shape.n_group : 1, per_group = e_count / n_group;
  const Stream s(r.seed, "load");
  if (r.values.load == LoadProfile::kOneExpert) {
    const auto group_order = shuffled(n_group, s.child("groups"));
    for (int64_t gi = 0; gi < n_group && static_cast<int64_t>(out.hot.size()) < k; ++gi) {
      const int64_t g = group_order[static_cast<size_t>(gi)];
      const auto members = shuffled(per_group, s.child("group." + std::to_string(g)));
      for (int64_t m : members) {
        if (static_cast<int64_t>(out.hot.size()) < k)
          out.hot.push_back(g * per_group + m);
        else if (groups)
          out.companions.push_back(g * per_group + m);
      }
    }
  } else if (r.values.load == LoadProfile::kZeroTokenExperts) {
    if (groups && r.shape.n_group > r.shape.topk_group) {
      // Whole groups go cold, so the group selection never needs them.
      const int64_t n_cold = std::min(std::max<int64_t>(1, n_group / 4), n_group - r.shape.topk_group);
      const auto group_order = shuffled(n_group, s.child("groups"));
      for (int64_t gi = 0; gi < n_cold; ++gi)
        for (int64_t m = 0; m < per_group; ++m)
          out.cold.push_back(group_order[static_cast<size_t>(gi)] * per_group + m);
    } else {
      const int64_t n_cold = std::min(std::max<int64_t>(1, e_count / 4), e_count - k);
      const auto order = shuffled(e_count, s.child("experts"));
      for (int64_t i = 0; i < n_cold; ++i) out.cold.push_back(order[static_cast<size_t>(i)]);
    }
    std::sort(out.cold.begin(), out.cold.end());
  }
  return out;
}

std::vector<uint16_t> draw_hidden(const CaseRecipe& r) {
  const int64_t t_count = r.shape.tokens, h = r.shape.hidden, n = t_count * h;
  std::vector<uint16_t> out(static_cast<size_t>(n));
  const Stream s(r.seed, "hidden");
  switch (r.values.hidden) {
    case HiddenProfile::kThresholds:
      draw_hidden_thresholds(r, out);
      return out;
    case HiddenProfile::kTokenSpread:
      // Token t scaled by 2^(8 - 20 t / (T-1)): 2^8 down to 2^-12 under one calibrated scale. The
      // smallest tokens' block scales (~448 * amax_block / amax) fall below 2^-10: E4M3 underflow
      // (a 2^16 spread only reaches E4M3 subnormals; docs/value-profiles.md).
      for (int64_t t = 0; t < t_count; ++t) {
        const int e = t_count > 1 ? 8 - static_cast<int>(20 * t / (t_count - 1)) : 0;
        for (int64_t i = 0; i < h; ++i)
          out[static_cast<size_t>(t * h + i)] =
              to_bf16(std::ldexp(s.normal(static_cast<uint64_t>(t * h + i)), e));
      }
      return out;
    default:
      break;
  }
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = to_bf16(s.normal(static_cast<uint64_t>(i)));
  if (r.values.hidden == HiddenProfile::kZeroBlocks) {
    const Stream z = s.child("zero");
    for (int64_t blk = 0; blk < n / kNvfp4BlockSize; ++blk)
      if (blk == 0 || z.bits(static_cast<uint64_t>(blk)) % 4 == 0)
        std::fill_n(out.begin() + blk * kNvfp4BlockSize, kNvfp4BlockSize, uint16_t{0});
    // One whole token of zeros (amax 0 for the row) when there is more than one token.
    if (t_count > 1) std::fill_n(out.begin() + (t_count - 1) * h, h, uint16_t{0});
  } else if (r.values.hidden == HiddenProfile::kOutliers) {
    // Per token max(1, H/256) outliers of magnitude 2^6..2^11 (LLM activation outliers ~100x typical).
    const Stream o = s.child("outliers");
    const int64_t per_token = std::max<int64_t>(1, h / 256);
    for (int64_t t = 0; t < t_count; ++t)
      for (int64_t j = 0; j < per_token; ++j) {
        const uint64_t idx = static_cast<uint64_t>(t * per_token + j);
        const int64_t pos = o.uniform_int(idx * 3, 0, h - 1);
        const double mag =
            std::ldexp(1.0 + o.uniform(idx * 3 + 1), 6 + static_cast<int>(o.bits(idx * 3 + 2) % 5));
        out[static_cast<size_t>(t * h + pos)] = to_bf16((o.bits(idx * 3 + 2) & 0x100) ? -mag : mag);
      }
  }
  return out;
}

std::vector<float> draw_logits(const CaseRecipe& r) {
  const int64_t t_count = r.shape.tokens, e_count = r.shape.experts;
  std::vector<double> v(static_cast<size_t>(t_count * e_count));
  const Stream s(r.seed, "logits");
  for (size_t i = 0; i < v.size(); ++i) v[i] = base_logit(r.values.logits, s, i);

  const LoadSteering st = load_steering(r);
  if (!st.hot.empty() || !st.cold.empty()) {
    std::vector<int> tier(static_cast<size_t>(e_count), 0);
    for (int64_t e : st.hot) tier[static_cast<size_t>(e)] = 2;
    for (int64_t e : st.companions) tier[static_cast<size_t>(e)] = 1;
    for (int64_t e : st.cold) tier[static_cast<size_t>(e)] = -1;
    for (int64_t t = 0; t < t_count; ++t) {
      double* row = v.data() + t * e_count;
      const double mx = *std::max_element(row, row + e_count), mn = *std::min_element(row, row + e_count);
      for (int64_t e = 0; e < e_count; ++e)
        if (tier[static_cast<size_t>(e)] != 0)
          row[e] = steered_logit(r.values.logits, tier[static_cast<size_t>(e)], row[e], mx, mn);
    }
  }
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  if (r.values.logits == LogitProfile::kTies || r.values.logits == LogitProfile::kNearTies)
    place_ties(r, out);
  return out;
}

std::vector<float> draw_bias(const CaseRecipe& r) {
  if (r.routing.mode != RoutingMode::kSigmoidGrouped || !r.routing.correction_bias) return {};
  const int64_t e_count = r.shape.experts;
  const Stream s(r.seed, "bias");
  // Under (near-)tie logits every expert gets the same bias, so equal logits stay equal biased scores.
  const bool shared_value =
      r.values.logits == LogitProfile::kTies || r.values.logits == LogitProfile::kNearTies;
  std::vector<double> b(static_cast<size_t>(e_count));
  for (int64_t e = 0; e < e_count; ++e) {
    const uint64_t i = shared_value ? 0 : static_cast<uint64_t>(e);
    switch (r.values.bias) {
      case BiasProfile::kSmall:
        b[static_cast<size_t>(e)] = 0.05 * s.normal(i);
        break;
      case BiasProfile::kDominant:
        b[static_cast<size_t>(e)] = 4.0 * s.normal(i);
        break;  // spread >> sigmoid's (0,1)
      case BiasProfile::kNegative:
        b[static_cast<size_t>(e)] = -(1.5 + 0.5 * std::fabs(s.normal(i)));
        break;  // s + b < 0
      case BiasProfile::kZero:
        b[static_cast<size_t>(e)] = 0.0;
        break;
    }
  }
  // Steering: sigmoid scores lie in [0, 1], so a bias margin of >= 1 decides the order whatever the
  // logits; zero bias stays zero (the steered logits alone decide, sigmoid being monotone).
  const LoadSteering st = load_steering(r);
  if (r.values.bias != BiasProfile::kZero && (!st.hot.empty() || !st.cold.empty())) {
    const double mx = *std::max_element(b.begin(), b.end()), mn = *std::min_element(b.begin(), b.end());
    const bool negative = r.values.bias == BiasProfile::kNegative;  // mx <= -1.5: keep every bias < 0
    for (int64_t e : st.hot) b[static_cast<size_t>(e)] = negative ? mx / 4.0 : mx + 4.0;
    for (int64_t e : st.companions) b[static_cast<size_t>(e)] = negative ? mx / 2.0 : mx + 2.0;
    for (int64_t e : st.cold) b[static_cast<size_t>(e)] = mn - 2.0;
  }
  std::vector<float> out(b.size());
  for (size_t i = 0; i < b.size(); ++i) out[i] = bf16_to_float(to_bf16(b[i]));
  return out;
}

HashRoutingTables draw_hash_routing(const CaseRecipe& r) {
  HashRoutingTables out;
  if (r.routing.mode != RoutingMode::kHash) return out;
  const int64_t t_count = r.shape.tokens, vocab = r.hash_vocab(), k = r.shape.top_k,
                e_count = r.shape.experts;
  const Stream s(r.seed, "hash");
  out.token_ids.resize(static_cast<size_t>(t_count));
  for (int64_t t = 0; t < t_count; ++t)
    out.token_ids[static_cast<size_t>(t)] =
        static_cast<int32_t>(s.uniform_int(static_cast<uint64_t>(t), 0, vocab - 1));

  const LoadSteering st = load_steering(r);
  std::vector<int64_t> pool;
  if (!st.hot.empty()) {
    pool = st.hot;
  } else {
    const auto cold = membership(e_count, st.cold);
    for (int64_t e = 0; e < e_count; ++e)
      if (!cold[static_cast<size_t>(e)]) pool.push_back(e);
  }
  const int64_t p = static_cast<int64_t>(pool.size());
  out.table.resize(static_cast<size_t>(vocab * k));
  const Stream rows = s.child("rows");
  std::vector<int64_t> scratch;
  for (int64_t v = 0; v < vocab; ++v) {
    int32_t* row = out.table.data() + v * k;
    const Stream rs(rows.key() ^ mix64(static_cast<uint64_t>(v)));
    // Distinct ids while the pool lasts (partial Fisher-Yates), then with replacement (k > pool).
    scratch = pool;
    for (int64_t j = 0; j < k; ++j) {
      if (j < p) {
        const int64_t pick = rs.uniform_int(static_cast<uint64_t>(j), j, p - 1);
        std::swap(scratch[static_cast<size_t>(j)], scratch[static_cast<size_t>(pick)]);
        row[j] = static_cast<int32_t>(scratch[static_cast<size_t>(j)]);
      } else {
        row[j] = static_cast<int32_t>(
            pool[static_cast<size_t>(rs.uniform_int(static_cast<uint64_t>(j), 0, p - 1))]);
      }
    }
  }
  if (r.values.table == TableProfile::kDuplicates && k >= 2) {
    // Half of the rows, and always the row token 0 reads, repeat one id in a later slot (Z8).
    const Stream d = s.child("duplicates");
    for (int64_t v = 0; v < vocab; ++v) {
      if (v != out.token_ids[0] && (d.bits(static_cast<uint64_t>(v) * 3) & 1)) continue;
      const int64_t dst = d.uniform_int(static_cast<uint64_t>(v) * 3 + 1, 1, k - 1);
      const int64_t src = d.uniform_int(static_cast<uint64_t>(v) * 3 + 2, 0, dst - 1);
      out.table[static_cast<size_t>(v * k + dst)] = out.table[static_cast<size_t>(v * k + src)];
    }
  }
  return out;
}

// Expert biases (recipe expert_bias): bf16 values normal(0, 1) x 2^s, s in [-8, 2] per expert and
// matrix (from negligible beside a GEMM's output to dominating it); one expert in eight has all-zero
// biases (present but zero: a kernel that adds them wrongly cannot show it there, one that reads
// the wrong expert's can). Counter-based per element, so a shrunk H or I keeps the leading values.
std::vector<float> draw_expert_bias(const Stream& s, int64_t n, bool zero) {
  std::vector<float> b(static_cast<size_t>(n), 0.0f);
  if (zero) return b;
  const int exponent = static_cast<int>(s.uniform_int(0, -8, 2));
  const Stream values = s.child("values");
  for (int64_t i = 0; i < n; ++i)
    b[static_cast<size_t>(i)] =
        round_to_bf16(static_cast<float>(std::ldexp(values.normal(static_cast<uint64_t>(i)), exponent)));
  return b;
}

ExpertWeights draw_expert_weights(const CaseRecipe& r, int64_t expert) {
  const int64_t h = r.shape.hidden, i = r.shape.inter;
  ExpertWeights w{Nvfp4Matrix(i, h), Nvfp4Matrix(i, h), Nvfp4Matrix(h, i), {}, {}, {}, {}, {}, {}};
  const uint64_t e = static_cast<uint64_t>(expert);
  const auto matrix_stream = [&](std::string_view name) {
    return Stream(mix64(derive_seed(r.seed, name) ^ mix64(e)));
  };
  const Stream gate_s = matrix_stream("weights.gate"), up_s = matrix_stream("weights.up"),
               down_s = matrix_stream("weights.down");
  fill_matrix(r, gate_s, w.gate);
  fill_matrix(r, up_s, w.up);
  fill_matrix(r, down_s, w.down);

  float gate_sd = normal_global_dequant(h), down_sd = normal_global_dequant(i);
  const Stream g = matrix_stream("weights.global");
  if (r.values.weights == WeightProfile::kTinyScales) {
    // S_d = 2^-n, n in [23, 80]: with E4M3 values in [2^-9, 448] the effective block scale stays in
    // [2^-89, 448 * 2^-23] = [1.6e-27, 5.3e-5], inside kTinyScalesMin..kTinyScalesMax.
    gate_sd = std::ldexp(1.0f, -static_cast<int>(g.uniform_int(0, 23, 80)));
    down_sd = std::ldexp(1.0f, -static_cast<int>(g.uniform_int(1, 23, 80)));
  } else if (r.values.weights == WeightProfile::kExpertSpread) {
    // Per-expert factor 2^f, f in [-4, 4]: magnitudes across experts differ by up to 2^8.
    const int f = static_cast<int>(g.uniform_int(2, -4, 4));
    gate_sd = std::ldexp(gate_sd, f);
    down_sd = std::ldexp(down_sd, f);
  }
  w.gate.global_dequant = gate_sd;
  w.up.global_dequant = static_cast<float>(static_cast<double>(gate_sd) * r.quant.gate_up_scale_ratio);
  w.down.global_dequant = down_sd;
  if (r.quant.weights == WeightFormat::kBf16) {
    w.bf16 = {bf16_weights_from(w.gate, matrix_stream("weights.gate.bf16"), r.values.weights),
              bf16_weights_from(w.up, matrix_stream("weights.up.bf16"), r.values.weights),
              bf16_weights_from(w.down, matrix_stream("weights.down.bf16"), r.values.weights)};
    w.gate = w.up = w.down = Nvfp4Matrix();
  }
  if (r.quant.weights == WeightFormat::kMxfp4) {
    w.mx = {mxfp4_weights_from(w.gate, matrix_stream("weights.gate.mxfp4"), r.values.weights),
            mxfp4_weights_from(w.up, matrix_stream("weights.up.mxfp4"), r.values.weights),
            mxfp4_weights_from(w.down, matrix_stream("weights.down.mxfp4"), r.values.weights)};
    w.gate = w.up = w.down = Nvfp4Matrix();
  }
  if (r.quant.weights == WeightFormat::kFp8Block) {
    const bool ue8m0 = r.quant.fp8_ue8m0;
    w.fp8 = {fp8_weights_from(w.gate, matrix_stream("weights.gate.fp8"), r.values.weights, ue8m0),
             fp8_weights_from(w.up, matrix_stream("weights.up.fp8"), r.values.weights, ue8m0),
             fp8_weights_from(w.down, matrix_stream("weights.down.fp8"), r.values.weights, ue8m0)};
    w.gate = w.up = w.down = Nvfp4Matrix();
  }
  if (r.expert_bias) {
    const bool zero = matrix_stream("bias.zero").uniform_int(0, 0, 7) == 0;
    w.gate_bias = draw_expert_bias(matrix_stream("bias.gate"), i, zero);
    w.up_bias = draw_expert_bias(matrix_stream("bias.up"), i, zero);
    w.down_bias = draw_expert_bias(matrix_stream("bias.down"), h, zero);
  }
  return w;
}

}  // namespace moefuzz
