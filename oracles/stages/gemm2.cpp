#include "oracles/stages/gemm2.h"

#include <algorithm>

#include "oracles/dense_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/stages/gemm_bounds.h"
#include "oracles/stages/stage_rows.h"

namespace moefuzz::stages {

void gemm2(const Case& c, const Profile& p, const ExpertRows& rows, const ExpertWeights& W,
           const Fc2Input& in, const ActivationRows& h, double sda2, StageExpectation* g2, ExpertOutputs& y) {
  const int64_t H = c.recipe.shape.hidden, I = c.recipe.shape.inter, n = rows.size();
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  const double alpha_d = sda2 * W.down.global_dequant;
  const double floor_d = gemm_floor(I, sda2, W.down.global_dequant);
  const double gamma_i = gamma_n(static_cast<double>(I + kGemmExtraRoundings), kFp32Unit);
  const GemmEpilogue ed{
      .alpha = alpha_d, .gk = gamma_i, .floor = floor_d, .bias = W.down_bias, .bf16 = p.bf16_after_gemm2};
  // Row j's result v[o] (before the routing weight) into its stage record and y.
  const auto record = [&](int64_t j, int64_t o, Interval v) {
    const ExpandedRow& er = rows.row(j);
    if (er.slot >= 0) store(g2, er.slot, o, v);
    const size_t idx = static_cast<size_t>(rows.members[static_cast<size_t>(j)] * H + o);
    y.lo[idx] = v.lo;
    y.hi[idx] = v.hi;
  };
  const auto finish = [&](int64_t j, int64_t o, Interval v) { record(j, o, gemm_epilogue(ed, v, o)); };
  if (c.recipe.quant.weights == WeightFormat::kFp8Block) {
    // W8A8: as gemm1, from quantize2's codes (admitted, or the centres' with their deviations).
    const Fp8GemmOperands a(in.fp8);
    const Fp8BlockGemmContract k = fp8_contract(p.fp8_mma_accum_bits, p.fp8_dots_per_block);
    constexpr int kRows = kFp8GemmRows;
    Interval v[kRows];
    for (int64_t j0 = 0; j0 < n; j0 += kRows) {
      const int na = static_cast<int>(std::min<int64_t>(kRows, n - j0));
      for (int64_t o = 0; o < H; ++o) {
        fp8_gemm_rows(a, j0, na, W.fp8.down, o, k, v);
        for (int r = 0; r < na; ++r) finish(j0 + r, o, v[r]);
      }
    }
    return;
  }
  if (c.recipe.quant.weights != WeightFormat::kNvfp4) {
    // W16A16 and MXFP4 W4A16: the activation interval's centers and radii against weight row o
    // (bf16, or MXFP4 decoded exactly with the OCP decode, dense_dot.h), alpha 1.
    const double floor = dense_gemm_floor(I);
    const std::vector<float>&hc = in.fp32.center, &hr = in.fp32.radius;
    std::vector<DenseRow> xc(static_cast<size_t>(n)), xr(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      xc[static_cast<size_t>(j)] = dense_row({hc.data() + j * I, static_cast<size_t>(I)});
      xr[static_cast<size_t>(j)] = dense_row({hr.data() + j * I, static_cast<size_t>(I)});
    }
    for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
      const int64_t j1 = std::min(n, j0 + kRowBlock);
      for (int64_t o = 0; o < H; ++o) {
        const std::vector<float> dw = weight_row_to_float(c.recipe.quant.weights, W.bf16.down, W.mx.down, o);
        const DenseRow dr = dense_row(dw);
        for (int64_t j = j0; j < j1; ++j)
          finish(
              j, o,
              h.nan[static_cast<size_t>(j)]
                  ? Interval{kNaN, kNaN}
                  : w4a16_radius_interval(dense_dot(xc[static_cast<size_t>(j)], dr),
                                          dense_dot(xr[static_cast<size_t>(j)], dr), sda2, gamma_i, floor));
      }
    }
    return;
  }
  if (w4a16) {
    const DecodedNvfp4 dd = DecodedNvfp4::from_matrix(W.down);
    const std::vector<float>&hc = in.fp32.center, &hr = in.fp32.radius;
    std::vector<uint8_t> h_big(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      h_big[static_cast<size_t>(j)] = row_may_overflow_a_partial({hc.data() + j * I, static_cast<size_t>(I)},
                                                                 {hr.data() + j * I, static_cast<size_t>(I)});
    for (int64_t j0 = 0; j0 < n; j0 += kRowBlock) {
      const int64_t j1 = std::min(n, j0 + kRowBlock);
      for (int64_t o = 0; o < H; ++o)
        for (int64_t j = j0; j < j1; ++j) {
          Interval v;
          if (h.nan[static_cast<size_t>(j)]) {
            v = {kNaN, kNaN};
          } else {
            const std::span<const float> hcf(hc.data() + j * I, static_cast<size_t>(I));
            const std::span<const float> hrf(hr.data() + j * I, static_cast<size_t>(I));
            v = w4a16_radius_interval(w4a16_dot(hcf, dd, o), w4a16_dot(hrf, dd, o), alpha_d, gamma_i,
                                      floor_d);
            if (!is_nan(v) && h_big[static_cast<size_t>(j)] &&
                zero_scale_partial_may_overflow(hcf, hrf, W.down, o))
              v = {kNaN, kNaN};
          }
          finish(j, o, v);
        }
    }
    return;
  }
  const QuantizedInputs& qh = in.quantized;
  // All n x H dots at once, with their flip sums: from a dot device (oracles/exact_dot_device.h,
  // bit-identical to exact_dot_rows) or from the CPU (cpu_gemm), then the row epilogue, row after row.
  ExactDotDevice* device = exact_dot_device();
  if (!use_dot_device(device, n * H * I)) device = nullptr;
  DeviceGemm dots;
  if (device != nullptr) {
    const DeviceWeights weights[1] = {device_weights(c, rows, W, W.down, 2)};
    dots = device_gemm(*device, qh, n, weights);
    add_cpu_flips(qh, n, weights, dots);
  } else {
    const DeviceWeights weights[1] = {{&W.down, std::nullopt}};
    dots = cpu_gemm(qh, n, weights);
  }
  std::vector<Interval> v(static_cast<size_t>(H));
  for (int64_t j = 0; j < n; ++j) {
    const size_t at = static_cast<size_t>(j * H);
    if (qh.indeterminate[static_cast<size_t>(j)] != 0)
      std::fill(v.begin(), v.end(), Interval{kNaN, kNaN});
    else
      gemm_row_intervals(ed, &dots.dots[at], dots.flips_at(at), H, v.data());
    const ExpandedRow& er = rows.row(j);
    if (er.slot >= 0) store_row(g2, er.slot, 0, v.data(), H);
    const size_t y0 = static_cast<size_t>(rows.members[static_cast<size_t>(j)] * H);
    for (int64_t o = 0; o < H; ++o) {
      y.lo[y0 + static_cast<size_t>(o)] = v[static_cast<size_t>(o)].lo;
      y.hi[y0 + static_cast<size_t>(o)] = v[static_cast<size_t>(o)].hi;
    }
  }
}

}  // namespace moefuzz::stages
