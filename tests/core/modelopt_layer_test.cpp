// Real weights (core/modelopt_layer.h, core/captured_inputs.h, core/pinned_files.h): a generated
// case written as a ModelOpt NVFP4 checkpoint plus captured inputs loads back bit-identical; a
// smaller shape loads the leading slices; a bad checkpoint is one InputError; a pinned file that
// changed is refused.
#include "core/modelopt_layer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/bf16.h"
#include "core/captured_inputs.h"
#include "core/errors.h"
#include "core/global_scale.h"
#include "core/pinned_files.h"
#include "core/recipe_text.h"
#include "core/sha256.h"
#include "core/tensor_files.h"
#include "support/modelopt_checkpoint.h"

namespace {

namespace fs = std::filesystem;
using namespace moefuzz;

CaseRecipe deepseek_like() {
  CaseRecipe r;
  r.seed = 77;
  r.shape = {.tokens = 4,
             .hidden = 64,
             .inter = 32,
             .experts = 8,
             .top_k = 2,
             .n_group = 4,
             .topk_group = 2,
             .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.routed_scaling_factor = 2.5;
  r.quant.act_scales = ActScaleMode::kPerExpert;
  return r;
}

class ModelOptLayerTest : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("modelopt_layer_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  // Materializes `r` with the files named, and returns the case with r's recipe (for comparison).
  Case load(CaseRecipe r, const std::string& weights, int layer, const std::string& inputs,
            W13Order order = W13Order::kGateUp) {
    const CaseRecipe plain = r;
    r.files.weights = weights;
    r.files.weights_layer = layer;
    r.files.weights_w13 = order;
    r.files.inputs = inputs;
    Case c = materialize(r);
    EXPECT_EQ(c.recipe.files, r.files);
    c.recipe = plain;
    return c;
  }
};

TEST_F(ModelOptLayerTest, W4A16CheckpointAndInputsRoundTripBitIdentical) {
  const CaseRecipe r = deepseek_like();
  const Case original = materialize(r);
  ASSERT_FALSE(original.bias.empty());
  // No input_scale: the loaded case calibrates a1/a2 as the drawn one did, over the same tensors.
  write_safetensors(path("w.safetensors"),
                    modelopt_layer_tensors(original, {.layer = 5, .input_scales = false, .router = true}));
  write_safetensors(path("in.safetensors"), captured_input_tensors(original));
  const Case loaded = load(r, path("w.safetensors"), 5, path("in.safetensors"));
  EXPECT_TRUE(loaded == original);
  EXPECT_EQ(content_hash(loaded), content_hash(original));
  // The tensors come from the files, not from the seed: under another seed they are still the same.
  CaseRecipe other = r;
  other.seed = 78;
  ASSERT_FALSE(materialize(other).experts == original.experts);
  const Case from_files = load(other, path("w.safetensors"), 5, path("in.safetensors"));
  EXPECT_TRUE(from_files.experts == original.experts);
  EXPECT_EQ(from_files.hidden, original.hidden);
  EXPECT_EQ(from_files.logits, original.logits);
  EXPECT_EQ(from_files.bias, original.bias);
}

TEST_F(ModelOptLayerTest, InputScalesBecomeQuantizationScales) {
  for (ActScaleMode mode : {ActScaleMode::kPerExpert, ActScaleMode::kGlobal}) {
    CaseRecipe r = deepseek_like();
    r.quant.act_scales = mode;
    const Case original = materialize(r);
    write_safetensors(path("w.safetensors"), modelopt_layer_tensors(original, {.scalar_shape_empty = true}));
    const Case loaded = load(r, path("w.safetensors"), 0, "");
    Case expected = original;  // the checkpoint stores S_d = fl(1/S_q); the case takes fl(1/S_d) back
    for (auto* v : {&expected.a1_scale, &expected.a2_scale})
      for (float& s : *v) s = quant_scale_from_dequant_scale(dequant_scale_from_quant_scale(s));
    EXPECT_TRUE(loaded == expected) << name_of(mode);
  }
}

TEST_F(ModelOptLayerTest, FusedW13InBothOrders) {
  CaseRecipe r = deepseek_like();
  r.shape.shared_experts = 0;
  const Case original = materialize(r);
  for (W13Order order : {W13Order::kGateUp, W13Order::kUpGate}) {
    write_safetensors(
        path("w.safetensors"),
        modelopt_layer_tensors(original, {.fused_w13 = true, .w13_order = order, .input_scales = false}));
    EXPECT_TRUE(load(r, path("w.safetensors"), 0, "", order).experts == original.experts) << name_of(order);
    // Read in the other order, gate and up trade places: the order is not guessed.
    const Case swapped = load(r, path("w.safetensors"), 0, "",
                              order == W13Order::kGateUp ? W13Order::kUpGate : W13Order::kGateUp);
    EXPECT_TRUE(swapped.experts[0].gate == original.experts[0].up);
  }
}

TEST_F(ModelOptLayerTest, SmallerShapeLoadsLeadingSlices) {
  CaseRecipe r = deepseek_like();
  r.quant.act_scales = ActScaleMode::kGlobal;
  const Case full = materialize(r);
  write_safetensors(path("w.safetensors"), modelopt_layer_tensors(full, {.layer = 2}));
  write_safetensors(path("in.safetensors"), captured_input_tensors(full));
  CaseRecipe small = r;
  small.shape = {.tokens = 2,
                 .hidden = 32,
                 .inter = 16,
                 .experts = 4,
                 .top_k = 2,
                 .n_group = 2,
                 .topk_group = 1,
                 .shared_experts = 1};
  const Case c = load(small, path("w.safetensors"), 2, path("in.safetensors"));
  for (int64_t e = 0; e < 5; ++e) {
    const auto& got = c.experts[static_cast<size_t>(e)];
    const auto& want = full.experts[static_cast<size_t>(e == 4 ? 8 : e)];  // expert 4 = the shared one
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t h = 0; h < 32; ++h) {
        ASSERT_EQ(got.gate.code(i, h), want.gate.code(i, h));
        ASSERT_EQ(got.up.code(i, h), want.up.code(i, h));
        ASSERT_EQ(got.down.code(h, i), want.down.code(h, i));
        ASSERT_EQ(got.gate.scale(i, h / 16), want.gate.scale(i, h / 16));
        ASSERT_EQ(got.down.scale(h, i / 16), want.down.scale(h, i / 16));
      }
    EXPECT_EQ(got.gate.global_dequant, want.gate.global_dequant);
  }
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t h = 0; h < 32; ++h) EXPECT_EQ(c.hidden[t * 32 + h], full.hidden[t * 64 + h]);
    for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(c.logits[t * 4 + e], full.logits[t * 8 + e]);
  }
  // The global activation scale is the loaders' max over all routed experts of the file, not the slice.
  EXPECT_EQ(
      c.a1_scale,
      (std::vector<float>{quant_scale_from_dequant_scale(dequant_scale_from_quant_scale(full.a1_scale[0]))}));
}

