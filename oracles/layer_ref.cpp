#include "oracles/layer_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp4_packing.h"
#include "oracles/bounds.h"
#include "oracles/exact_dot.h"

namespace moefuzz {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Largest |e2m1 * e4m3| operand: 6 * 448.
constexpr double kMaxOperand = 6.0 * 448.0;

// One expanded (token, slot) pair, or a separately added shared expert of a token.
struct ExpandedRow {
  int64_t token = 0;
  int64_t slot = 0;  // kernel row index t * slots + slot; -1 for a separate shared expert
  int32_t expert = 0;
  float weight = 1.0f;
};

bool is_nan(Interval x) { return std::isnan(x.lo) || std::isnan(x.hi); }

// Underflow floor of one GEMM element: each of the K + kGemmExtraRoundings operations may lose up
// to 2^-126 (FTZ); an underflowed dequantized operand is further multiplied by the other operand,
// at most kMaxOperand * S_d.
double gemm_floor(int64_t k, double sda, double sdw) {
  return static_cast<double>(k + kGemmExtraRoundings) * kUnderflowFloor * (1 + kMaxOperand * std::fabs(sda)) *
         (1 + kMaxOperand * std::fabs(sdw));
}

// A correct fp32 kernel may overflow to Inf/NaN once a partial sum can reach FLT_MAX. Kernels differ
// in where they fold the global scales into the operands (raw products, alpha-scaled, or one S_d
// folded), so the test allows a folding factor up to 2^20 beyond max(1, |alpha|): past it nothing can
// be said (the element is left to FINITE, like any non-finite intermediate). Found by the moe_layer
// fuzzer: a bf16-max activation (3.4e38) in W4A16 made the kernel's GEMM1 overflow. The same
// allowance covers alpha itself: a global scale edited to 3e38 makes fl32(S_a * S_w) = Inf, and
// Inf * (an all-zero accumulator) = NaN in a correct kernel although the exact product is 0 (found by
// the H200 GPU campaign, on the CPU kernel too: corpora/moe_layer_fuzzer seeds).
constexpr double kFp32Max = 0x1.fffffep127;
constexpr double kFoldingWatch = kFp32Max * 0x1p-20;  // past it an intermediate may overflow

bool fp32_may_overflow(double abs_sum, double alpha, double v, double b) {
  const double a = std::max(1.0, std::fabs(alpha));
  return a >= kFoldingWatch || abs_sum * a >= kFoldingWatch || std::fabs(v) + b >= kFp32Max;
}

// 6 * sum over [begin, end) of |center_k| + radius_k: the largest raw partial of x_k * code_k there
// (|code| <= 6; radius empty = a point input).
double raw_partial_bound(std::span<const float> center, std::span<const float> radius, size_t begin,
                         size_t end) {
  double m = 0;
  for (size_t k = begin; k < end; ++k)
    m += std::fabs(static_cast<double>(center[k])) + (radius.empty() ? 0.0 : static_cast<double>(radius[k]));
  return 6 * m;
}

// W4A16 kernels may apply a block's scale after the block's 16-term partial sum of x_k * code_k
// (kernels/cpu/cpu_gemm.cpp does). A zero block scale hides that partial from the dequantized
// magnitude fp32_may_overflow sees, yet Inf * 0 = NaN in a correct kernel: found by the moe_layer
// campaign on the H200 host (a 3e38 activation against a zero gate block scale). True when a
// zero-scale block of weight row `row` may see its raw partial reach the overflow range (>= 2^-20
// FLT_MAX, the allowance of fp32_may_overflow).
bool zero_scale_partial_may_overflow(std::span<const float> center, std::span<const float> radius,
                                     const Nvfp4Matrix& w, int64_t row) {
  const int64_t blocks = w.cols / 16;
  for (int64_t b = 0; b < blocks; ++b)
    if (e4m3_to_float(w.scales[static_cast<size_t>(row * blocks + b)]) == 0.0f &&
        raw_partial_bound(center, radius, static_cast<size_t>(b * 16), static_cast<size_t>(b * 16 + 16)) >=
            kFoldingWatch)
      return true;
  return false;
}

// The cheap pre-test of zero_scale_partial_may_overflow over a whole input row (a row sum bounds
// every block sum), so ordinary rows never scan the weight scales.
bool row_may_overflow_a_partial(std::span<const float> center, std::span<const float> radius) {
  return raw_partial_bound(center, radius, 0, center.size()) >= kFoldingWatch;
}

// Interval of a correct kernel's fp32 GEMM result: alpha * exact sum, accumulation in any order over
// operands that may deviate from the decoded center by the sparse `flips` (radius per element).
// `gk` = gamma_n(k + kGemmExtraRoundings, kFp32Unit) (hoisted out of the per-element loops).
Interval gemm_interval(const ExactDot& d, double alpha, double flip_sum, double gk, double floor) {
  if (d.nan) return {kNaN, kNaN};
  const double v = alpha * d.value();
  const double a = std::fabs(alpha);
  const double b = (gk * a * (d.abs_value() + flip_sum) + a * flip_sum) * (1 + 8 * kDoubleUnit) + floor;
  if (!std::isfinite(v) || !std::isfinite(b) || fp32_may_overflow(d.abs_value() + flip_sum, alpha, v, b))
    return {kNaN, kNaN};
  return {v - b, v + b};
}

// The code flips of one quantized row (column, weight), in the form the per-output loop reads
// fastest: a dense per-column vector when they are many (the FC2 input of a wide interval flips most
// of its codes), else the sparse list.
struct FlipTerms {
  const std::vector<std::pair<int32_t, double>>* sparse = nullptr;
  std::vector<double> dense;
};

FlipTerms flip_terms(const std::vector<std::pair<int32_t, double>>& flips, int64_t cols) {
  FlipTerms t;
  t.sparse = &flips;
  if (static_cast<int64_t>(flips.size()) * 16 > cols) {
    t.dense.assign(static_cast<size_t>(cols), 0.0);
    for (const auto& [i, r] : flips) t.dense[static_cast<size_t>(i)] += r;
  }
  return t;
}

// Flip magnitudes of rows j0 .. j0+na-1 (na <= 8) against packed weight row w: dense rows together.
void flip_sums(const std::vector<FlipTerms>& fl, int64_t j0, int na, PackedNvfp4Row w, double* out) {
  const double* dense[8];
  int which[8], nd = 0;
  for (int r = 0; r < na; ++r) {
    const FlipTerms& t = fl[static_cast<size_t>(j0 + r)];
    if (!t.dense.empty()) {
      dense[nd] = t.dense.data();
      which[nd++] = r;
    } else {
      out[r] = sparse_weighted_abs_sum(*t.sparse, w);  // 0 for no flips
    }
  }
  if (nd == 0) return;
  double got[8];
  weighted_abs_sum_rows(dense, nd, w, got);
  for (int k = 0; k < nd; ++k) out[which[k]] = got[k];
}

void store(StageExpectation* st, int64_t row, int64_t col, Interval x) {
  if (st == nullptr) return;
  const size_t idx = static_cast<size_t>(row * st->cols + col);
  if (is_nan(x)) {
    st->expected[idx] = kNaN;
    st->bound[idx] = kInf;  // nothing can be said: left to the FINITE invariant
  } else {
    st->expected[idx] = x.center();
    st->bound[idx] = x.radius();
  }
}

StageExpectation make_stage(const std::string& name, int64_t rows, int64_t cols) {
  StageExpectation s;
  s.stage = name;
  s.rows = rows;
  s.cols = cols;
  s.expected.assign(static_cast<size_t>(rows * cols), 0.0);
  s.bound.assign(static_cast<size_t>(rows * cols), 0.0);
  return s;
}

Verdict inadmissible(const char* stage, const ExpandedRow& r, int64_t where, const Nvfp4Envelope& env,
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

// Quantized input rows of one expert: the decoded operands and the sparse per-element radius of
// the operands a correct kernel might have chosen instead (empty when conditioned on its codes).
struct QuantizedInputs {
  DecodedNvfp4 rows;
  std::vector<std::vector<std::pair<int32_t, double>>> flips;
  std::vector<uint8_t> indeterminate;
};

// Admit the kernel's exposed codes for row `r` (if any) or cover all admissible codes.
// Returns false (and sets `fail`) when the kernel's codes are inadmissible.
// `env` is nvfp4_envelope(lo, hi, center, s_q), computed by the caller (FC1 shares it between the
// rows of one token); `flips`, when given, are the unconditioned flips of env's center row.
bool quantize_row(const char* stage, const ExpandedRow& er, int64_t j, std::span<const double> lo,
                  std::span<const double> hi, const Nvfp4Envelope& env, float s_q,
                  const std::optional<QuantizedRows>* exposed, QuantizedInputs& q, Verdict& fail,
                  const std::vector<std::pair<int32_t, double>>* flips = nullptr) {
  const int64_t cols = static_cast<int64_t>(lo.size());
  const bool use_kernel = exposed != nullptr && exposed->has_value() && er.slot >= 0;
  if (env.indeterminate) {
    q.indeterminate[static_cast<size_t>(j)] = 1;
    return true;
  }
  if (use_kernel) {
    const QuantizedRows& k = **exposed;
    const std::span<const uint8_t> packed(k.packed.data() + er.slot * (cols / 2),
                                          static_cast<size_t>(cols / 2));
    const std::span<const uint8_t> scales(k.scales.data() + er.slot * (cols / 16),
                                          static_cast<size_t>(cols / 16));
    const std::vector<uint8_t> codes = unpack_fp4(packed);
    const int64_t bad = nvfp4_admits(lo, hi, s_q, codes, scales);
    if (bad != kAdmitted) {
      fail = inadmissible(stage, er, bad, env, codes, scales);
      return false;
    }
    q.rows.set_row(j, codes, scales);
    return true;
  }
  q.rows.set_row(j, env.center_codes, env.center_scales);
  if (flips != nullptr) {
    q.flips[static_cast<size_t>(j)] = *flips;
    return true;
  }
  for (int64_t i = 0; i < cols; ++i) {
    const double r = env.radius(static_cast<size_t>(i), q.rows.operand(j, i));
    if (r > 0) q.flips[static_cast<size_t>(j)].push_back({static_cast<int32_t>(i), r});
  }
  return true;
}

void check_exposed(const std::optional<QuantizedRows>& q, int64_t rows, int64_t cols, const char* what) {
  if (!q) return;
  if (q->rows != rows || q->cols != cols || static_cast<int64_t>(q->packed.size()) != rows * cols / 2 ||
      static_cast<int64_t>(q->scales.size()) != rows * cols / 16)
    throw InputError(std::string("kernel ") + what + " has the wrong shape");
}

}  // namespace

const StageExpectation* LayerReference::stage(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return &s;
  return nullptr;
}

LayerReference reference_layer(const Case& c, const Profile& p, const RoutingDecision& routing,
                               const LayerResult* kernel, LayerReferenceOptions opts) {
  const Shape& sh = c.recipe.shape;
  const int64_t T = sh.tokens, H = sh.hidden, I = sh.inter;
  const int64_t slots = routing.slots;
  if (routing.tokens != T || static_cast<int64_t>(routing.ids.size()) != T * slots ||
      static_cast<int64_t>(routing.weights.size()) != T * slots)
    throw InputError("routing decision shape does not match the case");
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  if (kernel != nullptr && !w4a16) {
    check_exposed(kernel->fc1_input, T * slots, H, "fc1_input");
    check_exposed(kernel->fc2_input, T * slots, I, "fc2_input");
  }
  LayerReference ref;
  ref.admissibility = Verdict::pass("ORACLE", "admissibility");

  // Expanded rows: the kernel's slots, then separately added shared experts.
  std::vector<ExpandedRow> rows;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < slots; ++s) {
      const int32_t e = routing.ids[static_cast<size_t>(t * slots + s)];
      if (e < 0 || e >= static_cast<int32_t>(c.experts.size())) {
        ElementError ee;
        ee.where = {.token = t, .slot = s, .expert = e};
        ref.admissibility =
            Verdict::fail("ORACLE", "route", "expert id " + std::to_string(e) + " out of range", ee);
        return ref;
      }
      rows.push_back({t, t * slots + s, e, routing.weights[static_cast<size_t>(t * slots + s)]});
    }
  const int64_t kernel_rows = static_cast<int64_t>(rows.size());
  if (c.recipe.routing.shared_fusion == SharedFusion::kSeparate)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < sh.shared_experts; ++j)
        rows.push_back({t, -1, static_cast<int32_t>(sh.experts + j), 1.0f});
  const int64_t R = static_cast<int64_t>(rows.size());

  std::vector<StageExpectation> inter;
  StageExpectation *g1 = nullptr, *act = nullptr, *g2 = nullptr;
  if (opts.keep_intermediates) {
    inter.push_back(make_stage("gemm1", kernel_rows, 2 * I));
    inter.push_back(make_stage("activation", kernel_rows, I));
    inter.push_back(make_stage("gemm2", kernel_rows, H));
    g1 = &inter[0];
    act = &inter[1];
    g2 = &inter[2];
  }
  // GEMM2 intervals of every expanded row (combine input).
  std::vector<double> y_lo(static_cast<size_t>(R * H)), y_hi(static_cast<size_t>(R * H));

  std::vector<std::vector<int64_t>> by_expert(c.experts.size());
  for (int64_t r = 0; r < R; ++r)
    by_expert[static_cast<size_t>(rows[static_cast<size_t>(r)].expert)].push_back(r);

  const Swiglu& sw = c.recipe.swiglu;
  struct TokenEnvelope {
    bool have = false, have_flips = false;
    float sq = 0;
    Nvfp4Envelope env;
    std::vector<std::pair<int32_t, double>> flips;
  };
  // FC1 envelopes are kept per token (~18 bytes per element) up to 2^23 elements of [T, H].
  const bool memo_fc1 = !w4a16 && T * H <= (int64_t{1} << 23);
  std::vector<TokenEnvelope> fc1_env(memo_fc1 ? static_cast<size_t>(T) : 0);
  // W4A16: rows of one expert are processed in blocks of kRowBlock with the weight row loop outside
  // the row loop: each decoded weight row is then read from memory once per block instead of once
  // per row, while the block's activation rows stay in cache.
  constexpr int64_t kRowBlock = 32;
  // W4A4: rows per exact_dot_rows call (the most it takes).
  constexpr int64_t kDotRows = 4;

  for (size_t e = 0; e < c.experts.size(); ++e) {
    const std::vector<int64_t>& members = by_expert[e];
    if (members.empty()) continue;
    const int64_t n = static_cast<int64_t>(members.size());
    const ExpertWeights& W = c.experts[e];
    // W4A16 reads decoded weight rows; W4A4 reads the packed rows directly (exact_dot_rows).
    const DecodedNvfp4 dg = w4a16 ? DecodedNvfp4::from_matrix(W.gate) : DecodedNvfp4(),
                       du = w4a16 ? DecodedNvfp4::from_matrix(W.up) : DecodedNvfp4(),
                       dd = w4a16 ? DecodedNvfp4::from_matrix(W.down) : DecodedNvfp4();
    const float sq1 = c.a1_scale_for(static_cast<int64_t>(e)), sq2 = c.a2_scale_for(static_cast<int64_t>(e));
    // W4A4: activations dequantize with 1/S_q; W4A16 activations carry no global scale.
    const double sda1 = w4a16 ? 1.0 : 1.0 / static_cast<double>(sq1);
    const double sda2 = w4a16 ? 1.0 : 1.0 / static_cast<double>(sq2);
    const double alpha_g = sda1 * W.gate.global_dequant, alpha_u = sda1 * W.up.global_dequant;
    const double alpha_d = sda2 * W.down.global_dequant;
    const double floor_g = gemm_floor(H, sda1, W.gate.global_dequant),
                 floor_u = gemm_floor(H, sda1, W.up.global_dequant);
    const double floor_d = gemm_floor(I, sda2, W.down.global_dequant);
    const double gamma_h = gamma_n(static_cast<double>(H + kGemmExtraRoundings), kFp32Unit);
    const double gamma_i = gamma_n(static_cast<double>(I + kGemmExtraRoundings), kFp32Unit);
    const auto row_of = [&](int64_t j) -> const ExpandedRow& {
      return rows[static_cast<size_t>(members[static_cast<size_t>(j)])];
    };

    QuantizedInputs qa{DecodedNvfp4(w4a16 ? 0 : n, H),
                       std::vector<std::vector<std::pair<int32_t, double>>>(static_cast<size_t>(n)),
                       std::vector<uint8_t>(static_cast<size_t>(n), 0)};
    QuantizedInputs qh{DecodedNvfp4(w4a16 ? 0 : n, I),
                       std::vector<std::vector<std::pair<int32_t, double>>>(static_cast<size_t>(n)),
                       std::vector<uint8_t>(static_cast<size_t>(n), 0)};

    // ---- FC1 input of every row: bf16 values (W4A16) or quantization (exact input: a point) ----
    std::vector<float> x_all(w4a16 ? static_cast<size_t>(n * H) : 0);
    {
      std::vector<double> xd(static_cast<size_t>(H));
      for (int64_t j = 0; j < n; ++j) {
        const ExpandedRow& er = row_of(j);
        const uint16_t* src = c.hidden.data() + er.token * H;
        for (int64_t i = 0; i < H; ++i) xd[static_cast<size_t>(i)] = bf16_to_float(src[i]);
        if (w4a16) {
          for (int64_t i = 0; i < H; ++i)
            x_all[static_cast<size_t>(j * H + i)] = static_cast<float>(xd[static_cast<size_t>(i)]);
          continue;
        }
        // The FC1 input of a token is the same point for each of its rows: one envelope (and one
        // set of unconditioned flips) per token and quantization scale.
        TokenEnvelope scratch;
        TokenEnvelope& te = memo_fc1 ? fc1_env[static_cast<size_t>(er.token)] : scratch;
        if (!te.have || !(te.sq == sq1)) {
          te.env = nvfp4_envelope(xd, xd, xd, sq1);
          te.sq = sq1;
          te.have = true;
          te.have_flips = false;
        }
        const bool use_kernel = kernel != nullptr && kernel->fc1_input.has_value() && er.slot >= 0;
        Verdict fail;
        if (!quantize_row("fc1_quant", er, j, xd, xd, te.env, sq1, kernel ? &kernel->fc1_input : nullptr, qa,
                          fail, te.have_flips ? &te.flips : nullptr)) {
          ref.admissibility = fail;
          return ref;
        }
        if (!te.have_flips && !use_kernel && !te.env.indeterminate) {
          te.flips = qa.flips[static_cast<size_t>(j)];
          te.have_flips = true;
        }
      }
    }
    std::vector<FlipTerms> fl1(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      fl1[static_cast<size_t>(j)] = flip_terms(qa.flips[static_cast<size_t>(j)], H);

    // ---- GEMM1 (semantic gate | up) ----
    std::vector<Interval> gate(static_cast<size_t>(n * I)), up(static_cast<size_t>(n * I));
    const auto w4 = [&](const W4A16Dot& d, double alpha, double floor) -> Interval {
      if (!std::isfinite(d.value)) return {kNaN, kNaN};
      const double v = alpha * d.value, a = std::fabs(alpha);
      const double b = (gamma_n(static_cast<double>(H + kGemmExtraRoundings), kFp32Unit) * a * d.abs_value +
                        a * d.error_bound) *
                           (1 + 8 * kDoubleUnit) +
                       floor;
      if (!std::isfinite(b) || fp32_may_overflow(d.abs_value, alpha, v, b)) return {kNaN, kNaN};
      return {v - b, v + b};
    };
    const auto finish_gemm1 = [&](int64_t j, int64_t o, Interval ig, Interval iu) {
      if (p.bf16_after_gemm1) {
        if (!is_nan(ig)) ig = round_to_bf16(ig);
        if (!is_nan(iu)) iu = round_to_bf16(iu);
      }
      gate[static_cast<size_t>(j * I + o)] = ig;
      up[static_cast<size_t>(j * I + o)] = iu;
      const ExpandedRow& er = row_of(j);
      if (er.slot >= 0) {
        store(g1, er.slot, o, ig);
        store(g1, er.slot, I + o, iu);
      }
    };
    if (w4a16) {
      std::vector<uint8_t> x_big(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j)
        x_big[static_cast<size_t>(j)] =
            row_may_overflow_a_partial({x_all.data() + j * H, static_cast<size_t>(H)}, {});
      for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
        const int64_t j1 = std::min(n, j0 + kRowBlock);
        for (int64_t o = 0; o < I; ++o)
          for (int64_t j = j0; j < j1; ++j) {
            const std::span<const float> x(x_all.data() + j * H, static_cast<size_t>(H));
            Interval ig = w4(w4a16_dot(x, dg, o), alpha_g, floor_g),
                     iu = w4(w4a16_dot(x, du, o), alpha_u, floor_u);
            if (x_big[static_cast<size_t>(j)]) {
              if (zero_scale_partial_may_overflow(x, {}, W.gate, o)) ig = {kNaN, kNaN};
              if (zero_scale_partial_may_overflow(x, {}, W.up, o)) iu = {kNaN, kNaN};
            }
            finish_gemm1(j, o, ig, iu);
          }
      }
    } else {
      // Tiles of 2 x kDotRows rows against every packed weight row: the tile's decoded rows stay in
      // L1, each weight row is read from memory once per tile and its groups are decoded once per
      // exact_dot_rows call.
      for (int64_t j0 = 0; j0 < n; j0 += 2 * kDotRows) {
        const int na = static_cast<int>(std::min<int64_t>(2 * kDotRows, n - j0));
        ExactDot dgs[2 * kDotRows], dus[2 * kDotRows];
        double fg[2 * kDotRows], fu[2 * kDotRows];
        for (int64_t o = 0; o < I; ++o) {
          const PackedNvfp4Row pg = packed_row(W.gate, o), pu = packed_row(W.up, o);
          for (int r0 = 0; r0 < na; r0 += static_cast<int>(kDotRows)) {
            const int nr = std::min(static_cast<int>(kDotRows), na - r0);
            exact_dot_rows(qa.rows, j0 + r0, nr, pg, dgs + r0);
            exact_dot_rows(qa.rows, j0 + r0, nr, pu, dus + r0);
          }
          flip_sums(fl1, j0, na, pg, fg);
          flip_sums(fl1, j0, na, pu, fu);
          for (int r = 0; r < na; ++r) {
            const int64_t j = j0 + r;
            if (qa.indeterminate[static_cast<size_t>(j)]) {
              finish_gemm1(j, o, {kNaN, kNaN}, {kNaN, kNaN});
            } else {
              finish_gemm1(j, o, gemm_interval(dgs[r], alpha_g, fg[r], gamma_h, floor_g),
                           gemm_interval(dus[r], alpha_u, fu[r], gamma_h, floor_u));
            }
          }
        }
      }
    }

    // ---- SwiGLU and the FC2 input of every row ----
    std::vector<uint8_t> h_nan(static_cast<size_t>(n), 0);
    std::vector<float> hc_all(w4a16 ? static_cast<size_t>(n * I) : 0), hr_all(hc_all.size());
    {
      std::vector<double> hlo(static_cast<size_t>(I)), hhi(static_cast<size_t>(I)),
          hc(static_cast<size_t>(I));
      for (int64_t j = 0; j < n; ++j) {
        const ExpandedRow& er = row_of(j);
        bool nan = false;
        for (int64_t o = 0; o < I; ++o) {
          const size_t gi = static_cast<size_t>(j * I + o);
          Interval h = swiglu_kernel_interval(gate[gi], up[gi], sw);
          if (!is_nan(h) && p.bf16_after_activation) h = round_to_bf16(h);
          if (er.slot >= 0) store(act, er.slot, o, h);
          nan |= is_nan(h);
          hlo[static_cast<size_t>(o)] = h.lo;
          hhi[static_cast<size_t>(o)] = h.hi;
          hc[static_cast<size_t>(o)] = h.center();
        }
        h_nan[static_cast<size_t>(j)] = nan ? 1 : 0;
        if (w4a16) {
          // W4A16 GEMM2 operand: the interval's center in fp32 plus a radius that covers the rest.
          for (int64_t o = 0; o < I; ++o) {
            const float center = static_cast<float>(hc[static_cast<size_t>(o)]);
            const double r =
                std::max(hhi[static_cast<size_t>(o)] - center, center - hlo[static_cast<size_t>(o)]);
            hc_all[static_cast<size_t>(j * I + o)] = center;
            hr_all[static_cast<size_t>(j * I + o)] = float_up(r);
          }
        } else if (nan) {
          qh.indeterminate[static_cast<size_t>(j)] = 1;
        } else {
          Verdict fail;
          if (!quantize_row("fc2_quant", er, j, hlo, hhi, nvfp4_envelope(hlo, hhi, hc, sq2), sq2,
                            kernel ? &kernel->fc2_input : nullptr, qh, fail)) {
            ref.admissibility = fail;
            return ref;
          }
        }
      }
    }
    std::vector<FlipTerms> fl2(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      fl2[static_cast<size_t>(j)] = flip_terms(qh.flips[static_cast<size_t>(j)], I);

    // ---- GEMM2 ----
    const auto finish_gemm2 = [&](int64_t j, int64_t o, Interval y) {
      if (!is_nan(y) && p.bf16_after_gemm2) y = round_to_bf16(y);
      const ExpandedRow& er = row_of(j);
      if (er.slot >= 0) store(g2, er.slot, o, y);
      const size_t idx = static_cast<size_t>(members[static_cast<size_t>(j)] * H + o);
      y_lo[idx] = y.lo;
      y_hi[idx] = y.hi;
    };
    if (w4a16) {
      std::vector<uint8_t> h_big(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j)
        h_big[static_cast<size_t>(j)] = row_may_overflow_a_partial(
            {hc_all.data() + j * I, static_cast<size_t>(I)}, {hr_all.data() + j * I, static_cast<size_t>(I)});
      for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
        const int64_t j1 = std::min(n, j0 + kRowBlock);
        for (int64_t o = 0; o < H; ++o)
          for (int64_t j = j0; j < j1; ++j) {
            Interval y;
            if (h_nan[static_cast<size_t>(j)]) {
              y = {kNaN, kNaN};
            } else {
              const std::span<const float> hcf(hc_all.data() + j * I, static_cast<size_t>(I));
              const std::span<const float> hrf(hr_all.data() + j * I, static_cast<size_t>(I));
              const W4A16Dot d = w4a16_dot(hcf, dd, o), rr = w4a16_dot(hrf, dd, o);
              const double a = std::fabs(alpha_d), fs = rr.abs_value + rr.error_bound;
              const double v = alpha_d * d.value;
              const double b =
                  (gamma_n(static_cast<double>(I + kGemmExtraRoundings), kFp32Unit) * a * (d.abs_value + fs) +
                   a * (fs + d.error_bound)) *
                      (1 + 8 * kDoubleUnit) +
                  floor_d;
              y = std::isfinite(v) && std::isfinite(b) &&
                          !fp32_may_overflow(d.abs_value + fs, alpha_d, v, b) &&
                          !(h_big[static_cast<size_t>(j)] &&
                            zero_scale_partial_may_overflow(hcf, hrf, W.down, o))
                      ? Interval{v - b, v + b}
                      : Interval{kNaN, kNaN};
            }
            finish_gemm2(j, o, y);
          }
      }
    } else {
      // Tiles of 2 x kDotRows rows: the dense flip magnitudes (most of the unconditioned FC2 input's
      // codes flip) run 8 rows per decoded weight block.
      for (int64_t j0 = 0; j0 < n; j0 += 2 * kDotRows) {
        const int na = static_cast<int>(std::min<int64_t>(2 * kDotRows, n - j0));
        ExactDot ds[2 * kDotRows];
        double fs[2 * kDotRows];
        for (int64_t o = 0; o < H; ++o) {
          const PackedNvfp4Row pd = packed_row(W.down, o);
          for (int r0 = 0; r0 < na; r0 += static_cast<int>(kDotRows))
            exact_dot_rows(qh.rows, j0 + r0, std::min(static_cast<int>(kDotRows), na - r0), pd, ds + r0);
          flip_sums(fl2, j0, na, pd, fs);
          for (int r = 0; r < na; ++r) {
            const int64_t j = j0 + r;
            finish_gemm2(j, o,
                         qh.indeterminate[static_cast<size_t>(j)]
                             ? Interval{kNaN, kNaN}
                             : gemm_interval(ds[r], alpha_d, fs[r], gamma_i, floor_d));
          }
        }
      }
    }
  }

  // ---- Combine (+ rsf where the profile puts it) and shared experts ----
  StageExpectation out = make_stage("output", T, H);
  const float rsf = static_cast<float>(c.recipe.routing.routed_scaling_factor);
  const bool rsf_in_combine = !p.rsf_in_topk;
  std::vector<std::vector<int64_t>> routed_rows(static_cast<size_t>(T)), shared_rows(static_cast<size_t>(T));
  for (int64_t r = 0; r < R; ++r)
    (rows[static_cast<size_t>(r)].slot >= 0
         ? routed_rows
         : shared_rows)[static_cast<size_t>(rows[static_cast<size_t>(r)].token)]
        .push_back(r);
  for (int64_t t = 0; t < T; ++t) {
    const auto& rr = routed_rows[static_cast<size_t>(t)];
    const double nslots = static_cast<double>(rr.size());
    for (int64_t o = 0; o < H; ++o) {
      double lo = 0, hi = 0, mag = 0;
      bool nan = false;
      for (int64_t r : rr) {
        double w = rows[static_cast<size_t>(r)].weight;
        if (p.combine == CombineAccum::kBf16Products) w = round_to_bf16(static_cast<float>(w));
        const Interval y{y_lo[static_cast<size_t>(r * H + o)], y_hi[static_cast<size_t>(r * H + o)]};
        if (is_nan(y) || std::isnan(w)) {
          nan = true;
          continue;
        }
        Interval prod{std::min(w * y.lo, w * y.hi), std::max(w * y.lo, w * y.hi)};
        const double pm = std::max(std::fabs(prod.lo), std::fabs(prod.hi));
        // The fp32 product's own rounding.
        prod = {prod.lo - kFp32Unit * pm - kUnderflowFloor, prod.hi + kFp32Unit * pm + kUnderflowFloor};
        // bf16 products: the atomics' and cutlass_moe_fp4's bf16(w * y), and SGLang Triton's GEMM2 epilogue
        // (MUL_ROUTED_WEIGHT: the fp32 accumulator times the fp32 weight, stored as bf16 for moe_sum_reduce).
        if (p.combine == CombineAccum::kBf16Atomics || p.combine == CombineAccum::kBf16Products ||
            p.combine == CombineAccum::kBf16EpilogueProducts)
          prod = round_to_bf16(prod);
        lo += prod.lo;
        hi += prod.hi;
        mag += std::max(std::fabs(prod.lo), std::fabs(prod.hi));
      }
      // Accumulation of the slot terms in any order: slots - 1 additions (+1 unit for the oracle's
      // double sums); bf16 atomics round every one of the `slots` additions to bf16.
      const double acc_err = p.combine == CombineAccum::kBf16Atomics ? gamma_n(nslots, kBf16Unit) * mag
                                                                     : gamma_n(nslots, kFp32Unit) * mag;
      Interval s{lo - acc_err - nslots * kUnderflowFloor, hi + acc_err + nslots * kUnderflowFloor};
      if (rsf_in_combine) {
        s = {std::min(s.lo * rsf, s.hi * rsf), std::max(s.lo * rsf, s.hi * rsf)};
        const double m = std::max(std::fabs(s.lo), std::fabs(s.hi));
        s = {s.lo - kFp32Unit * m - kUnderflowFloor, s.hi + kFp32Unit * m + kUnderflowFloor};
      }
      if (p.bf16_output) s = round_to_bf16(s);
      const auto& sr = shared_rows[static_cast<size_t>(t)];
      if (!sr.empty()) {
        // The separate shared MLPs form their own output tensor (SGLang/vLLM: `shared_output`, in the
        // model dtype) that is added to the routed output afterwards (recipe.h, kSeparate). With
        // several shared experts their outputs are summed first, either in fp32 and rounded once
        // or by bf16 tensor adds in any order (each add a bf16 rounding point): both lie in
        // sum +- gamma_{n-1}(u) * sum|y| with u the unit of the output dtype, then RN to bf16 once
        // more (monotone, idempotent on a bf16 result).
        double slo = 0, shi = 0, smag = 0;
        for (int64_t r : sr) {
          const Interval y{y_lo[static_cast<size_t>(r * H + o)], y_hi[static_cast<size_t>(r * H + o)]};
          nan |= is_nan(y);
          slo += y.lo;
          shi += y.hi;
          smag += std::max(std::fabs(y.lo), std::fabs(y.hi));
        }
        Interval sh_sum{slo, shi};
        if (sr.size() > 1) {
          // +1 unit absorbs the oracle's own double sums (< n 2^-53 relative).
          const double e =
              gamma_n(static_cast<double>(sr.size()), p.bf16_output ? kBf16Unit : kFp32Unit) * smag +
              static_cast<double>(sr.size()) * kUnderflowFloor;
          sh_sum = {slo - e, shi + e};
        }
        // The shared tensor is in the output dtype even for one expert whose GEMM2 output is fp32.
        if (p.bf16_output) sh_sum = round_to_bf16(sh_sum);
        // routed + shared: one fp32 addition (+1 unit for the oracle's double add), then the output
        // rounding point.
        const double m =
            std::max(std::fabs(s.lo), std::fabs(s.hi)) + std::max(std::fabs(sh_sum.lo), std::fabs(sh_sum.hi));
        const double e = gamma_n(2, kFp32Unit) * m + kUnderflowFloor;
        s = {s.lo + sh_sum.lo - e, s.hi + sh_sum.hi + e};
        if (p.bf16_output) s = round_to_bf16(s);
      }
      store(&out, t, o, nan ? Interval{kNaN, kNaN} : s);
    }
  }
  for (auto& st : inter) ref.stages.push_back(std::move(st));
  ref.stages.push_back(std::move(out));
  return ref;
}

}  // namespace moefuzz

