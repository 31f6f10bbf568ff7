#pragma once
// A compact per-tensor summary of a Case, for `moefuzz show` and failure reports: one line per
// tensor with its shape, min / max / mean / abs-max, #zeros, #NaN / #Inf; for the NVFP4 weights
// (aggregated over experts, one line per gate / up / down) the E2M1 magnitude histogram, #-0 codes,
// #all-zero blocks, the E4M3 scale range with #subnormal and #zero scale bytes, the S_d range and the
// effective block scale range fp32(e4m3) * S_d over nonzero scales.
//
// Example:
//   std::cout << moefuzz::describe_case_tensors(moefuzz::materialize(r));
//   // hidden     bf16  [4, 64]  min -2.81 max 3.02 mean 0.0123 absmax 3.02 zeros 0 nan 0 inf 0
//   // gate       nvfp4 9 x [32, 64]  |code| 0:7% .5:14% ... -0:0 zero-blocks 0 e4m3 [0x3c..0x4b] ...
#include <string>

#include "core/case.h"

namespace moefuzz {

std::string describe_case_tensors(const Case& c);

}  // namespace moefuzz
