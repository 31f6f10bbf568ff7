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

#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/case.h"
#include "drivers/campaign.h"
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
                      const char* invariants, bool oracle_reuse = true) {
  const auto k = make_kernel("cpu");
  const std::vector<Case> pool = case_pool(shapes, *k, pool_size);
  CheckOptions o;
  o.invariants = select_invariants(invariants);
  o.oracle_reuse = oracle_reuse;
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
// The same with every oracle evaluation and row made afresh (properties/oracle_reuse.h and
// oracles/row_memo.h off): the baseline the reuse is measured against, in the same run (for ORACLE
// alone, where nothing can be reused, the memo's cost).
void BM_Check_S_oracle_fresh(benchmark::State& s) {
  check_throughput(s, gen::ShapeClass::kSmall, 64, "ORACLE", /*oracle_reuse=*/false);
}
void BM_Check_S_all_fresh(benchmark::State& s) {
  check_throughput(s, gen::ShapeClass::kSmall, 64, "all", /*oracle_reuse=*/false);
}
void BM_Check_M_all_fresh(benchmark::State& s) {
  check_throughput(s, gen::ShapeClass::kMedium, 8, "all", /*oracle_reuse=*/false);
}
BENCHMARK(BM_Check_S_oracle_fresh)->Name("BM_Check/S/oracle/fresh-oracle")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_S_oracle)->Name("BM_Check/S/oracle")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_S_all_fresh)->Name("BM_Check/S/all/fresh-oracle")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_S_all)->Name("BM_Check/S/all")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_M_oracle)->Name("BM_Check/M/oracle")->Iterations(8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_M_all_fresh)
    ->Name("BM_Check/M/all/fresh-oracle")
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check_M_all)->Name("BM_Check/M/all")->Iterations(8)->Unit(benchmark::kMillisecond);

// BM_CheckJobs/S/<jobs>: `moefuzz check --shapes small --cases 96 --seed 1 -j <jobs>` on the `cpu`
// kernel through run_campaign (all cheap invariants): cases/s by the wall clock, and the process's CPU
// seconds per case (all threads), which a machine shared with other work does not inflate as much.
void check_jobs(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  const auto k = make_kernel("cpu");
  const std::string dir = (std::filesystem::temp_directory_path() / "moefuzz_bench_check_jobs").string();
  int64_t cases = 0, findings = 0;
  double wall = 0, cpu = 0;
  auto process_cpu_seconds = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    CampaignOptions o;
    o.kernel_name = "cpu";
    o.cases = 96;
    o.seed = 1;
    o.invariants = select_invariants("all");
    o.out_dir = dir;
    o.jobs = jobs;
    o.worker_kernel = [](int) { return make_kernel("cpu"); };
    std::ostringstream log;
    const double cpu0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const CampaignSummary s = run_campaign(*k, o, log);
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu += process_cpu_seconds() - cpu0;
    cases += s.cases;
    findings += static_cast<int64_t>(s.findings.size());
  }
  std::filesystem::remove_all(dir);
  state.counters["cases/s"] = static_cast<double>(cases) / wall;
  state.counters["cpu_ms/case"] = 1000.0 * cpu / static_cast<double>(cases);  // every thread's CPU time
  state.counters["findings"] = static_cast<double>(findings);  // must stay 0 on the correct kernel
}
BENCHMARK(check_jobs)
    ->Name("BM_CheckJobs/S")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

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
