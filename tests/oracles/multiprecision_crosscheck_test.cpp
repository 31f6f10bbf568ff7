// Cross-check of the fast exact path against the whole layer evaluated purely in cpp_bin_float_50:
// exact stages (GEMM1, GEMM2, combine) agree up to the final rounding to double of each side; the
// double SwiGLU (oracles/bounds.h swiglu) agrees with the 166-bit one within its stated error
// kOracleTranscendentalError (plus the double rounding of its inputs through the slope bound).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/errors.h"
#include "core/fp4_packing.h"
#include "core/profile.h"
#include "core/rng.h"
#include "oracles/bounds.h"
#include "oracles/layer_ref.h"
#include "oracles/multiprecision_layer.h"
#include "oracles/quant_ref.h"

namespace moefuzz {
namespace {

QuantizedRows quantize_rows(const std::vector<std::vector<float>>& rows, const std::vector<float>& sq,
                            const Profile& p) {
  QuantizedRows q;
  q.rows = static_cast<int64_t>(rows.size());
  q.cols = static_cast<int64_t>(rows[0].size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const QuantizedRowRef ref = quantize_row_ref(rows[r], sq[r], p.quantizer, p.zero_scale_rule);
    const auto packed = pack_fp4(ref.codes);
    q.packed.insert(q.packed.end(), packed.begin(), packed.end());
    q.scales.insert(q.scales.end(), ref.scales.begin(), ref.scales.end());
  }
  return q;
}

TEST(MultiprecisionCrosscheck, FastExactPathAgreesWithCppBinFloat50) {
  Profile p = profile_by_name("flashinfer-reference");  // no bf16 rounding except before FC2 quantization
  Stream s(77, "crosscheck");
  int checked = 0;
  for (uint64_t n = 0; n < 12; ++n) {
    CaseRecipe r;
    r.seed = 1000 + n;
    r.profile = p.name;
    r.shape = {.tokens = 1 + static_cast<int64_t>(n % 3),
               .hidden = 32 + 16 * static_cast<int64_t>(n % 3),
               .inter = 32,
               .experts = 4,
               .top_k = 2};
    if (n % 4 == 3) r.swiglu = {.limit = 7.0, .alpha = 1.702, .beta = 1.0};
    r.quant.act_scales = n % 2 ? ActScaleMode::kPerExpert : ActScaleMode::kGlobal;
    const Case c = materialize(r);
    const int64_t T = r.shape.tokens, H = r.shape.hidden, I = r.shape.inter, k = r.shape.top_k;
    RoutingDecision rd{T, k, {}, {}};
    for (int64_t i = 0; i < T * k; ++i) {
      rd.ids.push_back(
          static_cast<int32_t>(s.uniform_int(n * 100 + static_cast<uint64_t>(i), 0, r.shape.experts - 1)));
      rd.weights.push_back(static_cast<float>(s.uniform(n * 100 + 50 + static_cast<uint64_t>(i))));
    }
    std::vector<std::vector<float>> x;
    std::vector<float> sq1, sq2;
    for (int64_t i = 0; i < T * k; ++i) {
      std::vector<float> row(static_cast<size_t>(H));
      for (int64_t h = 0; h < H; ++h)
        row[static_cast<size_t>(h)] = bf16_to_float(c.hidden[static_cast<size_t>((i / k) * H + h)]);
      x.push_back(row);
      sq1.push_back(c.a1_scale_for(rd.ids[static_cast<size_t>(i)]));
      sq2.push_back(c.a2_scale_for(rd.ids[static_cast<size_t>(i)]));
    }
    LayerResult kr;
    kr.routing = rd;
    kr.fc1_input = quantize_rows(x, sq1, p);
    // FC2 codes: the quantization of the (bf16-rounded) 166-bit activation, an admissible choice.
    QuantizedRows dummy2{T * k, I, std::vector<uint8_t>(static_cast<size_t>(T * k * I / 2)),
                         std::vector<uint8_t>(static_cast<size_t>(T * k * I / 16))};
    const MultiprecisionLayer pre = multiprecision_layer(c, rd, *kr.fc1_input, dummy2, false);
    std::vector<std::vector<float>> h;
    for (int64_t i = 0; i < T * k; ++i) {
      std::vector<float> row(static_cast<size_t>(I));
      for (int64_t o = 0; o < I; ++o)
        row[static_cast<size_t>(o)] =
            round_to_bf16(static_cast<float>(pre.activation[static_cast<size_t>(i * I + o)]));
      h.push_back(row);
    }
    kr.fc2_input = quantize_rows(h, sq2, p);
    const MultiprecisionLayer mp = multiprecision_layer(c, rd, *kr.fc1_input, *kr.fc2_input, !p.rsf_in_topk);
    const LayerReference ref = reference_layer(c, p, rd, &kr);
    ASSERT_TRUE(ref.admissibility.passed()) << ref.admissibility.message;
    // Exact stages: both sides round the same exact value once to double (the fast side also
    // multiplies by alpha in double: 3 roundings), so they agree within 4 * 2^-53 relative.
    const StageExpectation& g1 = *ref.stage("gemm1");
    for (size_t i = 0; i < mp.gemm1.size(); ++i) {
      EXPECT_LE(std::fabs(g1.expected[i] - mp.gemm1[i]), 4 * kDoubleUnit * std::fabs(mp.gemm1[i]))
          << "gemm1 " << i;
    }
    const StageExpectation& g2 = *ref.stage("gemm2");
    for (size_t i = 0; i < mp.gemm2.size(); ++i) {
      EXPECT_LE(std::fabs(g2.expected[i] - mp.gemm2[i]), 4 * kDoubleUnit * std::fabs(mp.gemm2[i]))
          << "gemm2 " << i;
    }
    // Transcendental stage: the double SwiGLU on the (double-rounded) GEMM1 values.
    for (int64_t i = 0; i < T * k; ++i)
      for (int64_t o = 0; o < I; ++o) {
        const double g = mp.gemm1[static_cast<size_t>(i * 2 * I + o)],
                     u = mp.gemm1[static_cast<size_t>(i * 2 * I + I + o)];
        const double got = swiglu(g, u, c.recipe.swiglu),
                     want = mp.activation[static_cast<size_t>(i * I + o)];
        const double input_effect =
            kSiluSlopeMax * kDoubleUnit * std::fabs(g) * (std::fabs(u) + std::fabs(c.recipe.swiglu.beta)) +
            std::fabs(got) * kDoubleUnit;
        EXPECT_LE(std::fabs(got - want), kOracleTranscendentalError * std::fabs(want) + input_effect)
            << "activation " << i << "," << o;
        ++checked;
      }
    // Combine: fp32-unrounded profile, so the output interval is centred on sum w y (double sums).
    const StageExpectation& out = *ref.stage("output");
    for (size_t i = 0; i < mp.output.size(); ++i) {
      double mag = 0;
      for (int64_t sl = 0; sl < k; ++sl)
        mag += std::fabs(rd.weights[static_cast<size_t>((static_cast<int64_t>(i) / H) * k + sl)] *
                         mp.gemm2[static_cast<size_t>(((static_cast<int64_t>(i) / H) * k + sl) * H +
                                                      static_cast<int64_t>(i) % H)]);
      // k products, k - 1 sums and the centre's midpoint: <= 2k + 2 double roundings of the magnitude.
      EXPECT_LE(std::fabs(out.expected[i] - mp.output[i]),
                (2.0 * static_cast<double>(k) + 4) * kDoubleUnit * mag)
          << "output " << i;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace moefuzz
