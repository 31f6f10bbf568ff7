// The failure report (format pinned by tests/core/report_test.cpp) and the recipe description.
#include "core/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/profile.h"
#include "core/recipe_text.h"

namespace moefuzz {
namespace {

std::string location_text(const Location& w) {
  std::vector<std::string> parts;
  if (w.token >= 0) parts.push_back(fmt::format("token {}", w.token));
  if (w.slot >= 0) parts.push_back(fmt::format("slot {}", w.slot));
  if (w.expert >= 0) parts.push_back(fmt::format("expert {}", w.expert));
  if (w.element >= 0) parts.push_back(fmt::format("element {}", w.element));
  return parts.empty() ? "whole case" : fmt::format("{}", fmt::join(parts, ", "));
}

// Where routed_scaling_factor is multiplied, as the profile in force says (kernels and oracle follow
// Profile::rsf_in_topk and ignore the recipe's scale_placement field, so the report must too).
std::string rsf_placement_text(const std::string& profile_name) {
  for (const Profile& p : all_profiles())
    if (p.name == profile_name) return p.rsf_in_topk ? "topk" : "combine";
  return "an unknown place (profile not built in)";
}

std::string index_or_dash(int64_t i) { return i >= 0 ? fmt::format("{}", i) : "-"; }

// NaN ratios (a NaN got or expected) first, then the largest error/bound.
std::vector<ElementError> ordered_worst(const std::vector<ElementError>& in) {
  std::vector<ElementError> out = in;
  std::stable_sort(out.begin(), out.end(), [](const ElementError& a, const ElementError& b) {
    const double ra = a.ratio(), rb = b.ratio();
    if (std::isnan(ra) != std::isnan(rb)) return std::isnan(ra);
    if (std::isnan(ra)) return false;
    return ra > rb;
  });
  if (out.size() > kReportMaxWorstElements) out.resize(kReportMaxWorstElements);
  return out;
}

}  // namespace

std::string format_byte_count(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double scaled = static_cast<double>(bytes);
  size_t unit = 0;
  scaled /= 1024;
  while (scaled >= 1024 && unit + 1 < std::size(kUnits)) {
    scaled /= 1024;
    ++unit;
  }
  return fmt::format("{} bytes ({:.3g} {})", bytes, scaled, kUnits[unit]);
}

std::string describe_recipe(const CaseRecipe& r) {
  const Shape& s = r.shape;
  std::string shared;
  if (s.shared_experts > 0)
    shared = fmt::format(" + {} shared ({})", s.shared_experts, name_of(r.routing.shared_fusion));
  std::string routing;
  const char* renorm = r.routing.renormalize ? "renormalize" : "no renormalize";
  switch (r.routing.mode) {
    case RoutingMode::kSoftmax:
      routing = fmt::format("softmax ({})", renorm);
      break;
    case RoutingMode::kSigmoidGrouped:
      routing = fmt::format("sigmoid_grouped ({} of {} groups, {}, {})", s.topk_group, s.n_group,
                            r.routing.correction_bias ? "correction bias" : "no correction bias", renorm);
      break;
    case RoutingMode::kHash:
      routing =
          fmt::format("hash (score {}, vocab {}, {})", name_of(r.routing.hash_score), r.hash_vocab(), renorm);
      break;
    default:
      routing = "invalid";
  }
  const Swiglu plain;
  const std::string swiglu =
      r.swiglu == plain ? "swiglu plain"
                        : fmt::format("swiglu limit {}, alpha {}, beta {}", format_real(r.swiglu.limit),
                                      format_real(r.swiglu.alpha), format_real(r.swiglu.beta));
  const ValueProfile& v = r.values;
  return fmt::format(
      "tokens {}, hidden {}, inter {}, experts {}{}, top_k {}; routing {}, routed_scaling_factor {} applied "
      "in {} (per the profile); "
      "activations {}, act scales {}, gate/up scale ratio {}; {}; profile {}; seed {}; values logits={} "
      "bias={} "
      "table={} weights={} hidden={} act_scale={} load={}; {} edit{}",
      s.tokens, s.hidden, s.inter, s.experts, shared, s.top_k, routing,
      format_real(r.routing.routed_scaling_factor), rsf_placement_text(r.profile),
      name_of(r.quant.activations), name_of(r.quant.act_scales), format_real(r.quant.gate_up_scale_ratio),
      swiglu, r.profile, r.seed, name_of(v.logits), name_of(v.bias), name_of(v.table), name_of(v.weights),
      name_of(v.hidden), name_of(v.act_scale), name_of(v.load), r.edits.size(),
      r.edits.size() == 1 ? "" : "s");
}

std::string format_failure_report(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel,
                                  const std::string& repro_command) {
  std::string out = "==== moefuzz: CHECK FAILED ====\n";
  out += fmt::format("kernel: {}\n", kernel);
  out += fmt::format("config: {}\n", describe_recipe(recipe));
  out += fmt::format("check: {}  stage: {}\n", v.invariant, v.stage);
  if (v.kernel_fault) {  // nothing was compared: no location, no numbers
    out += fmt::format("message: {}\n", v.message);
    out += fmt::format("REPRO: {}\n", repro_command);
    return out;
  }
  out += fmt::format("location: {}\n", location_text(v.worst.where));
  out += fmt::format("got {}  expected {}  bound {}  ratio {}\n", format_real(v.worst.got),
                     format_real(v.worst.expected), format_real(v.worst.bound), format_real(v.worst.ratio()));
  out += fmt::format("message: {}\n", v.message);
  const auto worst = ordered_worst(v.worst_elements);
  if (worst.empty()) {
    out += "worst elements: none recorded\n";
  } else {
    out += fmt::format("worst elements ({} of {}, NaN first, then by error/bound):\n", worst.size(),
                       v.worst_elements.size());
    out += fmt::format("  {:>7} {:>5} {:>6} {:>8} {:>24} {:>24} {:>24} {:>12}\n", "token", "slot", "expert",
                       "element", "got", "expected", "bound", "ratio");
    for (const auto& e : worst)
      out += fmt::format("  {:>7} {:>5} {:>6} {:>8} {:>24} {:>24} {:>24} {:>12.4g}\n",
                         index_or_dash(e.where.token), index_or_dash(e.where.slot),
                         index_or_dash(e.where.expert), index_or_dash(e.where.element), format_real(e.got),
                         format_real(e.expected), format_real(e.bound), e.ratio());
  }
  out += fmt::format("REPRO: {}\n", repro_command);
  return out;
}

}  // namespace moefuzz
