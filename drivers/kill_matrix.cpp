#include "drivers/kill_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/case.h"
#include "core/value_profiles.h"
#include "drivers/baseline_checkers.h"
#include "drivers/check_engine.h"
#include "drivers/ordered_parallel.h"
#include "kernels/registry.h"
#include "kernels/worker_device.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool all_declared_killed(const MutantRow& row) {
  if (row.expected.empty()) return row.killed_as_declared();  // a user kernel: its first kill ends it
  for (const auto& inv : row.expected) {
    auto it = row.kills.find(inv);
    if (it == row.kills.end() || it->second.cases < 0) return false;
  }
  return true;
}

// ---- Targeted campaign ----
// A mutant's bug is visible only on its invariants' domains: WEIGHT1 needs softmax routing without
// renormalization, DUP hash rows with a repeated id, STRUCT's group check negative biased scores...
// Random small cases reach some of these rarely, so three of every four cases of a mutant are
// steered into the domain of one of its declared invariants (round robin over them). A focus only
// sets recipe fields the generator itself draws (shape, routing flags, value profiles), so every
// focused case is one the generator could produce; validate()/supports() still filter it.
void set_softmax(CaseRecipe& r) {
  r.routing.mode = RoutingMode::kSoftmax;
  r.shape.n_group = r.shape.topk_group = 1;
  r.shape.experts = std::max<int64_t>(r.shape.experts, 8);
  r.shape.top_k = std::clamp<int64_t>(r.shape.top_k, 2, 4);
}

void set_grouped(CaseRecipe& r) {
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.correction_bias = true;
  r.shape.experts = 16;
  r.shape.n_group = 4;
  r.shape.topk_group = 2;
  r.shape.top_k = 4;
}

// Z3's corner: one selected group of four; negative biased scores next to positive ones, so a group
// masked with 0 beats the selected group's negatives and the top-k spans two groups.
void set_group_mask_corner(CaseRecipe& r, uint64_t v) {
  set_grouped(r);
  r.shape.topk_group = 1;
  r.values.logits = v % 2 == 0 ? LogitProfile::kNormal : LogitProfile::kAllNegative;
  r.values.bias = BiasProfile::kNegative;
}