TEST_F(ModelOptLayerTest, RouterWeightGivesLogitsWhenInputsHaveNone) {
  const CaseRecipe r = deepseek_like();
  const Case original = materialize(r);
  write_safetensors(path("w.safetensors"), modelopt_layer_tensors(original, {.router = true}));
  write_safetensors(path("in.safetensors"), captured_input_tensors(original, /*logits=*/false));
  const Case c = load(r, path("w.safetensors"), 0, path("in.safetensors"));
  for (int64_t t = 0; t < 4; ++t) {
    double sum = 0;  // gate.weight is 1/64 everywhere
    for (int64_t h = 0; h < 64; ++h) sum += bf16_to_float(original.hidden[t * 64 + h]) / 64.0;
    for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(c.logits[t * 8 + e], static_cast<float>(sum));
  }
  EXPECT_EQ(c.bias, original.bias);
}

TEST_F(ModelOptLayerTest, CapturedTokenIdsFeedHashRouting) {
  CaseRecipe r;
  r.seed = 3;
  r.routing.mode = RoutingMode::kHash;
  const Case original = materialize(r);
  ASSERT_FALSE(original.token_ids.empty());
  TensorMap in = captured_input_tensors(original);
  std::vector<int32_t> ids(original.token_ids.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 5 + 1) % r.hash_vocab());
  in["token_ids"].bytes = i32_bytes(ids);
  write_safetensors(path("in.safetensors"), in);
  EXPECT_EQ(load(r, "", 0, path("in.safetensors")).token_ids, ids);
  ids[1] = static_cast<int32_t>(r.hash_vocab());  // outside the recipe's vocabulary
  in["token_ids"].bytes = i32_bytes(ids);
  write_safetensors(path("in.safetensors"), in);
  try {
    (void)load(r, "", 0, path("in.safetensors"));
    ADD_FAILURE() << "an id outside the vocabulary was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the recipe's hash vocabulary"), std::string::npos)
        << e.what();
  }
  // check fits the vocabulary to the captured ids.
  const TensorFiles t = describe_tensor_files({.inputs = path("in.safetensors")});
  EXPECT_EQ(t.max_token_id, r.hash_vocab());
  CaseRecipe fitted = r;
  fit_recipe_to_files(fitted, t);
  EXPECT_EQ(fitted.routing.vocab, r.hash_vocab() + 1);
  EXPECT_EQ(materialize(fitted).token_ids, ids);
}

