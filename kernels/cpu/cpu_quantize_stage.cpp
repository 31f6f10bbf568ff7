// The two activation-quantization stages (SPEC.md §3.2 input, §3.4 FC2 input): one NVFP4 row per
// expanded row, quantized with that row's expert's global scale.
#include <algorithm>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"
#include "kernels/cpu/cpu_quantizer.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/deviation_hooks.h"
#include "kernels/cpu/parallel.h"

namespace moefuzz::cpu {
namespace {

QuantizerFlags flags_of(const CpuConfig& cfg) {
  QuantizerFlags f;
  f.variant = cfg.quantizer;
  f.zero_rule = cfg.zero_rule;
  f.e4m3_truncate = cfg.dev.e4m3_truncate;
  f.e4m3_no_saturation = cfg.dev.e4m3_no_saturation;
  f.e2m1_ties_away = cfg.dev.e2m1_ties_away;
  f.nibble_order_swapped = cfg.dev.nibble_order_swapped;
  return f;
}

// row_source(r) -> pointer to K bf16-valued floats for expanded row r.
template <class RowSource>
QuantizedRows quantize_rows(const RoutingDecision& route, int64_t K,
                            const std::vector<float>& scale_of_expert, const CpuConfig& cfg,
                            RowSource&& row_source) {
  QuantizedRows q;
  q.rows = route.tokens * route.slots;
  q.cols = K;
  q.packed.assign(static_cast<size_t>(q.rows * K / 2), 0);
  q.scales.assign(static_cast<size_t>(q.rows * K / 16), 0);
  const QuantizerFlags f = flags_of(cfg);
  parallel_for(q.rows, cfg.threads, [&](int64_t r) {
    const int32_t e = route.ids[r];
    if (e < 0 || e >= static_cast<int64_t>(scale_of_expert.size())) return;  // never routed there
    quantize_nvfp4_row(row_source(r), K, scale_of_expert[e], f, q.packed.data() + r * K / 2,
                       q.scales.data() + r * K / 16);
  });
  return q;
}

std::vector<float> scales_per_expert(const Case& c, const std::vector<float>& v, const char* what) {
  const int64_t n = c.recipe.total_experts();
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != n)
    throw InputError(std::string(what) + " must have 1 or E + shared entries");
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) out[e] = v.size() == 1 ? v[0] : v[e];
  return out;
}

}  // namespace

std::optional<QuantizedRows> cpu_quantize_activations(const Case& c, const RoutingDecision& route,
                                                      const CpuConfig& cfg) {
  if (!cfg.w4a4) return std::nullopt;
  const int64_t H = cfg.hidden;
  if (static_cast<int64_t>(c.hidden.size()) != cfg.tokens * H)
    throw InputError("hidden size does not match [T, H]");
  std::vector<float> x(c.hidden.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = bf16_to_float(c.hidden[i]);
  std::vector<float> s_q = scales_per_expert(c, c.a1_scale, "a1_scale");
  if (cfg.dev.dynamic_act_scale)  // BATCH mutant: the batch's amax decides every token's scale
    if (const float d = dynamic_batch_act_scale(c.hidden); d > 0) std::fill(s_q.begin(), s_q.end(), d);
  QuantizedRows q =
      quantize_rows(route, H, s_q, cfg, [&](int64_t r) { return x.data() + (r / route.slots) * H; });
  if (cfg.dev.writes_input) {
    // CANARY mutant: an "in-place" prologue that stores each token's first element back into the
    // caller's input tensor, negated (the kernel was handed a const input).
    auto& hidden = const_cast<std::vector<uint16_t>&>(c.hidden);
    for (int64_t t = 0; t < cfg.tokens; ++t) hidden[t * H] = bf16_from_float(-x[t * H] + 1.0f);
  }
  return q;
}

std::optional<QuantizedRows> cpu_quantize_fc2_input(const Case& c, const RoutingDecision& route,
                                                    std::span<const float> activation, const CpuConfig& cfg) {
  if (!cfg.w4a4) return std::nullopt;
  const int64_t I = cfg.inter;
  if (static_cast<int64_t>(activation.size()) != route.tokens * route.slots * I)
    throw InputError("activation size does not match [rows, I]");
  return quantize_rows(route, I, scales_per_expert(c, c.a2_scale, "a2_scale"), cfg,
                       [&](int64_t r) { return activation.data() + r * I; });
}

}  // namespace moefuzz::cpu
