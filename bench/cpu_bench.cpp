// BM_CpuLayer/<S|M|DSV3>/threads:<n>: one whole layer through the `cpu` kernel (routing, both
// quantizations, both GEMMs, activation, combine). Results: docs/perf.md, section "CPU kernel".
//
// DSV3 (T=16, H=7168, I=2048, E=256, k=8, 8 groups / 4 selected) would need 5.6 GB of expert weights;
// the case routes every token into experts 0..15 (their logits are raised by 10) and only those 16
// experts carry weights (352 MB). The MAC count (T*k rows x 3*H*I) is the real one; weight decoding
// is amortized over ~8 rows per expert instead of ~0.5 under uniform routing.
#include <benchmark/benchmark.h>

#include "core/case.h"
#include "core/heap_retention.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

Case make_case(int64_t T, int64_t H, int64_t I, int64_t E, int64_t k, int64_t n_group, int64_t topk_group,
               int64_t weighted_experts) {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.routing.mode = n_group > 1 ? RoutingMode::kSigmoidGrouped : RoutingMode::kSoftmax;
  r.routing.routed_scaling_factor = 2.5;
  r.shape = {.tokens = T,
             .hidden = H,
             .inter = I,
             .experts = weighted_experts,
             .top_k = k,
             .n_group = 1,
             .topk_group = 1};
  Case small = materialize(r);  // weighted_experts experts with real weights
  if (weighted_experts == E) return small;
  Case c = small;
  c.recipe.shape.experts = E;
  c.recipe.shape.n_group = n_group;
  c.recipe.shape.topk_group = topk_group;
  c.logits.assign(static_cast<size_t>(T * E), 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t e = 0; e < E; ++e)
      c.logits[t * E + e] =
          (e < weighted_experts ? 10.0f : 0.0f) + small.logits[(t * E + e) % small.logits.size()];
  c.bias.assign(static_cast<size_t>(E), 0.0f);
  c.experts.resize(static_cast<size_t>(E));  // experts >= weighted_experts: empty, never routed to
  return c;
}

void run(benchmark::State& state, const Case& c) {
  auto k = make_kernel("cpu");
  const RunOptions opts{.threads = static_cast<int>(state.range(0))};
  for (auto _ : state) {
    LayerResult out;
    k->run_layer(c, opts, out);
    benchmark::DoNotOptimize(out.output.data());
  }
  const auto& s = c.recipe.shape;
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(s.tokens * s.top_k * 3 * s.hidden * s.inter) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BM_CpuLayer_S(benchmark::State& state) {
  static const Case c = make_case(8, 256, 128, 16, 4, 1, 1, 16);
  run(state, c);
}
void BM_CpuLayer_M(benchmark::State& state) {
  static const Case c = make_case(128, 2048, 1024, 64, 8, 1, 1, 64);
  run(state, c);
}
void BM_CpuLayer_DSV3(benchmark::State& state) {
  static const Case c = make_case(16, 7168, 2048, 256, 8, 8, 4, 16);
  run(state, c);
}

BENCHMARK(BM_CpuLayer_S)
    ->Name("BM_CpuLayer/S")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CpuLayer_M)
    ->Name("BM_CpuLayer/M")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CpuLayer_DSV3)
    ->Name("BM_CpuLayer/DSV3")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace
}  // namespace moefuzz

// BENCHMARK_MAIN, with the heap settings of the moefuzz CLI (core/heap_retention.h).
int main(int argc, char** argv) {
  moefuzz::retain_freed_heap_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
