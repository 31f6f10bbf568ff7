// Benchmarks of the `cuda` kernel (built as moefuzz_cuda_bench when nvcc is found; a GPU is needed
// to run them). Results: docs/perf.md, section "GPU".
//
// BM_CudaCopyCeiling: device-to-device cudaMemcpy of 2 GiB (median of 10), the ceiling the GEMM
//   bandwidth is compared against; bytes_per_second counts bytes read + written.
// BM_CudaGemmDecode/T:<tokens>/tactic:<t>: GEMM1 + GEMM2 alone on DeepSeek-V3 decode shapes (H=7168,
//   I=2048, E=256, k=8, softmax routing; ~6.5 GB of random weights written on the device, never
//   zeros). Time: CUDA events, median of 20 replays after 3 warm-ups (manual time). Bytes: the weights
//   (codes + scales) of every expert with >= 1 token, bf16 activations read once and bf16 outputs
//   written once (MoePipeline::gemm_min_bytes); `pct_copy` is the bandwidth over the copy ceiling.
// BM_CudaLayer/M: one whole layer through the `cuda` kernel on the M shape (T=128, H=2048, I=1024,
//   E=64, k=8) as a check calls it: device allocation, upload, every stage, download of every exposed
//   stage. Beside BM_CpuLayer/M and BM_OracleLayer/M (moefuzz_bench) it is the cost split of a check.
//
// Example: build/release/bin/moefuzz_cuda_bench --benchmark_filter='GemmDecode/T:16/'
#include <benchmark/benchmark.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/recipe.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/cuda/pipeline_result.h"
#include "kernels/cuda/resident_experts.h"

