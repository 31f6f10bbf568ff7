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

  const std::vector<uint16_t> y = p.download_output();
  out.output.resize(static_cast<size_t>(n * H));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < H; ++h) out.output[i * H + h] = bf16_to_float(y[tokens[i] * H + h]);

  std::vector<int32_t> ids;
  std::vector<float> w;
  p.download_routing(ids, w);
  out.routing.tokens = n;
  out.routing.slots = R;
  out.routing.ids.resize(static_cast<size_t>(n * R));
  out.routing.weights.resize(static_cast<size_t>(n * R));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < R; ++s) {
      out.routing.ids[i * R + s] = ids[tokens[i] * S + s];
      out.routing.weights[i * R + s] = w[tokens[i] * S + s];
    }
  if (exposure == Exposure::kNone) return out;

  // Permuted rows of the routed pairs, in the result's (token, slot) order.
  const Permutation perm = p.download_permutation();
  std::vector<int64_t> rows(static_cast<size_t>(n * R));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < R; ++s) rows[i * R + s] = perm.pair_row[tokens[i] * S + s];

  auto quantized = [&](bool fc1) {
    QuantizedRows q;
    q.rows = n * R;
    q.cols = fc1 ? H : I;
    if (fc1)
      p.download_fc1_rows(rows, q.packed, q.scales);
    else
      p.download_fc2_rows(rows, q.packed, q.scales);
    return q;
  };
  if (cfg.fp8) {  // E4M3 codes and fp32 group scales, as the CPU kernel's FP8 path exposes them
    out.fc1_fp8 = p.download_fc1_fp8_rows(rows);
    out.fc2_fp8 = p.download_fc2_fp8_rows(rows);
  } else {
    out.fc1_input = quantized(true);
    out.fc2_input = quantized(false);
  }
  if (exposure == Exposure::kDecisions) return out;
  // GEMM1 in semantic [gate | up] order whatever the kernel's w13 order.
  const std::vector<uint16_t> g1 = p.download_gemm1_rows(rows);
  std::vector<float> gemm1(g1.size());
  for (int64_t r = 0; r < n * R; ++r)
    for (int64_t c = 0; c < 2 * I; ++c) {
      const int64_t semantic = cfg.up_first ? (c < I ? c + I : c - I) : c;
      gemm1[r * 2 * I + semantic] = bf16_to_float(g1[r * 2 * I + c]);
    }
  out.gemm1 = std::move(gemm1);
  out.activation = widen(p.download_act_rows(rows));
  out.gemm2 = widen(p.download_gemm2_rows(rows));
  if (cfg.separate_shared > 0) {
    std::vector<int64_t> shared_rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) shared_rows[i] = perm.pair_row[tokens[i] * S + R];
    out.shared_output = widen(p.download_gemm2_rows(shared_rows));
  }
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
