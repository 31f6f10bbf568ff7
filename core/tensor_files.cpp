#include "core/tensor_files.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"
#include "core/safetensors.h"

namespace moefuzz {

TensorFiles describe_tensor_files(const ExternalTensors& files) {
  TensorFiles t;
  t.files = files;
  if (!files.weights.empty()) {
    const SafetensorsFile f(files.weights);
    t.layer = find_modelopt_layer(f, files.weights_layer, files.weights_w13);
  }
  if (!files.inputs.empty()) {
    const SafetensorsFile f(files.inputs);
    t.inputs = describe_captured_inputs(f);
    if (t.inputs->has_token_ids) {
      const TensorInfo& ids = f.tensor(f.has("token_ids") ? "token_ids" : "input_ids");
      const int64_t size = safe_dtype_bytes(ids.dtype);
      constexpr int64_t kChunk = int64_t{1} << 16;  // ids per read: constant memory for any file
      for (int64_t first = 0; first < ids.shape[0]; first += kChunk) {
        const int64_t last = std::min(ids.shape[0], first + kChunk);
        const auto bytes = f.read_rows(ids, first, last, 0, size);
        for (int64_t i = 0; i < last - first; ++i) {
          int64_t v = 0;
          for (int64_t b = size - 1; b >= 0; --b) v = (v << 8) | bytes[static_cast<size_t>(i * size + b)];
          if (size == 4) v = static_cast<int32_t>(v);
          t.max_token_id = std::max(t.max_token_id, v);
        }
      }
    }
  }
  if (t.layer && t.inputs) {
    if (t.inputs->hidden != t.layer->hidden)
      throw InputError(fmt::format("{} has hidden size {} but layer {} of {} has {}", files.inputs,
                                   t.inputs->hidden, t.layer->layer, files.weights, t.layer->hidden));
    if (t.inputs->logit_experts > 0 && t.inputs->logit_experts != t.layer->experts)
      throw InputError(fmt::format("{} has router logits for {} experts but layer {} of {} has {}",
                                   files.inputs, t.inputs->logit_experts, t.layer->layer, files.weights,
                                   t.layer->experts));
  }
  return t;
}

void fit_recipe_to_files(CaseRecipe& r, const TensorFiles& t) {
  r.files = t.files;
  Shape& s = r.shape;
  if (t.inputs) {
    s.tokens = std::min(s.tokens, t.inputs->tokens);
    s.hidden = t.inputs->hidden;
    if (t.inputs->logit_experts > 0) s.experts = t.inputs->logit_experts;
    if (r.routing.mode == RoutingMode::kHash && t.max_token_id >= r.hash_vocab())
      r.routing.vocab = t.max_token_id + 1;
  }
  if (t.layer) {
    s.experts = t.layer->experts;
    s.hidden = t.layer->hidden;
    s.inter = t.layer->inter;
    if (!t.layer->has_shared) s.shared_experts = 0;
    s.shared_experts = std::min<int64_t>(s.shared_experts, 1);
  }
  s.top_k = std::clamp<int64_t>(s.top_k, 1, s.experts);
  if (s.n_group <= 0 || s.experts % s.n_group != 0) s.n_group = 1;
  s.topk_group = std::clamp<int64_t>(s.topk_group, 1, s.n_group);
}

}  // namespace moefuzz
