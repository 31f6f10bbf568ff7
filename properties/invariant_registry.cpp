#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"
#include "properties/invariants/invariants.h"

namespace moefuzz {

const std::vector<Invariant>& invariant_registry() {
  // Cheap and specific first: the kill matrix reports the first invariant that kills a mutant, and a
  // specific one ("SCALE1: applied 2x") says more than a general one ("ORACLE").
  static const std::vector<Invariant> all = {
      inv::make_struct_invariant(), inv::make_finite_invariant(), inv::make_canary_invariant(),
      inv::make_repeat_invariant(), inv::make_scale1_invariant(), inv::make_weight1_invariant(),
      inv::make_shift_invariant(),  inv::make_dup_invariant(),    inv::make_pad_invariant(),
      inv::make_gscale_invariant(), inv::make_perm_invariant(),   inv::make_batch_invariant(),
      inv::make_param_invariant(),  inv::make_tactic_invariant(), inv::make_oracle_invariant(),
      inv::make_ovf_invariant(),    inv::make_drift_invariant(),
  };
  return all;
}

const Invariant& invariant_by_code(std::string_view code) {
  std::string known;
  for (const auto& i : invariant_registry()) {
    if (i.code == code) return i;
    known += (known.empty() ? "" : ",") + i.code;
  }
  throw InputError(fmt::format("unknown invariant '{}' (known: {})", code, known));
}

bool is_invariant_code(std::string_view code) {
  for (const auto& i : invariant_registry())
    if (i.code == code) return true;
  return false;
}

std::vector<const Invariant*> select_invariants(std::string_view list) {
  std::vector<const Invariant*> out;
  if (list.empty() || list == "all") {
    for (const auto& i : invariant_registry())
      if (!i.expensive) out.push_back(&i);
    return out;
  }
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string_view code =
        list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!code.empty()) {
      // A name given twice is one invariant: counting it twice would double its tallies and cost.
      const Invariant* inv = &invariant_by_code(code);
      if (std::find(out.begin(), out.end(), inv) == out.end()) out.push_back(inv);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw InputError("--invariants: empty list");
  return out;
}

}  // namespace moefuzz
