#pragma once
// Test helper: writes safetensors files the way a ModelOpt NVFP4 export and a capture script
// would, from a materialized Case, so tests own their checkpoints (no downloads).
//
// Example:
//   auto tensors = modelopt_layer_tensors(c, {.layer = 3});
//   write_safetensors(dir / "w.safetensors", tensors);
//   write_safetensors(dir / "in.safetensors", captured_input_tensors(c));
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/global_scale.h"

struct TensorBlob {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
using TensorMap = std::map<std::string, TensorBlob>;

inline void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // the reference writer pads the header to 8 bytes
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << text;
  for (const auto& [name, t] : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out;
  for (float x : v)
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(std::bit_cast<uint32_t>(x) >> (8 * i)));
  return out;
}
inline std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out;
  for (uint16_t x : v) {
    out.push_back(static_cast<uint8_t>(x));
    out.push_back(static_cast<uint8_t>(x >> 8));
  }
  return out;
}
inline std::vector<uint8_t> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> out;
  for (int32_t x : v)
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(static_cast<uint32_t>(x) >> (8 * i)));
  return out;
}

struct CheckpointOptions {
  int layer = 0;
  std::string prefix = "model.layers.";  // + "{layer}.mlp."
  bool fused_w13 = false;
  moefuzz::W13Order w13_order = moefuzz::W13Order::kGateUp;
  bool input_scales = true;         // false: a W4A16 export (no input_scale)
  bool router = false;              // gate.weight ([E, H] bf16, all 1/64) and the correction bias
  bool scalar_shape_empty = false;  // scalars as shape [] instead of [1]
};

// The routed experts (and shared expert 0 when the case has one) under ModelOpt names. input_scale
// = fl(1/S_q), the dequantization scale a checkpoint stores (per expert for per-expert cases).
inline TensorMap modelopt_layer_tensors(const moefuzz::Case& c, const CheckpointOptions& o = {}) {
  TensorMap m;
  const std::string p = o.prefix + std::to_string(o.layer) + ".mlp.";
  const std::vector<int64_t> scalar = o.scalar_shape_empty ? std::vector<int64_t>{} : std::vector<int64_t>{1};
  const auto put_matrix = [&](const std::string& base, const std::vector<const moefuzz::Nvfp4Matrix*>& parts,
                              float input_scale) {
    std::vector<uint8_t> packed, scales;
    int64_t rows = 0;
    for (const auto* w : parts) {
      packed.insert(packed.end(), w->packed.begin(), w->packed.end());
      scales.insert(scales.end(), w->scales.begin(), w->scales.end());
      rows += w->rows;
    }
    const int64_t cols = parts[0]->cols;
    m[base + "weight"] = {"U8", {rows, cols / 2}, packed};
    m[base + "weight_scale"] = {"F8_E4M3", {rows, cols / 16}, scales};
    m[base + "weight_scale_2"] = {"F32", scalar, f32_bytes({parts[0]->global_dequant})};
    if (o.input_scales) m[base + "input_scale"] = {"F32", scalar, f32_bytes({input_scale})};
  };
  const int64_t E = c.recipe.shape.experts;
  for (int64_t e = 0; e < static_cast<int64_t>(c.experts.size()); ++e) {
    const std::string base = e < E ? p + "experts." + std::to_string(e) + "." : p + "shared_experts.";
    const auto& w = c.experts[static_cast<size_t>(e)];
    const float in1 = moefuzz::dequant_scale_from_quant_scale(c.a1_scale_for(e));
    const float in2 = moefuzz::dequant_scale_from_quant_scale(c.a2_scale_for(e));
    if (o.fused_w13) {
      put_matrix(base + "gate_up_proj.",
                 o.w13_order == moefuzz::W13Order::kGateUp ? std::vector{&w.gate, &w.up}
                                                           : std::vector{&w.up, &w.gate},
                 in1);
    } else {
      put_matrix(base + "gate_proj.", {&w.gate}, in1);
      put_matrix(base + "up_proj.", {&w.up}, in1);
    }
    put_matrix(base + "down_proj.", {&w.down}, in2);
  }
  if (o.router) {
    const int64_t H = c.recipe.shape.hidden;
    m[p + "gate.weight"] = {
        "BF16", {E, H}, u16_bytes(std::vector<uint16_t>(static_cast<size_t>(E * H), 0x3C80))};
    std::vector<float> bias = c.bias;
    if (bias.empty()) bias.assign(static_cast<size_t>(E), 0.25f);
    m[p + "gate.e_score_correction_bias"] = {"F32", {E}, f32_bytes(bias)};
  }
  return m;
}

// hidden_states [T, H] bf16, router_logits [T, E] f32, token_ids [T] i32 (when the case has them).
inline TensorMap captured_input_tensors(const moefuzz::Case& c, bool logits = true) {
  const auto& s = c.recipe.shape;
  TensorMap m;
  m["hidden_states"] = {"BF16", {s.tokens, s.hidden}, u16_bytes(c.hidden)};
  if (logits) m["router_logits"] = {"F32", {s.tokens, s.experts}, f32_bytes(c.logits)};
  if (!c.token_ids.empty()) m["token_ids"] = {"I32", {s.tokens}, i32_bytes(c.token_ids)};
  return m;
}
