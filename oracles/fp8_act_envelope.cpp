#include "oracles/fp8_act_envelope.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/e4m3.h"
#include "core/e8m0.h"
#include "oracles/bounds.h"

namespace moefuzz {
namespace {

// The cited amax floors (core/fp8_group_quant.cpp): constants of the quantizers, not tolerances.
constexpr float kVllmAmaxFloor = 1e-10f;
constexpr float kDeepGemmAmaxFloor = 1e-4f;

bool is_deepgemm(const Fp8ActQuantModel& m) { return m.variant == Fp8GroupQuantVariant::kDeepGemmReference; }
bool slack(const Fp8ActQuantModel& m) { return !fp8_act_quant_is_ieee(m.variant); }

// fl(max(A, floor) / 448): the fp32 scale before any UE8M0 ceil.
float raw_scale(float amax, const Fp8ActQuantModel& m) {
  return std::fmax(amax, is_deepgemm(m) ? kDeepGemmAmaxFloor : kVllmAmaxFloor) / kE4m3Max;
}

// The UE8M0 ceil of each variant (identity without UE8M0). vLLM's CUDA quantizer floors s at 1e-10
// before the ceil; its Triton fallback (exp2(ceil(log2 s))) and sgl-kernel do not (SPEC-formats.md
// §1.2), so kTriton's lowest scale takes the ceil without the floor.
float finish_scale(float s, const Fp8ActQuantModel& m, bool floor_s = true) {
  if (!m.ue8m0) return s;
  if (is_deepgemm(m)) return e8m0_to_float(ue8m0_ceil_clamped(s));
  return std::bit_cast<float>(
      static_cast<uint32_t>(e8m0_ceil_by_carry(floor_s ? std::fmax(s, kVllmAmaxFloor) : s)) << 23);
}

// n float steps toward +inf (up) or -inf (positive finite s; stops at 0 and +inf).
float step(float s, int n, bool up) {
  for (int i = 0; i < n; ++i) s = std::nextafter(s, up ? INFINITY : 0.0f);
  return s;
}

// The scales the model admits for amax A: [lowest, highest].
float scale_low(float amax, const Fp8ActQuantModel& m) {
  return finish_scale(step(raw_scale(amax, m), slack(m) ? kTritonScaleUlps : 0, false), m, !slack(m));
}
float scale_high(float amax, const Fp8ActQuantModel& m) {
  return finish_scale(step(raw_scale(amax, m), slack(m) ? kTritonScaleUlps : 0, true), m);
}

bool same_bits_or_both_nan(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

// A formula code's rank where DeepGEMM's non-saturating cast overflowed to NaN: the saturated end
// (a superset: a correct kernel whose x and s satisfy the amax rule never overflows).
int rank_or_saturated(uint8_t code) {
  if (!fp8_code_is_nan(code)) return fp8_code_rank(code);
  return (code & 0x80) ? -static_cast<int>(kE4m3MaxCode) : static_cast<int>(kE4m3MaxCode);
}

}  // namespace

bool fp8_act_quant_is_ieee(Fp8GroupQuantVariant v) { return v != Fp8GroupQuantVariant::kTriton; }

int fp8_code_rank(uint8_t code) {
  const int mag = code & 0x7F;
  return (code & 0x80) ? -mag : mag;
}

float fp8_group_scale(float amax, const Fp8ActQuantModel& m) { return finish_scale(raw_scale(amax, m), m); }

uint8_t fp8_group_code(float x, float s, const Fp8ActQuantModel& m) {
  if (is_deepgemm(m)) return e4m3_from_float_nosat(x * (1.0f / s));
  return m.ue8m0 ? e4m3_from_float_clamped(x * (1.0f / s)) : e4m3_from_float_clamped(x / s);
}

double fp8_scale_upper(double a_hi, const Fp8ActQuantModel& m) {
  return static_cast<double>(scale_high(float_up(a_hi), m));
}

double fp8_quant_error(double mag, double s_max, const Fp8ActQuantModel& m) {
  const bool ieee = fp8_act_quant_is_ieee(m.variant);
  const double c_rel = ieee ? 0x1p-4 + 0x1p-22 : 0x1p-3 + 0x1p-4 + 0x1p-7 + 0x1p-20;
  const double c_abs = ieee ? 0x1p-10 + 0x1p-149 : 0x1p-8 + 0x1p-148;
  // Two double roundings of the sum, covered by a relative 2^-50.
  return (c_rel * mag + c_abs * s_max) * (1 + 0x1p-50);
}

int64_t fp8_point_group_admits(std::span<const float> x, std::span<const uint8_t> codes, float scale,
                               const Fp8ActQuantModel& m) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (fp8_act_quant_is_ieee(m.variant)) {
    const Fp8GroupQuantized q =
        quantize_fp8_per_token_group(x, 1, n, {.group = n, .ue8m0 = m.ue8m0, .variant = m.variant});
    if (!same_bits_or_both_nan(q.scales[0], scale)) return kFp8ScaleInadmissible;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t a = q.codes[static_cast<size_t>(i)], b = codes[static_cast<size_t>(i)];
      if (a != b && !(fp8_code_is_nan(a) && fp8_code_is_nan(b))) return i;
    }
    return kFp8Admitted;
  }
  float amax = 0;
  for (float v : x) {
    if (!std::isfinite(v)) return kFp8Admitted;  // SPEC-formats.md §1.2: the paths disagree; FINITE's
    amax = std::fmax(amax, std::fabs(v));
  }
  if (!(scale >= scale_low(amax, m) && scale <= scale_high(amax, m))) return kFp8ScaleInadmissible;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t c = codes[static_cast<size_t>(i)];
    if (fp8_code_is_nan(c) ||
        std::abs(fp8_code_rank(c) - fp8_code_rank(fp8_group_code(x[static_cast<size_t>(i)], scale, m))) > 1)
      return i;
  }
  return kFp8Admitted;
}

