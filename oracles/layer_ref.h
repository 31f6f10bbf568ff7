#pragma once
// The per-stage layer reference (SPEC.md §3.7): route -> quantize -> gemm1 -> activation (SwiGLU,
// with its limit) -> quantize2 -> gemm2 -> combine (x rsf where the profile puts it, + shared experts),
// profile-driven, conditioned on the kernel's decisions. One file per stage in oracles/stages/
// (its expected value, its derived bound, its admissibility); reference_layer chains them and
// compare_stage is the one comparison at the end. Every stage is carried as an interval per element: the
// exact value of the math and a rigorous bound on what a correct kernel under the profile may hold there
// (derivations: oracles/bounds.h, docs/oracle.md). GEMMs are exact integer dots (oracles/exact_dot.h); the
// global scales are applied after the exact sum.
//
// Conditioning: the routing ids and weights are the kernel's (admitted beforehand by check_routing);
// FC1/FC2 input codes the kernel exposes are admitted against the quantization envelope of the
// oracle's interval for that input (stage "fc1_quant" / "fc2_quant") and then used as given. Codes
// the kernel does not expose are covered instead: every code a correct quantizer could produce from
// an input inside its interval widens the GEMM bound by its worst-case effect.
//
// Example:
//   moefuzz::LayerReference ref = moefuzz::reference_layer(c, profile, kernel_result.routing,
//   &kernel_result); if (!ref.admissibility.passed()) report(ref.admissibility); const
//   moefuzz::StageExpectation& out = ref.stages.back();   // "output", [T, H]
#include <span>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/verdict.h"
#include "oracles/oracle.h"

namespace moefuzz {

struct LayerReference {
  Verdict admissibility;                 // a kernel decision outside its envelope fails here
  std::vector<StageExpectation> stages;  // "gemm1" [rows, 2I] (gate | up), "activation" [rows, I],
                                         // "gemm2" [rows, H] (rows = T * slots), then "output" [T, H]
  const StageExpectation* stage(const std::string& name) const;
};

class OracleRowMemo;

struct LayerReferenceOptions {
  bool keep_intermediates = true;  // false: only "output" (saves memory and time for big cases)
  // Rows evaluated before are taken from here and new ones kept (oracles/row_memo.h); used only when
  // it belongs to the profile evaluated under. nullptr: every row afresh.
  OracleRowMemo* memo = nullptr;
};

// `routing`: the kernel's routing decision ([T, slots]); `kernel`: its exposed codes (nullptr: none).
// Throws InputError when the routing shape does not match the case.
LayerReference reference_layer(const Case& c, const Profile& p, const RoutingDecision& routing,
                               const LayerResult* kernel = nullptr, LayerReferenceOptions opts = {});

// Compare a kernel's values for one stage with the reference: every element within its bound.
// Elements the reference cannot say anything about (bound = +inf: non-finite inputs) are skipped.
// Returns pass (max_ratio, compared set) or fail with the worst element and up to 30 worst elements,
// NaN first. `routing` (optional) fills token/slot/expert of per-row stages.
//   Verdict v = moefuzz::compare_stage(*ref.stage("output"), result.output, &result.routing);
Verdict compare_stage(const StageExpectation& expected, std::span<const float> got,
                      const RoutingDecision* routing = nullptr);

}  // namespace moefuzz
