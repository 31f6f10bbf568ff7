#pragma once
// The whole layer evaluated purely in cpp_bin_float_50 (~166 bits): the independent cross-check of
// the fast exact path (oracles/layer_ref.h) and the baseline its benchmark speed-up is measured
// against. No rounding points: every stage is the real-number math on the given quantized operands,
// so GEMM stages are exact (166 bits hold every partial sum) and SwiGLU is within ~2^-160.
//
// Example:
//   moefuzz::MultiprecisionLayer mp = moefuzz::multiprecision_layer(c, routing, fc1_codes, fc2_codes,
//   rsf_in_combine); double g = mp.gemm1[row * 2 * I + i];     // alpha * sum a_i w_i, gate half first
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"

namespace moefuzz {

struct MultiprecisionLayer {
  std::vector<double> gemm1;       // [T*slots, 2I] semantic gate | up, rounded once to double
  std::vector<double> activation;  // [T*slots, I] SwiGLU of the (unrounded) GEMM1 values
  std::vector<double> gemm2;       // [T*slots, H] from the given FC2 codes
  std::vector<double> output;      // [T, H] sum_slot w * gemm2 (x rsf when rsf_in_combine)
};

// `fc1`/`fc2`: the quantized FC1/FC2 inputs per expanded row (t*slots+slot order), e.g. a kernel's.
MultiprecisionLayer multiprecision_layer(const Case& c, const RoutingDecision& routing,
                                         const QuantizedRows& fc1, const QuantizedRows& fc2,
                                         bool rsf_in_combine);

}  // namespace moefuzz
