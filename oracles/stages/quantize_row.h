#pragma once
// The row admission both quantization stages share (oracles/stages/quantize.h): admit the kernel's
// exposed codes for one row against the envelope of its input interval, or cover every admissible
// code. Internal to oracles/stages.
//
// Example:
//   Verdict fail;
//   if (!moefuzz::stages::quantize_row("fc2_quant", row, j, lo, hi, center, sq2, &kernel.fc2_input, q, fail))
//     return fail;
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/layer_io.h"
#include "core/verdict.h"
#include "oracles/bounds.h"
#include "oracles/stages/quantize.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// The failed verdict for the kernel's code (where >= 0) or block scale (where = -1 - block) outside
// the envelope.
Verdict inadmissible_code(const char* stage, const ExpandedRow& r, int64_t where, const Nvfp4Envelope& env,
                          std::span<const uint8_t> codes, std::span<const uint8_t> scales);

// Returns false (and sets `fail`) when the kernel's codes for row j are inadmissible. The envelope
// nvfp4_envelope(lo, hi, center, s_q) is computed only where it is used (unexposed codes, or the
// message of an inadmissible one): admitting exposed codes needs only their block's scale range and
// code range. `env`, when given, is that envelope already computed; `flips`, when given, are the
// unconditioned flips of its center row (shared between the rows of one token).
bool quantize_row(const char* stage, const ExpandedRow& er, int64_t j, std::span<const double> lo,
                  std::span<const double> hi, std::span<const double> center, float s_q,
                  const std::optional<QuantizedRows>* exposed, QuantizedInputs& q, Verdict& fail,
                  const Nvfp4Envelope* env = nullptr,
                  const std::vector<std::pair<int32_t, double>>* flips = nullptr);

// The kernel's exposed FP8 row of expanded row er ({} for a shared expert or without exposure).
Fp8ExposedRow fp8_exposed_row(const Fp8Quantization& fp8, const ExpandedRow& er, int64_t cols);

}  // namespace moefuzz::stages
