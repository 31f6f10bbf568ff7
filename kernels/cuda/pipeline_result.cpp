#include "kernels/cuda/pipeline_result.h"

#include "core/bf16.h"

namespace moefuzz::cuda {
namespace {

// Exposing every stage costs a host copy of each intermediate; above this a whole-case run returns
// the output and routing only.
constexpr int64_t kMaxExposedBytes = int64_t{1} << 30;

std::vector<float> widen(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_float(v[i]);
  return f;
}

}  // namespace

LayerResult pipeline_result(const MoePipeline& p, const std::vector<int64_t>& tokens, Exposure exposure) {
  const PipelineConfig& cfg = p.config();
  const int64_t n = static_cast<int64_t>(tokens.size()), H = cfg.hidden, I = cfg.inter;
  const int64_t S = cfg.all_slots(), R = cfg.routed_slots();
  LayerResult out;

  const MoePipeline::RunReadout run = p.read_run();
  out.output.resize(static_cast<size_t>(n * H));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < H; ++h) out.output[i * H + h] = bf16_to_float(run.output[tokens[i] * H + h]);
  out.routing.tokens = n;
  out.routing.slots = R;
  out.routing.ids.resize(static_cast<size_t>(n * R));
  out.routing.weights.resize(static_cast<size_t>(n * R));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < R; ++s) {
      out.routing.ids[i * R + s] = run.ids[tokens[i] * S + s];
      out.routing.weights[i * R + s] = run.weights[tokens[i] * S + s];
    }
  if (exposure == Exposure::kNone) return out;

  // Permuted rows of the routed pairs, in the result's (token, slot) order, and of the separate
  // shared expert's pairs.
  std::vector<int64_t> rows(static_cast<size_t>(n * R)), shared_rows;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < R; ++s) rows[i * R + s] = run.pair_row[tokens[i] * S + s];
  const bool values = exposure == Exposure::kAll;
  if (values && cfg.separate_shared > 0) {
    shared_rows.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) shared_rows[i] = run.pair_row[tokens[i] * S + R];
  }
  MoePipeline::StageReadout st = p.read_stages(rows, shared_rows, values, run.rows);
  if (cfg.fp8) {  // E4M3 codes and fp32 group scales, as the CPU kernel's FP8 path exposes them
    out.fc1_fp8 = std::move(st.fc1_fp8);
    out.fc2_fp8 = std::move(st.fc2_fp8);
  } else {
    out.fc1_input = {
        .rows = n * R, .cols = H, .packed = std::move(st.fc1_packed), .scales = std::move(st.fc1_scales)};
    out.fc2_input = {
        .rows = n * R, .cols = I, .packed = std::move(st.fc2_packed), .scales = std::move(st.fc2_scales)};
  }
  if (!values) return out;
  // GEMM1 in semantic [gate | up] order whatever the kernel's w13 order.
  std::vector<float> gemm1(st.gemm1.size());
  for (int64_t r = 0; r < n * R; ++r)
    for (int64_t c = 0; c < 2 * I; ++c) {
      const int64_t semantic = cfg.up_first ? (c < I ? c + I : c - I) : c;
      gemm1[r * 2 * I + semantic] = bf16_to_float(st.gemm1[r * 2 * I + c]);
    }
  out.gemm1 = std::move(gemm1);
  out.activation = widen(st.act);
  out.gemm2 = widen(st.gemm2);
  if (cfg.separate_shared > 0) out.shared_output = widen(st.shared);
  return out;
}

LayerResult run_whole_case(const PipelineConfig& cfg, const Case& c, Exposure exposure) {
  MoePipeline p(cfg);
  p.upload_case(c);
  p.run();
  const int64_t T = cfg.tokens;
  std::vector<int64_t> tokens(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) tokens[t] = t;
  // Per routed row: codes (1 byte) and bf16 stages (2 bytes) of H and 3I columns, as floats on the host.
  const bool fits = T * cfg.routed_slots() * (2 * cfg.hidden + 3 * cfg.inter) * 4 <= kMaxExposedBytes;
  return pipeline_result(p, tokens, fits ? exposure : Exposure::kNone);
}

}  // namespace moefuzz::cuda
