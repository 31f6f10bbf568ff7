#pragma once
// One MoE layer of a ModelOpt NVFP4 checkpoint (safetensors) as a case's weights (docs/weights.md).
//
// Accepted tensor names, with P = "<anything>layers.{N}.mlp." (e.g. "model.layers.3.mlp."):
//   P experts.{e}.gate_proj.* , P experts.{e}.up_proj.* , P experts.{e}.down_proj.*   (per projection)
//   P experts.{e}.gate_up_proj.* , P experts.{e}.down_proj.*          (fused w13, order: W13Order)
//   P shared_experts.{gate,up,down}_proj.*                             (optional, one shared expert)
//   P gate.weight [E, H] bf16/f32, P gate.e_score_correction_bias [E] f32/bf16   (optional router)
// and per projection:
//   .weight          U8 [rows, cols/2]   packed E2M1 codes, low nibble = even column (ModelOpt packing)
//   .weight_scale    F8_E4M3 or U8 [rows, cols/16]   linear (not swizzled) block scales
//   .weight_scale_2  F32, one element    S_d of the matrix
//   .input_scale     F32, one element    activation S_d (optional: absent in W4A16 checkpoints)
// Experts are numbered 0..E-1 without gaps. Every expert's tensors are checked (dtype, shape) when
// the layer is found, from the header alone.
//
// A case takes the leading slice its shape asks for: experts 0..E'-1, gate/up rows 0..I'-1 and
// columns 0..H'-1, down rows 0..H'-1 and columns 0..I'-1 (whole 16-element blocks, so the block
// scales slice with them). Activation scales: a1 = fl(1/input_scale) of gate/up (their max), a2 =
// fl(1/input_scale) of down; per expert, or, for ActScaleMode::kGlobal, the max input_scale over all
// routed experts of the file (the loaders' w13_input_scale.max(), SPEC.md "MoE runtime scalars").
//
// Example:
//   moefuzz::SafetensorsFile f("layer.safetensors");
//   moefuzz::ModelOptLayer layer = moefuzz::find_modelopt_layer(f, 3, moefuzz::W13Order::kGateUp);
//   std::vector<moefuzz::ExpertWeights> w = moefuzz::load_modelopt_experts(f, layer, recipe);
#include <cstdint>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/safetensors.h"

namespace moefuzz {

struct ModelOptLayer {
  int64_t layer = 0;
  std::string prefix;  // "model.layers.3.mlp."
  int64_t experts = 0;
  int64_t hidden = 0;
  int64_t inter = 0;
  bool fused_w13 = false;
  W13Order w13_order = W13Order::kGateUp;
  bool has_shared = false;
  bool has_input_scales = false;  // on every routed expert's projections (and the shared one's)
  bool has_router_weight = false;
  bool has_bias = false;
};

// Layers N for which the file holds "layers.{N}.mlp.experts.0.", ascending.
std::vector<int64_t> modelopt_moe_layers(const SafetensorsFile& f);

// Finds and checks layer `layer`. Throws InputError naming the file, the tensor and what is wrong.
ModelOptLayer find_modelopt_layer(const SafetensorsFile& f, int64_t layer, W13Order fused_order);

// The routed experts 0..E'-1 then shared experts of recipe r (r.shape must fit inside the layer:
// InputError otherwise), sliced as described above.
std::vector<ExpertWeights> load_modelopt_experts(const SafetensorsFile& f, const ModelOptLayer& layer,
                                                 const CaseRecipe& r);

// What the layer's file sets besides the experts: the correction bias (when c.bias is materialized
// and the file has one), router logits = fl32(hidden . gate.weight) when `logits_from_router` and the
// file has gate.weight, and a1/a2 from input scales when the file has them.
void load_modelopt_router_and_scales(Case& c, const SafetensorsFile& f, const ModelOptLayer& layer,
                                     bool logits_from_router);

}  // namespace moefuzz
