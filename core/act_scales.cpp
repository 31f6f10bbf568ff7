#include "core/act_scales.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/global_scale.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

// Work budget of the a2 estimate, in multiply-adds (a few ms).
constexpr int64_t kEstimateBudget = int64_t{1} << 21;
constexpr int64_t kSampledPairs = 8;

// N dot products of a row x (already widened to double) with rows of dequantized NVFP4 matrices (the
// same width), each in double with exact products and one rounding per addition in a fixed order:
// per block, the 16 products summed in element order, then acc += block * scale. The N sums are
// interleaved only so that their addition chains overlap; each is bit for bit what a one-row loop
// gives. Reads the packed bytes directly: this is the estimate's hot loop.
// The value of each E2M1 code in double (both dot loops read it; aligned for the AVX-512 loads).
alignas(64) constexpr std::array<double, 16> kCodeValue = [] {
  std::array<double, 16> v{};
  for (size_t c = 0; c < 16; ++c) v[c] = kE2m1Values[c];
  return v;
}();

template <int N>
void dot_rows(const std::vector<double>& x, const Nvfp4Matrix* const (&m)[N], const int64_t (&row)[N],
              double (&out)[N]) {
  const double* cv = kCodeValue.data();
  const uint8_t* packed[N];
  double acc[N];
  for (int i = 0; i < N; ++i) {
    packed[i] = m[i]->packed.data() + row[i] * (m[i]->cols / 2);
    acc[i] = 0;
  }
  for (int64_t b = 0; b < m[0]->blocks_per_row(); ++b) {
    const double* xb = x.data() + b * kNvfp4BlockSize;
    double block[N] = {};
    for (int64_t j = 0; j < kNvfp4BlockSize / 2; ++j) {
      const double x0 = xb[2 * j], x1 = xb[2 * j + 1];
      for (int i = 0; i < N; ++i) {
        const uint8_t byte = packed[i][b * (kNvfp4BlockSize / 2) + j];
        block[i] += x0 * cv[byte & 0xF];
        block[i] += x1 * cv[byte >> 4];
      }
    }
    for (int i = 0; i < N; ++i) {
      const double scale = static_cast<double>(e4m3_to_float(m[i]->scale(row[i], b))) * m[i]->global_dequant;
      acc[i] += block[i] * scale;
    }
  }
  for (int i = 0; i < N; ++i) out[i] = acc[i];
}

