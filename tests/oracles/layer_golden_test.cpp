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

namespace moefuzz {
namespace {

using nlohmann::json;

double num(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return j.get<double>();
}
float f32_bits(const json& j) {
  const uint32_t bits = static_cast<uint32_t>(std::stoul(j.get<std::string>(), nullptr, 16));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
std::vector<uint8_t> hex_bytes(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = static_cast<uint8_t>(std::stoul(h.substr(2 * j, 2), nullptr, 16));
  return out;  // first hex digit = high nibble = element 2j+1: exactly our low-nibble-first packing
}
// Rows [row0, row0 + rows) of a hex matrix [N][K/2] / [N][K/16] as an Nvfp4Matrix.
Nvfp4Matrix matrix_rows(const json& packed, const json& scales, int64_t row0, int64_t rows, int64_t k,
                        float s_d) {
  Nvfp4Matrix m(rows, k);
  for (int64_t r = 0; r < rows; ++r) {
    const auto p = hex_bytes(packed[static_cast<size_t>(row0 + r)].get<std::string>());
    const auto s = hex_bytes(scales[static_cast<size_t>(row0 + r)].get<std::string>());
    std::copy(p.begin(), p.end(), m.packed.begin() + r * k / 2);
    std::copy(s.begin(), s.end(), m.scales.begin() + r * k / 16);
  }
  m.global_dequant = s_d;
  return m;
}
QuantizedRows quantized_rows(const std::vector<std::string>& packed, const std::vector<std::string>& scales,
                             int64_t cols) {
  QuantizedRows q;
  q.rows = static_cast<int64_t>(packed.size());
  q.cols = cols;
  for (size_t r = 0; r < packed.size(); ++r) {
    const auto p = hex_bytes(packed[r]), s = hex_bytes(scales[r]);
    q.packed.insert(q.packed.end(), p.begin(), p.end());
    q.scales.insert(q.scales.end(), s.begin(), s.end());
  }
  return q;
}

struct GoldenCase {
  std::string id;
  Case c;
  RoutingDecision routing;
  LayerResult kernel;  // the golden run, seen as a kernel exposing its codes and intermediates
  std::vector<std::vector<float>> act_out;  // [T*k][I], fp32 before the bf16 rounding point
};

GoldenCase load_case(const json& j) {
  GoldenCase g;
  g.id = j["id"].get<std::string>();
  const json& sh = j["shape"];
  const int64_t T = sh["T"], H = sh["H"], I = sh["I"], E = sh["E"], k = sh["top_k"];
  CaseRecipe& r = g.c.recipe;
  r.profile = "flashinfer-reference";
  r.shape = {.tokens = T, .hidden = H, .inter = I, .experts = E, .top_k = k};
  const json& rt = j["routing"];
  if (!rt["routed_scaling_factor"].is_null())
    r.routing.routed_scaling_factor = num(rt["routed_scaling_factor"]);
  for (const auto& row : j["inputs"]["hidden_states"])
    for (const auto& v : row) g.c.hidden.push_back(bf16_from_float(static_cast<float>(num(v))));
  const json& w13 = j["inputs"]["w13"];
  const json& w2 = j["inputs"]["w2"];
  for (int64_t e = 0; e < E; ++e) {
    ExpertWeights ew;
    const float s13 = f32_bits(w13["global_scale_dequant_f32_bits"][static_cast<size_t>(e)]);
    const float s2 = f32_bits(w2["global_scale_dequant_f32_bits"][static_cast<size_t>(e)]);
    // FlashInfer order: rows [0, I) up, rows [I, 2I) gate; one global scale for both.
    ew.up = matrix_rows(w13["packed_hex"][static_cast<size_t>(e)],
                        w13["scale_e4m3_hex"][static_cast<size_t>(e)], 0, I, H, s13);
    ew.gate = matrix_rows(w13["packed_hex"][static_cast<size_t>(e)],
                          w13["scale_e4m3_hex"][static_cast<size_t>(e)], I, I, H, s13);
    ew.down = matrix_rows(w2["packed_hex"][static_cast<size_t>(e)],
                          w2["scale_e4m3_hex"][static_cast<size_t>(e)], 0, H, I, s2);
    g.c.experts.push_back(std::move(ew));
  }
  g.c.a1_scale = {f32_bits(j["inputs"]["hidden_states_global_scale_q_f32_bits"])};
  g.c.a2_scale = {f32_bits(j["intermediates"]["act_global_scale_q_f32_bits"])};

  const json& rr = j["routing_result"];
  g.routing.tokens = T;
  g.routing.slots = k;
  for (const auto& row : rr["topk_ids"])
    for (const auto& v : row) g.routing.ids.push_back(v.get<int32_t>());
  for (const auto& row : rr["topk_weights"])
    for (const auto& v : row) g.routing.weights.push_back(static_cast<float>(num(v)));
  g.kernel.routing = g.routing;

  // FC1 codes: one row per token, repeated for each of the token's slots (t * k + slot order).
  std::vector<std::string> p1, s1;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < k; ++s) {
      p1.push_back(j["hidden_states_quantized"]["packed_hex"][static_cast<size_t>(t)]);
      s1.push_back(j["hidden_states_quantized"]["scale_e4m3_hex"][static_cast<size_t>(t)]);
    }
  g.kernel.fc1_input = quantized_rows(p1, s1, H);
  const json& im = j["intermediates"];
  g.kernel.fc2_input = quantized_rows(im["act_quant_packed_hex"].get<std::vector<std::string>>(),
                                      im["act_quant_scale_e4m3_hex"].get<std::vector<std::string>>(), I);
  std::vector<float> gemm1, act, gemm2;
  for (const auto& row : im["gemm1_out"]) {  // [up | gate] -> semantic [gate | up]
    for (int64_t i = 0; i < I; ++i) gemm1.push_back(static_cast<float>(num(row[static_cast<size_t>(I + i)])));
    for (int64_t i = 0; i < I; ++i) gemm1.push_back(static_cast<float>(num(row[static_cast<size_t>(i)])));
  }
  for (const auto& row : im["act_out"]) {
    std::vector<float> a;
    for (const auto& v : row) {
      a.push_back(static_cast<float>(num(v)));
      act.push_back(round_to_bf16(a.back()));  // the profile's rounding point before FC2 quantization
    }
    g.act_out.push_back(std::move(a));
  }
  for (const auto& row : im["gemm2_out"])
    for (const auto& v : row) gemm2.push_back(static_cast<float>(num(v)));
  g.kernel.gemm1 = gemm1;
  g.kernel.activation = act;
  g.kernel.gemm2 = gemm2;
  for (const auto& row : j["output"]["values"])
    for (const auto& v : row) g.kernel.output.push_back(static_cast<float>(num(v)));
  return g;
}

std::vector<GoldenCase> load_all() {
  const json doc = load_golden("moe_layer_golden.json");
  expect_at_least_cases(doc, kMinLayerGoldenCases, "moe_layer_golden.json");
  std::vector<GoldenCase> out;
  for (const auto& j : doc["cases"]) out.push_back(load_case(j));
  return out;
}

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
