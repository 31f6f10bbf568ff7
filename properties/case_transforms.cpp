#include "properties/case_transforms.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/e4m3.h"
#include "core/errors.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

// Fisher-Yates driven by a counter-based stream (deterministic in the seed).
void shuffle(std::vector<int64_t>& v, const Stream& s, uint64_t salt) {
  for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i) {
    const int64_t j = s.uniform_int(salt * 1000003u + static_cast<uint64_t>(i), 0, i);
    std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(j)]);
  }
}

// Copy of `m` with rows/cols zero-padded to (rows, cols). New blocks get scale byte 0. Both column
// counts are multiples of 16, so each row's codes and scales are whole bytes at the row's start
// (copied as bytes: code by code, PAD's transform took ~1 s per case at M).
Nvfp4Matrix pad_matrix(const Nvfp4Matrix& m, int64_t rows, int64_t cols) {
  Nvfp4Matrix out(rows, cols);
  out.global_dequant = m.global_dequant;
  for (int64_t r = 0; r < m.rows; ++r) {
    std::copy_n(m.packed.begin() + r * (m.cols / 2), m.cols / 2, out.packed.begin() + r * (cols / 2));
    std::copy_n(m.scales.begin() + r * m.blocks_per_row(), m.blocks_per_row(),
                out.scales.begin() + r * out.blocks_per_row());
  }
  return out;
}

// bf16 weights: zero rows and columns appended.
Bf16Matrix pad_matrix(const Bf16Matrix& m, int64_t rows, int64_t cols) {
  Bf16Matrix out(rows, cols);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) out.at(r, c) = m.at(r, c);
  return out;
}

// MXFP4 weights: zero codes appended, and scale code 0x7F (2^0) for the new blocks, so every padded
// value is 0 under every E8M0 decode (a zero code times a finite scale).
Mxfp4Quantized pad_matrix(const Mxfp4Quantized& m, int64_t rows, int64_t cols) {
  Mxfp4Quantized out;
  out.rows = rows;
  out.cols = cols;
  out.scale_cols = (cols + kMxfp4BlockSize - 1) / kMxfp4BlockSize;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.scales.assign(static_cast<size_t>(rows * out.scale_cols), kE8m0OneCode);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) out.code(r, c) = m.code(r, c);
    for (int64_t b = 0; b < m.scale_cols; ++b) out.scale(r, b) = m.scale(r, b);
  }
  return out;
}

// FP8 block weights: zero codes appended (whole 128x128 blocks: H and I are multiples of 128 before
// and after), scale 1 for the new blocks, so every padded value is 0.
Fp8BlockQuantized pad_matrix(const Fp8BlockQuantized& m, int64_t rows, int64_t cols) {
  Fp8BlockQuantized out;
  out.rows = rows;
  out.cols = cols;
  out.scale_rows = (rows + kFp8WeightBlock - 1) / kFp8WeightBlock;
  out.scale_cols = (cols + kFp8WeightBlock - 1) / kFp8WeightBlock;
  out.codes.assign(static_cast<size_t>(rows * cols), 0);
  out.scales.assign(static_cast<size_t>(out.scale_rows * out.scale_cols), 1.0f);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) out.code(r, c) = m.code(r, c);
  for (int64_t br = 0; br < m.scale_rows; ++br)
    for (int64_t bc = 0; bc < m.scale_cols; ++bc) out.scale(br, bc) = m.scale(br, bc);
  return out;
}

}  // namespace

Case with_routed_scale(const Case& c, double s) {
  Case out = c;
  out.recipe.routing.routed_scaling_factor = s;
  return out;
}

Case without_shared_experts(const Case& c) {
  Case out = c;
  const int64_t e = c.recipe.shape.experts;
  out.experts.resize(static_cast<size_t>(e));
  if (out.a1_scale.size() > 1) out.a1_scale.resize(static_cast<size_t>(e));
  if (out.a2_scale.size() > 1) out.a2_scale.resize(static_cast<size_t>(e));
  out.recipe.shape.shared_experts = 0;
  out.recipe.routing.shared_fusion = SharedFusion::kSeparate;
  return out;
}