// The focus of invariant `code`, variant `v` (several where the domain has distinct corners).
CaseRecipe focus_on(const std::string& code, uint64_t v, CaseRecipe r) {
  if (code == "STRUCT") {
    if (v % 3 == 2) {  // softmax without renormalization: weights must be probabilities (Z4)
      set_softmax(r);
      r.routing.renormalize = false;
      return r;
    }
    set_group_mask_corner(r, v % 3 == 0 ? 0 : 1);  // Z3 (selected groups)
  } else if (code == "FINITE") {
    set_grouped(r);  // Z5: underflowing sigmoids pulled into the top-k by a dominant bias
    r.routing.renormalize = true;
    r.values.logits = LogitProfile::kVeryNegative;
    r.values.bias = BiasProfile::kDominant;
  } else if (code == "ORACLE") {  // values exactly at E2M1 rounding thresholds (tie rules)
    if (v % 2 == 0) {  // planted thresholds under the calibrated global scale they were planted for
      r.values.hidden = HiddenProfile::kThresholds;
      r.values.act_scale = ActScaleProfile::kCalibrated;
      r.quant.activations = ActivationFormat::kNvfp4;
      r.quant.act_scales = ActScaleMode::kGlobal;
      // One block of the last token planted on exact E2M1 ties: under the profile's calibrated
      // S_q = kThresholdsA1Scale = 2^9, a block amax of 6/2^9 gives the E4M3 block scale 1.0 exactly,
      // and x = m/2^9 quantizes from exactly m (m = 0.25, 1.25, 2.5, 5: the ties RN-even sends down).
      r.shape.tokens = std::max<int64_t>(r.shape.tokens, 2);
      r.shape.hidden = std::max<int64_t>(r.shape.hidden, 32);
      const int64_t t = r.shape.tokens - 1;
      const double planted[] = {6, 0.25, 1.25, 2.5, 5, -0.25, -1.25, -2.5, -5};
      for (int64_t j = 0; j < 16; ++j)
        r.edits.push_back(Edit{"hidden", {t, 16 + j}, j < 9 ? planted[j] / kThresholdsA1Scale : 0.0});
    } else {  // routing decisions the oracle must reject: Z3's group-mask corner (an inadmissible set)
      set_group_mask_corner(r, v / 2);
    }
  } else if (code == "WEIGHT1" || code == "SHIFT" || code == "PARAM") {
    set_softmax(r);
    r.routing.renormalize = false;
    r.values.logits = LogitProfile::kNormal;
    if (code == "SHIFT") {
      // Logits on a 2^-6 grid in [-3, 3]: every +-8 shift is then exact, so SHIFT compares instead of
      // skipping (drawn fp32 logits rarely survive x + 8 exactly). Planted as edits, like ORACLE's ties.
      r.shape.tokens = std::min<int64_t>(r.shape.tokens, 8);
      r.shape.experts = std::min<int64_t>(r.shape.experts, 32);
      r.shape.top_k = std::min(r.shape.top_k, r.shape.experts - 1);
      for (int64_t t = 0; t < r.shape.tokens; ++t)
        for (int64_t e = 0; e < r.shape.experts; ++e) {
          const uint64_t h =
              (r.seed ^ v) * 0x9E3779B97F4A7C15u + static_cast<uint64_t>(t * 131 + e) * 0xBF58476D1CE4E5B9u;
          r.edits.push_back(
              Edit{"logits", {t, e}, static_cast<double>(static_cast<int64_t>((h >> 33) % 385) - 192) / 64});
        }
    }
  } else if (code == "DUP") {
    r.routing.mode = RoutingMode::kHash;
    r.routing.hash_score = ScoreFunc::kSqrtSoftplus;
    r.shape.n_group = r.shape.topk_group = 1;
    r.shape.top_k = std::max<int64_t>(r.shape.top_k, 2);
    r.shape.experts = std::max<int64_t>(r.shape.experts, r.shape.top_k);
    r.values.table = TableProfile::kDuplicates;
  } else if (code == "CANARY") {  // H not a multiple of the 32/64-wide N tile; tokens after token 0
    r.shape.hidden = 48;
    r.shape.tokens = std::max<int64_t>(r.shape.tokens, 3);
  } else if (code == "GSCALE") {
    r.quant.gate_up_scale_ratio = 0.5;  // unequal per-half global scales (Z11)
  } else if (code == "PERM") {
    r.values.weights = WeightProfile::kExpertSpread;
  } else if (code == "BATCH") {  // tokens of different magnitude: the batch's amax depends on who is in it
    r.shape.tokens = std::max<int64_t>(r.shape.tokens, 4);
    // K of several 16-element blocks in both GEMMs, so a batch-dependent summation order shows.
    r.shape.hidden = std::max<int64_t>(r.shape.hidden, 64);
    r.shape.inter = std::max<int64_t>(r.shape.inter, 64);
    r.values.hidden = HiddenProfile::kTokenSpread;
    r.quant.activations = ActivationFormat::kNvfp4;
  } else if (code == "TACTIC" || code == "REPEAT") {  // K of several 64-wide tiles in both GEMMs (the
    r.shape.hidden = 128;                             // tactics' summation orders then differ)
    r.shape.inter = 64;
  } else if (code == "DRIFT") {  // two slots per token: sums of two bf16 terms, often exact ties (SPEC.md
                                 // §3.6); 64 tokens: the bias test's samples (properties/drift.h)
    r = CaseRecipe{.seed = r.seed, .profile = r.profile};
    r.shape = Shape{.tokens = 64, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
    r.routing.routed_scaling_factor = 2.5;
  }
  return r;
}

// Case `index` of a mutant's campaign: random, or (3 of 4) focused on a declared invariant.
CaseRecipe campaign_case(const rc::Gen<CaseRecipe>& gen, uint64_t seed, uint64_t index,
                         const std::vector<std::string>& declared) {
  CaseRecipe r = gen::sample(gen, seed, index, static_cast<int>(std::min<uint64_t>(100, index)));
  if (declared.empty() || index % 4 == 0) return r;
  const uint64_t round = index - index / 4 - 1;  // focused cases so far
  return focus_on(declared[round % declared.size()], round / declared.size(), r);
}

}  // namespace

bool MutantRow::killed_as_declared() const {
  if (expected.empty())  // a kernel that declares nothing (a C plugin): any invariant's kill counts
    return std::any_of(kills.begin(), kills.end(), [](const auto& k) { return k.second.cases >= 0; });
  for (const auto& inv : expected) {
    auto it = kills.find(inv);
    if (it != kills.end() && it->second.cases >= 0) return true;
  }
  return false;
}

