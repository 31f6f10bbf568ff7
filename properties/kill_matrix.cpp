#include "properties/kill_matrix.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/case.h"
#include "kernels/registry.h"
#include "properties/baseline_checkers.h"
#include "properties/check_engine.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool all_declared_killed(const MutantRow& row) {
  for (const auto& inv : row.expected) {
    auto it = row.kills.find(inv);
    if (it == row.kills.end() || it->second.cases < 0) return false;
  }
  return true;
}

}  // namespace

bool MutantRow::killed_as_declared() const {
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

KillMatrix run_kill_matrix(const KillMatrixOptions& o) {
  KillMatrix m;
  std::vector<const Invariant*> cheap;
  for (const auto& inv : invariant_registry()) {
    m.invariants.push_back(inv.code);
    if (!inv.expensive) cheap.push_back(&inv);
  }
  const rc::Gen<CaseRecipe> gen = gen::recipe_for(o.shapes);

  for (const auto& entry : kernel_registry()) {
    const bool is_mutant = entry.kind == KernelKind::kMutant ||
                           (entry.kind == KernelKind::kComposition && !entry.make()->expected_killers().empty());
    if (!is_mutant) continue;
    if (!o.mutants.empty() && std::find(o.mutants.begin(), o.mutants.end(), entry.name) == o.mutants.end()) continue;
    const auto kernel = entry.make();
    MutantRow row;
    row.mutant = entry.name;
    row.expected = kernel->expected_killers();
    const auto start = std::chrono::steady_clock::now();
    // Expensive invariants (OVF large tier, DRIFT) run once, on the first supported case, and only
    // for mutants that declare them.
    std::vector<const Invariant*> invariants = cheap;
    for (const auto& inv : invariant_registry())
      if (inv.expensive && std::find(row.expected.begin(), row.expected.end(), inv.code) != row.expected.end())
        invariants.push_back(&inv);
    bool expensive_done = false;
    for (uint64_t index = 0; row.cases < o.max_cases_per_mutant && since(start) < o.seconds_per_mutant; ++index) {
      CaseRecipe r = gen::sample(gen, o.seed, index, static_cast<int>(std::min<uint64_t>(100, index)));
      r.profile = kernel->profile();
      if (!kernel->supports(r).empty() || !validate(r).empty()) {
        if (index > static_cast<uint64_t>(o.max_cases_per_mutant) * 20) break;
        continue;
      }
      const Case c = materialize(r);
      CheckOptions co;
      for (const Invariant* inv : invariants) {
        if (inv->expensive && expensive_done) continue;
        auto it = row.kills.find(inv->code);
        if (it != row.kills.end() && it->second.cases >= 0) continue;  // already killed by it
        co.invariants.push_back(inv);
      }
      expensive_done = true;
      ++row.cases;
      const CaseReport rep = check_case(*kernel, c, co);
      for (const auto& v : rep.verdicts)
        if (v.failed()) row.kills[v.invariant] = KillCell{row.cases, since(start)};
      if (all_declared_killed(row)) break;
    }
    row.seconds = since(start);
    if (o.baselines) {
      const BaselineResult b = run_baselines(*kernel, o.seed);
      row.baselines["allclose"] = b.allclose_caught;
      row.baselines["check_accuracy"] = b.check_accuracy_caught;
    }
    if (!row.killed_as_declared()) m.survivors.push_back(row.mutant);
    m.rows.push_back(std::move(row));
  }
  for (const auto& code : m.invariants) {
    bool kills = false;
    for (const auto& row : m.rows) {
      auto it = row.kills.find(code);
      kills = kills || (it != row.kills.end() && it->second.cases >= 0);
    }
    if (!kills) m.toothless.push_back(code);
  }
  // False-positive sweep: correct built-in kernels must pass every cheap invariant.
  for (const auto& entry : kernel_registry()) {
    if (entry.kind != KernelKind::kBuiltin && entry.kind != KernelKind::kComposition) continue;
    const auto kernel = entry.make();
    if (kernel->is_mutant()) continue;
    int64_t failures = 0, run = 0;
    for (uint64_t index = 0; run < o.correct_cases && index < static_cast<uint64_t>(o.correct_cases) * 20; ++index) {
      CaseRecipe r = gen::sample(gen, o.seed ^ 0xC0FFEEu, index, static_cast<int>(std::min<uint64_t>(100, index)));
      r.profile = kernel->profile();
      if (!kernel->supports(r).empty() || !validate(r).empty()) continue;
      ++run;
      const CaseReport rep = check_case(*kernel, materialize(r), CheckOptions{.invariants = cheap});
      if (rep.failed()) {
        if (failures++ == 0) m.correct_first_failure[entry.name] = rep.first_failure().signature() + ": " + rep.first_failure().message;
      }
    }
    m.correct_failures[entry.name] = failures;
  }
  return m;
}

std::string format_kill_matrix(const KillMatrix& m) {
  std::string out = fmt::format("{:<40}", "mutant \\ invariant (cases to kill)");
  for (const auto& c : m.invariants) out += fmt::format(" {:>7}", c);
  const bool baselines = !m.rows.empty() && !m.rows.front().baselines.empty();
  if (baselines) out += fmt::format(" | {:>8} {:>8}", "allclose", "chk_acc");
  out += fmt::format(" | {:>6} {:>7}\n", "cases", "seconds");
  for (const auto& row : m.rows) {
    out += fmt::format("{:<40}", row.mutant.size() > 40 ? row.mutant.substr(0, 39) + "~" : row.mutant);
    for (const auto& c : m.invariants) {
      auto it = row.kills.find(c);
      const bool declared = std::find(row.expected.begin(), row.expected.end(), c) != row.expected.end();
      std::string cell = it != row.kills.end() && it->second.cases >= 0 ? std::to_string(it->second.cases) : (declared ? "MISS" : ".");
      if (declared && cell != "MISS") cell += "*";
      out += fmt::format(" {:>7}", cell);
    }
    if (baselines)
      out += fmt::format(" | {:>8} {:>8}", row.baselines.at("allclose") ? "caught" : "missed",
                         row.baselines.at("check_accuracy") ? "caught" : "missed");
    out += fmt::format(" | {:>6} {:>7.2f}\n", row.cases, row.seconds);
  }
  out += "(* = declared killer; MISS = declared but did not kill within the budget)\n";
  for (const auto& [k, n] : m.correct_failures)
    out += fmt::format("correct kernel {:<30} {} failing case(s){}\n", k, n,
                       n ? " -- " + m.correct_first_failure.at(k) : std::string());
  out += m.toothless.empty() ? "every invariant kills at least one mutant\n"
                             : fmt::format("TOOTHLESS invariants (kill no mutant): {}\n", fmt::join(m.toothless, ", "));
  out += m.survivors.empty() ? "every mutant is killed by an invariant it declares\n"
                             : fmt::format("SURVIVING mutants: {}\n", fmt::join(m.survivors, ", "));
  out += m.green() ? "kill matrix: GREEN\n" : "kill matrix: RED\n";
  return out;
}

nlohmann::json kill_matrix_json(const KillMatrix& m) {
  nlohmann::json j;
  j["invariants"] = m.invariants;
  for (const auto& row : m.rows) {
    nlohmann::json r{{"mutant", row.mutant}, {"expected", row.expected}, {"cases", row.cases}, {"seconds", row.seconds},
                     {"killed_as_declared", row.killed_as_declared()}};
    for (const auto& [code, cell] : row.kills) r["kills"][code] = {{"cases", cell.cases}, {"seconds", cell.seconds}};
    for (const auto& [name, caught] : row.baselines) r["baselines"][name] = caught;
    j["mutants"].push_back(r);
  }
  j["correct_failures"] = m.correct_failures;
  j["toothless"] = m.toothless;
  j["survivors"] = m.survivors;
  j["green"] = m.green();
  return j;
}

}  // namespace moefuzz
