// Check-engine throughput and time-to-kill. Results: docs/perf.md, section "Check engine".
//
// BM_Check/<S|M>/<oracle|all>: cases per second through check_case on the `cpu` kernel, one core,
// over a fixed pool of generated recipes (gen::recipe small / medium, seed 1), materialized outside
// the timed region. "oracle" runs ORACLE only; "all" runs every cheap invariant (the default of
// `moefuzz check`). Goal: >= 1000 cases/s for S.
//
// BM_TimeToKill/<mutant>: seconds until an invariant the mutant declares first kills it, as the kill
// matrix measures it (run_kill_matrix for that mutant alone, all cheap invariants per case), median
// over seeds 1..5. Goal: <= 10 s each. A seed that does not kill within the budget (60 s or 2000
// cases) counts as the budget; `killed` says how many of the 5 seeds killed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/case.h"
#include "drivers/check_engine.h"
#include "drivers/kill_matrix.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

std::vector<Case> case_pool(gen::ShapeClass shapes, const Kernel& k, size_t n) {
  std::vector<Case> pool;
  const rc::Gen<CaseRecipe> g = gen::recipe(shapes);
  for (uint64_t index = 0; pool.size() < n && index < 100 * n; ++index) {
    CaseRecipe r = gen::sample(g, /*seed=*/1, index, /*size=*/100);
    r.profile = k.profile();
    if (!k.supports(r).empty() || !validate(r).empty()) continue;
    pool.push_back(materialize(r));
  }
  return pool;
}

void check_throughput(benchmark::State& state, gen::ShapeClass shapes, size_t pool_size,
                      const char* invariants) {
  const auto k = make_kernel("cpu");
  const std::vector<Case> pool = case_pool(shapes, *k, pool_size);
  CheckOptions o;
  o.invariants = select_invariants(invariants);
  size_t next = 0;
  int64_t failed = 0;
  for (auto _ : state) {
    const CaseReport rep = check_case(*k, pool[next++ % pool.size()], o);
    failed += rep.failed() ? 1 : 0;
    benchmark::DoNotOptimize(rep.verdicts.data());
  }
  state.counters["cases/s"] = benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["failed"] = static_cast<double>(failed);  // must stay 0 on the correct kernel
}

// S: 64 small cases, cycled. M: 8 medium cases (tile-boundary T up to 129, H up to 1024), each
// checked once: one medium case costs seconds, so a fixed iteration count bounds the run.
void BM_Check_S_oracle(benchmark::State& s) { check_throughput(s, gen::ShapeClass::kSmall, 64, "ORACLE"); }
void BM_Check_S_all(benchmark::State& s) { check_throughput(s, gen::ShapeClass::kSmall, 64, "all"); }
void BM_Check_M_oracle(benchmark::State& s) { check_throughput(s, gen::ShapeClass::kMedium, 8, "ORACLE"); }
void BM_Check_M_all(benchmark::State& s) { check_throughput(s, gen::ShapeClass::kMedium, 8, "all"); }
BENCHMARK(BM_Check_S_oracle)->Name("BM_Check/S/oracle")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_S_all)->Name("BM_Check/S/all")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_M_oracle)->Name("BM_Check/M/oracle")->Iterations(8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_M_all)->Name("BM_Check/M/all")->Iterations(8)->Unit(benchmark::kMillisecond);

constexpr double kKillBudgetSeconds = 60;
constexpr int64_t kKillBudgetCases = 2000;
constexpr int kKillSeeds = 5;

void time_to_kill(benchmark::State& state, const std::string& mutant) {
  for (auto _ : state) {
    std::vector<double> seconds;
    int killed = 0;
    for (uint64_t seed = 1; seed <= kKillSeeds; ++seed) {
      KillMatrixOptions o;
      o.seed = seed;
      o.mutants = {mutant};
      o.seconds_per_mutant = kKillBudgetSeconds;
      o.max_cases_per_mutant = kKillBudgetCases;
      o.correct_cases = 0;  // the false-positive sweep is not part of time-to-kill
      const KillMatrix m = run_kill_matrix(o);
      double first = kKillBudgetSeconds;
      bool any = false;
      for (const auto& row : m.rows)
        for (const auto& code : row.expected) {
          const auto it = row.kills.find(code);
          if (it == row.kills.end() || it->second.cases < 0) continue;
          first = std::min(first, it->second.seconds);
          any = true;
        }
      killed += any ? 1 : 0;
      seconds.push_back(first);
    }
    std::nth_element(seconds.begin(), seconds.begin() + kKillSeeds / 2, seconds.end());
    const double median = seconds[kKillSeeds / 2];
    state.SetIterationTime(median);
    state.counters["median_s"] = median;
    state.counters["killed"] = killed;
    state.counters["of_goal_10s"] = median / 10.0;  // <= 1 meets the goal
  }
}

// One benchmark per mutant of the registry (mutants and inconsistent composition cells), registered
// before main runs so --benchmark_filter sees them.
const bool kRegistered = [] {
  for (const auto& e : kernel_registry()) {
    if (e.kind != KernelKind::kMutant && e.kind != KernelKind::kComposition) continue;
    if (e.kind == KernelKind::kComposition && e.make()->expected_killers().empty()) continue;
    const std::string name = e.name;
    benchmark::RegisterBenchmark(("BM_TimeToKill/" + name).c_str(),
                                 [name](benchmark::State& s) { time_to_kill(s, name); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  }
  return true;
}();

}  // namespace
}  // namespace moefuzz