double fp8_point_deviation(float x, float s, const Fp8ActQuantModel& m) {
  if (fp8_act_quant_is_ieee(m.variant)) return 0;
  // The kernel's scale: at most kTritonScaleUlps above the formula's raw scale, whose UE8M0 ceil may
  // then reach the next power of two (2 s); without UE8M0 (1 + 2^-21) s covers two ulps.
  const double s_kernel = m.ue8m0 ? 2.0 * s : s * (1 + 0x1p-21);
  const Fp8ActQuantModel ieee{.variant = Fp8GroupQuantVariant::kVllmCuda, .ue8m0 = m.ue8m0};
  const double ax = std::fabs(static_cast<double>(x));
  return (fp8_quant_error(ax, s_kernel, m) + fp8_quant_error(ax, s, ieee)) * (1 + 0x1p-50);
}

int64_t fp8_interval_group_admits(std::span<const double> lo, std::span<const double> hi,
                                  std::span<const uint8_t> codes, float scale, const Fp8ActQuantModel& m) {
  const size_t n = lo.size();
  double a_lo = 0, a_hi = 0;
  for (size_t i = 0; i < n; ++i) {
    a_hi = std::fmax(a_hi, std::fmax(std::fabs(lo[i]), std::fabs(hi[i])));
    if (lo[i] > 0) a_lo = std::fmax(a_lo, lo[i]);
    if (hi[i] < 0) a_lo = std::fmax(a_lo, -hi[i]);
  }
  const float amax_lo = std::fmax(0.0f, float_down(a_lo)), amax_hi = float_up(a_hi);
  // (1) the scale of some amax in [a_lo, a_hi].
  if (!(scale >= scale_low(amax_lo, m) && scale <= scale_high(amax_hi, m))) return kFp8ScaleInadmissible;
  // (2) each code between the model's codes of its interval's ends under the kernel's scale.
  const int sl = slack(m) ? 1 : 0;
  int64_t largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = codes[i];
    if (fp8_code_is_nan(c)) return static_cast<int64_t>(i);
    const int r = fp8_code_rank(c);
    const int r_lo = rank_or_saturated(fp8_group_code(float_down(lo[i]), scale, m)) - sl;
    const int r_hi = rank_or_saturated(fp8_group_code(float_up(hi[i]), scale, m)) + sl;
    if (r < r_lo || r > r_hi) return static_cast<int64_t>(i);
    if (std::abs(r) > std::abs(fp8_code_rank(codes[static_cast<size_t>(largest)])))
      largest = static_cast<int64_t>(i);
  }
  // (3) the amax element: A >= A*(s), the smallest float amax whose highest admitted scale reaches s.
  if (n == 0 || scale_high(0.0f, m) >= scale) return kFp8Admitted;
  uint32_t below = 0, at = std::bit_cast<uint32_t>(amax_hi);  // scale_high(below) < s <= scale_high(at)
  while (at - below > 1) {
    const uint32_t mid = below + (at - below) / 2;
    (scale_high(std::bit_cast<float>(mid), m) >= scale ? at : below) = mid;
  }
  const int need = std::abs(rank_or_saturated(fp8_group_code(std::bit_cast<float>(at), scale, m))) - sl;
  if (std::abs(fp8_code_rank(codes[static_cast<size_t>(largest)])) < need) return largest;
  return kFp8Admitted;
}

}  // namespace moefuzz
