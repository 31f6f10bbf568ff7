#pragma once
// What a kernel returns from one layer (or stage) run: outputs AND the discrete decisions it made,
// so the oracle can admit them (near-ties, near-threshold codes) and evaluate the continuous math
// conditioned on them (docs/decisions.md: admissibility).
//
// Example:
//   moefuzz::LayerResult res = kernel.run_layer(c, opts);
//   int32_t e = res.routing.ids[t * res.routing.slots + s];
//   float y = res.output[t * H + h];
#include <cstdint>
#include <optional>
#include <vector>

#include "core/fp8_group_quant.h"

namespace moefuzz {

// Top-k output as the kernel produced it, [T, slots] row-major, slot order as produced.
struct RoutingDecision {
  int64_t tokens = 0;
  int64_t slots = 0;
  std::vector<int32_t> ids;
  std::vector<float> weights;  // values as produced (bf16-valued where the profile's dtype is bf16)
};

// NVFP4 activations as quantized by the kernel: one row per expanded pair (t, slot), in t*slots+slot
// order; linear scale layout. Present only where the kernel exposes the stage.
struct QuantizedRows {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> packed;  // rows * cols / 2
  std::vector<uint8_t> scales;  // rows * cols / 16 (E4M3 bytes)
};

struct LayerResult {
  std::vector<float> output;  // [T, H]; bf16-valued when the profile rounds the output
  RoutingDecision routing;
  std::optional<QuantizedRows> fc1_input;  // quantized layer input per expanded row (W4A4)
  std::optional<QuantizedRows> fc2_input;  // quantized SiLU*mul output per expanded row
  // FP8 W8A8 (activations fp8_group): the GEMM inputs as the kernel quantized them, one row per
  // expanded pair (t*slots+slot order), E4M3 codes [rows, K] and one fp32 scale per row and 128
  // columns [rows, K/128] (core/fp8_group_quant.h). FC1: the layer input (K = H); FC2: the SiLU*mul
  // output (K = I). Present only where the kernel exposes them.
  std::optional<Fp8GroupQuantized> fc1_fp8;
  std::optional<Fp8GroupQuantized> fc2_fp8;
  std::optional<std::vector<float>> gemm1;       // [rows, 2I] semantic [gate | up] after its rounding point
  std::optional<std::vector<float>> activation;  // [rows, I] after its rounding point
  std::optional<std::vector<float>> gemm2;       // [rows, H] after its rounding point
  std::vector<float> shared_output;              // [T, H] separate shared-expert output, if computed apart
};

}  // namespace moefuzz
