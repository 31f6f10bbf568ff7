// nvfp4_fuzzer: bytes -> one row of 16..64 bf16 values (up to four NVFP4 blocks) and a quantization
// global scale S_q. Checks
//   * the formats (core/): E2M1 and E4M3 conversions round to a nearest representable value with the
//     documented saturation and NaN rules; E4M3 decode/encode round-trips every non-NaN byte; FP4
//     packing round-trips;
//   * the CPU kernel's NVFP4 quantizer (kernels/cpu/cpu_quantizer.h), for every quantizer variant and
//     zero-scale rule some profile declares, admitted code by code and scale by scale by the reference
//     (oracles/quant_ref.h: alternative codes where the kernel's rcp.approx is not reproducible).
// Input: a recipe text (T = 1; x = the materialized hidden row, S_q = a1_scale[0]) or raw bytes:
// byte 0 picks n = 16 * (1 + b % 4), bytes 1-4 are S_q's fp32 bits, then 2 bytes of bf16 bits per
// value. Raw inputs are turned into the equivalent recipe (hidden edits + an a1_scale edit) for
// reports and by the custom mutator.
// $MOEFUZZ_NVFP4_MUTANT = e4m3-truncate | e4m3-no-saturation | e2m1-ties-away | fp4-nibble-swap runs the
// quantizer with that format bug (the same flags the mutant kernels set) to show the target's teeth.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/fp4_packing.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "fuzz/finding.h"
#include "fuzz/recipe_bytes.h"
#include "fuzz/recipe_mutator.h"
#include "fuzz/semantic_features.h"
#include "kernels/cpu/cpu_quantizer.h"
#include "oracles/quant_ref.h"

namespace {

using namespace moefuzz;

struct Block {
  CaseRecipe recipe;  // what a report and the mutator see
  std::vector<float> x;
  float s_q = 1.0f;
};

// The raw reading of the bytes, expressed as an equivalent recipe.
Block raw_block(const uint8_t* data, size_t size) {
  auto byte = [&](size_t i) -> uint8_t { return i < size ? data[i] : 0; };
  Block b;
  const int64_t n = 16 * (1 + byte(0) % 4);
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits |= uint32_t{byte(1 + i)} << (8 * i);
  std::memcpy(&b.s_q, &bits, 4);
  if (size < 5) b.s_q = 1.0f;
  b.recipe.shape = {.tokens = 1, .hidden = n, .inter = 16, .experts = 1, .top_k = 1};
  b.recipe.profile = "sglang-cutlass-fp4";
  b.recipe.edits.push_back({.tensor = "a1_scale", .index = {0}, .value = b.s_q});
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = static_cast<uint16_t>(byte(5 + 2 * i) | (byte(6 + 2 * i) << 8));
    b.x.push_back(bf16_to_float(h));
    b.recipe.edits.push_back({.tensor = "hidden", .index = {0, i}, .value = b.x.back()});
  }
  return b;
}

bool read_block(const uint8_t* data, size_t size, Block& out) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  if (s.starts_with(kRecipeMagic)) {
    bool parsed = false;
    CaseRecipe r = fuzz::recipe_from_bytes(data, size, fuzz::nvfp4_limits(), &parsed);
    if (parsed) {
      const Case c = materialize(r);
      out.recipe = r;
      out.x.clear();
      for (int64_t i = 0; i < r.shape.hidden; ++i)
        out.x.push_back(bf16_to_float(c.hidden[static_cast<size_t>(i)]));
      out.s_q = c.a1_scale[0];
      return true;
    }
  }
  out = raw_block(data, size);
  return true;
}

cpu::QuantizerFlags mutant_flags() {
  cpu::QuantizerFlags f;
  const char* m = std::getenv("MOEFUZZ_NVFP4_MUTANT");
  const std::string_view name = m != nullptr ? m : "";
  f.e4m3_truncate = name == "e4m3-truncate";
  f.e4m3_no_saturation = name == "e4m3-no-saturation";
  f.e2m1_ties_away = name == "e2m1-ties-away";
  f.nibble_order_swapped = name == "fp4-nibble-swap";
  return f;
}

void fail(const Block& b, const char* inv, const char* stage, const std::string& msg, int64_t element,
          double got, double expected) {
  ElementError w{.where = {.token = 0, .element = element}, .got = got, .expected = expected, .bound = 0};
  fuzz::report_finding(b.recipe, Verdict::fail(inv, stage, msg, w), "cpu (nvfp4_fuzzer)");
}