TEST_F(ModelOptLayerTest, BadCheckpointsAreOneClearError) {
  const CaseRecipe r = deepseek_like();
  const Case original = materialize(r);
  const auto rejected = [&](TensorMap m, const std::string& needle, CaseRecipe rr) {
    write_safetensors(path("bad.safetensors"), m);
    try {
      (void)load(rr, path("bad.safetensors"), 0, "");
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const TensorMap good = modelopt_layer_tensors(original);
  CaseRecipe bigger = r;
  bigger.shape.experts = 16;
  bigger.shape.n_group = 4;
  rejected(good, "asks for 16 experts but layer 0 has 8", bigger);
  TensorMap m = good;
  m.erase("model.layers.0.mlp.experts.3.up_proj.weight");
  rejected(m, "no tensor 'model.layers.0.mlp.experts.3.up_proj.weight'", r);
  m = good;
  m["model.layers.0.mlp.experts.2.gate_proj.weight_scale"].dtype = "U16";
  m["model.layers.0.mlp.experts.2.gate_proj.weight_scale"].shape = {32, 2};
  rejected(m, "dtype U16 where F8_E4M3 or U8 is expected", r);
  m = good;
  m["model.layers.0.mlp.experts.1.down_proj.weight"].shape = {16, 64};
  rejected(m, "shape [16, 64] where [64, 16] is expected", r);
  m = good;
  m["model.layers.0.mlp.experts.1.down_proj.input_scale"].bytes = f32_bytes({0.0f});
  rejected(m, "not a finite positive number", r);
  m.clear();
  rejected(m, "no MoE layer 0", r);
  write_safetensors(path("l7.safetensors"), modelopt_layer_tensors(original, {.layer = 7}));
  try {
    (void)load(r, path("l7.safetensors"), 3, "");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MoE layers in the file: 7"), std::string::npos) << e.what();
  }
}

TEST_F(ModelOptLayerTest, RecipePinsFilesByHashAndFindsThemNextToIt) {
  const CaseRecipe r = deepseek_like();
  write_safetensors(path("w.safetensors"), modelopt_layer_tensors(materialize(r)));
  CaseRecipe pinned = r;
  pinned.files.weights = "w.safetensors";  // relative: found next to the recipe file
  pinned.files.weights_sha256 = sha256_file(path("w.safetensors"));
  const std::string text = to_text(pinned);
  EXPECT_NE(text.find("weights = w.safetensors\nweights_sha256 = " + pinned.files.weights_sha256),
            std::string::npos);
  EXPECT_EQ(parse_recipe(text, "<t>"), pinned);
  EXPECT_EQ(to_text(r).find("\nweights"), std::string::npos);  // no files: the text is as before
  std::ofstream(path("r.moefuzz")) << text;
  const CaseRecipe back = parse_recipe_file(path("r.moefuzz"));
  EXPECT_EQ(back.files.weights, path("w.safetensors"));
  EXPECT_NO_THROW((void)materialize(back));
  // The file changes: the recipe is refused, naming both hashes.
  write_safetensors(path("w.safetensors"), modelopt_layer_tensors(materialize(r), {.input_scales = false}));
  try {
    (void)parse_recipe_file(path("r.moefuzz"));
    ADD_FAILURE() << "a changed weights file was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("but the recipe pins " + pinned.files.weights_sha256),
              std::string::npos)
        << e.what();
  }
  for (const char* bad : {"weights_sha256 = abc", "weights_layer = -1", "weights_w13 = sideways"}) {
    std::string t = to_text(pinned);
    const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
    const size_t at = t.find(key + " = ");
    t.replace(at, t.find('\n', at) - at, bad);
    EXPECT_THROW((void)parse_recipe(t, "<t>"), InputError) << bad;
  }
}

TEST_F(ModelOptLayerTest, FitRecipeTakesTheFilesDimensions) {
  const CaseRecipe r = deepseek_like();
  write_safetensors(path("w.safetensors"), modelopt_layer_tensors(materialize(r), {.layer = 4}));
  ExternalTensors files{.weights = path("w.safetensors"), .weights_layer = 4};
  const TensorFiles t = describe_tensor_files(files);
  CaseRecipe drawn;  // softmax, 8 tokens, H 128, I 64, 6 experts, k 3
  drawn.shape = {
      .tokens = 8, .hidden = 128, .inter = 64, .experts = 6, .top_k = 3, .n_group = 3, .topk_group = 2};
  fit_recipe_to_files(drawn, t);
  EXPECT_EQ(drawn.shape.experts, 8);
  EXPECT_EQ(drawn.shape.hidden, 64);
  EXPECT_EQ(drawn.shape.inter, 32);
  EXPECT_EQ(drawn.shape.n_group, 1);  // 3 does not divide 8
  EXPECT_EQ(drawn.files, files);
  EXPECT_EQ(validate(drawn), "");
  EXPECT_NO_THROW((void)materialize(drawn));
}

}  // namespace
