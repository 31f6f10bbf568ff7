#pragma once
// Every field of a profile (core/profile.h) as JSON, with the enum values as snake_case words: what
// `moefuzz list --json` prints and what a Python kernel receives as `case.contract` (docs/python.md).
//
// Example:
//   nlohmann::json j = moefuzz::profile_json(moefuzz::profile_by_name("sglang-triton"));
//   bool in_topk = j["rsf_in_topk"];        // false: the combine applies routed_scaling_factor
#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace moefuzz {

nlohmann::json profile_json(const Profile& p);

}  // namespace moefuzz
