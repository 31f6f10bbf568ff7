#include "kernels/composed_pipeline.h"

#include <cstring>

#include "core/bf16.h"
#include "core/errors.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/isolated_run.h"

namespace moefuzz {
namespace {

float poison_of(const RunOptions& opts) {
  float f;
  std::memcpy(&f, &opts.poison_bits, sizeof f);
  return f;
}

// An id outside [0, E + shared) would make the framework's own downstream stages index out of
// bounds; it is reported as the kernel's bad result before anything reads it.
void require_valid_ids(const RoutingDecision& route, int64_t total_experts) {
  for (size_t i = 0; i < route.ids.size(); ++i) {
    if (route.ids[i] < 0 || route.ids[i] >= total_experts) {
      throw KernelFault(FaultKind::kBadResult,
                        "bad-result: route wrote topk_ids[token " +
                            std::to_string(static_cast<int64_t>(i) / route.slots) + ", slot " +
                            std::to_string(static_cast<int64_t>(i) % route.slots) +
                            "] = " + std::to_string(route.ids[i]) + ", not an expert id in [0, " +
                            std::to_string(total_experts) + ")");
    }
  }
}

// Rows of the layer input expanded per (token, slot), as fp32 (bf16-valued) or bf16 bits.
std::vector<float> expanded_hidden_f32(const Case& c, int64_t slots) {
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
  std::vector<float> v(static_cast<size_t>(T * slots * H));
  for (int64_t row = 0; row < T * slots; ++row)
    for (int64_t h = 0; h < H; ++h) v[row * H + h] = bf16_to_float(c.hidden[(row / slots) * H + h]);
  return v;
}
std::vector<uint16_t> expanded_hidden_bf16(const Case& c, int64_t slots) {
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
  std::vector<uint16_t> v(static_cast<size_t>(T * slots * H));
  for (int64_t row = 0; row < T * slots; ++row)
    std::memcpy(&v[row * H], &c.hidden[(row / slots) * H], H * sizeof(uint16_t));
  return v;
}
std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> v(x.size());
  for (size_t i = 0; i < x.size(); ++i) v[i] = bf16_from_float(x[i]);
  return v;
}

// The outside quantizer on rows [R, K]; the scales start as E4M3 NaN so an unwritten scale shows.
std::string external_quantize(ExternalStages& stages, const std::vector<float>& input, int64_t K,
                              const std::vector<float>& row_scale, QuantizedRows& q) {
  const int64_t R = static_cast<int64_t>(row_scale.size());
  q.rows = R;
  q.cols = K;
  q.packed.assign(static_cast<size_t>(R * K / 2), 0);
  q.scales.assign(static_cast<size_t>(R * K / kNvfp4BlockSize), 0x7F);
  return stages.quantize(input, K, row_scale, q);
}

// The combine of res.gemm2 (outside or CPU), then the separate shared experts' add.
std::string finish_combine(ExternalStages& stages, const cpu::CpuConfig& cfg, LayerResult& res,
                           std::span<float> output) {
  if (stages.implements(Stage::kCombine)) {
    if (std::string err = stages.combine(*res.gemm2, res.routing, output); !err.empty()) return err;
    // The separate shared-expert add belongs to the model, not the combine kernel: the same bf16
    // add the CPU combine performs (cpu_stages.h, cpu_combine).
    if (!res.shared_output.empty()) {
      for (size_t i = 0; i < output.size() && i < res.shared_output.size(); ++i) {
        const float sum = output[i] + res.shared_output[i];
        output[i] = cfg.bf16_output ? round_to_bf16(sum) : sum;
      }
    }
  } else {
    cpu::cpu_combine(*res.gemm2, res.routing, res.shared_output, cfg, output);
  }
  return "";
}

// FP8 block W8A8 (weight_format fp8_block): the CPU quantizes each GEMM input per token group and runs
// the FP8 GEMMs; an outside route, activation or combine stage takes its usual place. A quantize stage
// is an NVFP4 quantizer, unused here as under W4A16; the GEMM stages' ABI carries no FP8 operands, so a
// kernel with them declines FP8 cases in supports() (this is the backstop: moefuzz's limit, exit 2).
std::string run_composed_fp8(const Case& c, ExternalStages& stages, const cpu::CpuConfig& cfg, float poison,
                             LayerResult& res, std::span<float> output) {
  if (stages.implements(Stage::kGemm1) || stages.implements(Stage::kGemm2))
    throw InputError("an outside GEMM stage cannot take FP8 block W8A8 operands (weight_format fp8_block)");
  const int64_t rows = res.routing.tokens * res.routing.slots, I = c.recipe.shape.inter;
  std::string err;
  res.fc1_fp8 = cpu::cpu_fp8_quantize_fc1(c, res.routing, cfg);
  res.gemm1 = cpu::cpu_fp8_gemm1(c, res.routing, *res.fc1_fp8, cfg);
  std::vector<float> act;
  if (stages.implements(Stage::kActivation)) {
    act.assign(static_cast<size_t>(rows * I), poison);
    if (!(err = stages.activation(*res.gemm1, rows, act)).empty()) return err;
  } else {
    act = cpu::cpu_activation(*res.gemm1, rows, cfg);
  }
  res.activation = act;
  res.fc2_fp8 = cpu::cpu_fp8_quantize_fc2(res.routing, act, cfg);
  res.gemm2 = cpu::cpu_fp8_gemm2(c, res.routing, *res.fc2_fp8, cfg);
  res.shared_output = cpu::cpu_shared_experts(c, cfg);
  return finish_combine(stages, cfg, res, output);
}

}  // namespace

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kRoute:
      return "route";
    case Stage::kQuantize:
      return "quantize";
    case Stage::kGemm1:
      return "gemm1";
    case Stage::kActivation:
      return "activation";
    case Stage::kGemm2:
      return "gemm2";
    case Stage::kCombine:
      return "combine";
  }
  return "?";
}

