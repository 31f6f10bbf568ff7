#include "core/act_scales.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/bf16.h"
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
template <int N>
void dot_rows(const std::vector<double>& x, const Nvfp4Matrix* const (&m)[N], const int64_t (&row)[N],
              double (&out)[N]) {
  constexpr std::array<double, 16> kCodeValue = [] {
    std::array<double, 16> v{};
    for (size_t c = 0; c < 16; ++c) v[c] = kE2m1Values[c];
    return v;
  }();
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
                               const SharedVector<ExpertWeights>& experts) {
  const int64_t t_count = r.shape.tokens, h = r.shape.hidden, inter = r.shape.inter;
  const int64_t e_count = static_cast<int64_t>(experts.size());
  // bf16 weights (W16A16) quantize nothing: the scales exist (edit targets) but no kernel reads them.
  if (t_count <= 0 || e_count == 0 || r.quant.weights != WeightFormat::kNvfp4) return 0;
  const double limit = r.swiglu.limit, beta = std::fabs(r.swiglu.beta);
  const Stream s(r.seed, "a2_scale.sample");
  const bool full = t_count * e_count <= kEstimateBudget / (inter * h);
  const int64_t pairs = full ? t_count * e_count : kSampledPairs;
  const int64_t rows =
      full ? inter : std::clamp<int64_t>(kEstimateBudget / (kSampledPairs * 2 * h), 1, inter);
  double amax = 0;
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t t = full ? p / e_count : s.uniform_int(static_cast<uint64_t>(p) * 3, 0, t_count - 1);
    const int64_t e = full ? p % e_count : s.uniform_int(static_cast<uint64_t>(p) * 3 + 1, 0, e_count - 1);
    const int64_t offset = full ? 0 : s.uniform_int(static_cast<uint64_t>(p) * 3 + 2, 0, inter / rows - 1);
    std::vector<double> x(static_cast<size_t>(h));
    for (int64_t i = 0; i < h; ++i)
      x[static_cast<size_t>(i)] = bf16_to_float(hidden[static_cast<size_t>(t * h + i)]);
    const ExpertWeights& w = experts[static_cast<size_t>(e)];
    const auto fold = [&](double g, double u) {
      amax = std::max(amax, std::fabs(g) * (std::min(std::fabs(u), limit) + beta));
    };
    int64_t j = 0;
    for (; j + 1 < rows; j += 2) {  // rows j and j+1, gate and up: four chains, folded in row order
      const int64_t n0 = full ? j : offset + j * (inter / rows),
                    n1 = full ? j + 1 : offset + (j + 1) * (inter / rows);
      double d[4];
      dot_rows<4>(x, {&w.gate, &w.up, &w.gate, &w.up}, {n0, n0, n1, n1}, d);
      fold(d[0], d[1]);
      fold(d[2], d[3]);
    }
    if (j < rows) {
      const int64_t n = full ? j : offset + j * (inter / rows);
      double d[2];
      dot_rows<2>(x, {&w.gate, &w.up}, {n, n}, d);
      fold(d[0], d[1]);
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
