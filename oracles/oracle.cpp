#include "oracles/oracle.h"

#include "oracles/layer_ref.h"
#include "oracles/stages/route.h"

namespace moefuzz {

const StageExpectation* OracleEvaluation::stage(const std::string& name) const {
  for (const auto& s : stages)
    if (s.stage == name) return &s;
  return nullptr;
}

OracleEvaluation evaluate(const Case& c, const Profile& p, const LayerResult& kernel) {
  OracleEvaluation ev;
  stages::RouteStage route = stages::route(c, p, kernel.routing);
  if (!route.admissibility.passed()) {
    ev.admissibility = route.admissibility;
    return ev;
  }
  LayerReference ref = reference_layer(c, p, kernel.routing, &kernel);
  ev.admissibility = ref.admissibility;
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
