// ModelOpt's NVFP4 export (modelopt/torch/export, nvfp4_tensor.py): weight = packed E2M1 codes,
// element 2j in the low nibble of byte j; weight_scale = E4M3 block scales per 16 elements, linear;
// weight_scale_2 = amax(W)/2688 and input_scale = amax(act)/2688, both S_d (SPEC.md §1.4 table).
#include "core/modelopt_layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/bf16.h"
#include "core/errors.h"
#include "core/global_scale.h"

namespace moefuzz {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

[[noreturn]] void fail(const SafetensorsFile& f, const std::string& name, const std::string& why) {
  throw InputError(fmt::format("{}: tensor '{}': {}", f.path(), name, why));
}

const TensorInfo& expect(const SafetensorsFile& f, const std::string& name,
                         std::initializer_list<SafeDtype> dtypes, const std::vector<int64_t>& shape) {
  const TensorInfo& t = f.tensor(name);
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    std::string allowed;
    for (SafeDtype d : dtypes) allowed += (allowed.empty() ? "" : " or ") + std::string(safe_dtype_name(d));
    fail(f, name, fmt::format("dtype {} where {} is expected", t.dtype_name, allowed));
  }
  if (t.shape != shape)
    fail(f, name, fmt::format("shape {} where {} is expected", shape_text(t.shape), shape_text(shape)));
  return t;
}

// A scalar stored as [] or [1] (ModelOpt writes both, depending on the version).
const TensorInfo& expect_scalar_f32(const SafetensorsFile& f, const std::string& name) {
  const TensorInfo& t = f.tensor(name);
  if (t.dtype != SafeDtype::kF32) fail(f, name, fmt::format("dtype {} where F32 is expected", t.dtype_name));
  if (t.elements() != 1 || t.shape.size() > 1)
    fail(f, name, fmt::format("shape {} where a scalar ([] or [1]) is expected", shape_text(t.shape)));
  return t;
}

float le_f32(const uint8_t* p) {
  const uint32_t bits =
      uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
  return std::bit_cast<float>(bits);
}
uint16_t le_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

float read_scalar_f32(const SafetensorsFile& f, const std::string& name) {
  return le_f32(f.read_all(expect_scalar_f32(f, name)).data());
}

// The input scale as a case uses it: a finite positive S_d (its reciprocal is the quantization scale).
float read_input_scale(const SafetensorsFile& f, const std::string& name) {
  const float s = read_scalar_f32(f, name);
  if (!(std::isfinite(s) && s > 0))
    fail(f, name, fmt::format("input_scale {} is not a finite positive number", s));
  return s;
}

// Per-element reader of a [rows, cols] bf16 or f32 tensor's bytes (already sliced).
float element_as_float(SafeDtype d, const std::vector<uint8_t>& bytes, size_t i) {
  return d == SafeDtype::kBF16 ? bf16_to_float(le_u16(bytes.data() + 2 * i)) : le_f32(bytes.data() + 4 * i);
}

struct Projection {
  std::string base;  // "...experts.3.gate_proj."
  int64_t row_offset = 0;
};

// Checks one projection's four tensors for a [rows, cols] matrix.
void check_projection(const SafetensorsFile& f, const std::string& base, int64_t rows, int64_t cols,
                      bool input_scale_required) {
  expect(f, base + "weight", {SafeDtype::kU8}, {rows, cols / 2});
  expect(f, base + "weight_scale", {SafeDtype::kF8E4M3, SafeDtype::kU8}, {rows, cols / kNvfp4BlockSize});
  expect_scalar_f32(f, base + "weight_scale_2");
  if (input_scale_required) expect_scalar_f32(f, base + "input_scale");
}

Nvfp4Matrix load_matrix(const SafetensorsFile& f, const std::string& base, int64_t row_offset, int64_t rows,
                        int64_t cols) {
  Nvfp4Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.packed = f.read_rows(f.tensor(base + "weight"), row_offset, row_offset + rows, 0, cols / 2);
  m.scales =
      f.read_rows(f.tensor(base + "weight_scale"), row_offset, row_offset + rows, 0, cols / kNvfp4BlockSize);
  m.global_dequant = read_scalar_f32(f, base + "weight_scale_2");
  return m;
}

// The projections of one expert ("experts.3." or "shared_experts.") for the layer's w13 form.
struct ExpertNames {
  std::string gate, up, down;
  int64_t gate_row = 0, up_row = 0;
};
ExpertNames expert_names(const ModelOptLayer& l, const std::string& expert_prefix) {
  ExpertNames n;
  n.down = l.prefix + expert_prefix + "down_proj.";
  if (!l.fused_w13) {
    n.gate = l.prefix + expert_prefix + "gate_proj.";
    n.up = l.prefix + expert_prefix + "up_proj.";
  } else {
    n.gate = n.up = l.prefix + expert_prefix + "gate_up_proj.";
    (l.w13_order == W13Order::kGateUp ? n.up_row : n.gate_row) = l.inter;
  }
  return n;
}

