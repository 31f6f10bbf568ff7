// Replays tests/golden/moe_layer_golden.json (FlashInfer run_moe_reference_fp4, README
// "moe_layer_golden.json") under profile flashinfer-reference: conditioned on the golden routing and
// on the golden FC1/FC2 codes, the oracle's output, GEMM1, activation and GEMM2 must hold the golden
// values within the oracle's own derived bounds; our quantizer must reproduce every stored code; and
// the unconditioned oracle (codes not exposed) must hold them too. Fails without the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bf16.h"
#include "core/case.h"
#include "core/e2m1.h"
#include "core/fp4_packing.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "golden_files.h"
#include "oracles/layer_ref.h"
#include "oracles/quant_ref.h"
#include "support/layer_golden_cases.h"

namespace moefuzz {
namespace {

using golden::GoldenCase;
using golden::load_all;

// Our quantizer reproduces every stored code and scale byte (sign of zero not compared).
void expect_reproduces(const std::vector<float>& row, float s_q, const Profile& p, const QuantizedRows& q,
                       int64_t r, const std::string& what) {
  const QuantizedRowRef ref = quantize_row_ref(row, s_q, p.quantizer, p.zero_scale_rule);
  const int64_t cols = q.cols;
  for (int64_t i = 0; i < cols; ++i) {
    const uint8_t got = fp4_code_at(q.packed.data() + r * cols / 2, i);
    ASSERT_EQ(e2m1_canonical(ref.codes[static_cast<size_t>(i)]), e2m1_canonical(got))
        << what << " row " << r << " element " << i;
  }
  for (int64_t b = 0; b < cols / 16; ++b)
    ASSERT_EQ(ref.scales[static_cast<size_t>(b)], q.scales[static_cast<size_t>(r * cols / 16 + b)])
        << what << " row " << r << " block " << b;
}

class LayerGolden : public ::testing::Test {};

TEST_F(LayerGolden, QuantizerReproducesGoldenInputAndFc2Codes) {
  const Profile& p = profile_by_name("flashinfer-reference");
  for (const GoldenCase& g : load_all()) {
    const int64_t H = g.c.recipe.shape.hidden, k = g.c.recipe.shape.top_k;
    for (int64_t t = 0; t < g.c.recipe.shape.tokens; ++t) {
      std::vector<float> x(static_cast<size_t>(H));
      for (int64_t i = 0; i < H; ++i)
        x[static_cast<size_t>(i)] = bf16_to_float(g.c.hidden[static_cast<size_t>(t * H + i)]);
      expect_reproduces(x, g.c.a1_scale[0], p, *g.kernel.fc1_input, t * k, g.id + " fc1");
    }
    for (size_t r = 0; r < g.act_out.size(); ++r) {
      std::vector<float> h = g.act_out[r];
      for (float& v : h) v = round_to_bf16(v);
      expect_reproduces(h, g.c.a2_scale[0], p, *g.kernel.fc2_input, static_cast<int64_t>(r), g.id + " fc2");
    }
  }
}

TEST_F(LayerGolden, OracleHoldsGoldenOutputAndIntermediatesWithinItsBound) {
  const Profile& p = profile_by_name("flashinfer-reference");
  const std::vector<GoldenCase> cases = load_all();
  ASSERT_FALSE(cases.empty());
  for (const GoldenCase& g : cases) {
    for (bool conditioned : {true, false}) {
      LayerResult k = g.kernel;
      if (!conditioned) {
        k.fc1_input.reset();
        k.fc2_input.reset();
      }
      const LayerReference ref = reference_layer(g.c, p, g.routing, &k);
      ASSERT_TRUE(ref.admissibility.passed()) << g.id << ": " << ref.admissibility.message;
      const StageExpectation& out = *ref.stage("output");
      const Verdict v = compare_stage(out, k.output, &k.routing);
      EXPECT_TRUE(v.passed()) << g.id << (conditioned ? " conditioned: " : " unconditioned: ") << v.message;
      EXPECT_GT(v.compared, 0);
      for (const char* st : {"gemm1", "activation", "gemm2"}) {
        const std::vector<float>& got = st == std::string("gemm1")        ? *k.gemm1
                                        : st == std::string("activation") ? *k.activation
                                                                          : *k.gemm2;
        const Verdict vs = compare_stage(*ref.stage(st), got, &k.routing);
        EXPECT_TRUE(vs.passed()) << g.id << " " << st << ": " << vs.message;
      }
      // Tightness: the bound relative to each token's max |output| (README: the float64 layer agrees to
      // <= 1.9e-7 of it when conditioned).
      const int64_t H = out.cols;
      double worst_rel = 0;
      for (int64_t t = 0; t < out.rows; ++t) {
        double mx = 0;
        for (int64_t i = 0; i < H; ++i)
          mx = std::max(mx, std::fabs(out.expected[static_cast<size_t>(t * H + i)]));
        for (int64_t i = 0; i < H && mx > 0; ++i)
          worst_rel = std::max(worst_rel, out.bound[static_cast<size_t>(t * H + i)] / mx);
      }
      std::printf("%-44s %-13s max error/bound %.3g  max bound/token-max %.3g\n", g.id.c_str(),
                  conditioned ? "conditioned" : "unconditioned", v.max_ratio, worst_rel);
      // Conditioned, the bound is gamma_{K+5}(2^-24) sums: ~K * 2^-24 of the magnitudes (K <= 192 here).
      // Asserting 2^-10 keeps it far below one bf16 rounding (2^-8), the smallest bug class to catch.
      if (conditioned) {
        EXPECT_LT(worst_rel, 0x1p-10) << g.id << ": conditioned bound is not tight";
      }
    }
  }
}

TEST_F(LayerGolden, PerturbedOutputsAreRejected) {
  // Teeth: a x(1 + 2^-4) scaling, a sign flip and all zeros must each fail on every case.
  const Profile& p = profile_by_name("flashinfer-reference");
  for (const GoldenCase& g : load_all()) {
    const LayerReference ref = reference_layer(g.c, p, g.routing, &g.kernel);
    const StageExpectation& out = *ref.stage("output");
    bool nonzero = false;
    for (float v : g.kernel.output) nonzero |= v != 0;
    if (!nonzero) continue;
    for (int mode = 0; mode < 3; ++mode) {
      std::vector<float> bad = g.kernel.output;
      for (float& v : bad) v = mode == 0 ? v * (1 + 0x1p-4f) : mode == 1 ? -v : 0.0f;
      EXPECT_FALSE(compare_stage(out, bad, &g.routing).passed()) << g.id << " perturbation " << mode;
    }
  }
}

}  // namespace
}  // namespace moefuzz
