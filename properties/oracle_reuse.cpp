#include "properties/oracle_reuse.h"

#include <cstring>
#include <optional>
#include <vector>

#include "core/expert_fingerprint.h"

namespace moefuzz {
namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
bool same_bits(const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b) {
  return a.has_value() == b.has_value() && (!a || same_bits(*a, *b));
}

bool same_codes(const std::optional<QuantizedRows>& a, const std::optional<QuantizedRows>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->rows == b->rows && a->cols == b->cols && same_bits(a->packed, b->packed) &&
         same_bits(a->scales, b->scales);
}

bool same_codes(const std::optional<Fp8GroupQuantized>& a, const std::optional<Fp8GroupQuantized>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->rows == b->rows && a->cols == b->cols && a->group == b->group && same_bits(a->codes, b->codes) &&
         same_bits(a->scales, b->scales);
}

}  // namespace

bool same_case(const Case& a, const Case& b) {
  if (!(a.recipe == b.recipe) || !same_bits(a.hidden, b.hidden) || !same_bits(a.logits, b.logits) ||
      !same_bits(a.bias, b.bias) || !same_bits(a.token_ids, b.token_ids) ||
      !same_bits(a.hash_table, b.hash_table) || !same_bits(a.a1_scale, b.a1_scale) ||
      !same_bits(a.a2_scale, b.a2_scale) || a.experts.size() != b.experts.size())
    return false;
  for (size_t e = 0; e < a.experts.size(); ++e)
    if (!a.experts.shares(e, b.experts) &&
        !(expert_content_hash(a.experts, e) == expert_content_hash(b.experts, e)))
      return false;
  return true;
}

bool same_decisions(const LayerResult& a, const LayerResult& b) {
  return a.routing.tokens == b.routing.tokens && a.routing.slots == b.routing.slots &&
         same_bits(a.routing.ids, b.routing.ids) && same_bits(a.routing.weights, b.routing.weights) &&
         same_codes(a.fc1_input, b.fc1_input) && same_codes(a.fc2_input, b.fc2_input) &&
         same_codes(a.fc1_fp8, b.fc1_fp8) && same_codes(a.fc2_fp8, b.fc2_fp8);
}

bool same_conditioning(const LayerResult& a, const LayerResult& b) {
  return same_decisions(a, b) && same_bits(a.gemm1, b.gemm1) && same_bits(a.activation, b.activation);
}

bool full_evaluation_is_decisions_only(const OracleEvaluation& full, const LayerResult& r) {
  // Exposed activation values condition GEMM2 where nothing quantizes the FC2 input (bf16 activations:
  // such a run exposes no FC2 codes; oracles/stages/quantize.h quantize_fc2).
  // FP8 layers quantize it: exposed FP8 codes condition GEMM2, as NVFP4 codes do.
  if (r.activation && !r.fc2_input && !r.fc2_fp8) return false;
  // Otherwise oracles/oracle.cpp reads GEMM1/activation values only after a failed admission
  // (first_broken_stage).
  return !full.admissibility.failed() || (!r.gemm1 && !r.activation);
}

}  // namespace moefuzz