void check_expert(const SafetensorsFile& f, const ModelOptLayer& l, const std::string& expert_prefix,
                  bool input_scales) {
  const ExpertNames n = expert_names(l, expert_prefix);
  if (l.fused_w13) {
    check_projection(f, n.gate, 2 * l.inter, l.hidden, input_scales);
  } else {
    check_projection(f, n.gate, l.inter, l.hidden, input_scales);
    check_projection(f, n.up, l.inter, l.hidden, input_scales);
  }
  check_projection(f, n.down, l.hidden, l.inter, input_scales);
}

std::string expert_prefix(int64_t e) { return fmt::format("experts.{}.", e); }

}  // namespace

std::vector<int64_t> modelopt_moe_layers(const SafetensorsFile& f) {
  std::vector<int64_t> layers;
  constexpr std::string_view kLayers = "layers.";
  constexpr std::string_view kExperts = ".mlp.experts.0.";
  for (const auto& [name, info] : f.tensors()) {
    for (size_t at = name.find(kLayers); at != std::string::npos; at = name.find(kLayers, at + 1)) {
      if (at != 0 && name[at - 1] != '.') continue;
      const char* digits = name.data() + at + kLayers.size();
      int64_t n = 0;
      const auto [end, ec] = std::from_chars(digits, name.data() + name.size(), n);
      if (ec != std::errc() || end == digits) continue;
      if (std::string_view(end, name.data() + name.size()).starts_with(kExperts)) layers.push_back(n);
    }
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

ModelOptLayer find_modelopt_layer(const SafetensorsFile& f, int64_t layer, W13Order fused_order) {
  ModelOptLayer l;
  l.layer = layer;
  l.w13_order = fused_order;
  // The prefix is whatever precedes "layers.{N}.mlp." in the name of expert 0's down projection.
  const std::string marker = fmt::format("layers.{}.mlp.experts.0.down_proj.weight", layer);
  for (const auto& [name, info] : f.tensors()) {
    if (name.size() >= marker.size() && name.ends_with(marker) &&
        (name.size() == marker.size() || name[name.size() - marker.size() - 1] == '.')) {
      l.prefix = name.substr(0, name.size() - std::string_view("experts.0.down_proj.weight").size());
      break;
    }
  }
  if (l.prefix.empty()) {
    const auto layers = modelopt_moe_layers(f);
    std::string found;
    for (int64_t n : layers) found += (found.empty() ? "" : ", ") + std::to_string(n);
    throw InputError(fmt::format(
        "{}: no MoE layer {} (no tensor '...layers.{}.mlp.experts.0.down_proj.weight'); {}", f.path(), layer,
        layer, layers.empty() ? "the file holds no expert tensors" : "MoE layers in the file: " + found));
  }
  const std::string e0 = l.prefix + "experts.0.";
  l.fused_w13 = !f.has(e0 + "gate_proj.weight") && f.has(e0 + "gate_up_proj.weight");
  const TensorInfo& down = f.tensor(e0 + "down_proj.weight");
  if (down.shape.size() != 2)
    fail(f, down.name, fmt::format("shape {} where [hidden, inter/2] is expected", shape_text(down.shape)));
  l.hidden = down.shape[0];
  l.inter = down.shape[1] * 2;
  for (const auto& [what, v] : {std::pair{"hidden", l.hidden}, std::pair{"intermediate", l.inter}})
    if (v < kNvfp4BlockSize || v % kNvfp4BlockSize != 0 || v > kMaxHiddenOrInter)
      fail(f, down.name,
           fmt::format("{} size {} is not a multiple of 16 in [16, {}]", what, v, kMaxHiddenOrInter));
  l.has_input_scales =
      f.has(l.prefix + "experts.0." + (l.fused_w13 ? "gate_up_proj" : "gate_proj") + ".input_scale");
  while (l.experts < kMaxExperts && f.has(l.prefix + expert_prefix(l.experts) + "down_proj.weight"))
    ++l.experts;
  for (int64_t e = 0; e < l.experts; ++e) check_expert(f, l, expert_prefix(e), l.has_input_scales);
  if (f.has(l.prefix + "shared_experts.down_proj.weight")) {
    check_expert(f, l, "shared_experts.", l.has_input_scales);
    l.has_shared = true;
  }
  if ((l.has_router_weight = f.has(l.prefix + "gate.weight")))
    expect(f, l.prefix + "gate.weight", {SafeDtype::kBF16, SafeDtype::kF32}, {l.experts, l.hidden});
  if ((l.has_bias = f.has(l.prefix + "gate.e_score_correction_bias")))
    expect(f, l.prefix + "gate.e_score_correction_bias", {SafeDtype::kF32, SafeDtype::kBF16}, {l.experts});
  return l;
}

std::vector<ExpertWeights> load_modelopt_experts(const SafetensorsFile& f, const ModelOptLayer& l,
                                                 const CaseRecipe& r) {
  const Shape& s = r.shape;
  const auto too_big = [&](const char* what, int64_t want, int64_t have) {
    if (want > have)
      throw InputError(fmt::format("{}: the case asks for {} {} but layer {} has {}", f.path(), want, what,
                                   l.layer, have));
  };
  too_big("experts", s.experts, l.experts);
  too_big("hidden columns", s.hidden, l.hidden);
  too_big("intermediate rows", s.inter, l.inter);
  too_big("shared experts", s.shared_experts, l.has_shared ? 1 : 0);
  std::vector<ExpertWeights> experts;
  experts.reserve(static_cast<size_t>(r.total_experts()));
  for (int64_t e = 0; e < r.total_experts(); ++e) {
    const ExpertNames n = expert_names(l, e < s.experts ? expert_prefix(e) : "shared_experts.");
    ExpertWeights w;
    w.gate = load_matrix(f, n.gate, n.gate_row, s.inter, s.hidden);
    w.up = load_matrix(f, n.up, n.up_row, s.inter, s.hidden);
    w.down = load_matrix(f, n.down, 0, s.hidden, s.inter);
    experts.push_back(std::move(w));
  }
  return experts;
}

void load_modelopt_router_and_scales(Case& c, const SafetensorsFile& f, const ModelOptLayer& l,
                                     bool logits_from_router) {
  const Shape& s = c.recipe.shape;
  if (l.has_bias && !c.bias.empty()) {
    const TensorInfo& t = f.tensor(l.prefix + "gate.e_score_correction_bias");
    const auto bytes = f.read_rows(t, 0, s.experts, 0, t.row_bytes());
    for (int64_t e = 0; e < s.experts; ++e)
      c.bias[static_cast<size_t>(e)] = element_as_float(t.dtype, bytes, e);
  }
  if (l.has_router_weight && logits_from_router) {
    const TensorInfo& t = f.tensor(l.prefix + "gate.weight");
    const int64_t dsize = safe_dtype_bytes(t.dtype);
    const auto w = f.read_rows(t, 0, s.experts, 0, s.hidden * dsize);
    for (int64_t tok = 0; tok < s.tokens; ++tok)
      for (int64_t e = 0; e < s.experts; ++e) {
        // The router GEMM is not under test: one fixed, well-rounded definition (a double sum of
        // exact products, rounded once to fp32) rather than any backend's accumulation order.
        double sum = 0;
        for (int64_t h = 0; h < s.hidden; ++h)
          sum += static_cast<double>(bf16_to_float(c.hidden[static_cast<size_t>(tok * s.hidden + h)])) *
                 static_cast<double>(element_as_float(t.dtype, w, static_cast<size_t>(e * s.hidden + h)));
        c.logits[static_cast<size_t>(tok * s.experts + e)] = static_cast<float>(sum);
      }
  }
  if (!l.has_input_scales) return;
  const auto w13_input_scale = [&](const std::string& ep) {
    const ExpertNames n = expert_names(l, ep);
    return std::max(read_input_scale(f, n.gate + "input_scale"), read_input_scale(f, n.up + "input_scale"));
  };
  const auto w2_input_scale = [&](const std::string& ep) {
    return read_input_scale(f, expert_names(l, ep).down + "input_scale");
  };
  if (c.recipe.quant.act_scales == ActScaleMode::kGlobal) {
    float a1 = 0, a2 = 0;
    for (int64_t e = 0; e < l.experts; ++e) {
      a1 = std::max(a1, w13_input_scale(expert_prefix(e)));
      a2 = std::max(a2, w2_input_scale(expert_prefix(e)));
    }
    c.a1_scale = {quant_scale_from_dequant_scale(a1)};
    c.a2_scale = {quant_scale_from_dequant_scale(a2)};
    return;
  }
  c.a1_scale.clear();
  c.a2_scale.clear();
  for (int64_t e = 0; e < c.recipe.total_experts(); ++e) {
    const std::string ep = e < s.experts ? expert_prefix(e) : "shared_experts.";
    c.a1_scale.push_back(quant_scale_from_dequant_scale(w13_input_scale(ep)));
    c.a2_scale.push_back(quant_scale_from_dequant_scale(w2_input_scale(ep)));
  }
}

}  // namespace moefuzz