std::vector<int64_t> group_preserving_permutation(const Case& c, uint64_t seed) {
  const Shape& s = c.recipe.shape;
  const int64_t groups = c.recipe.routing.mode == RoutingMode::kSigmoidGrouped ? s.n_group : 1;
  const int64_t per_group = s.experts / groups;
  const Stream stream(seed, "permutation");
  std::vector<int64_t> group_order(static_cast<size_t>(groups));
  std::iota(group_order.begin(), group_order.end(), 0);
  shuffle(group_order, stream, 1);
  std::vector<int64_t> perm(static_cast<size_t>(s.experts));
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<int64_t> within(static_cast<size_t>(per_group));
    std::iota(within.begin(), within.end(), 0);
    shuffle(within, stream, 2 + static_cast<uint64_t>(g));
    for (int64_t j = 0; j < per_group; ++j)
      perm[static_cast<size_t>(g * per_group + j)] =
          group_order[static_cast<size_t>(g)] * per_group + within[static_cast<size_t>(j)];
  }
  return perm;
}

Case permute_experts(const Case& c, const std::vector<int64_t>& perm) {
  const Shape& s = c.recipe.shape;
  if (static_cast<int64_t>(perm.size()) != s.experts) throw std::invalid_argument("permute_experts: size");
  Case out = c;
  for (int64_t e = 0; e < s.experts; ++e) {
    const auto ne = static_cast<size_t>(perm[static_cast<size_t>(e)]);
    out.experts.set_shared(ne, c.experts, static_cast<size_t>(e));  // the same weights, not a copy
    if (!c.bias.empty()) out.bias[ne] = c.bias[static_cast<size_t>(e)];
    if (c.a1_scale.size() > 1) out.a1_scale[ne] = c.a1_scale[static_cast<size_t>(e)];
    if (c.a2_scale.size() > 1) out.a2_scale[ne] = c.a2_scale[static_cast<size_t>(e)];
    for (int64_t t = 0; t < s.tokens; ++t)
      out.logits[static_cast<size_t>(t * s.experts) + ne] = c.logits[static_cast<size_t>(t * s.experts + e)];
  }
  for (auto& id : out.hash_table)
    if (id >= 0 && id < s.experts) id = static_cast<int32_t>(perm[static_cast<size_t>(id)]);
  return out;
}

