// cpu_run_layer and cpu_shared_experts: the stages of cpu_stages.h chained in production order.
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/cpu_stages.h"

namespace moefuzz::cpu {

std::vector<float> cpu_shared_experts(const Case& c, const CpuConfig& cfg) {
  const int64_t T = cfg.tokens, H = cfg.hidden, E = cfg.experts;
  if (cfg.shared_experts == 0 || cfg.shared_fusion == SharedFusion::kFused) return {};
  std::vector<float> sum(static_cast<size_t>(T * H), 0.0f);
  for (int64_t j = 0; j < cfg.shared_experts; ++j) {
    // Every token through shared expert E + j: a routing with one slot per token.
    RoutingDecision all;
    all.tokens = T;
    all.slots = 1;
    all.ids.assign(static_cast<size_t>(T), static_cast<int32_t>(E + j));
    all.weights.assign(static_cast<size_t>(T), 1.0f);
    if (cfg.fp8) {
      const auto g1 = cpu_fp8_gemm1(c, all, cpu_fp8_quantize_fc1(c, all, cfg), cfg);
      const auto act = cpu_activation(g1, T, cfg);
      const auto g2 = cpu_fp8_gemm2(c, all, cpu_fp8_quantize_fc2(all, act, cfg), cfg);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += g2[i];
      continue;
    }
    const auto fc1 = cpu_quantize_activations(c, all, cfg);
    const auto g1 = cpu_gemm1(c, all, fc1, cfg);
    const auto act = cpu_activation(g1, T, cfg);
    const auto fc2 = cpu_quantize_fc2_input(c, all, act, cfg);
    const auto g2 = cpu_gemm2(c, all, fc2, act, cfg);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += g2[i];
  }
  if (cfg.bf16_output)
    for (float& v : sum) v = round_to_bf16(v);
  return sum;
}

void cpu_run_layer(const Case& c, const CpuConfig& cfg, LayerResult& result, std::span<float> output) {
  const int64_t rows = cfg.tokens * cfg.slots;
  result.routing = cpu_route(c, cfg);
  if (cfg.fp8) {
    result.fc1_fp8 = cpu_fp8_quantize_fc1(c, result.routing, cfg);
    result.gemm1 = cpu_fp8_gemm1(c, result.routing, *result.fc1_fp8, cfg);
    result.activation = cpu_activation(*result.gemm1, rows, cfg);
    result.fc2_fp8 = cpu_fp8_quantize_fc2(result.routing, *result.activation, cfg);
    result.gemm2 = cpu_fp8_gemm2(c, result.routing, *result.fc2_fp8, cfg);
    result.shared_output = cpu_shared_experts(c, cfg);
    cpu_combine(*result.gemm2, result.routing, result.shared_output, cfg, output);
    return;
  }
  result.fc1_input = cpu_quantize_activations(c, result.routing, cfg);
  result.gemm1 = cpu_gemm1(c, result.routing, result.fc1_input, cfg);
  result.activation = cpu_activation(*result.gemm1, rows, cfg);
  result.fc2_input = cpu_quantize_fc2_input(c, result.routing, *result.activation, cfg);
  result.gemm2 = cpu_gemm2(c, result.routing, result.fc2_input, *result.activation, cfg);
  result.shared_output = cpu_shared_experts(c, cfg);
  cpu_combine(*result.gemm2, result.routing, result.shared_output, cfg, output);
}

}  // namespace moefuzz::cpu
