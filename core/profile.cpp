#include "core/profile.h"

#include "core/errors.h"

namespace moefuzz {

const std::vector<Profile>& all_profiles() {
  static const std::vector<Profile> profiles = {};
  return profiles;
}

const Profile& profile_by_name(std::string_view name) {
  std::string known;
  for (const auto& p : all_profiles()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown profile '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace moefuzz