#if defined(__x86_64__)
#define MOEFUZZ_AVX512F __attribute__((target("avx512f")))
// GCC 12's avx512fintrin.h passes _mm512_undefined_* operands to its builtins, which
// -W(maybe-)uninitialized reports in every caller (a header false positive, not this file's).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// dot_rows<8> with one dot per 64-bit lane: lane i holds row i's block sum and its total, so each
// lane adds the same products in the same order as dot_rows' chain i (mul then add, never fused:
// -ffp-contract=off), and its results are the same bits. A block's 16 codes of the 8 rows are one
// 64-bit word per lane; element k's code is that word's nibble k, looked up in the 16 code values held
// in two registers (vpermt2pd reads an index's low 4 bits only).
MOEFUZZ_AVX512F void dot_rows8_avx512(const std::vector<double>& x, const Nvfp4Matrix* const (&m)[8],
                                      const int64_t (&row)[8], double (&out)[8]) {
  const __m512d table_lo = _mm512_load_pd(kCodeValue.data()),
                table_hi = _mm512_load_pd(kCodeValue.data() + 8);
  const uint8_t* packed[8];
  const uint8_t* scales[8];
  double global[8];
  for (int i = 0; i < 8; ++i) {
    packed[i] = m[i]->packed.data() + row[i] * (m[i]->cols / 2);
    scales[i] = m[i]->scales.data() + row[i] * m[i]->blocks_per_row();
    global[i] = m[i]->global_dequant;
  }
  // kGroup blocks at a time: their sums are independent chains (each from zero), which hides the
  // add latency; they join the total one after another, in block order.
  constexpr int kGroup = 4;
  __m512d acc = _mm512_setzero_pd();
  alignas(64) uint64_t words[kGroup][8];
  alignas(64) double scale[kGroup][8];
  const int64_t blocks = m[0]->blocks_per_row();
  for (int64_t b0 = 0; b0 < blocks; b0 += kGroup) {
    const int group = static_cast<int>(std::min<int64_t>(kGroup, blocks - b0));
    __m512d block[kGroup];
    __m512i codes[kGroup];
    for (int g = 0; g < group; ++g) {
      for (int i = 0; i < 8; ++i) {
        std::memcpy(&words[g][i], packed[i] + (b0 + g) * (kNvfp4BlockSize / 2), sizeof(uint64_t));
        scale[g][i] = static_cast<double>(e4m3_to_float(scales[i][b0 + g])) * global[i];
      }
      codes[g] = _mm512_load_si512(words[g]);
      block[g] = _mm512_setzero_pd();
    }
    for (int k = 0; k < kNvfp4BlockSize; ++k)
      for (int g = 0; g < group; ++g) {
        const __m512d v = _mm512_permutex2var_pd(table_lo, _mm512_srli_epi64(codes[g], 4 * k), table_hi);
        block[g] = _mm512_add_pd(
            block[g],
            _mm512_mul_pd(_mm512_set1_pd(x[static_cast<size_t>((b0 + g) * kNvfp4BlockSize + k)]), v));
      }
    for (int g = 0; g < group; ++g)
      acc = _mm512_add_pd(acc, _mm512_mul_pd(block[g], _mm512_load_pd(scale[g])));
  }
  _mm512_storeu_pd(out, acc);
}
#endif

// Rows n[0..count) of gate and up (count <= 4), as {gate n0, up n0, gate n1, up n1, ...}.
void gate_up_dots(const std::vector<double>& x, const ExpertWeights& w, const int64_t* n, int count,
                  bool simd, double* d) {
#if defined(__x86_64__)
  if (simd && count == 4) {
    const Nvfp4Matrix* const m[8] = {&w.gate, &w.up, &w.gate, &w.up, &w.gate, &w.up, &w.gate, &w.up};
    const int64_t rows[8] = {n[0], n[0], n[1], n[1], n[2], n[2], n[3], n[3]};
    double out[8];
    dot_rows8_avx512(x, m, rows, out);
    std::copy(out, out + 8, d);
    return;
  }
#endif
  (void)simd;
  for (int i = 0; i + 1 < count; i += 2) {
    double out[4];
    dot_rows<4>(x, {&w.gate, &w.up, &w.gate, &w.up}, {n[i], n[i], n[i + 1], n[i + 1]}, out);
    std::copy(out, out + 4, d + 2 * i);
  }
  if (count % 2 == 1) {
    double out[2];
    dot_rows<2>(x, {&w.gate, &w.up}, {n[count - 1], n[count - 1]}, out);
    std::copy(out, out + 2, d + 2 * (count - 1));
  }
}

// Per-expert variant of a global scale (see the header): S / (1 + n/8), or S / {1, 2} under thresholds.
float per_expert_scale(const CaseRecipe& r, float global, const Stream& s, int64_t e) {
  const uint64_t b = s.bits(static_cast<uint64_t>(e));
  const double factor = r.values.hidden == HiddenProfile::kThresholds
                            ? static_cast<double>(1 + (b & 1))
                            : 1.0 + static_cast<double>(b % 9) / 8.0;
  return static_cast<float>(static_cast<double>(global) / factor);
}

// Far profile: times 2^(+-j), j in [4, 12].
float far_scale(float s_q, const Stream& s, int64_t index) {
  const uint64_t b = s.bits(static_cast<uint64_t>(index));
  const int j = 4 + static_cast<int>(b % 9);
  return std::ldexp(s_q, (b & 0x100) ? j : -j);
}

