// SiLU(gate) * up (SPEC.md §3.3) in fp32 from the gemm1 outputs, with the optional SwiGLU clamp:
// gate = min(gate, L), up = clamp(up, -L, L), out = gate * sigmoid(alpha * gate) * (up + beta).
// With the defaults the plain form g / (1 + exp(-g)) * u is used, as the production kernels do.
#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/parallel.h"

namespace moefuzz::cpu {

std::vector<float> cpu_activation(std::span<const float> gemm1, int64_t rows, const CpuConfig& cfg) {
  const int64_t I = cfg.inter;
  std::vector<float> out(static_cast<size_t>(rows * I));
  const bool plain = std::isinf(cfg.swiglu_limit) && cfg.swiglu_limit > 0 && cfg.swiglu_alpha == 1.0f &&
                     cfg.swiglu_beta == 0.0f;
  const float L = cfg.swiglu_limit;
  const float alpha = cfg.swiglu_alpha, beta = cfg.swiglu_beta;
  const bool round = cfg.bf16_after_activation;
  // std::fmin/fmax are libm calls (for their NaN and signed-zero rules), which keep the loops scalar.
  // With a limit that is neither zero nor NaN, min(x, L) = x < L ? x : L and max(x, -L) = x > -L ?
  // x : -L give the same values (a NaN x gives L, as fmin does; no signed-zero tie can occur).
  const bool compared_clamp = L != 0.0f && !std::isnan(L);
  parallel_for(rows, cfg.threads, [&](int64_t r) {
    const float* g = gemm1.data() + r * 2 * I;
    const float* u = g + I;
    float* h = out.data() + r * I;
    // exp(-z) first (a libm call per element), then the arithmetic in loops the compiler vectorizes:
    // each element's operations are the same, in the same order.
    if (plain) {
      for (int64_t i = 0; i < I; ++i) h[i] = std::exp(-g[i]);
      for (int64_t i = 0; i < I; ++i) h[i] = g[i] / (1.0f + h[i]) * u[i];
    } else if (compared_clamp) {
      for (int64_t i = 0; i < I; ++i) h[i] = -(alpha * (g[i] < L ? g[i] : L));
      for (int64_t i = 0; i < I; ++i) h[i] = std::exp(h[i]);
      for (int64_t i = 0; i < I; ++i) {
        const float gate = g[i] < L ? g[i] : L;
        const float up = u[i] < L ? u[i] : L;
        const float lin = up > -L ? up : -L;
        h[i] = gate * (1.0f / (1.0f + h[i])) * (lin + beta);
      }
    } else {
      for (int64_t i = 0; i < I; ++i) h[i] = std::exp(-(alpha * std::fmin(g[i], L)));
      for (int64_t i = 0; i < I; ++i) {
        const float gate = std::fmin(g[i], L);
        const float lin = std::fmax(std::fmin(u[i], L), -L);
        h[i] = gate * (1.0f / (1.0f + h[i])) * (lin + beta);
      }
    }
    if (round)
      for (int64_t i = 0; i < I; ++i) h[i] = round_to_bf16(h[i]);
  });
  return out;
}

}  // namespace moefuzz::cpu