namespace moefuzz {

Verdict compare_stage(const StageExpectation& expected, std::span<const float> got,
                      const RoutingDecision* routing) {
  const size_t n = expected.expected.size();
  if (got.size() != n)
    return Verdict::fail("ORACLE", expected.stage,
                         "kernel " + expected.stage + " has " + std::to_string(got.size()) +
                             " elements, expected " + std::to_string(n));
  const bool per_row = expected.stage != "output" && expected.stage != "route";
  const auto locate = [&](size_t idx) {
    Location l;
    const int64_t row = static_cast<int64_t>(idx) / expected.cols,
                  col = static_cast<int64_t>(idx) % expected.cols;
    l.element = col;
    if (expected.stage == "route") {
      l.token = row;
      l.slot = col;
      l.element = -1;
    } else if (per_row && routing != nullptr && routing->slots > 0) {
      l.token = row / routing->slots;
      l.slot = row % routing->slots;
      l.expert = routing->ids[static_cast<size_t>(row)];
    } else {
      l.token = row;
    }
    if (expected.stage == "route" && routing != nullptr) l.expert = routing->ids[idx];
    return l;
  };
  std::vector<ElementError> errs;
  double max_ratio = 0;
  int64_t compared = 0;
  ElementError worst;
  bool have_worst = false;
  const auto key = [](const ElementError& e) { return std::isnan(e.got) ? INFINITY : e.ratio(); };
  for (size_t i = 0; i < n; ++i) {
    const double b = expected.bound[i];
    if (std::isinf(b) || std::isnan(expected.expected[i])) continue;
    ++compared;
    ElementError e{locate(i), static_cast<double>(got[i]), expected.expected[i], b};
    const double r = std::isnan(e.got) ? INFINITY : e.ratio();
    if (!have_worst || key(e) > key(worst) || (std::isnan(e.got) && !std::isnan(worst.got))) {
      worst = e;
      have_worst = true;
    }
    max_ratio = std::max(max_ratio, r);
    if (r > 1) errs.push_back(e);
  }
  if (errs.empty()) {
    Verdict v = Verdict::pass("ORACLE", expected.stage);
    v.max_ratio = max_ratio;
    v.compared = compared;
    v.worst = worst;
    return v;
  }
  std::sort(errs.begin(), errs.end(), [&](const ElementError& a, const ElementError& b) {
    const bool an = std::isnan(a.got), bn = std::isnan(b.got);
    if (an != bn) return an;
    return a.ratio() > b.ratio();
  });
  const size_t failing = errs.size();
  if (errs.size() > 30) errs.resize(30);
  const ElementError& w = errs.front();
  Verdict v = Verdict::fail("ORACLE", expected.stage,
                            std::to_string(failing) + " elements of " + expected.stage +
                                " outside the derived bound; worst error/bound " + std::to_string(w.ratio()) +
                                " at token " + std::to_string(w.where.token) + " element " +
                                std::to_string(w.where.element),
                            w);
  v.worst_elements = std::move(errs);
  v.max_ratio = std::isnan(w.got) ? INFINITY : max_ratio;
  v.compared = compared;
  return v;
}

}  // namespace moefuzz
