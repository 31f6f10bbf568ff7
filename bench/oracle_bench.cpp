// Oracle benchmarks (docs/perf.md, section "Oracle"): the exact NVFP4 dot in ns per multiply-add, the
// whole-layer oracle on three shapes, and the pure cpp_bin_float_50 layer it is cross-checked against.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/profile.h"
#include "core/rng.h"
#include "kernels/registry.h"
#include "oracles/exact_dot.h"
#include "oracles/exact_dot_device.h"
#include "oracles/gpu/gpu_exact_dots.h"
#include "oracles/layer_ref.h"
#include "oracles/multiprecision_layer.h"
#include "oracles/stages/gemm_bounds.h"

namespace moefuzz {
namespace {

Nvfp4Matrix bench_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Nvfp4Matrix m(rows, cols);
  Stream s(seed, "bench");
  for (size_t i = 0; i < m.packed.size(); ++i) m.packed[i] = static_cast<uint8_t>(s.bits(i));
  for (size_t i = 0; i < m.scales.size(); ++i)
    m.scales[i] = static_cast<uint8_t>(s.uniform_int(1'000'000 + i, 0x30, 0x50));
  return m;
}

void BM_OracleDot(benchmark::State& state) {
  const int64_t k = state.range(0), rows = 64;
  const DecodedNvfp4 a = DecodedNvfp4::from_matrix(bench_matrix(1, k, 1));
  const DecodedNvfp4 w = DecodedNvfp4::from_matrix(bench_matrix(rows, k, 2));
  for (auto _ : state)
    for (int64_t r = 0; r < rows; ++r) benchmark::DoNotOptimize(exact_dot(a, 0, w, r));
  const double macs = static_cast<double>(state.iterations()) * static_cast<double>(rows * k);
  state.counters["ns_per_mac"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_OracleDot)->Arg(256)->Arg(2048)->Arg(7168);

// The layer oracle's kernel: `na` decoded activation rows against 64 PACKED weight rows per call
// (exact_dot_rows), ns per multiply-add.
void BM_OracleDotRows(benchmark::State& state) {
  const int64_t k = state.range(0), rows = 64;
  const int na = static_cast<int>(state.range(1));
  const DecodedNvfp4 a = DecodedNvfp4::from_matrix(bench_matrix(na, k, 1));
  const Nvfp4Matrix w = bench_matrix(rows, k, 2);
  ExactDot out[4];
  for (auto _ : state)
    for (int64_t r = 0; r < rows; ++r) {
      exact_dot_rows(a, 0, na, packed_row(w, r), out);
      benchmark::DoNotOptimize(out);
    }
  const double macs = static_cast<double>(state.iterations()) * static_cast<double>(rows * k * na);
  state.counters["ns_per_mac"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_OracleDotRows)->Args({2048, 1})->Args({2048, 2})->Args({2048, 4})->Args({7168, 4});

// Dense flip magnitudes (the unconditioned FC2 input): `na` weight vectors against 64 packed rows
// (weighted_abs_sum_rows), ns per multiply-add.
void BM_OracleFlipRows(benchmark::State& state) {
  const int64_t k = state.range(0), rows = 64;
  const int na = static_cast<int>(state.range(1));
  const Nvfp4Matrix w = bench_matrix(rows, k, 2);
  std::vector<std::vector<double>> r(8, std::vector<double>(static_cast<size_t>(k)));
  const double* rp[8];
  for (size_t j = 0; j < 8; ++j) {
    for (size_t i = 0; i < r[j].size(); ++i) r[j][i] = static_cast<double>((i * 7 + j) % 13) * 0x1p-10;
    rp[j] = r[j].data();
  }
  double out[8];
  for (auto _ : state)
    for (int64_t o = 0; o < rows; ++o) {
      weighted_abs_sum_rows(rp, na, packed_row(w, o), out);
      benchmark::DoNotOptimize(out);
    }
  const double macs = static_cast<double>(state.iterations()) * static_cast<double>(rows * k * na);
  state.counters["ns_per_mac"] =
      benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_OracleFlipRows)->Args({1024, 4})->Args({1024, 8})->Args({2048, 8});

struct LayerSetup {
  Case c;
  RoutingDecision routing;
};
LayerSetup layer_setup(Shape shape, RoutingMode mode) {
  LayerSetup s;
  CaseRecipe r;
  r.seed = 42;
  r.profile = "flashinfer-cutlass";
  r.shape = shape;
  r.routing.mode = mode;
  s.c = materialize(r);
  s.routing = {shape.tokens, shape.top_k, {}, {}};
  Stream st(7, "bench-routing");
  for (int64_t t = 0; t < shape.tokens; ++t)
    for (int64_t j = 0; j < shape.top_k; ++j) {
      s.routing.ids.push_back(
          static_cast<int32_t>((t * 7 + j * (shape.experts / shape.top_k)) % shape.experts));
      s.routing.weights.push_back(1.0f / static_cast<float>(shape.top_k));
    }
  return s;
}

// A dot device that costs nothing: it computes each call of a first evaluation on the CPU
// (exact_dot_rows and stages::flip_sum, what the GPU equals bit for bit) and replays them, call by
// call, in the evaluations after it. Timed after that first evaluation, it leaves the CPU's share of an
// evaluation whose dots and flip sums run on the GPU: the bound on what the GPU dots can gain,
// measurable without a GPU.
class ReplayDotDevice final : public ExactDotDevice {
 public:
  std::string name() const override { return "replay"; }
  void dots(const DecodedNvfp4& a, int64_t rows, std::span<const DeviceWeights> weights, RoundedDot* out,
            const DotFlips* flips) override {
    if (recording_) calls_.push_back(compute(a, rows, weights, flips));
    const Call& call = recording_ ? calls_.back() : calls_.at(next_++);
    size_t dots = 0;
    for (const DeviceWeights& w : weights) dots += static_cast<size_t>(rows * w.matrix->rows);
    if (call.dots.size() != dots || (flips != nullptr) != (call.flips.size() == dots))
      throw std::logic_error("ReplayDotDevice: a call differs from the recorded one");
    std::copy(call.dots.begin(), call.dots.end(), out);
    if (flips != nullptr) std::copy(call.flips.begin(), call.flips.end(), flips->out);
  }
  // An evaluation is over: the first one ends the recording; every later one must have made the
  // recorded calls, and the next call is the first of them again.
  void rewind() {
    if (!recording_ && next_ != calls_.size())
      throw std::logic_error("ReplayDotDevice: an evaluation made a different number of calls");
    recording_ = false;
    next_ = 0;
  }

 private:
  struct Call {
    std::vector<RoundedDot> dots;
    std::vector<double> flips;
  };
  static Call compute(const DecodedNvfp4& a, int64_t rows, std::span<const DeviceWeights> weights,
                      const DotFlips* flips) {
    Call c;
    for (const DeviceWeights& w : weights)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < w.matrix->rows; ++o) {
          ExactDot d;
          const PackedNvfp4Row row = packed_row(*w.matrix, o);
          exact_dot_rows(a, r, 1, row, &d);
          c.dots.push_back(RoundedDot::of(d));
          if (flips != nullptr) c.flips.push_back(stages::flip_sum(flips->rows[static_cast<size_t>(r)], row));
        }
    return c;
  }
  std::vector<Call> calls_;
  bool recording_ = true;
  size_t next_ = 0;
};

// `gpu`: the GEMM stages' exact dots on the GPU (oracles/gpu/gpu_exact_dots.h), the rest on the CPU.
// `replay`: on a ReplayDotDevice (the CPU share of the GPU path). `conditioned`: on the routing and
// exposed stages of the `cpu-flashinfer` kernel's run (the CPU pipeline under the same profile), every
// stage kept for comparison, as a check's baseline evaluation of a GPU kernel is.
void run_layer_bench(benchmark::State& state, Shape shape, RoutingMode mode, bool gpu = false,
                     bool replay = false, bool conditioned = false) {
  std::shared_ptr<ExactDotDevice> device;
  if (replay) device = std::make_shared<ReplayDotDevice>();
  if (gpu) {
    std::string why;
    if (!moefuzz::gpu::gpu_exact_dots_available(&why)) {
      state.SkipWithError(("no CUDA GPU: " + why).c_str());
      for (auto _ : state) {
      }
      return;
    }
    device = moefuzz::gpu::make_gpu_exact_dots();
  }
  const ScopedExactDotDevice on(device.get());
  LayerSetup s;
  try {
    s = layer_setup(shape, mode);
  } catch (const std::exception& e) {  // DSV3 weights (5.6 GB) exceed materialize's default limit
    state.SkipWithError(e.what());
    for (auto _ : state) {
    }
    return;
  }
  const Profile& p = profile_by_name("flashinfer-cutlass");
  LayerResult kernel;
  if (conditioned) {
    make_kernel("cpu-flashinfer")->run_layer(s.c, RunOptions{}, kernel);
    s.routing = kernel.routing;
  }
  const LayerResult* given = conditioned ? &kernel : nullptr;
  const LayerReferenceOptions opts{.keep_intermediates = conditioned};
  if (gpu ||
      replay)  // CUDA context, module load, buffer growth and the recording stay out of the timed region
    benchmark::DoNotOptimize(reference_layer(s.c, p, s.routing, given, opts));
  if (replay) static_cast<ReplayDotDevice*>(device.get())->rewind();
  for (auto _ : state) {
    benchmark::DoNotOptimize(reference_layer(s.c, p, s.routing, given, opts));
    if (replay) static_cast<ReplayDotDevice*>(device.get())->rewind();
  }
  const double macs = static_cast<double>(shape.tokens * shape.top_k * 3 * shape.inter * shape.hidden);
  state.counters["macs"] = macs;
  // Per GEMM multiply-add, as the FP8 layers of oracle_fp8_layer_bench.cpp (issue #17's comparison).
  state.counters["ns_per_mac"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * macs * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_OracleLayer_S(benchmark::State& st) {
  run_layer_bench(st, {.tokens = 8, .hidden = 256, .inter = 128, .experts = 16, .top_k = 4},
                  RoutingMode::kSoftmax);
}
void BM_OracleLayer_M(benchmark::State& st) {
  run_layer_bench(st, {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8},
                  RoutingMode::kSoftmax);
}
void BM_OracleLayer_M_Gpu(benchmark::State& st) {
  run_layer_bench(st, {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8},
                  RoutingMode::kSoftmax, /*gpu=*/true);
}
// DSV3 would need 5.6 GB of expert weights; as BM_CpuLayer/DSV3 does, only 16 experts carry weights
// (352 MB) and every token is routed among them (8 distinct experts per token), so the MAC count
// (T*k rows x 3*H*I) is the real one and weight decoding is amortized over 8 rows per expert.
void BM_OracleLayer_DSV3(benchmark::State& state) {
  constexpr int64_t T = 16, H = 7168, I = 2048, E = 256, k = 8, weighted = 16;
  LayerSetup s = layer_setup({.tokens = T, .hidden = H, .inter = I, .experts = weighted, .top_k = k},
                             RoutingMode::kSoftmax);
  s.c.recipe.shape.experts = E;
  s.c.recipe.shape.n_group = 8;
  s.c.recipe.shape.topk_group = 4;
  s.c.recipe.routing.mode = RoutingMode::kSigmoidGrouped;
  s.c.logits.assign(static_cast<size_t>(T * E), 0.0f);
  s.c.bias.assign(static_cast<size_t>(E), 0.0f);
  s.c.experts.resize(static_cast<size_t>(E));  // experts >= 16: no weights, never routed to
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j)
      s.routing.ids[static_cast<size_t>(t * k + j)] = static_cast<int32_t>((t * 7 + j * 2) % weighted);
  const Profile& p = profile_by_name("flashinfer-cutlass");
  for (auto _ : state)
    benchmark::DoNotOptimize(reference_layer(s.c, p, s.routing, nullptr, {.keep_intermediates = false}));
  state.counters["macs"] = static_cast<double>(T * k * 3 * I * H);
}
BENCHMARK(BM_OracleLayer_S)->Name("BM_OracleLayer/S")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleLayer_M)->Name("BM_OracleLayer/M")->Unit(benchmark::kMillisecond)->Iterations(2);
void BM_OracleLayer_M_Replay(benchmark::State& st) {
  run_layer_bench(st, {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8},
                  RoutingMode::kSoftmax, /*gpu=*/false, /*replay=*/true);
}
BENCHMARK(BM_OracleLayer_M_Replay)
    ->Name("BM_OracleLayer/M/free-device")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
void BM_OracleLayer_M_Conditioned_Replay(benchmark::State& st) {
  run_layer_bench(st, {.tokens = 128, .hidden = 2048, .inter = 1024, .experts = 64, .top_k = 8},
                  RoutingMode::kSoftmax, /*gpu=*/false, /*replay=*/true, /*conditioned=*/true);
}
BENCHMARK(BM_OracleLayer_M_Conditioned_Replay)
    ->Name("BM_OracleLayer/M/conditioned/free-device")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_OracleLayer_M_Gpu)
    ->Name("BM_OracleLayer/M/gpu-dots")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_OracleLayer_DSV3)->Name("BM_OracleLayer/DSV3")->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_MultiprecisionLayer_S(benchmark::State& state) {
  const LayerSetup s = layer_setup({.tokens = 8, .hidden = 256, .inter = 128, .experts = 16, .top_k = 4},
                                   RoutingMode::kSoftmax);
  const int64_t rows = 8 * 4;
  QuantizedRows q1{rows, 256, std::vector<uint8_t>(static_cast<size_t>(rows * 128), 0x21),
                   std::vector<uint8_t>(static_cast<size_t>(rows * 16), 0x38)};
  QuantizedRows q2{rows, 128, std::vector<uint8_t>(static_cast<size_t>(rows * 64), 0x21),
                   std::vector<uint8_t>(static_cast<size_t>(rows * 8), 0x38)};
  for (auto _ : state) benchmark::DoNotOptimize(multiprecision_layer(s.c, s.routing, q1, q2, false));
}
BENCHMARK(BM_MultiprecisionLayer_S)
    ->Name("BM_MultiprecisionLayer/S")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace moefuzz

// main() comes from the moefuzz_bench target (one BENCHMARK_MAIN for all bench files).
