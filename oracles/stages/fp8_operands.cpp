// The FP8 block-scaled branch of the quantization and GEMM stages (oracles/stages/fp8_operands.h).
#include "oracles/stages/fp8_operands.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "core/e4m3.h"
#include "core/errors.h"
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

// |E4M3 value| of every code (NaN codes: NaN).
const std::array<double, 256>& abs_e4m3() {
  static const std::array<double, 256> t = [] {
    std::array<double, 256> v{};
    for (int c = 0; c < 256; ++c)
      v[static_cast<size_t>(c)] = std::fabs(static_cast<double>(e4m3_to_float(static_cast<uint8_t>(c))));
    return v;
  }();
  return t;
}

// Element i of the kFp8GemmRows rows of a group (Fp8GemmOperands::deviation_lanes), loaded unaligned.
typedef double Lanes __attribute__((vector_size(8 * sizeof(double))));
typedef double UnalignedLanes
    __attribute__((vector_size(8 * sizeof(double)), aligned(sizeof(double)), may_alias));
static_assert(kFp8GemmRows == 8, "one Lanes vector per element of a row group");

// sums[8 b + r] = sum over block b of |w_i| dev_i of the group's row r, summed in increasing i with one
// rounding per product and one per addition: per lane exactly the scalar loop's operations
// (-ffp-contract=off: no FMA), so the bound is bit-identical to summing each row alone. Four blocks
// side by side: independent addition chains.
__attribute__((always_inline)) inline void deviation_sums_body(const double* lanes, const uint8_t* wrow,
                                                               int64_t blocks, double* sums) {
  const std::array<double, 256>& t = abs_e4m3();
  const auto at = [&](int64_t i) -> const UnalignedLanes& {  // by reference: no vector passed by value
    return *reinterpret_cast<const UnalignedLanes*>(lanes + i * 8);
  };
  int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {
    Lanes acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {};
    const int64_t i0 = b * kGroup, i1 = i0 + kGroup, i2 = i1 + kGroup, i3 = i2 + kGroup;
    for (int64_t p = 0; p < kGroup; ++p) {
      acc0 += t[wrow[i0 + p]] * at(i0 + p);
      acc1 += t[wrow[i1 + p]] * at(i1 + p);
      acc2 += t[wrow[i2 + p]] * at(i2 + p);
      acc3 += t[wrow[i3 + p]] * at(i3 + p);
    }
    std::memcpy(sums + b * 8, &acc0, sizeof(Lanes));
    std::memcpy(sums + (b + 1) * 8, &acc1, sizeof(Lanes));
    std::memcpy(sums + (b + 2) * 8, &acc2, sizeof(Lanes));
    std::memcpy(sums + (b + 3) * 8, &acc3, sizeof(Lanes));
  }
  for (; b < blocks; ++b) {
    Lanes acc = {};
    for (int64_t i = b * kGroup; i < (b + 1) * kGroup; ++i) acc += t[wrow[i]] * at(i);
    std::memcpy(sums + b * 8, &acc, sizeof(Lanes));
  }
}

void deviation_sums_portable(const double* lanes, const uint8_t* wrow, int64_t blocks, double* sums) {
  deviation_sums_body(lanes, wrow, blocks, sums);
}

#if defined(__x86_64__)
// One 512-bit multiply and add per element for the 8 rows (the portable build: four 128-bit ones).
__attribute__((target("avx512f"))) void deviation_sums_avx512(const double* lanes, const uint8_t* wrow,
                                                              int64_t blocks, double* sums) {
  deviation_sums_body(lanes, wrow, blocks, sums);
}
#endif

void deviation_sums(const double* lanes, const uint8_t* wrow, int64_t blocks, double* sums) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return deviation_sums_avx512(lanes, wrow, blocks, sums);
#endif
  deviation_sums_portable(lanes, wrow, blocks, sums);
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

Fp8GemmOperands::Fp8GemmOperands(const Fp8Operands& operands)
    : a(operands), decoded(DecodedFp8::from_codes(operands.rows, operands.cols, operands.codes)) {
  const int64_t n = a.rows, K = a.cols;
  if (std::none_of(a.has_deviation.begin(), a.has_deviation.end(), [](uint8_t h) { return h != 0; })) return;
  deviation_lanes.assign(static_cast<size_t>((n + kFp8GemmRows - 1) / kFp8GemmRows * K * kFp8GemmRows), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    if (!a.has_deviation[static_cast<size_t>(j)]) continue;
    double* lanes = deviation_lanes.data() + (j / kFp8GemmRows) * K * kFp8GemmRows + j % kFp8GemmRows;
    const double* dev = a.deviation.data() + j * K;
    for (int64_t i = 0; i < K; ++i) lanes[i * kFp8GemmRows] = dev[i];
  }
}

void fp8_gemm_rows(const Fp8GemmOperands& in, int64_t j0, int na, const Fp8BlockQuantized& w, int64_t o,
                   const Fp8BlockGemmContract& contract, Interval* out) {
  const Fp8Operands& a = in.a;
  const int64_t K = a.cols, B = K / kGroup;
  const int lane0 = static_cast<int>(j0 % kFp8GemmRows);
  if (na < 1 || j0 < 0 || lane0 + na > kFp8GemmRows || j0 + na > a.rows)
    throw InputError("fp8_gemm_rows: rows must lie in one aligned group of kFp8GemmRows");
  const uint8_t* wrow = w.codes.data() + o * w.cols;
  // Reused across calls: no allocation once sized (the stages call this once per output and row group).
  thread_local std::array<Fp8BlockDot, kFp8GemmRows> dots;
  thread_local std::vector<float> sb;
  thread_local std::vector<double> sums;
  fp8_block_dot_rows(in.decoded, j0, na, Fp8Row{wrow, K}, dots.data());
  sb.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) sb[static_cast<size_t>(b)] = w.scale(o / kFp8WeightBlock, b);
  bool any_deviation = false;
  for (int r = 0; r < na; ++r)
    any_deviation = any_deviation || (a.has_deviation[static_cast<size_t>(j0 + r)] &&
                                      !a.indeterminate[static_cast<size_t>(j0 + r)]);
  double factor = 0;
  if (any_deviation) {
    sums.resize(static_cast<size_t>(B * kFp8GemmRows));
    deviation_sums(in.deviation_lanes.data() + (j0 / kFp8GemmRows) * K * kFp8GemmRows, wrow, B, sums.data());
    factor = deviation_factor(B, contract);
  }
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
      double extra = 0, largest = 0;
      for (int64_t b = 0; b < B; ++b) {
        double rw =
            sums[static_cast<size_t>(b * kFp8GemmRows + lane0 + r)];  // sum |w_i| dev_i (scales apart)
        rw *= 1 + 0x1p-45;  // the double sum's roundings (128 terms)
        const double sbb = std::fabs(static_cast<double>(sb[static_cast<size_t>(b)]));
        extra += rw * sbb;
        const double sab = std::fabs(static_cast<double>(sa[static_cast<size_t>(b)]));
        const double m_b = dots[static_cast<size_t>(r)].block_abs_value(b);
        // The kernel's P' sa', (P' sa') sb and (DeepGEMM) sa' sb with its own, possibly larger, scale.
        largest = fmax_inline(largest, (2 * m_b * sab + rw) * fmax_inline(1.0, sbb));
        largest = fmax_inline(largest, a.scale_max[static_cast<size_t>(j * B + b)] * sbb);
      }
      bound += extra * (1 + 0x1p-45) * factor;
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
