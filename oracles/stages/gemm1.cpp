#include "oracles/stages/gemm1.h"

#include <algorithm>

#include "oracles/dense_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/stages/gemm_bounds.h"
#include "oracles/stages/stage_rows.h"

namespace moefuzz::stages {
Gemm1Rows gemm1(const Case& c, const Profile& p, const ExpertRows& rows, const ExpertWeights& W,
                const Fc1Input& in, double sda1, StageExpectation* g1) {
  const int64_t H = c.recipe.shape.hidden, I = c.recipe.shape.inter, n = rows.size();
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  const double alpha_g = sda1 * W.gate.global_dequant, alpha_u = sda1 * W.up.global_dequant;
  const double floor_g = gemm_floor(H, sda1, W.gate.global_dequant),
               floor_u = gemm_floor(H, sda1, W.up.global_dequant);
  const double gamma_h = gamma_n(static_cast<double>(H + kGemmExtraRoundings), kFp32Unit);
  Gemm1Rows out{std::vector<Interval>(static_cast<size_t>(n * I)),
                std::vector<Interval>(static_cast<size_t>(n * I))};
  const GemmEpilogue eg{
      .alpha = alpha_g, .gk = gamma_h, .floor = floor_g, .bias = W.gate_bias, .bf16 = p.bf16_after_gemm1},
      eu{.alpha = alpha_u, .gk = gamma_h, .floor = floor_u, .bias = W.up_bias, .bf16 = p.bf16_after_gemm1};
  // Row j's gate and up results, columns [o0, o1), into its stage record.
  const auto record = [&](int64_t j, int64_t o0, int64_t o1) {
    const ExpandedRow& er = rows.row(j);
    if (er.slot < 0) return;
    for (int64_t o = o0; o < o1; ++o) {
      store(g1, er.slot, o, out.gate[static_cast<size_t>(j * I + o)]);
      store(g1, er.slot, I + o, out.up[static_cast<size_t>(j * I + o)]);
    }
  };
  const auto finish = [&](int64_t j, int64_t o, Interval ig, Interval iu) {
    out.gate[static_cast<size_t>(j * I + o)] = gemm_epilogue(eg, ig, o);
    out.up[static_cast<size_t>(j * I + o)] = gemm_epilogue(eu, iu, o);
    record(j, o, o + 1);
  };
  if (c.recipe.quant.weights == WeightFormat::kFp8Block) {
    // W8A8: exact per-block dots of the FC1 codes with the E4M3 weight rows, bound by the profile's
    // FP8 contract plus the operands' deviations (oracles/stages/fp8_operands.h).
    const Fp8GemmOperands a(in.fp8);
    const Fp8BlockGemmContract k = fp8_contract(p.fp8_mma_accum_bits, p.fp8_dots_per_block);
    constexpr int kRows = kFp8GemmRows;  // activation rows per call (each weight row decoded once for all)
    Interval ig[kRows], iu[kRows];
    for (int64_t j0 = 0; j0 < n; j0 += kRows) {
      const int na = static_cast<int>(std::min<int64_t>(kRows, n - j0));
      for (int64_t o = 0; o < I; ++o) {
        fp8_gemm_rows(a, j0, na, W.fp8.gate, o, k, ig);
        fp8_gemm_rows(a, j0, na, W.fp8.up, o, k, iu);
        for (int r = 0; r < na; ++r) finish(j0 + r, o, ig[r], iu[r]);
      }
    }
    return out;
  }
  if (c.recipe.quant.weights != WeightFormat::kNvfp4) {
    // W16A16 and MXFP4 W4A16: alpha is 1 (no global scale); weight row o is widened once per row
    // block (exact: bf16 values, or MXFP4 values decoded with the OCP decode, dense_dot.h).
    const WeightFormat f = c.recipe.quant.weights;
    const double floor = dense_gemm_floor(H);
    std::vector<DenseRow> x(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      x[static_cast<size_t>(j)] = dense_row({in.bf16.data() + j * H, static_cast<size_t>(H)});
    for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
      const int64_t j1 = std::min(n, j0 + kRowBlock);
      for (int64_t o = 0; o < I; ++o) {
        const std::vector<float> gw = weight_row_to_float(f, W.bf16.gate, W.mx.gate, o),
                                 uw = weight_row_to_float(f, W.bf16.up, W.mx.up, o);
        const DenseRow gr = dense_row(gw), ur = dense_row(uw);
        for (int64_t j = j0; j < j1; ++j)
          finish(j, o, w4a16_point_interval(dense_dot(x[static_cast<size_t>(j)], gr), sda1, gamma_h, floor),
                 w4a16_point_interval(dense_dot(x[static_cast<size_t>(j)], ur), sda1, gamma_h, floor));
      }
    }
    return out;
  }
  if (w4a16) {
    const DecodedNvfp4 dg = DecodedNvfp4::from_matrix(W.gate), du = DecodedNvfp4::from_matrix(W.up);
    std::vector<uint8_t> x_big(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      x_big[static_cast<size_t>(j)] =
          row_may_overflow_a_partial({in.bf16.data() + j * H, static_cast<size_t>(H)}, {});
    for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
      const int64_t j1 = std::min(n, j0 + kRowBlock);
      for (int64_t o = 0; o < I; ++o)
        for (int64_t j = j0; j < j1; ++j) {
          const std::span<const float> x(in.bf16.data() + j * H, static_cast<size_t>(H));
          Interval ig = w4a16_point_interval(w4a16_dot(x, dg, o), alpha_g, gamma_h, floor_g),
                   iu = w4a16_point_interval(w4a16_dot(x, du, o), alpha_u, gamma_h, floor_u);
          if (x_big[static_cast<size_t>(j)]) {
            if (zero_scale_partial_may_overflow(x, {}, W.gate, o)) ig = {kNaN, kNaN};
            if (zero_scale_partial_may_overflow(x, {}, W.up, o)) iu = {kNaN, kNaN};
          }
          finish(j, o, ig, iu);
        }
    }
    return out;
  }
  const QuantizedInputs& qa = in.quantized;
  // All n x I gate and up dots at once, [gate rows][up rows], with their flip sums: from a dot device
  // (oracles/exact_dot_device.h, bit-identical to exact_dot_rows) or from the CPU (cpu_gemm), then
  // the row epilogue, row after row, every read and write in order.
  ExactDotDevice* device = exact_dot_device();
  if (!use_dot_device(device, n * 2 * I * H)) device = nullptr;
  DeviceGemm dots;
  if (device != nullptr) {
    const DeviceWeights weights[2] = {device_weights(c, rows, W, W.gate, 0),
                                      device_weights(c, rows, W, W.up, 1)};
    dots = device_gemm(*device, qa, n, weights);
    add_cpu_flips(qa, n, weights, dots);
  } else {
    const DeviceWeights weights[2] = {{&W.gate, std::nullopt}, {&W.up, std::nullopt}};
    dots = cpu_gemm(qa, n, weights);
  }
  for (int64_t j = 0; j < n; ++j) {
    const size_t g = static_cast<size_t>(j * I), u = static_cast<size_t>(n * I) + g;
    if (qa.indeterminate[static_cast<size_t>(j)] != 0) {
      std::fill_n(out.gate.begin() + static_cast<std::ptrdiff_t>(g), I, Interval{kNaN, kNaN});
      std::fill_n(out.up.begin() + static_cast<std::ptrdiff_t>(g), I, Interval{kNaN, kNaN});
    } else {
      gemm_row_intervals(eg, &dots.dots[g], dots.flips_at(g), I, &out.gate[g]);
      gemm_row_intervals(eu, &dots.dots[u], dots.flips_at(u), I, &out.up[g]);
    }
    const ExpandedRow& er = rows.row(j);
    if (er.slot >= 0) {
      store_row(g1, er.slot, 0, &out.gate[g], I);
      store_row(g1, er.slot, I, &out.up[g], I);
    }
  }
  return out;
}

}  // namespace moefuzz::stages