Case select_tokens(const Case& c, const std::vector<int64_t>& rows) {
  const Shape& s = c.recipe.shape;
  Case out = c;
  out.recipe.shape.tokens = static_cast<int64_t>(rows.size());
  // The hash table keeps its rows: pin the vocabulary, which otherwise defaults to max(16, 4T) and
  // would no longer match hash_table's [vocab, k] size once T changes (Case inconsistent with recipe).
  if (c.recipe.routing.mode == RoutingMode::kHash) out.recipe.routing.vocab = c.recipe.hash_vocab();
  out.hidden.assign(rows.size() * static_cast<size_t>(s.hidden), 0);
  out.logits.assign(rows.size() * static_cast<size_t>(s.experts), 0.0f);
  if (!c.token_ids.empty()) out.token_ids.assign(rows.size(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t t = rows[i];
    std::copy_n(c.hidden.begin() + t * s.hidden, s.hidden,
                out.hidden.begin() + static_cast<int64_t>(i) * s.hidden);
    std::copy_n(c.logits.begin() + t * s.experts, s.experts,
                out.logits.begin() + static_cast<int64_t>(i) * s.experts);
    if (!c.token_ids.empty()) out.token_ids[i] = c.token_ids[static_cast<size_t>(t)];
  }
  return out;
}

Case pad_dims(const Case& c, int64_t new_hidden, int64_t new_inter) {
  const Shape& s = c.recipe.shape;
  if (new_hidden < s.hidden || new_inter < s.inter || new_hidden % 16 || new_inter % 16)
    throw std::invalid_argument("pad_dims: sizes");
  Case out = c;
  out.recipe.shape.hidden = new_hidden;
  out.recipe.shape.inter = new_inter;
  out.hidden.assign(static_cast<size_t>(s.tokens * new_hidden), 0);
  for (int64_t t = 0; t < s.tokens; ++t)
    std::copy_n(c.hidden.begin() + t * s.hidden, s.hidden, out.hidden.begin() + t * new_hidden);
  const bool bf16 = c.recipe.quant.weights == WeightFormat::kBf16;
  const bool mx = c.recipe.quant.weights == WeightFormat::kMxfp4;
  const bool fp8 = c.recipe.quant.weights == WeightFormat::kFp8Block;
  if (fp8 && (new_hidden % kFp8WeightBlock != 0 || new_inter % kFp8WeightBlock != 0))
    throw std::invalid_argument("pad_dims: FP8 block weights need multiples of 128");
  // Each expert is built padded and put in place: assigning through out.experts[e] would first copy
  // the expert it replaces (core/shared_vector.h).
  const bool nvfp4 = !bf16 && !mx && !fp8;
  for (size_t e = 0; e < c.experts.size(); ++e) {
    const ExpertWeights& w = c.experts[e];
    ExpertWeights p;
    p.gate_bias = w.gate_bias;
    p.up_bias = w.up_bias;
    p.down_bias = w.down_bias;
    if (c.recipe.expert_bias) {  // zero biases on the padded rows: their outputs stay 0
      p.gate_bias.resize(static_cast<size_t>(new_inter), 0.0f);
      p.up_bias.resize(static_cast<size_t>(new_inter), 0.0f);
      p.down_bias.resize(static_cast<size_t>(new_hidden), 0.0f);
    }
    // The case's own format padded; the others' matrices (empty) as they are.
    p.fp8 = fp8 ? Fp8ExpertWeights{pad_matrix(w.fp8.gate, new_inter, new_hidden),
                                   pad_matrix(w.fp8.up, new_inter, new_hidden),
                                   pad_matrix(w.fp8.down, new_hidden, new_inter)}
                : w.fp8;
    p.mx = mx ? Mxfp4ExpertWeights{pad_matrix(w.mx.gate, new_inter, new_hidden),
                                   pad_matrix(w.mx.up, new_inter, new_hidden),
                                   pad_matrix(w.mx.down, new_hidden, new_inter)}
              : w.mx;
    p.bf16 = bf16 ? Bf16ExpertWeights{pad_matrix(w.bf16.gate, new_inter, new_hidden),
                                      pad_matrix(w.bf16.up, new_inter, new_hidden),
                                      pad_matrix(w.bf16.down, new_hidden, new_inter)}
                  : w.bf16;
    p.gate = nvfp4 ? pad_matrix(w.gate, new_inter, new_hidden) : w.gate;
    p.up = nvfp4 ? pad_matrix(w.up, new_inter, new_hidden) : w.up;
    p.down = nvfp4 ? pad_matrix(w.down, new_hidden, new_inter) : w.down;
    out.experts.set(e, std::move(p));
  }
  out.experts.freeze();  // its runs and evaluations hash each padded expert once (core/shared_vector.h)
  return out;
}

Case rescale_weight_global(const Case& c, int64_t expert, const std::string& which, int k, bool* ok) {
  Case out = c;
  *ok = false;
  auto& ew = out.experts.at(static_cast<size_t>(expert));
  Nvfp4Matrix* m = which == "gate" ? &ew.gate : which == "up" ? &ew.up : which == "down" ? &ew.down : nullptr;
  if (m == nullptr) throw std::invalid_argument("rescale_weight_global: which");
  const double factor = std::ldexp(1.0, k);
  for (auto& b : m->scales) {
    const float v = e4m3_to_float(b);
    if (v == 0.0f) continue;
    const double scaled = static_cast<double>(v) * factor;
    // Stay in the normal range so the new byte is exactly v * 2^k.
    if (!(scaled >= 0x1p-6 && scaled <= kE4m3Max)) return c;
    const uint8_t nb = e4m3_from_float(static_cast<float>(scaled));
    if (static_cast<double>(e4m3_to_float(nb)) != scaled) return c;
    b = nb;
  }
  const double sd = static_cast<double>(m->global_dequant) / factor;
  if (!(std::fabs(sd) >= 0x1p-126 && std::fabs(sd) < 0x1p127)) return c;
  m->global_dequant = static_cast<float>(sd);
  *ok = true;
  out.experts.freeze();  // `ew` is not used past here
  return out;
}

Case shift_logits(const Case& c, float shift, bool* ok) {
  Case out = c;
  *ok = false;
  for (auto& x : out.logits) {
    const float y = x + shift;
    if (static_cast<double>(y) != static_cast<double>(x) + static_cast<double>(shift)) return c;
    x = y;
  }
  *ok = true;
  return out;
}

}  // namespace moefuzz
