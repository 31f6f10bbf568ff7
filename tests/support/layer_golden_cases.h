#pragma once
// Test helper: tests/golden/moe_layer_golden.json (FlashInfer run_moe_reference_fp4, tests/golden/
// README.md) loaded as moefuzz cases: the Case, the golden routing, and the golden run seen as a
// kernel exposing its codes and intermediates. Shared by the golden replay
// (tests/oracles/layer_golden_test.cpp) and the GPU oracle's CPU-vs-GPU comparison
// (tests/gpu/oracle_dots_test.cpp). A missing file fails the test (golden_files.h).
//
// Example:
//   for (const moefuzz::golden::GoldenCase& g : moefuzz::golden::load_all())
//     moefuzz::reference_layer(g.c, moefuzz::profile_by_name("flashinfer-reference"), g.routing, &g.kernel);
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/layer_io.h"
#include "golden_files.h"

namespace moefuzz::golden {

using nlohmann::json;

inline double num(const json& j) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return j.get<double>();
}
inline float f32_bits(const json& j) {
  const uint32_t bits = static_cast<uint32_t>(std::stoul(j.get<std::string>(), nullptr, 16));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline std::vector<uint8_t> hex_bytes(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t j = 0; j < out.size(); ++j)
    out[j] = static_cast<uint8_t>(std::stoul(h.substr(2 * j, 2), nullptr, 16));
  return out;  // first hex digit = high nibble = element 2j+1: exactly our low-nibble-first packing
}
// Rows [row0, row0 + rows) of a hex matrix [N][K/2] / [N][K/16] as an Nvfp4Matrix.
inline Nvfp4Matrix matrix_rows(const json& packed, const json& scales, int64_t row0, int64_t rows, int64_t k,
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
inline QuantizedRows quantized_rows(const std::vector<std::string>& packed,
                                    const std::vector<std::string>& scales, int64_t cols) {
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

inline GoldenCase load_case(const json& j) {
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

inline std::vector<GoldenCase> load_all() {
  const json doc = load_golden("moe_layer_golden.json");
  expect_at_least_cases(doc, kMinLayerGoldenCases, "moe_layer_golden.json");
  std::vector<GoldenCase> out;
  for (const auto& j : doc["cases"]) out.push_back(load_case(j));
  return out;
}

}  // namespace moefuzz::golden
