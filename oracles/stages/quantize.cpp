// Stage "quantize" (FC1 input) and the row admission both quantization stages share.
#include "oracles/stages/quantize.h"

#include <algorithm>
#include <string>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp4_packing.h"
#include "oracles/stages/quantize_row.h"

namespace moefuzz::stages {

Verdict inadmissible_code(const char* stage, const ExpandedRow& r, int64_t where, const Nvfp4Envelope& env,
                          std::span<const uint8_t> codes, std::span<const uint8_t> scales) {
  ElementError e;
  e.where = {.token = r.token, .slot = r.slot, .expert = r.expert, .element = where >= 0 ? where : -1};
  std::string msg;
  if (where >= 0) {
    const size_t i = static_cast<size_t>(where);
    e.got = e2m1_to_float(codes[i]) * e4m3_to_float(scales[i / 16]);
    e.expected = (env.lo[i] + env.hi[i]) / 2;
    e.bound = (env.hi[i] - env.lo[i]) / 2;
    msg = "kernel " + std::string(stage) + " code of element " + std::to_string(where) +
          " decodes outside every admissible quantization of its input interval";
  } else {
    const size_t b = static_cast<size_t>(-1 - where);
    e.got = e4m3_to_float(scales[b]);
    e.expected = (e4m3_to_float(env.scale_lo[b]) + e4m3_to_float(env.scale_hi[b])) / 2;
    e.bound = (e4m3_to_float(env.scale_hi[b]) - e4m3_to_float(env.scale_lo[b])) / 2;
    e.where.element = static_cast<int64_t>(b) * 16;
    msg = "kernel " + std::string(stage) + " block scale of block " + std::to_string(b) +
          " is outside the admissible E4M3 range for its input interval";
  }
  Verdict v = Verdict::fail("ORACLE", stage, msg, e);
  v.worst_elements.push_back(e);
  v.compared = 1;
  return v;
}

bool quantize_row(const char* stage, const ExpandedRow& er, int64_t j, std::span<const double> lo,
                  std::span<const double> hi, std::span<const double> center, float s_q,
                  const std::optional<QuantizedRows>* exposed, QuantizedInputs& q, Verdict& fail,
                  const Nvfp4Envelope* env, const std::vector<std::pair<int32_t, double>>* flips) {
  const int64_t cols = static_cast<int64_t>(lo.size());
  const bool use_kernel = exposed != nullptr && exposed->has_value() && er.slot >= 0;
  if (env != nullptr ? env->indeterminate : nvfp4_indeterminate(lo, hi, s_q)) {
    q.indeterminate[static_cast<size_t>(j)] = 1;
    return true;
  }
  std::optional<Nvfp4Envelope> computed;
  const auto envelope = [&]() -> const Nvfp4Envelope& {
    if (env == nullptr) env = &computed.emplace(nvfp4_envelope(lo, hi, center, s_q));
    return *env;
  };
  if (use_kernel) {
    const QuantizedRows& k = **exposed;
    const std::span<const uint8_t> packed(k.packed.data() + er.slot * (cols / 2),
                                          static_cast<size_t>(cols / 2));
    const std::span<const uint8_t> scales(k.scales.data() + er.slot * (cols / 16),
                                          static_cast<size_t>(cols / 16));
    const std::vector<uint8_t> codes = unpack_fp4(packed);
    const int64_t bad = nvfp4_admits(lo, hi, s_q, codes, scales);
    if (bad != kAdmitted) {
      fail = inadmissible_code(stage, er, bad, envelope(), codes, scales);
      return false;
    }
    q.rows.set_row(j, codes, scales);
    return true;
  }
  const Nvfp4Envelope& e = envelope();
  q.rows.set_row(j, e.center_codes, e.center_scales);
  if (flips != nullptr) {
    q.flips[static_cast<size_t>(j)] = *flips;
    return true;
  }
  for (int64_t i = 0; i < cols; ++i) {
    const double r = e.radius(static_cast<size_t>(i), q.rows.operand(j, i));
    if (r > 0) q.flips[static_cast<size_t>(j)].push_back({static_cast<int32_t>(i), r});
  }
  return true;
}

void check_exposed_shape(const std::optional<QuantizedRows>& q, int64_t rows, int64_t cols,
                         const char* what) {
  if (!q) return;
  if (q->rows != rows || q->cols != cols || static_cast<int64_t>(q->packed.size()) != rows * cols / 2 ||
      static_cast<int64_t>(q->scales.size()) != rows * cols / 16)
    throw InputError(std::string("kernel ") + what + " has the wrong shape");
}

Verdict check_exposed_fp8_shape(const std::optional<Fp8GroupQuantized>& q, int64_t rows, int64_t cols,
                                const char* stage) {
  if (!q || (q->rows == rows && q->cols == cols && q->group == kFp8ActivationGroup &&
             static_cast<int64_t>(q->codes.size()) == rows * cols &&
             static_cast<int64_t>(q->scales.size()) == rows * (cols / kFp8ActivationGroup)))
    return Verdict::pass("ORACLE", stage);
  Verdict v = Verdict::fail("ORACLE", stage,
                            "kernel " + std::string(stage) + " exposes FP8 rows [" + std::to_string(q->rows) +
                                ", " + std::to_string(q->cols) + "] in groups of " +
                                std::to_string(q->group) + " with " + std::to_string(q->scales.size()) +
                                " scales; expected [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "] in groups of " + std::to_string(kFp8ActivationGroup));
  v.compared = 1;
  return v;
}

// The kernel's exposed FP8 row of expanded row er (none for shared experts or without exposure).
Fp8ExposedRow fp8_exposed_row(const Fp8Quantization& fp8, const ExpandedRow& er, int64_t cols) {
  if (fp8.exposed == nullptr || !fp8.exposed->has_value() || er.slot < 0) return {};
  const Fp8GroupQuantized& q = **fp8.exposed;
  return {q.codes.data() + er.slot * cols, q.scales.data() + er.slot * (cols / kFp8ActivationGroup)};
}

Fc1Memo::Fc1Memo(const Case& c) {
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
  memo_ = c.recipe.quant.activations != ActivationFormat::kBf16 && T * H <= (int64_t{1} << 23);
  tokens_.resize(memo_ ? static_cast<size_t>(T) : 0);
}

Fc1Input quantize_fc1(const Case& c, const ExpertRows& rows, float sq1,
                      const std::optional<QuantizedRows>* kernel_codes, Fc1Memo& memo,
                      const Fp8Quantization& fp8) {
  const int64_t H = c.recipe.shape.hidden, n = rows.size();
  if (c.recipe.quant.activations == ActivationFormat::kFp8Group) {
    // W8A8: the exact bf16 row, quantized by the profile's variant or admitted (fp8_operands.h).
    Fc1Input out{.quantized = QuantizedInputs(0, 0, H), .fp8 = Fp8Operands(n, H)};
    std::vector<float> x(static_cast<size_t>(H));
    for (int64_t j = 0; j < n; ++j) {
      const ExpandedRow& er = rows.row(j);
      const uint16_t* src = c.hidden.data() + er.token * H;
      for (int64_t i = 0; i < H; ++i) x[static_cast<size_t>(i)] = bf16_to_float(src[i]);
      if (!fp8_quantize_point_row("fc1_quant", er, j, x, fp8.model, fp8_exposed_row(fp8, er, H), out.fp8,
                                  out.admissibility))
        return out;
    }
    return out;
  }
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  Fc1Input out{.quantized = QuantizedInputs(w4a16 ? 0 : n, n, H)};
  if (w4a16) out.bf16.resize(static_cast<size_t>(n * H));
  std::vector<double> xd(static_cast<size_t>(H));
  for (int64_t j = 0; j < n; ++j) {
    const ExpandedRow& er = rows.row(j);
    const uint16_t* src = c.hidden.data() + er.token * H;
    for (int64_t i = 0; i < H; ++i) xd[static_cast<size_t>(i)] = bf16_to_float(src[i]);
    if (w4a16) {
      for (int64_t i = 0; i < H; ++i)
        out.bf16[static_cast<size_t>(j * H + i)] = static_cast<float>(xd[static_cast<size_t>(i)]);
      continue;
    }
    // The exact input is a point: its envelope is every correct quantizer's outcome (computed per
    // token, and only where the kernel's codes are not admitted instead).
    const bool use_kernel = kernel_codes != nullptr && kernel_codes->has_value() && er.slot >= 0;
    Fc1Memo::Token scratch;
    Fc1Memo::Token& te = memo.token(er.token, scratch);
    std::span<const uint8_t> packed, scales;
    if (use_kernel) {
      packed = {(*kernel_codes)->packed.data() + er.slot * (H / 2), static_cast<size_t>(H / 2)};
      scales = {(*kernel_codes)->scales.data() + er.slot * (H / 16), static_cast<size_t>(H / 16)};
      // A kernel quantizes a token once, so its k rows usually carry the same bytes: admission is a
      // function of (input row, scale, bytes), and the input row is the token's.
      if (te.have_admitted && te.admitted_sq == sq1 && std::ranges::equal(packed, te.admitted_packed) &&
          std::ranges::equal(scales, te.admitted_scales)) {
        out.quantized.rows.set_row(j, unpack_fp4(packed), scales);
        continue;
      }
    }
    if (!use_kernel && (!te.have || !(te.sq == sq1))) {
      te.env = nvfp4_envelope(xd, xd, xd, sq1);
      te.sq = sq1;
      te.have = true;
      te.have_flips = false;
    }
    if (!quantize_row("fc1_quant", er, j, xd, xd, xd, sq1, kernel_codes, out.quantized, out.admissibility,
                      use_kernel ? nullptr : &te.env, te.have_flips ? &te.flips : nullptr))
      return out;
    if (use_kernel && !out.quantized.indeterminate[static_cast<size_t>(j)] && &te != &scratch) {
      te.have_admitted = true;
      te.admitted_sq = sq1;
      te.admitted_packed.assign(packed.begin(), packed.end());
      te.admitted_scales.assign(scales.begin(), scales.end());
    }
    if (!te.have_flips && !use_kernel && !te.env.indeterminate) {
      te.flips = out.quantized.flips[static_cast<size_t>(j)];
      te.have_flips = true;
    }
  }
  return out;
}

}  // namespace moefuzz::stages