// |x - v| is no larger than the distance to any other candidate.
bool nearest(double x, double v, std::initializer_list<double> others) {
  for (double o : others)
    if (std::fabs(x - o) < std::fabs(x - v)) return false;
  return true;
}

void check_formats(const Block& b) {
  for (size_t i = 0; i < b.x.size(); ++i) {
    const float x = b.x[i];
    // E2M1: nearest magnitude (saturating at 6), sign kept, NaN -> +6.
    const uint8_t c = e2m1_from_float(x);
    if (std::isnan(x)) {
      if (c != 0x7)
        return fail(b, "FORMAT", "e2m1", "NaN must convert to +6 (0x7)", static_cast<int64_t>(i), c, 0x7);
    } else {
      const double ax = std::min<double>(std::fabs(x), 6.0);
      const double v = std::fabs(e2m1_to_float(c));
      bool ok = std::signbit(x) == ((c & 0x8) != 0);
      for (float m : kE2m1Magnitudes) ok = ok && nearest(ax, v, {m});
      if (!ok)
        return fail(b, "FORMAT", "e2m1", "e2m1_from_float is not a nearest signed code",
                    static_cast<int64_t>(i), e2m1_to_float(c), x);
    }
    // E4M3: nearest of the two neighbouring codes (saturating at 448), NaN -> 0x7F.
    const uint8_t s = e4m3_from_float(x);
    if (std::isnan(x)) {
      if (s != kE4m3NaNCode)
        return fail(b, "FORMAT", "e4m3", "NaN must convert to 0x7F", static_cast<int64_t>(i), s,
                    kE4m3NaNCode);
    } else {
      const uint8_t mag = s & 0x7F;
      const double ax = std::min<double>(std::fabs(x), kE4m3Max);
      const double v = e4m3_to_float(mag);
      const double below = mag > 0 ? e4m3_to_float(static_cast<uint8_t>(mag - 1)) : v;
      const double above = mag < kE4m3MaxCode ? e4m3_to_float(static_cast<uint8_t>(mag + 1)) : v;
      const bool sign_ok = (s & 0x80) == 0 ? !std::signbit(x) || v == 0 : std::signbit(x);
      if (mag > kE4m3MaxCode || !sign_ok || !nearest(ax, v, {below, above}))
        return fail(b, "FORMAT", "e4m3", "e4m3_from_float is not a nearest saturated code",
                    static_cast<int64_t>(i), e4m3_to_float(s), x);
    }
    // E4M3 decode -> encode is the identity on every non-NaN byte.
    uint16_t h = 0;
    const float xb = x;
    std::memcpy(&h, reinterpret_cast<const char*>(&xb) + 2, 2);
    const uint8_t byte = static_cast<uint8_t>(h & 0xFF);
    if ((byte & 0x7F) != 0x7F && e4m3_from_float(e4m3_to_float(byte)) != byte)
      return fail(b, "FORMAT", "e4m3", "E4M3 byte does not round-trip", static_cast<int64_t>(i),
                  e4m3_from_float(e4m3_to_float(byte)), byte);
  }
  // Packing: the low nibble of each value's bf16 bits as a code.
  std::vector<uint8_t> codes;
  for (float x : b.x) codes.push_back(static_cast<uint8_t>(bf16_from_float(x) & 0xF));
  if (codes.size() % 2 == 0) {
    const std::vector<uint8_t> packed = pack_fp4(codes);
    if (unpack_fp4(packed) != codes)
      return fail(b, "FORMAT", "packing", "unpack_fp4(pack_fp4(c)) != c", -1, 0, 0);
    for (size_t i = 0; i < codes.size(); ++i)
      if (fp4_code_at(packed.data(), static_cast<int64_t>(i)) != codes[i])
        return fail(b, "FORMAT", "packing", "fp4_code_at disagrees with pack_fp4", static_cast<int64_t>(i),
                    fp4_code_at(packed.data(), static_cast<int64_t>(i)), codes[i]);
  }
}

