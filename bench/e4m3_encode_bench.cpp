// BM_E4m3Encode: e4m3_from_float over 64 Ki fp32 values spread across every E4M3 binade, the
// subnormal range and past 448 (signs mixed), as FP8 activation quantizers and NVFP4 block-scale
// encoders feed it: per element of every FP8 activation and per block scale, in the CPU kernels and
// the oracle. Results: docs/perf.md, section "Check engine".
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/e4m3.h"

namespace moefuzz {
namespace {

void BM_E4m3Encode(benchmark::State& state) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 10);  // 2^-12 (subnormal E4M3) .. 2^10 (saturates)
  std::vector<float> x(1 << 16);
  for (float& v : x) v = std::ldexp(mantissa(rng), exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
  for (auto _ : state) {
    unsigned sum = 0;
    for (float v : x) sum += e4m3_from_float(v);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(x.size()));
}

BENCHMARK(BM_E4m3Encode)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace moefuzz
