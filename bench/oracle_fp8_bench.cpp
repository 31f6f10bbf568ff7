// FP8 block oracle benchmarks (docs/perf.md, section "Oracle", "FP8 block dot"): the exact E4M3
// block dot in ns per multiply-add, in the shapes of BM_OracleDot (one activation row against 64
// weight rows) and BM_OracleDotRows (4 activation rows per weight row), so one run compares them
// with the NVFP4 oracle (issue #17: within 2x per MAC).
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "oracles/fp8_block_dot.h"
#include "oracles/fp8_block_dot_loops.h"

namespace moefuzz {
namespace {

// Random E4M3 codes without NaN, every sign, exponent and subnormal.
std::vector<uint8_t> bench_codes(int64_t n, uint64_t seed) {
  std::vector<uint8_t> c(static_cast<size_t>(n));
  Stream s(seed, "bench-fp8");
  for (size_t i = 0; i < c.size(); ++i) {
    c[i] = static_cast<uint8_t>(s.bits(i));
    if ((c[i] & 0x7F) == 0x7F) c[i] = 0x7E;
  }
  return c;
}

void run(benchmark::State& state, int na, Fp8DotLoop loop = fp8_block_dot_best_loop()) {
  if (!fp8_block_dot_loop_available(loop)) {
    state.SkipWithError("loop not available on this CPU");
    return;
  }
  const int64_t k = state.range(0), rows = 64;
  const DecodedFp8 a = DecodedFp8::from_codes(na, k, bench_codes(na * k, 1));
  const std::vector<uint8_t> w = bench_codes(rows * k, 2);
  std::vector<Fp8BlockDot> out(static_cast<size_t>(na));
  for (auto _ : state)
    for (int64_t r = 0; r < rows; ++r) {
      fp8_block_dot_rows_with(loop, a, 0, na, Fp8Row{w.data() + r * k, k}, out.data());
      benchmark::DoNotOptimize(out.data());
    }
  const double macs = static_cast<double>(state.iterations()) * static_cast<double>(rows * k * na);
  state.counters["ns_per_mac"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// One decoded activation row against 64 stored weight rows (BM_OracleDot's shape).
void BM_OracleFp8BlockDot(benchmark::State& state) { run(state, 1); }
BENCHMARK(BM_OracleFp8BlockDot)->Arg(2048)->Arg(7168);

// na activation rows per weight row per call (BM_OracleDotRows/K/4's shape at na = 4: the layer's
// kernel; more rows share each decoded weight block).
void BM_OracleFp8BlockDotRows(benchmark::State& state) { run(state, static_cast<int>(state.range(1))); }
BENCHMARK(BM_OracleFp8BlockDotRows)
    ->Args({2048, 4})
    ->Args({7168, 4})
    ->Args({2048, 16})
    ->Args({7168, 16})
    ->Args({128, 8})
    ->Args({256, 8})
    ->Args({512, 8})
    ->Args({1024, 8});

}  // namespace
}  // namespace moefuzz

namespace moefuzz {
namespace {
// The AVX2 loop (what CPUs without AVX-512 run), on this CPU: 1 and 4 rows per call.
void BM_OracleFp8BlockDotRowsAvx2(benchmark::State& state) {
  run(state, static_cast<int>(state.range(1)), Fp8DotLoop::kAvx2);
}
BENCHMARK(BM_OracleFp8BlockDotRowsAvx2)
    ->Args({7168, 1})
    ->Args({7168, 4})
    ->Args({128, 8})
    ->Args({256, 8})
    ->Args({512, 8})
    ->Args({1024, 8});
}  // namespace
}  // namespace moefuzz