std::string run_composed(const Profile& profile, const Case& c, const RunOptions& opts,
                         ExternalStages& stages, LayerResult& res, std::span<float> output) {
  const CaseRecipe& r = c.recipe;
  const int64_t T = r.shape.tokens, H = r.shape.hidden, I = r.shape.inter, slots = r.slots(),
                rows = T * slots;
  const float poison = poison_of(opts);
  // The CPU stages run tactic 0: the outside kernel's tactics are its own, the CPU part is fixed.
  RunOptions cpu_opts = opts;
  cpu_opts.tactic = 0;
  const cpu::CpuConfig cfg = cpu::make_cpu_config(r, profile, cpu_opts);
  std::string err;

  RoutingDecision route;
  if (stages.implements(Stage::kRoute)) {
    route.tokens = T;
    route.slots = slots;
    route.ids.assign(static_cast<size_t>(rows), -1);
    route.weights.assign(static_cast<size_t>(rows), poison);
    if (!(err = stages.route(route)).empty()) return err;
    require_valid_ids(route, r.total_experts());
  } else {
    route = cpu::cpu_route(c, cfg);
  }
  res.routing = route;

  if (cfg.fp8) return run_composed_fp8(c, stages, cfg, poison, res, output);

  const bool external_quantizer = stages.implements(Stage::kQuantize) && cfg.w4a4;
  std::vector<float> a1(static_cast<size_t>(rows)), a2(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    a1[i] = c.a1_scale_for(route.ids[i]);
    a2[i] = c.a2_scale_for(route.ids[i]);
  }

  std::optional<QuantizedRows> fc1;
  if (external_quantizer) {
    fc1.emplace();
    if (!(err = external_quantize(stages, expanded_hidden_f32(c, slots), H, a1, *fc1)).empty()) return err;
  } else {
    fc1 = cpu::cpu_quantize_activations(c, route, cfg);
  }
  res.fc1_input = fc1;

  std::vector<float> g1;
  if (stages.implements(Stage::kGemm1)) {
    g1.assign(static_cast<size_t>(rows * 2 * I), poison);
    std::vector<uint16_t> bf16_rows;
    if (!fc1) bf16_rows = expanded_hidden_bf16(c, slots);
    const GemmInput a{fc1 ? &*fc1 : nullptr, bf16_rows, rows, H};
    if (!(err = stages.gemm1(route, a, g1)).empty()) return err;
  } else {
    g1 = cpu::cpu_gemm1(c, route, fc1, cfg);
  }
  res.gemm1 = g1;

  std::vector<float> act;
  if (stages.implements(Stage::kActivation)) {
    act.assign(static_cast<size_t>(rows * I), poison);
    if (!(err = stages.activation(g1, rows, act)).empty()) return err;
  } else {
    act = cpu::cpu_activation(g1, rows, cfg);
  }
  res.activation = act;

  std::optional<QuantizedRows> fc2;
  if (external_quantizer) {
    fc2.emplace();
    if (!(err = external_quantize(stages, act, I, a2, *fc2)).empty()) return err;
  } else {
    fc2 = cpu::cpu_quantize_fc2_input(c, route, act, cfg);
  }
  res.fc2_input = fc2;

  std::vector<float> g2;
  if (stages.implements(Stage::kGemm2)) {
    g2.assign(static_cast<size_t>(rows * H), poison);
    std::vector<uint16_t> bf16_rows;
    if (!fc2) bf16_rows = to_bf16(act);
    const GemmInput a{fc2 ? &*fc2 : nullptr, bf16_rows, rows, I};
    if (!(err = stages.gemm2(route, a, g2)).empty()) return err;
  } else {
    g2 = cpu::cpu_gemm2(c, route, fc2, act, cfg);
  }
  res.gemm2 = g2;

  res.shared_output = cpu::cpu_shared_experts(c, cfg);
  return finish_combine(stages, cfg, res, output);
}

}  // namespace moefuzz