bool KillMatrix::all_failures_zero() const {
  for (const auto& [k, n] : correct_failures)
    if (n != 0) return false;
  return true;
}

namespace {

// One mutant's row: the targeted campaign, the expensive invariants it declares, the baselines.
MutantRow mutant_row(const std::string& mutant_name, const std::function<std::unique_ptr<Kernel>()>& make,
                     const KillMatrixOptions& o, const rc::Gen<CaseRecipe>& gen,
                     const std::vector<const Invariant*>& cheap, const std::vector<std::string>& codes) {
  const auto kernel = make();
  MutantRow row;
  row.mutant = mutant_name;
  row.expected = kernel->expected_killers();
  const auto start = std::chrono::steady_clock::now();
  // Expensive invariants (OVF's offset probes, DRIFT's many layers) run once each, and only for
  // mutants that declare them, on the first supported case focused on them.
  for (const auto& inv : invariant_registry()) {
    if (!inv.expensive || std::find(row.expected.begin(), row.expected.end(), inv.code) == row.expected.end())
      continue;
    for (uint64_t index = 0; index < 64; ++index) {
      CaseRecipe r = focus_on(inv.code, 0, gen::sample(gen, o.seed, index, 10));
      r.profile = kernel->profile();
      if (!kernel->supports(r).empty() || !validate(r).empty() || estimate_case_bytes(r) > o.max_case_bytes ||
          !inv.applies(*kernel, r).empty())
        continue;
      ++row.cases;
      const CaseReport rep =
          check_case(*kernel, materialize(r, o.max_case_bytes), CheckOptions{.invariants = {&inv}});
      for (const auto& v : rep.verdicts)
        if (v.failed()) row.kills[v.invariant] = KillCell{row.cases, since(start)};
      break;
    }
  }
  for (uint64_t index = 0; row.cases < o.max_cases_per_mutant && since(start) < o.seconds_per_mutant;
       ++index) {
    if (all_declared_killed(row)) break;
    CaseRecipe r = campaign_case(gen, o.seed, index, row.expected);
    r.profile = kernel->profile();
    const std::string refusal = kernel->supports(r);
    if (!refusal.empty() && row.first_refusal.empty()) row.first_refusal = refusal;
    if (!refusal.empty() || !validate(r).empty() || estimate_case_bytes(r) > o.max_case_bytes) {
      if (index > static_cast<uint64_t>(o.max_cases_per_mutant) * 20) break;
      continue;
    }
    const Case c = materialize(r, o.max_case_bytes);
    CheckOptions co;
    for (const Invariant* inv : cheap) {
      auto it = row.kills.find(inv->code);
      if (it != row.kills.end() && it->second.cases >= 0) continue;  // already killed by it
      co.invariants.push_back(inv);
    }
    ++row.cases;
    const CaseReport rep = check_case(*kernel, c, co);
    for (const auto& v : rep.verdicts)
      if (v.failed()) row.kills[v.invariant] = KillCell{row.cases, since(start)};
  }
  row.seconds = since(start);
  if (o.baselines) {
    const BaselineResult b = run_baselines(*kernel, o.seed);
    row.baselines["allclose"] = b.allclose_caught;
    row.baselines["check_accuracy"] = b.check_accuracy_caught;
  }
  for (const auto& code : codes) {  // registry order breaks ties
    auto it = row.kills.find(code);
    if (it == row.kills.end() || it->second.cases < 0) continue;
    if (row.first_killer.empty() || it->second.cases < row.kills.at(row.first_killer).cases)
      row.first_killer = code;
  }
  return row;
}

// The false-positive sweep of one correct kernel: failing cases, and the first failure's line.
std::pair<int64_t, std::string> correct_sweep(const KernelEntry& entry, const KillMatrixOptions& o,
                                              const rc::Gen<CaseRecipe>& gen,
                                              const std::vector<const Invariant*>& cheap) {
  const auto kernel = entry.make();
  int64_t failures = 0, run = 0;
  std::string first;
  for (uint64_t index = 0; run < o.correct_cases && index < static_cast<uint64_t>(o.correct_cases) * 20;
       ++index) {
    CaseRecipe r =
        gen::sample(gen, o.seed ^ 0xC0FFEEu, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = kernel->profile();
    if (!kernel->supports(r).empty() || !validate(r).empty() || estimate_case_bytes(r) > o.max_case_bytes)
      continue;
    ++run;
    const CaseReport rep =
        check_case(*kernel, materialize(r, o.max_case_bytes), CheckOptions{.invariants = cheap});
    if (rep.failed() && failures++ == 0)
      first = rep.first_failure().signature() + ": " + rep.first_failure().message;
  }
  return {failures, first};
}

}  // namespace

KillMatrix run_kill_matrix(const KillMatrixOptions& o) {
  KillMatrix m;
  std::vector<const Invariant*> cheap;
  for (const auto& inv : invariant_registry()) {
    m.invariants.push_back(inv.code);
    if (!inv.expensive) cheap.push_back(&inv);
  }
  const rc::Gen<CaseRecipe> gen = gen::recipe_for(o.shapes, o.max_case_bytes);

  // The registry's CPU mutants (all of them), or the registry entries named that declare expected
  // killers (the GPU mutants too: they run only where named, since a machine without a GPU can run
  // none of their cases); then named kernels from outside the registry (a plugin path, a py: kernel)
  // that declare expected killers: users score their own mutants too.
  struct Mutant {
    std::string name;
    std::function<std::unique_ptr<Kernel>()> make;
    bool gpu = false;
  };
  std::vector<Mutant> mutants;
  for (const auto& entry : kernel_registry()) {
    const bool gpu = entry.kind == KernelKind::kCuda;
    if (o.mutants.empty() ? gpu
                          : std::find(o.mutants.begin(), o.mutants.end(), entry.name) == o.mutants.end())
      continue;
    const bool declares =
        entry.kind == KernelKind::kMutant ||
        ((entry.kind == KernelKind::kComposition || gpu) && !entry.make()->expected_killers().empty());
    if (!declares) continue;
    // A GPU mutant through make_kernel, as `check` makes it: the process then counts as one whose
    // kernel runs on a GPU (--oracle-device auto).
    const std::string name = entry.name;
    mutants.push_back(
        {name,
         gpu ? std::function<std::unique_ptr<Kernel>()>([name] { return make_kernel(name); }) : entry.make,
         gpu});
  }
  for (const std::string& name : o.mutants) {
    const auto& reg = kernel_registry();
    if (std::none_of(reg.begin(), reg.end(), [&](const KernelEntry& e) { return e.name == name; }))
      mutants.push_back({name, [name] { return make_kernel(name); }});
  }
  // Rows in registry order whatever the number of threads (drivers/ordered_parallel.h); a GPU
  // mutant's thread on its GPU, as `check -j` binds its workers (kernels/worker_device.h).
  run_in_index_order<MutantRow>(
      std::max(1, o.jobs), [](int) {},
      [&](int worker, uint64_t i) {
        if (i >= mutants.size()) return MutantRow{};
        if (mutants[i].gpu) bind_worker_gpu(worker);
        return mutant_row(mutants[i].name, mutants[i].make, o, gen, cheap, m.invariants);
      },
      [&](uint64_t i, MutantRow& row) {
        if (i >= mutants.size()) return false;
        if (!row.killed_as_declared()) m.survivors.push_back(row.mutant);
        m.rows.push_back(std::move(row));
        return true;
      });
  m.toothless_assessed = o.mutants.empty();
  for (const auto& code : m.toothless_assessed ? m.invariants : std::vector<std::string>{}) {
    bool kills = false;
    for (const auto& row : m.rows) {
      auto it = row.kills.find(code);
      kills = kills || (it != row.kills.end() && it->second.cases >= 0);
    }
    if (!kills) m.toothless.push_back(code);
    bool first = false;
    for (const auto& row : m.rows) first = first || row.first_killer == code;
    if (!first) m.no_first_kill.push_back(code);
  }
  // False-positive sweep: correct built-in kernels must pass every cheap invariant.
  std::vector<const KernelEntry*> correct;
  for (const auto& entry : kernel_registry()) {
    if (entry.kind != KernelKind::kBuiltin && entry.kind != KernelKind::kComposition) continue;
    if (entry.make()->is_mutant()) continue;
    correct.push_back(&entry);
  }
  run_in_index_order<std::pair<int64_t, std::string>>(
      std::max(1, o.jobs), [](int) {},
      [&](int, uint64_t i) {
        return i < correct.size() ? correct_sweep(*correct[i], o, gen, cheap)
                                  : std::pair<int64_t, std::string>{};
      },
      [&](uint64_t i, std::pair<int64_t, std::string>& r) {
        if (i >= correct.size()) return false;
        if (r.first > 0) m.correct_first_failure[correct[i]->name] = r.second;
        m.correct_failures[correct[i]->name] = r.first;
        return true;
      });
  return m;
}

std::string format_kill_matrix(const KillMatrix& m) {
  std::string out = fmt::format("{:<40}", "mutant \\ invariant (cases to kill)");
  for (const auto& c : m.invariants) out += fmt::format(" {:>7}", c);
  const bool baselines = !m.rows.empty() && !m.rows.front().baselines.empty();
  if (baselines) out += fmt::format(" | {:>8} {:>8}", "allclose", "chk_acc");
  out += fmt::format(" | {:>6} {:>7} {:>7}\n", "cases", "seconds", "first");
  for (const auto& row : m.rows) {
    out += fmt::format("{:<40}", row.mutant.size() > 40 ? row.mutant.substr(0, 39) + "~" : row.mutant);
    for (const auto& c : m.invariants) {
      auto it = row.kills.find(c);
      const bool declared = std::find(row.expected.begin(), row.expected.end(), c) != row.expected.end();
      std::string cell = it != row.kills.end() && it->second.cases >= 0 ? std::to_string(it->second.cases)
                                                                        : (declared ? "MISS" : ".");
      if (declared && cell != "MISS") cell += "*";
      out += fmt::format(" {:>7}", cell);
    }
    if (baselines)
      out += fmt::format(" | {:>8} {:>8}", row.baselines.at("allclose") ? "caught" : "missed",
                         row.baselines.at("check_accuracy") ? "caught" : "missed");
    out += fmt::format(" | {:>6} {:>7.2f} {:>7}\n", row.cases, row.seconds,
                       row.first_killer.empty() ? "-" : row.first_killer);
  }
  out +=
      "(* = declared killer; MISS = declared but did not kill within the budget; first = the first killer: "
      "fewest cases, then registry order)\n";
  for (const auto& row : m.rows)
    if (row.cases == 0)
      out += fmt::format(
          "{} ran no case: no drawn case was in its domain ({})\n", row.mutant,
          row.first_refusal.empty() ? "every drawn case was invalid or too large" : row.first_refusal);
  for (const auto& [k, n] : m.correct_failures)
    out += fmt::format("correct kernel {:<30} {} failing case(s){}\n", k, n,
                       n ? " -- " + m.correct_first_failure.at(k) : std::string());
  out += !m.toothless_assessed ? "toothless invariants not assessed (--mutant ran a subset of the mutants)\n"
         : m.toothless.empty()
             ? "every invariant kills at least one mutant\n"
             : fmt::format("TOOTHLESS invariants (kill no mutant): {}\n", fmt::join(m.toothless, ", "));
  out += !m.toothless_assessed ? ""
         : m.no_first_kill.empty()
             ? "every invariant is the first killer of some mutant\n"
             : fmt::format("NO FIRST KILL (first killer of no mutant, section 6.2): {}\n",
                           fmt::join(m.no_first_kill, ", "));
  out += m.survivors.empty() ? "every mutant is killed by an invariant it declares\n"
                             : fmt::format("SURVIVING mutants: {}\n", fmt::join(m.survivors, ", "));
  out += m.green() ? "kill matrix: GREEN\n" : "kill matrix: RED\n";
  return out;
}

nlohmann::json kill_matrix_json(const KillMatrix& m) {
  nlohmann::json j;
  j["invariants"] = m.invariants;
  for (const auto& row : m.rows) {
    nlohmann::json r{{"mutant", row.mutant},
                     {"expected", row.expected},
                     {"cases", row.cases},
                     {"seconds", row.seconds},
                     {"killed_as_declared", row.killed_as_declared()},
                     {"first_killer", row.first_killer}};
    if (row.cases == 0) r["first_refusal"] = row.first_refusal;
    for (const auto& [code, cell] : row.kills)
      r["kills"][code] = {{"cases", cell.cases}, {"seconds", cell.seconds}};
    for (const auto& [name, caught] : row.baselines) r["baselines"][name] = caught;
    j["mutants"].push_back(r);
  }
  j["correct_failures"] = m.correct_failures;
  j["toothless"] = m.toothless;
  j["toothless_assessed"] = m.toothless_assessed;
  j["survivors"] = m.survivors;
  j["no_first_kill"] = m.no_first_kill;
  j["green"] = m.green();
  return j;
}

}  // namespace moefuzz
