// Stage "quantize2" (FC2 input, SPEC.md §3.7 step 4): the activation interval of each row quantized
// (W4A4), or carried as fp32 centers plus radii (W4A16).
#include <algorithm>

#include "oracles/stages/quantize.h"
#include "oracles/stages/quantize_row.h"

namespace moefuzz::stages {

Fc2Input quantize_fc2(const Case& c, const ExpertRows& rows, float sq2, const ActivationRows& h,
                      const std::optional<QuantizedRows>* kernel_codes,
                      const std::optional<std::vector<float>>* kernel_activation,
                      const Fp8Quantization& fp8) {
  const int64_t I = h.cols, n = rows.size();
  if (c.recipe.quant.activations == ActivationFormat::kFp8Group) {
    // W8A8: the activation interval quantized by the profile's variant, or the kernel's row admitted.
    Fc2Input out{.quantized = QuantizedInputs(0, 0, I), .fp8 = Fp8Operands(n, I)};
    for (int64_t j = 0; j < n; ++j) {
      if (h.nan[static_cast<size_t>(j)]) {
        out.fp8.indeterminate[static_cast<size_t>(j)] = 1;
        continue;
      }
      const size_t row0 = static_cast<size_t>(j * I);
      const ExpandedRow& er = rows.row(j);
      if (!fp8_quantize_interval_row("fc2_quant", er, j, {h.lo.data() + row0, static_cast<size_t>(I)},
                                     {h.hi.data() + row0, static_cast<size_t>(I)},
                                     {h.center.data() + row0, static_cast<size_t>(I)}, fp8.model,
                                     fp8_exposed_row(fp8, er, I), out.fp8, out.admissibility))
        return out;
    }
    return out;
  }
  const bool w4a16 = c.recipe.quant.activations == ActivationFormat::kBf16;
  // The kernel's exposed activation rows, when their shape is the case's ([T * slots, I]).
  const std::vector<float>* act = nullptr;
  if (w4a16 && kernel_activation != nullptr && kernel_activation->has_value() &&
      static_cast<int64_t>((*kernel_activation)->size()) == c.recipe.shape.tokens * c.recipe.slots() * I)
    act = &**kernel_activation;
  Fc2Input out{.quantized = QuantizedInputs(w4a16 ? 0 : n, n, I)};
  if (w4a16) {
    out.fp32.center.resize(static_cast<size_t>(n * I));
    out.fp32.radius.resize(static_cast<size_t>(n * I));
  }
  for (int64_t j = 0; j < n; ++j) {
    const size_t row0 = static_cast<size_t>(j * I);
    const std::span<const double> hlo(h.lo.data() + row0, static_cast<size_t>(I)),
        hhi(h.hi.data() + row0, static_cast<size_t>(I)), hc(h.center.data() + row0, static_cast<size_t>(I));
    if (w4a16) {
      // Conditioned on the kernel's own row when every value of it is admissible.
      const int64_t slot = rows.row(j).slot;
      if (act != nullptr && slot >= 0 && !h.nan[static_cast<size_t>(j)]) {
        const float* k = act->data() + slot * I;
        bool admissible = true;
        for (int64_t o = 0; o < I && admissible; ++o)
          admissible = k[o] >= hlo[static_cast<size_t>(o)] && k[o] <= hhi[static_cast<size_t>(o)];
        if (admissible) {
          std::copy_n(k, I, out.fp32.center.begin() + static_cast<int64_t>(row0));
          std::fill_n(out.fp32.radius.begin() + static_cast<int64_t>(row0), I, 0.0f);
          continue;
        }
      }
      // W4A16 GEMM2 operand: the interval's center in fp32 plus a radius that covers the rest.
      for (int64_t o = 0; o < I; ++o) {
        const float center = static_cast<float>(hc[static_cast<size_t>(o)]);
        const double r = std::max(hhi[static_cast<size_t>(o)] - center, center - hlo[static_cast<size_t>(o)]);
        out.fp32.center[row0 + static_cast<size_t>(o)] = center;
        out.fp32.radius[row0 + static_cast<size_t>(o)] = float_up(r);
      }
    } else if (h.nan[static_cast<size_t>(j)]) {
      out.quantized.indeterminate[static_cast<size_t>(j)] = 1;
    } else if (!quantize_row("fc2_quant", rows.row(j), j, hlo, hhi, hc, sq2, kernel_codes, out.quantized,
                             out.admissibility)) {
      return out;
    }
  }
  return out;
}

}  // namespace moefuzz::stages
