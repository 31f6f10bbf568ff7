// Materialization: recipe -> tensors. Order of the draw (each step a pure function of the recipe and
// the tensors before it): hidden, logits, bias, hash tables, experts, a1 (calibrated over hidden),
// a2 (calibrated over hidden x experts), then the recipe's edits. Edits come last so that an edit of a
// scale is what the kernel sees, and an edited hidden value does not move the calibrated scales
// (production scales are static, calibrated offline).
#include "core/case.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <exception>
#include <optional>
#include <thread>

#include "core/act_scales.h"
#include "core/captured_inputs.h"
#include "core/case_edits.h"
#include "core/errors.h"
#include "core/modelopt_layer.h"
#include "core/safetensors.h"
#include "core/value_profiles.h"

namespace moefuzz {
namespace {

// 64-bit FNV-1a, fed little-endian regardless of the host byte order.
class Fnv1a {
 public:
  void byte(uint8_t b) { h_ = (h_ ^ b) * 0x100000001B3ull; }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void bytes(const std::vector<uint8_t>& v) {
    u64(v.size());
    for (uint8_t b : v) byte(b);
  }
  void bf16s(const std::vector<uint16_t>& v) {
    u64(v.size());
    for (uint16_t x : v) {
      byte(static_cast<uint8_t>(x));
      byte(static_cast<uint8_t>(x >> 8));
    }
  }
  void floats(const std::vector<float>& v) {
    u64(v.size());
    for (float x : v) u32(std::bit_cast<uint32_t>(x));
  }
  void ints(const std::vector<int32_t>& v) {
    u64(v.size());
    for (int32_t x : v) u32(static_cast<uint32_t>(x));
  }
  void matrix(const Bf16Matrix& m) {
    u64(static_cast<uint64_t>(m.rows));
    u64(static_cast<uint64_t>(m.cols));
    bf16s(m.bits);
  }
  void matrix(const Nvfp4Matrix& m) {
    u64(static_cast<uint64_t>(m.rows));
    u64(static_cast<uint64_t>(m.cols));
    bytes(m.packed);
    bytes(m.scales);
    u32(std::bit_cast<uint32_t>(m.global_dequant));
  }
  void matrix(const Fp8BlockQuantized& m) {
    u64(static_cast<uint64_t>(m.rows));
    u64(static_cast<uint64_t>(m.cols));
    bytes(m.codes);
    floats(m.scales);
  }
  void matrix(const Mxfp4Quantized& m) {
    u64(static_cast<uint64_t>(m.rows));
    u64(static_cast<uint64_t>(m.cols));
    bytes(m.codes);
    bytes(m.scales);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xCBF29CE484222325ull;
};

// Every expert is a pure function of (recipe, expert id), so experts are drawn on several threads
// when the weights are large; the bytes do not depend on the thread count.
std::vector<ExpertWeights> draw_all_experts(const CaseRecipe& r) {
  const int64_t n = r.total_experts();
  std::vector<ExpertWeights> experts(static_cast<size_t>(n));
  const int64_t elements_per_expert = 3 * r.shape.hidden * r.shape.inter;
  constexpr int64_t kParallelThreshold = int64_t{1}
                                         << 24;  // below ~16M elements a thread costs more than it saves
  const int64_t threads =
      n * elements_per_expert < kParallelThreshold
          ? 1
          : std::min<int64_t>({n, 16, std::max<int64_t>(1, std::thread::hardware_concurrency())});
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  const auto work = [&](int64_t worker) {
    try {
      for (int64_t e = worker; e < n; e += threads)
        experts[static_cast<size_t>(e)] = draw_expert_weights(r, e);
    } catch (...) {
      errors[static_cast<size_t>(worker)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < threads; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
  return experts;
}

}  // namespace

Case materialize(const CaseRecipe& recipe, int64_t max_bytes) {
  if (const std::string problem = validate(recipe); !problem.empty())
    throw InputError("invalid recipe: " + problem);
  const int64_t bytes = estimate_case_bytes(recipe);
  if (bytes > max_bytes)
    throw InputError(fmt::format(
        "recipe needs about {} bytes, more than the limit of {} bytes (max_case_bytes)", bytes, max_bytes));
  Case c;
  c.recipe = recipe;
  c.hidden = draw_hidden(recipe);
  c.logits = draw_logits(recipe);
  c.bias = draw_bias(recipe);
  HashRoutingTables hash = draw_hash_routing(recipe);
  c.token_ids = std::move(hash.token_ids);
  c.hash_table = std::move(hash.table);
  // Tensors from files replace the drawn ones (docs/weights.md); the files are opened per case and
  // read only for the slices the shape asks for.
  bool logits_given = false;
  if (!recipe.files.inputs.empty())
    logits_given = load_captured_inputs(c, SafetensorsFile(recipe.files.inputs));
  std::optional<SafetensorsFile> weights;
  std::optional<ModelOptLayer> layer;
  if (!recipe.files.weights.empty()) {
    weights.emplace(recipe.files.weights);
    layer = find_modelopt_layer(*weights, recipe.files.weights_layer, recipe.files.weights_w13);
  }
  c.experts = weights ? load_modelopt_experts(*weights, *layer, recipe) : draw_all_experts(recipe);
  c.a1_scale = draw_a1_scale(recipe, c.hidden);
  c.a2_scale = draw_a2_scale(recipe, c.hidden, c.experts);
  if (weights)
    load_modelopt_router_and_scales(c, *weights, *layer, !recipe.files.inputs.empty() && !logits_given);
  apply_edits(c, recipe.edits);
  // From here the experts only change by copy, so their content hashes can be remembered across the
  // kernel runs and evaluations of a check (core/expert_fingerprint.h).
  c.experts.freeze();
  return c;
}

uint64_t content_hash(const Case& c) {
  Fnv1a h;
  const Shape& s = c.recipe.shape;
  for (int64_t d :
       {s.tokens, s.hidden, s.inter, s.experts, s.top_k, s.n_group, s.topk_group, s.shared_experts})
    h.u64(static_cast<uint64_t>(d));
  h.bf16s(c.hidden);
  h.floats(c.logits);
  h.floats(c.bias);
  h.ints(c.token_ids);
  h.ints(c.hash_table);
  h.u64(c.experts.size());
  const WeightFormat format = c.recipe.quant.weights;
  for (const ExpertWeights& w : c.experts) {
    // Only the recipe's format is hashed, so NVFP4 cases keep their pinned hashes.
    if (format == WeightFormat::kFp8Block) {
      h.matrix(w.fp8.gate);
      h.matrix(w.fp8.up);
      h.matrix(w.fp8.down);
    } else if (format == WeightFormat::kMxfp4) {
      h.matrix(w.mx.gate);
      h.matrix(w.mx.up);
      h.matrix(w.mx.down);
    } else if (format == WeightFormat::kBf16) {
      h.matrix(w.bf16.gate);
      h.matrix(w.bf16.up);
      h.matrix(w.bf16.down);
    } else {
      h.matrix(w.gate);
      h.matrix(w.up);
      h.matrix(w.down);
    }
    // Only biased cases hash their biases, so every other case keeps its pinned hash.
    if (c.recipe.expert_bias) {
      h.floats(w.gate_bias);
      h.floats(w.up_bias);
      h.floats(w.down_bias);
    }
  }
  h.floats(c.a1_scale);
  h.floats(c.a2_scale);
  return h.value();
}

}  // namespace moefuzz