namespace moefuzz {
namespace {

constexpr int64_t kCopyBytes = int64_t{2} << 30;

bool skip_without_gpu(benchmark::State& state) {
  std::string why;
  if (cuda::cuda_device_available(&why)) return false;
  state.SkipWithError(("no CUDA GPU present: " + why).c_str());
  return true;
}

double copy_ceiling_gbs() {
  static const double gbs = cuda::measure_copy_gbs(kCopyBytes, 10);
  return gbs;
}

void BM_CudaCopyCeiling(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  for (auto _ : state)
    state.SetIterationTime(2.0 * static_cast<double>(kCopyBytes) / (copy_ceiling_gbs() * 1e9));
  state.SetBytesProcessed(state.iterations() * 2 * kCopyBytes);
  state.SetLabel(cuda::cuda_device_name());
}
BENCHMARK(BM_CudaCopyCeiling)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CudaGemmDecode(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int64_t T = state.range(0);
  const int tactic = static_cast<int>(state.range(1));
  CaseRecipe r;
  r.shape = {.tokens = T, .hidden = 7168, .inter = 2048, .experts = 256, .top_k = 8};
  r.routing.mode = RoutingMode::kSoftmax;
  cuda::MoePipeline p(cuda::config_for(r, cuda_kernel_profile(), tactic));
  p.fill_random_device(1234 + T);
  p.run();  // routing and alignment: the GEMMs' tiles
  const double bytes = static_cast<double>(p.gemm_min_bytes());
  double seconds = 0;
  for (auto _ : state) {
    seconds = p.time_gemms_ms(20) * 1e-3;
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["MB"] = bytes / 1e6;
  state.counters["pct_copy"] = 100.0 * bytes / seconds / 1e9 / copy_ceiling_gbs();
}
BENCHMARK(BM_CudaGemmDecode)
    ->ArgNames({"T", "tactic"})
    ->ArgsProduct({{16, 32, 64, 128, 256}, {0, 1, 2}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The M shape of a check (T=128, H=2048, I=1024, E=64, k=8), softmax routing, rsf 2.5.
CaseRecipe m_recipe() {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.routing.mode = RoutingMode::kSoftmax;
  r.routing.routed_scaling_factor = 2.5;
  r.shape = {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8};
  return r;
}

void BM_CudaLayer_M(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const CaseRecipe r = m_recipe();
  static const Case c = materialize(r);
  const auto kernel = make_cuda_kernel();
  LayerResult warm;
  kernel->run_layer(c, {}, warm);  // CUDA context and module load
  for (auto _ : state) {
    LayerResult out;
    kernel->run_layer(c, {}, out);
    benchmark::DoNotOptimize(out.output.data());
  }
}
BENCHMARK(BM_CudaLayer_M)
    ->Name("BM_CudaLayer/M")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

// BM_CudaLayer/M/phases: the same run split where a check pays for it (milliseconds per run, wall):
// alloc (MoePipeline's device buffers), upload (MoePipeline::upload_case: host preparation and
// host-to-device copies), run (every stage, waiting for the copies still in flight) and download
// (pipeline_result: every exposed stage back on the host, as floats); first_upload_ms: upload and run
// of the case's first run, before its weights are resident.
void BM_CudaLayer_M_phases(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const CaseRecipe r = m_recipe();
  static const Case c = materialize(r);
  const cuda::PipelineConfig cfg = cuda::config_for(r, cuda_kernel_profile(), 0);
  CaseRecipe other = r;
  other.seed = r.seed + 1;
  (void)cuda::run_whole_case(cfg, materialize(other));  // CUDA context and module load
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  // The first upload of this case's weights (none resident yet: kernels/cuda/resident_experts.h).
  {
    cuda::MoePipeline p(cfg);
    const auto t0 = Clock::now();
    p.upload_case(c);
    p.run();
    state.counters["first_upload_ms"] = since(t0);
  }
  double ms[4] = {0, 0, 0, 0};
  const int64_t hits_before = cuda::thread_resident_experts().hits();
  for (auto _ : state) {
    auto t0 = Clock::now();
    cuda::MoePipeline p(cfg);
    ms[0] += since(t0);
    t0 = Clock::now();
    p.upload_case(c);
    ms[1] += since(t0);
    t0 = Clock::now();
    p.run();
    ms[2] += since(t0);
    t0 = Clock::now();
    std::vector<int64_t> tokens(static_cast<size_t>(r.shape.tokens));
    for (int64_t t = 0; t < r.shape.tokens; ++t) tokens[static_cast<size_t>(t)] = t;
    const LayerResult out = cuda::pipeline_result(p, tokens, cuda::Exposure::kAll);
    benchmark::DoNotOptimize(out.output.data());
    ms[3] += since(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["alloc_ms"] = ms[0] / n;
  state.counters["upload_ms"] = ms[1] / n;
  state.counters["run_ms"] = ms[2] / n;
  state.counters["download_ms"] = ms[3] / n;
  state.counters["resident_hits"] =
      static_cast<double>(cuda::thread_resident_experts().hits() - hits_before) / n;
}
BENCHMARK(BM_CudaLayer_M_phases)
    ->Name("BM_CudaLayer/M/phases")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

// BM_CudaLayer/M/downloads: pipeline_result's downloads one by one (milliseconds per call, wall, after
// a resident run), beside the whole of pipeline_result (`all_ms`; the difference is host-side work
// between the downloads: reordering GEMM1's halves, bf16 to float) and pipeline_result for a run
// for comparison (`decisions_ms`: routing, output and codes only, RunOptions::intermediates off).
void BM_CudaLayer_M_downloads(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const CaseRecipe r = m_recipe();
  static const Case c = materialize(r);
  const cuda::PipelineConfig cfg = cuda::config_for(r, cuda_kernel_profile(), 0);
  (void)cuda::run_whole_case(cfg, c);  // CUDA context, module load, resident weights
  using Clock = std::chrono::steady_clock;
  const char* names[] = {"output_ms", "routing_ms", "permutation_ms", "fc1_ms", "fc2_ms",
                         "gemm1_ms",  "act_ms",     "gemm2_ms",       "all_ms", "decisions_ms"};
  constexpr int kTimed = 10;
  double ms[kTimed] = {};
  for (auto _ : state) {
    cuda::MoePipeline p(cfg);
    p.upload_case(c);
    p.run();
    int i = 0;
    const auto timed = [&](auto&& f) {
      const auto t0 = Clock::now();
      f();
      if (i >= kTimed) throw std::logic_error("BM_CudaLayer/M/downloads: more timed steps than names");
      ms[i++] += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    std::vector<int64_t> rows;
    timed([&] { benchmark::DoNotOptimize(p.download_output().data()); });
    timed([&] {
      std::vector<int32_t> ids;
      std::vector<float> w;
      p.download_routing(ids, w);
    });
    timed([&] {
      const cuda::Permutation perm = p.download_permutation();
      rows.assign(perm.pair_row.begin(), perm.pair_row.end());
    });
    std::vector<uint8_t> packed, scales;
    timed([&] { p.download_fc1_rows(rows, packed, scales); });
    timed([&] { p.download_fc2_rows(rows, packed, scales); });
    timed([&] { benchmark::DoNotOptimize(p.download_gemm1_rows(rows).data()); });
    timed([&] { benchmark::DoNotOptimize(p.download_act_rows(rows).data()); });
    timed([&] { benchmark::DoNotOptimize(p.download_gemm2_rows(rows).data()); });
    std::vector<int64_t> tokens(static_cast<size_t>(r.shape.tokens));
    for (int64_t t = 0; t < r.shape.tokens; ++t) tokens[static_cast<size_t>(t)] = t;
    for (const cuda::Exposure e : {cuda::Exposure::kAll, cuda::Exposure::kDecisions})
      timed([&] { benchmark::DoNotOptimize(cuda::pipeline_result(p, tokens, e).output.data()); });
  }
  const double n = static_cast<double>(state.iterations());
  for (int i = 0; i < kTimed; ++i) state.counters[names[i]] = ms[i] / n;
}
BENCHMARK(BM_CudaLayer_M_downloads)
    ->Name("BM_CudaLayer/M/downloads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

}  // namespace
}  // namespace moefuzz

BENCHMARK_MAIN();