void note_quant(const QuantizedRowRef& ref, const std::vector<float>& x) {
  for (size_t i = 0; i < ref.scaled.size(); ++i) {
    const float y = ref.scaled[i];
    if (std::isnan(x[i]))
      fuzz::note(fuzz::Feature::kFp4Saturate, 1);
    else if (std::isinf(x[i]))
      fuzz::note(fuzz::Feature::kFp4Saturate, 2);
    else if (std::fabs(y) > 6)
      fuzz::note(fuzz::Feature::kFp4Saturate, 0);
    for (uint32_t t = 0; t < kE2m1Thresholds.size(); ++t)
      if (std::fabs(y) == kE2m1Thresholds[t]) fuzz::note(fuzz::Feature::kFp4Threshold, t * 2 + (y < 0));
  }
  for (size_t blk = 0; blk < ref.scales.size(); ++blk) {
    const uint8_t s = ref.scales[blk];
    float amax = 0;
    for (size_t i = blk * 16; i < blk * 16 + 16; ++i) amax = std::max(amax, std::fabs(x[i]));
    if (s == 0 && amax != 0) fuzz::note(fuzz::Feature::kScaleByte, 0);
    if (s > 0 && s < 0x08) fuzz::note(fuzz::Feature::kScaleByte, 1);
    if (s == kE4m3MaxCode) fuzz::note(fuzz::Feature::kScaleByte, 2);
    if ((s & 0x7F) == 0x7F) fuzz::note(fuzz::Feature::kScaleByte, 3);
    if (ref.alt_scales[blk] != 0xFF) fuzz::note(fuzz::Feature::kScaleByte, 4);
  }
}

void check_quantizer(const Block& b) {
  // The contract covers calibrated scales only: S_q = 448 * 6 / amax (SPEC.md §1.4) with amax a finite
  // fp32, so S_q >= 2688 / FLT_MAX (a normal number; subnormal S_q would meet the kernels' FTZ
  // reciprocal, which no profile specifies) and finite.
  constexpr float kMinCalibratedSq = 2688.0f / std::numeric_limits<float>::max();
  if (!(b.s_q >= kMinCalibratedSq) || !std::isfinite(b.s_q)) {
    fuzz::note(fuzz::Feature::kScaleByte, 5);
    return;
  }
  static const cpu::QuantizerFlags deviation = mutant_flags();
  std::set<std::pair<QuantizerVariant, ZeroScaleRule>> variants;
  for (const Profile& p : all_profiles()) variants.insert({p.quantizer, p.zero_scale_rule});
  const int64_t n = static_cast<int64_t>(b.x.size());
  for (const auto& [variant, rule] : variants) {
    cpu::QuantizerFlags f = deviation;
    f.variant = variant;
    f.zero_rule = rule;
    std::vector<uint8_t> packed(static_cast<size_t>(n / 2)), scales(static_cast<size_t>(n / 16));
    cpu::quantize_nvfp4_row(b.x.data(), n, b.s_q, f, packed.data(), scales.data());
    const QuantizedRowRef ref = quantize_row_ref(b.x, b.s_q, variant, rule);
    fuzz::note(fuzz::Feature::kQuantVariant,
               static_cast<uint32_t>(variant) * 2 + static_cast<uint32_t>(rule));
    note_quant(ref, b.x);
    for (int64_t blk = 0; blk < n / 16; ++blk) {
      if (ref.unverified[static_cast<size_t>(blk)]) continue;
      if (!ref.admits_scale(static_cast<size_t>(blk), scales[static_cast<size_t>(blk)]))
        return fail(b, "ORACLE", "fc1_quant", "block scale not admitted by quantize_row_ref", blk * 16,
                    e4m3_to_float(scales[static_cast<size_t>(blk)]),
                    e4m3_to_float(ref.scales[static_cast<size_t>(blk)]));
      for (int64_t i = blk * 16; i < blk * 16 + 16; ++i) {
        const uint8_t code = fp4_code_at(packed.data(), i);
        if (!ref.admits(static_cast<size_t>(i), code))
          return fail(b, "ORACLE", "fc1_quant", "E2M1 code not admitted by quantize_row_ref", i,
                      e2m1_to_float(code), e2m1_to_float(ref.codes[static_cast<size_t>(i)]));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Block b;
  read_block(data, size, b);
  fuzz::note(fuzz::Feature::kHiddenTiles, static_cast<uint32_t>(b.x.size() / 16 - 1));
  check_formats(b);
  check_quantizer(b);
  return 0;
}

// Raw inputs become their equivalent recipe first, so mutations keep the meaning of the bytes.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  if (!s.starts_with(kRecipeMagic)) {
    const std::string text = to_text(raw_block(data, size).recipe);
    if (text.size() <= max_size) {
      std::memcpy(data, text.data(), text.size());
      size = text.size();
    }
  }
  return fuzz::mutate_bytes(data, size, max_size, seed, fuzz::nvfp4_limits(), fuzz::MutationFocus::kQuant);
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                                            uint8_t* out, size_t max_out, unsigned seed) {
  return fuzz::cross_bytes(a, a_size, b, b_size, out, max_out, seed, fuzz::nvfp4_limits());
}
