#pragma once
// Stage composition: a kernel that lives outside moefuzz (a C plugin, a Python kernel) implements
// some of the pipeline's stages and moefuzz's optimized CPU pipeline (kernels/cpu/cpu_stages.h)
// computes the others, under the profile the kernel claims. The LayerResult then carries every
// intermediate (routing, quantized rows, gemm1, activation, gemm2), so the oracle checks the
// kernel's stage where it happens.
//
// The pipeline (SPEC.md 3.7) and who may supply each stage:
//   route -> quantize FC1 input -> gemm1 -> activation -> quantize FC2 input -> gemm2 -> combine
// `quantize` covers both quantizations (one NVFP4 quantizer); W4A16 recipes skip it.
//
// Example (a routing-only kernel):
//   struct MyRoute : moefuzz::ExternalStages {
//     bool implements(moefuzz::Stage s) const override { return s == moefuzz::Stage::kRoute; }
//     std::string route(moefuzz::RoutingDecision& r) override { fill(r.ids, r.weights); return ""; }
//   };
//   MyRoute stages;
//   std::string err = moefuzz::run_composed(profile, c, opts, stages, result, output);
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "kernels/kernel.h"

namespace moefuzz {

enum class Stage : uint8_t { kRoute, kQuantize, kGemm1, kActivation, kGemm2, kCombine };

// The activation operand of a GEMM: NVFP4 rows (W4A4), or bf16 rows (W4A16) when `nvfp4` is null.
struct GemmInput {
  const QuantizedRows* nvfp4 = nullptr;
  std::span<const uint16_t> bf16;  // [rows, K] bf16 bits, W4A16 only
  int64_t rows = 0, cols = 0;
};

// The stages an outside kernel supplies. Every output arrives sized and filled with the canary
// poison, so an element the kernel leaves unwritten shows. Each call returns "" on success or the
// kernel's own error message (a finding); faults (crash, timeout) are thrown as KernelFault.
class ExternalStages {
 public:
  virtual ~ExternalStages() = default;
  virtual bool implements(Stage stage) const = 0;
  // ids / weights [T, slots] (ids pre-filled with -1).
  virtual std::string route(RoutingDecision& route) {
    (void)route;
    return "route not implemented";
  }
  // rows [R, K] fp32 (bf16-valued) with each row's expert's S_q -> codes [R, K/2], scales [R, K/16].
  virtual std::string quantize(std::span<const float> input, int64_t K, std::span<const float> row_scale,
                               QuantizedRows& q) {
    (void)input, (void)K, (void)row_scale, (void)q;
    return "quantize not implemented";
  }
  // [R, 2I] in semantic [gate | up] order.
  virtual std::string gemm1(const RoutingDecision& route, const GemmInput& a, std::span<float> out) {
    (void)route, (void)a, (void)out;
    return "gemm1 not implemented";
  }
  // [R, 2I] -> [R, I].
  virtual std::string activation(std::span<const float> gemm1, int64_t rows, std::span<float> out) {
    (void)gemm1, (void)rows, (void)out;
    return "activation not implemented";
  }
  // [R, H].
  virtual std::string gemm2(const RoutingDecision& route, const GemmInput& a, std::span<float> out) {
    (void)route, (void)a, (void)out;
    return "gemm2 not implemented";
  }
  // gemm2 [R, H] + routing -> output [T, H] (routed sum, x rsf when the claimed profile's top-k does
  // not apply it); moefuzz adds the separate shared experts afterwards.
  virtual std::string combine(std::span<const float> gemm2, const RoutingDecision& route,
                              std::span<float> output) {
    (void)gemm2, (void)route, (void)output;
    return "combine not implemented";
  }
};

// Runs the layer with `stages` supplying what it implements and the CPU pipeline (tactic 0) the
// rest, under `profile`. Fills res (every intermediate) and `output` [T, H]. Returns "" or the first
// stage error. Route ids outside [0, E + shared) are a KernelFault (bad-result): the framework's own
// later stages would index out of bounds with them.
std::string run_composed(const Profile& profile, const Case& c, const RunOptions& opts,
                         ExternalStages& stages, LayerResult& res, std::span<float> output);

// "route", "quantize", ...
const char* stage_name(Stage stage);

}  // namespace moefuzz
