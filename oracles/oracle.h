#pragma once
// The oracle's top-level API: evaluate a case under a profile, conditioned on the kernel's own
// decisions (routing ids, and quantized codes where exposed, each admitted first), and compare. With
// bf16 activations (W4A16, bf16 weights) nothing is quantized: exposed activation rows that lie in
// their intervals condition GEMM2 instead (oracles/stages/quantize.h quantize_fc2).
//
// Example:
//   moefuzz::OracleEvaluation ev = moefuzz::evaluate(c, profile, kernel_result);
//   moefuzz::Verdict v = moefuzz::compare_layer(c, profile, kernel_result);   // invariant "ORACLE"
#include <string>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/verdict.h"

namespace moefuzz {

struct StageExpectation {
  std::string stage;  // "route", "fc1_quant", "gemm1", "activation", "fc2_quant", "gemm2", "output"
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> expected;  // rows * cols
  std::vector<double> bound;     // rows * cols: rigorous bound on |kernel - expected| for a correct kernel
};

struct OracleEvaluation {
  Verdict admissibility;                 // fails if a kernel decision is inadmissible
  std::vector<StageExpectation> stages;  // at least "output" ([T, H])
  const StageExpectation* stage(const std::string& name) const;
};

class OracleRowMemo;

// Which stages an evaluation keeps. A metamorphic comparison reads the output only: without the
// gemm1/activation/gemm2 stages ([T*k rows] x (2I + I + H) expectations and bounds, ~84 MB at the M
// shape, zero-filled and then copied from the row memo) an evaluation whose rows all come from the
// memo costs a fraction. The route and output stages are the same bits either way.
enum class OracleStages { kAll, kRouteAndOutput };

// memo: rows evaluated before are taken from it and new ones kept (oracles/row_memo.h); the result is
// the same bit for bit. nullptr: every row afresh.
OracleEvaluation evaluate(const Case& c, const Profile& p, const LayerResult& kernel,
                          OracleRowMemo* memo = nullptr, OracleStages stages = OracleStages::kAll);
// Admissibility, then every exposed stage and the output within their bounds. Returns the first
// failure (decisions before values), else a pass carrying max error/bound.
Verdict compare_layer(const Case& c, const Profile& p, const LayerResult& kernel);
// The same comparison on an evaluation already made (the check engine evaluates once per run).
Verdict compare_layer(const OracleEvaluation& ev, const LayerResult& kernel);

}  // namespace moefuzz
