#include "drivers/run_coverage.h"

#include <fmt/format.h>

#include <cmath>

#include "core/recipe_text.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

std::string routing_label(const CaseRecipe& r) {
  const char* renorm = r.routing.renormalize ? "renormalize" : "no renormalize";
  switch (r.routing.mode) {
    case RoutingMode::kSigmoidGrouped:
      return fmt::format("sigmoid_grouped ({}, {})",
                         r.routing.correction_bias ? "correction bias" : "no correction bias", renorm);
    case RoutingMode::kHash:
      return fmt::format("hash ({}, {})", name_of(r.routing.hash_score), renorm);
    default:
      return fmt::format("{} ({})", name_of(r.routing.mode), renorm);
  }
}

}  // namespace

std::string shape_class_of(const CaseRecipe& r) {
  const Shape& s = r.shape;
  if (const std::string model = gen::model_of(s); !model.empty()) return "model:" + model;
  // The bounds of the generator's classes (recipe_gen.h ShapeClass).
  if (s.tokens <= 40 && s.hidden <= 256 && s.inter <= 128 && s.experts <= 64) return "small";
  if (s.hidden <= 1024 && s.inter <= 512 && s.experts <= 64) return "medium";
  return "large";
}

void note_case(RunCoverage& c, const CaseRecipe& r) {
  ++c.routing[routing_label(r)];
  ++c.profiles[r.profile];
  ++c.shape_classes[shape_class_of(r)];
  // The wide-expert draws (384, 512, 1280 routed experts at small H and I) are their own corner.
  if (r.shape.experts > 256) ++c.shape_classes["wide experts (> 256)"];
  auto corner = [&](bool reached, const std::string& name) {
    if (reached) ++c.hostile_corners[name];
  };
  // Each value-profile field away from its tame (first) value is a hostile corner.
  const ValueProfile tame;
  const ValueProfile& v = r.values;
  corner(v.logits != tame.logits, fmt::format("logits={}", name_of(v.logits)));
  corner(v.bias != tame.bias, fmt::format("bias={}", name_of(v.bias)));
  corner(v.table != tame.table, fmt::format("table={}", name_of(v.table)));
  corner(v.weights != tame.weights, fmt::format("weights={}", name_of(v.weights)));
  corner(v.hidden != tame.hidden, fmt::format("hidden={}", name_of(v.hidden)));
  corner(v.act_scale != tame.act_scale, fmt::format("act_scale={}", name_of(v.act_scale)));
  corner(v.load != tame.load, fmt::format("load={}", name_of(v.load)));
  corner(r.routing.routed_scaling_factor != 1.0, "routed_scaling_factor != 1");
  corner(r.shape.shared_experts > 0, fmt::format("shared experts ({})", name_of(r.routing.shared_fusion)));
  corner(r.quant.activations != ActivationFormat::kNvfp4,
         fmt::format("activations={}", name_of(r.quant.activations)));
  corner(r.quant.act_scales != ActScaleMode::kGlobal,
         fmt::format("act_scales={}", name_of(r.quant.act_scales)));
  corner(r.quant.gate_up_scale_ratio != 1.0, "gate/up scale ratio != 1");
  corner(std::isfinite(r.swiglu.limit), "clamped SwiGLU");
  corner(!r.edits.empty(), "explicit edits");
}

nlohmann::json coverage_json(const RunCoverage& c) {
  return {{"routing", c.routing},
          {"profiles", c.profiles},
          {"shape_classes", c.shape_classes},
          {"hostile_corners", c.hostile_corners}};
}

}  // namespace moefuzz
