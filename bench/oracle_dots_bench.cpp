// The GEMM stages' exact dots alone, as the M-shape layer oracle needs them (docs/perf.md, "Oracle on
// the GPU"): 64 experts of 16 rows each (T 128 x k 8 / E 64), every row against the expert's gate and
// up rows (K = H = 2048, 2 x 1024 rows) and its down rows (K = I = 1024, 2048 rows): 6.44 G
// multiply-adds. /cpu: exact_dot_rows on one core (the tiling of oracles/stages/gemm1.cpp);
// /gpu: oracles/gpu/gpu_exact_dots.h, one call per expert and GEMM (uploads and downloads included);
// /gpu/resident: the same with the weights kept on the device between calls (named by content).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "oracles/exact_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/gpu/gpu_exact_dots.h"

namespace moefuzz {
namespace {

constexpr int64_t kExperts = 64, kRows = 16, kHidden = 2048, kInter = 1024;

Nvfp4Matrix random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Nvfp4Matrix m(rows, cols);
  Stream s(seed, "bench-dots");
  for (size_t i = 0; i < m.packed.size(); ++i) m.packed[i] = static_cast<uint8_t>(s.bits(i));
  for (size_t i = 0; i < m.scales.size(); ++i)
    m.scales[i] = static_cast<uint8_t>(s.uniform_int(1'000'000 + i, 0x30, 0x50));
  return m;
}

struct ExpertSetup {
  Nvfp4Matrix gate, up, down;
  DecodedNvfp4 x1, x2;  // FC1 input [rows, H], FC2 input [rows, I]
};

std::vector<ExpertSetup> experts() {
  std::vector<ExpertSetup> out;
  for (int64_t e = 0; e < kExperts; ++e) {
    const uint64_t s = static_cast<uint64_t>(e) * 8;
    out.push_back({random_matrix(kInter, kHidden, s + 1), random_matrix(kInter, kHidden, s + 2),
                   random_matrix(kHidden, kInter, s + 3),
                   DecodedNvfp4::from_matrix(random_matrix(kRows, kHidden, s + 4)),
                   DecodedNvfp4::from_matrix(random_matrix(kRows, kInter, s + 5))});
  }
  return out;
}

void set_macs(benchmark::State& state) {
  state.counters["macs"] = static_cast<double>(kExperts * kRows * 3 * kHidden * kInter);
}

void BM_OracleDotsCpu(benchmark::State& state) {
  const std::vector<ExpertSetup> ex = experts();
  ExactDot tile[4];
  for (auto _ : state)
    for (const ExpertSetup& e : ex) {
      for (int64_t j0 = 0; j0 < kRows; j0 += 4)
        for (int64_t o = 0; o < kInter; ++o) {
          exact_dot_rows(e.x1, j0, 4, packed_row(e.gate, o), tile);
          benchmark::DoNotOptimize(tile);
          exact_dot_rows(e.x1, j0, 4, packed_row(e.up, o), tile);
          benchmark::DoNotOptimize(tile);
        }
      for (int64_t j0 = 0; j0 < kRows; j0 += 4)
        for (int64_t o = 0; o < kHidden; ++o) {
          exact_dot_rows(e.x2, j0, 4, packed_row(e.down, o), tile);
          benchmark::DoNotOptimize(tile);
        }
    }
  set_macs(state);
}
BENCHMARK(BM_OracleDotsCpu)->Name("BM_OracleDots/M/cpu")->Unit(benchmark::kMillisecond)->Iterations(2);

void run_gpu_dots(benchmark::State& state, bool resident) {
  std::string why;
  if (!gpu::gpu_exact_dots_available(&why)) {
    state.SkipWithError(("no CUDA GPU: " + why).c_str());
    for (auto _ : state) {
    }
    return;
  }
  const std::shared_ptr<ExactDotDevice> dev = gpu::make_gpu_exact_dots();
  const std::vector<ExpertSetup> ex = experts();
  std::vector<RoundedDot> out1(static_cast<size_t>(kRows * 2 * kInter)),
      out2(static_cast<size_t>(kRows * kHidden));
  // /resident names each matrix by content, so the device keeps it (as the oracle's GEMM stages do for
  // a case's experts); the plain run uploads every matrix on every call.
  const auto named = [&](const Nvfp4Matrix& m, size_t e, uint64_t which) {
    DeviceWeights w{.matrix = &m};
    if (resident) w.content = Hash128{static_cast<uint64_t>(e), which};
    return w;
  };
  const auto all = [&] {
    for (size_t i = 0; i < ex.size(); ++i) {
      const ExpertSetup& e = ex[i];
      const DeviceWeights w1[2] = {named(e.gate, i, 0), named(e.up, i, 1)};
      const DeviceWeights w2[1] = {named(e.down, i, 2)};
      dev->dots(e.x1, kRows, w1, out1.data(), nullptr);
      dev->dots(e.x2, kRows, w2, out2.data(), nullptr);
    }
  };
  all();  // context, module load, buffer growth
  for (auto _ : state) {
    all();
    benchmark::DoNotOptimize(out1.data());
    benchmark::DoNotOptimize(out2.data());
  }
  set_macs(state);
}
void BM_OracleDotsGpu(benchmark::State& state) { run_gpu_dots(state, false); }
void BM_OracleDotsGpuResident(benchmark::State& state) { run_gpu_dots(state, true); }
BENCHMARK(BM_OracleDotsGpu)->Name("BM_OracleDots/M/gpu")->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_OracleDotsGpuResident)
    ->Name("BM_OracleDots/M/gpu/resident")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

}  // namespace
}  // namespace moefuzz
