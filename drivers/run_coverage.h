#pragma once
// What a run reached: how many checked cases fell in each routing mode, profile, shape class and
// hostile corner. `moefuzz check` records it in DIR/summary.json ("reached") and `moefuzz report`
// shows it, so a reader sees which parts of the input space a green run actually exercised.
//
// Example:
//   moefuzz::RunCoverage reached;
//   moefuzz::note_case(reached, recipe);  // per checked case
//   // reached.routing["sigmoid_grouped + correction bias"] == 1, reached.shape_classes["small"] == 1
//   nlohmann::json j = moefuzz::coverage_json(reached);  // {"routing": {...}, "profiles": {...}, ...}
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/recipe.h"

namespace moefuzz {

struct RunCoverage {
  std::map<std::string, int64_t> routing;        // mode with its flags, e.g. "softmax (renormalize)"
  std::map<std::string, int64_t> profiles;       // the profile each case was judged under
  std::map<std::string, int64_t> shape_classes;  // small | medium | large | model:NAME, and "wide experts"
  std::map<std::string, int64_t>
      hostile_corners;  // each non-tame value profile, quantization and SwiGLU knob
};

// Counts one checked case in every category it falls in.
void note_case(RunCoverage& coverage, const CaseRecipe& recipe);

// The shape class a recipe falls in: model:NAME when its shape is a real model's (gen::model_of),
// else the smallest of small / medium / large whose bounds hold (properties/gen/recipe_gen.h).
std::string shape_class_of(const CaseRecipe& recipe);

nlohmann::json coverage_json(const RunCoverage& coverage);

}  // namespace moefuzz
