#pragma once
// When the oracle's evaluation of one run can stand for another's, bit for bit (issue #13: the
// metamorphic invariants re-evaluated the oracle end to end for every transformed run).
//
// evaluate(c, p, r) (oracles/oracle.h) reads from the run r only what conditions it: the routing
// decision (ids, weights), the quantized FC1/FC2 codes, the exposed activation values where nothing
// quantizes the FC2 input (bf16 activations), and - only to name the earlier stage that broke when the
// FC2 codes are inadmissible - the exposed GEMM1 and activation values. Two runs equal
// in those, bit for bit, on cases of the same content get the same evaluation. CheckContext
// (properties/invariant.h) uses these tests; tests/properties/oracle_reuse_test.cpp shows the reused
// and the re-evaluated expectations and bounds equal bit for bit on a sweep. A transformed case
// whose ideal output is the base case's (GSCALE) is not enough: its bounds differ (see that test).
//
// Example:
//   if (moefuzz::same_conditioning(tactic_run, ctx.baseline())) ev = ctx.oracle();   // no re-evaluation
#include "core/case.h"
#include "core/layer_io.h"
#include "oracles/oracle.h"

namespace moefuzz {

// The same case bit for bit: recipe, every tensor by bits (operator== takes -0 for +0), experts that
// both share by identity and the others by content hash (remembered for frozen experts,
// core/expert_fingerprint.h).
bool same_case(const Case& a, const Case& b);

// Same routing decision (shape, ids, weights by bits) and the same exposed FC1/FC2 codes.
bool same_decisions(const LayerResult& a, const LayerResult& b);
// same_decisions, and the same exposed GEMM1 and activation values (by bits).
bool same_conditioning(const LayerResult& a, const LayerResult& b);
// Whether the evaluation conditioned on all of r (`full`) is also the one conditioned on r's
// decisions only: when it admitted r's decisions, or r exposes neither GEMM1 nor activation values
// (after an inadmissible FC2 code `full` may name the earlier stage that broke).
bool full_evaluation_is_decisions_only(const OracleEvaluation& full, const LayerResult& r);

}  // namespace moefuzz
