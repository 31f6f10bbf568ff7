// The FP8 block-scaled branch of the quantization and GEMM stages (oracles/stages/fp8_operands.h).
#include "oracles/stages/fp8_operands.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "core/e4m3.h"
#include "oracles/bounds.h"

namespace moefuzz::stages {
namespace {

constexpr int64_t kGroup = kFp8ActivationGroup;
constexpr double kFp32Max = 0x1.fffffep127;

// The kernel's exposed code (group scale when bad is kFp8ScaleInadmissible) of group g of row j,
// against what the oracle expected there.
Verdict inadmissible(const char* stage, const ExpandedRow& er, int64_t g, int64_t bad, Fp8ExposedRow exposed,
                     double expected, double bound) {
  ElementError e;
  e.where = {.token = er.token, .slot = er.slot, .expert = er.expert, .element = g * kGroup};
  std::string msg;
  if (bad == kFp8ScaleInadmissible) {
    e.got = exposed.scales[g];
    msg = "kernel " + std::string(stage) + " scale of group " + std::to_string(g) +
          " is not the scale of any admissible amax of its input (the profile's fp8_act_quant rule)";
  } else {
    const int64_t i = g * kGroup + bad;
    e.where.element = i;
    e.got = static_cast<double>(e4m3_to_float(exposed.codes[i])) * exposed.scales[g];
    msg = "kernel " + std::string(stage) + " code of element " + std::to_string(i) +
          " is not an admissible E4M3 quantization of its input under the kernel's group scale";
  }
  e.expected = expected;
  e.bound = bound;
  Verdict v = Verdict::fail("ORACLE", stage, msg, e);
  v.worst_elements.push_back(e);
  v.compared = 1;
  return v;
}

// The model whose exact formula the oracle evaluates: kTriton is quantized with vLLM's formula, whose
// own error bound is the IEEE one.
Fp8ActQuantModel formula_model(const Fp8ActQuantModel& m) {
  return {.variant = fp8_act_quant_is_ieee(m.variant) ? m.variant : Fp8GroupQuantVariant::kVllmCuda,
          .ue8m0 = m.ue8m0};
}

void copy_exposed(int64_t j, Fp8ExposedRow exposed, Fp8Operands& out) {
  const int64_t K = out.cols, G = K / kGroup;
  std::copy_n(exposed.codes, K, out.codes.begin() + j * K);
  std::copy_n(exposed.scales, G, out.scales.begin() + j * G);
}

// 1 + the relative accumulation error a deviation's magnitude may add under the contract (the same
// factors as fp8_block_gemm.h (a)-(c) on an extra magnitude), inflated for its double roundings.
double deviation_factor(int64_t blocks, const Fp8BlockGemmContract& c) {
  const double g = fp8_mma_block_error(kGroup, c.mma_accum_mantissa_bits);
  const double terms = static_cast<double>(blocks) * c.dots_per_block;
  return (1 + g + (1 + g) * gamma_n(terms + 3, kFp32Unit)) * (1 + 0x1p-48);
}

}  // namespace

Fp8BlockGemmContract fp8_contract(int mma_accum_bits, int dots_per_block) {
  return {.mma_accum_mantissa_bits = mma_accum_bits, .dots_per_block = dots_per_block};
}

bool fp8_quantize_point_row(const char* stage, const ExpandedRow& er, int64_t j, std::span<const float> x,
                            const Fp8ActQuantModel& m, Fp8ExposedRow exposed, Fp8Operands& out,
                            Verdict& fail) {
  const int64_t K = out.cols, G = K / kGroup;
  const Fp8GroupQuantized q = quantize_fp8_per_token_group(
      x, 1, K, {.group = kGroup, .ue8m0 = m.ue8m0, .variant = formula_model(m).variant});
  bool finite = true;
  for (float v : x) finite = finite && std::isfinite(v);
  if (exposed.codes != nullptr) {
    for (int64_t g = 0; g < G; ++g) {
      const int64_t bad = fp8_point_group_admits(
          x.subspan(static_cast<size_t>(g * kGroup), static_cast<size_t>(kGroup)),
          {exposed.codes + g * kGroup, static_cast<size_t>(kGroup)}, exposed.scales[g], m);
      if (bad == kFp8Admitted) continue;
      const int64_t i = g * kGroup + std::max<int64_t>(bad, 0);
      const double expected =
          bad == kFp8ScaleInadmissible ? q.scales[static_cast<size_t>(g)] : q.dequant(0, i);
      const double bound =
          bad == kFp8ScaleInadmissible || fp8_act_quant_is_ieee(m.variant)
              ? 0.0
              : fp8_point_deviation(x[static_cast<size_t>(i)], q.scales[static_cast<size_t>(g)], m);
      fail = inadmissible(stage, er, g, bad, exposed, expected, bound);
      return false;
    }
    copy_exposed(j, exposed, out);
    // kTriton's non-finite groups are admitted whatever they hold: nothing is said about them.
    if (!finite && !fp8_act_quant_is_ieee(m.variant)) out.indeterminate[static_cast<size_t>(j)] = 1;
    return true;
  }
  std::copy(q.codes.begin(), q.codes.end(), out.codes.begin() + j * K);
  std::copy(q.scales.begin(), q.scales.end(), out.scales.begin() + j * G);
  if (fp8_act_quant_is_ieee(m.variant)) return true;  // the kernel's operands are exactly these
  if (!finite) {
    out.indeterminate[static_cast<size_t>(j)] = 1;
    return true;
  }
  for (int64_t i = 0; i < K; ++i)
    out.deviation[static_cast<size_t>(j * K + i)] =
        fp8_point_deviation(x[static_cast<size_t>(i)], q.scales[static_cast<size_t>(i / kGroup)], m);
  for (int64_t g = 0; g < G; ++g)  // kTriton: 2 ulps above the formula, or the next power of two
    out.scale_max[static_cast<size_t>(j * G + g)] = 2.0 * q.scales[static_cast<size_t>(g)];
  out.has_deviation[static_cast<size_t>(j)] = 1;
  return true;
}

bool fp8_quantize_interval_row(const char* stage, const ExpandedRow& er, int64_t j,
                               std::span<const double> lo, std::span<const double> hi,
                               std::span<const double> center, const Fp8ActQuantModel& m,
                               Fp8ExposedRow exposed, Fp8Operands& out, Verdict& fail) {
  const int64_t K = out.cols, G = K / kGroup;
  for (int64_t i = 0; i < K; ++i) {
    if (!std::isfinite(lo[static_cast<size_t>(i)]) || !std::isfinite(hi[static_cast<size_t>(i)]) ||
        !std::isfinite(static_cast<float>(center[static_cast<size_t>(i)]))) {
      out.indeterminate[static_cast<size_t>(j)] = 1;
      return true;
    }
  }
  if (exposed.codes != nullptr) {
    for (int64_t g = 0; g < G; ++g) {
      const size_t at = static_cast<size_t>(g * kGroup);
      const int64_t bad = fp8_interval_group_admits(
          lo.subspan(at, static_cast<size_t>(kGroup)), hi.subspan(at, static_cast<size_t>(kGroup)),
          {exposed.codes + at, static_cast<size_t>(kGroup)}, exposed.scales[g], m);
      if (bad == kFp8Admitted) continue;
      const int64_t i = g * kGroup + std::max<int64_t>(bad, 0);
      const Interval x{lo[static_cast<size_t>(i)], hi[static_cast<size_t>(i)]};
      fail = inadmissible(stage, er, g, bad, exposed, x.center(), x.radius());
      return false;
    }
    copy_exposed(j, exposed, out);
    return true;
  }
  // Unconditioned: the formula's quantization of the fp32 centres; each element deviates from a
  // correct kernel's q s by at most the kernel's envelope error (its input x in [lo, hi], its scale
  // <= s_max of the group's largest magnitude) + |x - c| + the centres' own envelope error.
  std::vector<float> c(static_cast<size_t>(K));
  for (int64_t i = 0; i < K; ++i)
    c[static_cast<size_t>(i)] = static_cast<float>(center[static_cast<size_t>(i)]);
  const Fp8ActQuantModel fm = formula_model(m);
  const Fp8GroupQuantized q =
      quantize_fp8_per_token_group(c, 1, K, {.group = kGroup, .ue8m0 = m.ue8m0, .variant = fm.variant});
  std::copy(q.codes.begin(), q.codes.end(), out.codes.begin() + j * K);
  std::copy(q.scales.begin(), q.scales.end(), out.scales.begin() + j * G);
  for (int64_t g = 0; g < G; ++g) {
    double a_hi = 0;
    bool point = true;  // every input of the group known exactly: the FC1 case
    for (int64_t i = g * kGroup; i < (g + 1) * kGroup; ++i) {
      a_hi = std::fmax(
          a_hi, std::fmax(std::fabs(lo[static_cast<size_t>(i)]), std::fabs(hi[static_cast<size_t>(i)])));
      point = point && lo[static_cast<size_t>(i)] == hi[static_cast<size_t>(i)] &&
              static_cast<double>(c[static_cast<size_t>(i)]) == lo[static_cast<size_t>(i)];
    }
    const double s_max = fp8_scale_upper(a_hi, m), s_c = q.scales[static_cast<size_t>(g)];
    out.scale_max[static_cast<size_t>(j * G + g)] = std::fmax(s_max, 2.0 * s_c);
    if (point) {
      for (int64_t i = g * kGroup; i < (g + 1) * kGroup; ++i)
        out.deviation[static_cast<size_t>(j * K + i)] =
            fp8_point_deviation(c[static_cast<size_t>(i)], q.scales[static_cast<size_t>(g)], m);
      continue;
    }
    for (int64_t i = g * kGroup; i < (g + 1) * kGroup; ++i) {
      const double l = lo[static_cast<size_t>(i)], h = hi[static_cast<size_t>(i)],
                   ci = c[static_cast<size_t>(i)];
      const double mag = std::fmax(std::fabs(l), std::fabs(h));
      const double radius = std::fmax(h - ci, ci - l);
      out.deviation[static_cast<size_t>(j * K + i)] =
          (fp8_quant_error(mag, s_max, m) + std::fmax(radius, 0.0) +
           fp8_quant_error(std::fabs(ci), s_c, fm)) *
          (1 + 0x1p-50);
    }
  }
  out.has_deviation[static_cast<size_t>(j)] = 1;
  return true;
}

void fp8_gemm_rows(const Fp8Operands& a, const DecodedFp8& decoded, int64_t j0, int na,
                   const Fp8BlockQuantized& w, int64_t o, const Fp8BlockGemmContract& contract,
                   Interval* out) {
  const int64_t K = a.cols, B = K / kGroup;
  const uint8_t* wrow = w.codes.data() + o * w.cols;
  std::array<Fp8BlockDot, 4> dots;
  fp8_block_dot_rows(decoded, j0, na, Fp8Row{wrow, K}, dots.data());
  std::vector<float> sb(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) sb[static_cast<size_t>(b)] = w.scale(o / kFp8WeightBlock, b);
  static const std::array<double, 256> abs_value = [] {
    std::array<double, 256> t{};
    for (int c = 0; c < 256; ++c)
      t[static_cast<size_t>(c)] = std::fabs(static_cast<double>(e4m3_to_float(static_cast<uint8_t>(c))));
    return t;
  }();
  for (int r = 0; r < na; ++r) {
    const int64_t j = j0 + r;
    if (a.indeterminate[static_cast<size_t>(j)]) {
      out[r] = {kNaN, kNaN};
      continue;
    }
    const std::span<const float> sa = a.row_scales(j);
    const Fp8GemmBound e = fp8_block_gemm_element(dots[static_cast<size_t>(r)], sa, sb, contract);
    if (e.says_nothing()) {
      out[r] = {kNaN, kNaN};
      continue;
    }
    double bound = e.bound;
    if (a.has_deviation[static_cast<size_t>(j)]) {
      // sum_i |w_i sb| dev_i: how far a correct kernel's exact block sums may lie from these operands',
      // plus the accumulation error on that extra magnitude; NaN where it may reach fp32 overflow.
      const double* dev = a.deviation.data() + j * K;
      double extra = 0, largest = 0;
      for (int64_t b = 0; b < B; ++b) {
        double rw = 0;  // sum |w_i| dev_i over the block (scales apart)
        for (int64_t i = b * kGroup; i < (b + 1) * kGroup; ++i) rw += abs_value[wrow[i]] * dev[i];
        rw *= 1 + 0x1p-45;  // the double sum's roundings (128 terms)
        const double sbb = std::fabs(static_cast<double>(sb[static_cast<size_t>(b)]));
        extra += rw * sbb;
        const double sab = std::fabs(static_cast<double>(sa[static_cast<size_t>(b)]));
        const double m_b = dots[static_cast<size_t>(r)].block_abs_value(b);
        // The kernel's P' sa', (P' sa') sb and (DeepGEMM) sa' sb with its own, possibly larger, scale.
        largest = std::fmax(largest, (2 * m_b * sab + rw) * std::fmax(1.0, sbb));
        largest = std::fmax(largest, a.scale_max[static_cast<size_t>(j * B + b)] * sbb);
      }
      bound += extra * (1 + 0x1p-45) * deviation_factor(B, contract);
      if (!std::isfinite(bound) || 2 * largest >= kFp32Max ||
          2 * (std::fabs(e.expected) + bound) >= kFp32Max) {
        out[r] = {kNaN, kNaN};
        continue;
      }
    }
    out[r] = Interval::around(e.expected, bound);
  }
}

}  // namespace moefuzz::stages
