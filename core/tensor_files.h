#pragma once
// The tensor files of a run (--weights / --inputs) described once, and a drawn recipe fitted to them:
// `moefuzz check --weights` draws recipes as usual and then takes the layer's dimensions from the
// files, so every case checks the real tensors (docs/weights.md).
//
// Example:
//   moefuzz::ExternalTensors files{.weights = "layer.safetensors", .weights_layer = 3};
//   moefuzz::TensorFiles t = moefuzz::describe_tensor_files(files);   // InputError on a bad file
//   moefuzz::fit_recipe_to_files(recipe, t);   // experts, hidden, inter, tokens, files
#include <cstdint>
#include <optional>

#include "core/captured_inputs.h"
#include "core/modelopt_layer.h"
#include "core/recipe.h"

namespace moefuzz {

struct TensorFiles {
  ExternalTensors files;
  std::optional<ModelOptLayer> layer;         // when files.weights is set
  std::optional<CapturedInputsShape> inputs;  // when files.inputs is set
  int64_t max_token_id = -1;                  // largest captured token id (-1: none)
};

// Opens and checks the named files (headers, the layer's every tensor, the inputs' tensors; token
// ids are read to find the largest). Weights and inputs must agree on the hidden size, and on the
// expert count when the inputs carry router logits. Throws InputError.
TensorFiles describe_tensor_files(const ExternalTensors& files);

// The recipe with the files' dimensions: experts, hidden and inter of the layer (hidden and, with
// router logits, experts of the inputs when there are no weights); tokens at most the captured
// ones; shared experts only if the layer has one; top_k, groups and the hash vocabulary adjusted to
// stay valid. Edits are left for the caller to re-fit (properties/shrinker.h fit_edits).
void fit_recipe_to_files(CaseRecipe& r, const TensorFiles& t);

}  // namespace moefuzz
