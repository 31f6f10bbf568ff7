#pragma once
// The kill matrix: every mutant x every invariant, with the number of cases and seconds until the
// invariant first killed the mutant, plus a false-positive sweep of the correct kernels. A mutant's
// FIRST KILLER is the invariant that names its finding: the one that killed it in the fewest cases,
// ties broken by registry order (the check engine reports the first failing invariant of a case).
// The matrix is "green" when every mutant is killed by at least one invariant it declares, every
// invariant of the registry kills at least one mutant (an invariant no mutant can fail is
// toothless), and no correct kernel fails anything. ARCHITECTURE.md section 6.2 asks more: every
// invariant is the only or the first killer of some mutant; `no_first_kill` lists the invariants
// that are not (tests/drivers/kill_matrix_test.cpp holds it to its list of known gaps). CI runs it.
//
// Example:
//   moefuzz::KillMatrix m = moefuzz::run_kill_matrix({.seed = 1, .seconds_per_mutant = 5});
//   std::cout << moefuzz::format_kill_matrix(m);
//   if (!m.green()) return 1;
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/recipe.h"

namespace moefuzz {

struct KillCell {
  int64_t cases = -1;  // cases run until the first kill (-1: not killed)
  double seconds = 0;
};

struct MutantRow {
  std::string mutant;
  std::vector<std::string> expected;      // invariants the mutant declares
  std::map<std::string, KillCell> kills;  // by invariant code
  int64_t cases = 0;
  double seconds = 0;
  // Why the first drawn case it was not run on was outside its domain (Kernel::supports): what the
  // matrix shows for a mutant that ran no case (a GPU mutant on a machine without a GPU).
  std::string first_refusal;
  // Some declared invariant killed it; a kernel that declares none (a C plugin): any invariant did.
  bool killed_as_declared() const;
  std::string first_killer;               // "" when nothing killed it
  std::map<std::string, bool> baselines;  // upstream-style checkers: caught?
};

struct KillMatrixOptions {
  uint64_t seed = 1;
  int64_t max_cases_per_mutant = 400;
  double seconds_per_mutant = 20;
  std::string shapes = "small";
  std::vector<std::string> mutants;  // empty = every mutant in the registry
  int64_t correct_cases = 60;        // false-positive sweep per correct built-in kernel
  bool baselines = false;            // also apply the upstream-style checkers
  // Mutants (and correct kernels of the false-positive sweep) checked at once, one thread each; rows
  // come out in the same order. Case budgets give the same matrix for any jobs; a time budget
  // (seconds_per_mutant) is per mutant, on that mutant's thread.
  int jobs = 1;
  // Drawn recipes above this many bytes (estimate_case_bytes) are skipped like unsupported ones
  // (`moefuzz mutants` passes --max-case-bytes).
  int64_t max_case_bytes = kDefaultMaxCaseBytes;
};

struct KillMatrix {
  std::vector<std::string> invariants;  // column order
  std::vector<MutantRow> rows;
  std::map<std::string, int64_t> correct_failures;  // correct kernel -> failing cases (must be 0)
  std::map<std::string, std::string> correct_first_failure;
  std::vector<std::string> toothless;  // invariants that killed no mutant
  // False when --mutant chose a subset: an invariant only other mutants violate is not toothless, so
  // toothlessness is judged on full runs only (and a subset is green when its own mutants die).
  bool toothless_assessed = true;
  std::vector<std::string> survivors;  // mutants not killed by any declared invariant
  // Invariants that are neither the only nor the first killer of any mutant (section 6.2).
  std::vector<std::string> no_first_kill;
  bool green() const { return toothless.empty() && survivors.empty() && all_failures_zero(); }
  bool all_failures_zero() const;
};

KillMatrix run_kill_matrix(const KillMatrixOptions& options);
std::string format_kill_matrix(const KillMatrix& m);
nlohmann::json kill_matrix_json(const KillMatrix& m);

}  // namespace moefuzz