std::vector<float> expand(const CaseRecipe& r, float calibrated, std::string_view tag) {
  const Stream s(r.seed, tag);
  std::vector<float> out;
  if (r.quant.act_scales == ActScaleMode::kGlobal) {
    out.push_back(calibrated);
  } else {
    for (int64_t e = 0; e < r.total_experts(); ++e)
      out.push_back(per_expert_scale(r, calibrated, s.child("expert"), e));
  }
  if (r.values.act_scale == ActScaleProfile::kFar)
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = far_scale(out[i], s.child("far"), static_cast<int64_t>(i));
  return out;
}

}  // namespace

float calibrated_quant_scale(float amax) {
  if (!std::isfinite(amax) || !(amax >= std::numeric_limits<float>::min())) return 1.0f;
  const float s = flashinfer_global_scale_q(amax);
  return std::isfinite(s) ? s : 1.0f;
}

std::vector<float> draw_a1_scale(const CaseRecipe& r, std::span<const uint16_t> hidden) {
  return expand(r, calibrated_quant_scale(flashinfer_abs_max_bf16(hidden)), "a1_scale");
}

double estimate_fc2_input_amax(const CaseRecipe& r, std::span<const uint16_t> hidden,
                               const SharedVector<ExpertWeights>& experts, bool simd) {
  const int64_t t_count = r.shape.tokens, h = r.shape.hidden, inter = r.shape.inter;
  const int64_t e_count = static_cast<int64_t>(experts.size());
  // bf16 weights (W16A16) quantize nothing: the scales exist (edit targets) but no kernel reads them.
  if (t_count <= 0 || e_count == 0 || r.quant.weights != WeightFormat::kNvfp4) return 0;
#if defined(__x86_64__)
  simd = simd && cpu_has_avx512();
#else
  simd = false;
#endif
  const double limit = r.swiglu.limit, beta = std::fabs(r.swiglu.beta);
  const Stream s(r.seed, "a2_scale.sample");
  const bool full = t_count * e_count <= kEstimateBudget / (inter * h);
  const int64_t pairs = full ? t_count * e_count : kSampledPairs;
  const int64_t rows =
      full ? inter : std::clamp<int64_t>(kEstimateBudget / (kSampledPairs * 2 * h), 1, inter);
  double amax = 0;
  std::vector<double> x(static_cast<size_t>(h));
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t t = full ? p / e_count : s.uniform_int(static_cast<uint64_t>(p) * 3, 0, t_count - 1);
    const int64_t e = full ? p % e_count : s.uniform_int(static_cast<uint64_t>(p) * 3 + 1, 0, e_count - 1);
    const int64_t offset = full ? 0 : s.uniform_int(static_cast<uint64_t>(p) * 3 + 2, 0, inter / rows - 1);
    for (int64_t i = 0; i < h; ++i)
      x[static_cast<size_t>(i)] = bf16_to_float(hidden[static_cast<size_t>(t * h + i)]);
    const ExpertWeights& w = experts[static_cast<size_t>(e)];
    // Rows j.. j+3 at a time, gate and up, folded in row order (a max: the order cannot change it).
    for (int64_t j = 0; j < rows; j += 4) {
      const int count = static_cast<int>(std::min<int64_t>(4, rows - j));
      int64_t n[4];
      for (int i = 0; i < count; ++i) n[i] = full ? j + i : offset + (j + i) * (inter / rows);
      double d[8];
      gate_up_dots(x, w, n, count, simd, d);
      for (int i = 0; i < count; ++i)
        amax = std::max(amax, std::fabs(d[2 * i]) * (std::min(std::fabs(d[2 * i + 1]), limit) + beta));
    }
  }
  return amax;
}

std::vector<float> draw_a2_scale(const CaseRecipe& r, std::span<const uint16_t> hidden,
                                 const SharedVector<ExpertWeights>& experts) {
  const double amax = estimate_fc2_input_amax(r, hidden, experts);
  return expand(r, calibrated_quant_scale(static_cast<float>(amax)), "a2_scale");
}

}  // namespace moefuzz
