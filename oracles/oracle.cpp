#include "oracles/oracle.h"

#include "core/phase_clock.h"
#include "oracles/layer_ref.h"
#include "oracles/stages/route.h"

namespace moefuzz {

const StageExpectation* OracleEvaluation::stage(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return &s;
  return nullptr;
}

namespace {

// The kernel's FC2 codes were found inadmissible. They are judged against the oracle's activation
// interval, which is computed from the kernel's own FC1 codes: if the kernel's exposed GEMM1 or
// activation values are already outside their bounds, that earlier stage is what broke (in a
// composed pipeline the FC2 quantization may be a stage moefuzz computed from the user's output),
// and the finding names it.
Verdict first_broken_stage(const Case& c, const Profile& p, const LayerResult& kernel, Verdict fc2_failure) {
  if (!kernel.gemm1 && !kernel.activation) return fc2_failure;
  LayerResult values_only = kernel;
  values_only.fc2_input.reset();
  values_only.fc2_fp8.reset();
  const LayerReference upstream = reference_layer(c, p, kernel.routing, &values_only);
  if (!upstream.admissibility.passed()) return fc2_failure;
  const std::pair<const char*, const std::optional<std::vector<float>>*> earlier[] = {
      {"gemm1", &kernel.gemm1}, {"activation", &kernel.activation}};
  for (const auto& [name, got] : earlier) {
    const StageExpectation* st = upstream.stage(name);
    if (st == nullptr || !got->has_value()) continue;
    Verdict v = compare_stage(*st, **got, &kernel.routing);
    if (v.failed()) {
      v.message += "; the FC2 input computed from it is inadmissible too";
      return v;
    }
  }
  return fc2_failure;
}

}  // namespace

OracleEvaluation evaluate(const Case& c, const Profile& p, const LayerResult& kernel, OracleRowMemo* memo,
                          OracleStages stages) {
  const PhaseTimer timer(Phase::kOracle);
  OracleEvaluation ev;
  stages::RouteStage route = stages::route(c, p, kernel.routing);
  if (!route.admissibility.passed()) {
    ev.admissibility = route.admissibility;
    return ev;
  }
  LayerReference ref = reference_layer(c, p, kernel.routing, &kernel,
                                       {.keep_intermediates = stages == OracleStages::kAll, .memo = memo});
  ev.admissibility = ref.admissibility.failed() && ref.admissibility.stage == "fc2_quant"
                         ? first_broken_stage(c, p, kernel, ref.admissibility)
                         : ref.admissibility;
  ev.stages.push_back(std::move(route.weights));
  for (auto& s : ref.stages) ev.stages.push_back(std::move(s));
  return ev;
}

Verdict compare_layer(const Case& c, const Profile& p, const LayerResult& kernel) {
  return compare_layer(evaluate(c, p, kernel), kernel);
}

Verdict compare_layer(const OracleEvaluation& ev, const LayerResult& kernel) {
  if (!ev.admissibility.passed()) return ev.admissibility;
  // Pipeline order: the first stage that fails is the one to report.
  const std::pair<const char*, const std::vector<float>*> exposed[] = {
      {"route", &kernel.routing.weights},
      {"gemm1", kernel.gemm1 ? &*kernel.gemm1 : nullptr},
      {"activation", kernel.activation ? &*kernel.activation : nullptr},
      {"gemm2", kernel.gemm2 ? &*kernel.gemm2 : nullptr},
      {"output", &kernel.output},
  };
  Verdict best = Verdict::pass("ORACLE", "layer");
  for (const auto& [name, got] : exposed) {
    const StageExpectation* st = ev.stage(name);
    if (st == nullptr || got == nullptr) continue;
    Verdict v = compare_stage(*st, *got, &kernel.routing);
    if (!v.passed()) return v;
    best.compared += v.compared;
    if (v.max_ratio >= best.max_ratio) {
      best.max_ratio = v.max_ratio;
      best.worst = v.worst;
      best.stage = v.stage;
    }
  }
  return best;
}

}  // namespace moefuzz
