#include "tools/tensor_file_options.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/errors.h"
#include "core/pinned_files.h"
#include "core/recipe_text.h"
#include "core/repro_command.h"
#include "core/safetensors.h"

namespace moefuzz::cli {

void add_tensor_file_options(CLI::App* cmd, TensorFileArgs& a) {
  cmd->add_option("--weights", a.weights, "ModelOpt NVFP4 safetensors file: the layer's expert weights")
      ->group("Real tensors (docs/weights.md)");
  cmd->add_option("--layer", a.layer, "MoE layer N of --weights (default: the file's only MoE layer)")
      ->check(CLI::NonNegativeNumber)
      ->group("Real tensors (docs/weights.md)");
  cmd->add_option("--w13-order", a.w13_order, "Half order of fused gate_up_proj tensors: gate_up | up_gate")
      ->check(CLI::IsMember({"gate_up", "up_gate"}))
      ->capture_default_str()
      ->group("Real tensors (docs/weights.md)");
  cmd->add_option("--inputs", a.inputs,
                  "safetensors file of captured hidden_states, router_logits, token_ids")
      ->group("Real tensors (docs/weights.md)");
}

TensorFiles resolve_tensor_files(const TensorFileArgs& a) {
  if (a.weights.empty() && a.layer >= 0) throw InputError("--layer needs --weights");
  ExternalTensors files;
  files.weights = a.weights;
  files.inputs = a.inputs;
  files.weights_w13 = a.w13_order == "up_gate" ? W13Order::kUpGate : W13Order::kGateUp;
  if (!files.weights.empty()) {
    if (a.layer >= 0) {
      files.weights_layer = a.layer;
    } else {
      const auto layers = modelopt_moe_layers(SafetensorsFile(a.weights));
      if (layers.size() != 1) {
        std::string list;
        for (int64_t n : layers) list += (list.empty() ? "" : ", ") + std::to_string(n);
        throw InputError(
            layers.empty()
                ? fmt::format("{}: no MoE layer (no tensor '...layers.N.mlp.experts.0....')", a.weights)
                : fmt::format("{}: MoE layers {}: choose one with --layer", a.weights, list));
      }
      files.weights_layer = layers.front();
    }
  }
  pin_files(files);
  return describe_tensor_files(files);
}

std::string tensor_file_repro_args(const TensorFileArgs& a) {
  std::string out;
  auto path_arg = [&](const char* flag, const std::string& p) {
    if (!p.empty()) out += fmt::format(" {} {}", flag, shell_quote(std::filesystem::absolute(p).string()));
  };
  path_arg("--weights", a.weights);
  if (!a.weights.empty()) {
    if (a.layer >= 0) out += fmt::format(" --layer {}", a.layer);
    out += " --w13-order " + shell_quote(a.w13_order);
  }
  path_arg("--inputs", a.inputs);
  return out;
}

CaseRecipe load_recipe(const std::string& path, const TensorFileArgs& a, int64_t max_case_bytes) {
  if (!a.given()) return parse_recipe_file(path, max_case_bytes);
  CaseRecipe r = parse_recipe_file(path, max_case_bytes, /*verify_pinned=*/false);
  ExternalTensors files = resolve_tensor_files(a).files;
  // Only the files given replace the recipe's: `--inputs` alone keeps its weights (and their pin).
  if (a.weights.empty()) {
    files.weights = r.files.weights;
    files.weights_sha256 = r.files.weights_sha256;
    files.weights_layer = r.files.weights_layer;
    files.weights_w13 = r.files.weights_w13;
  }
  if (a.inputs.empty()) {
    files.inputs = r.files.inputs;
    files.inputs_sha256 = r.files.inputs_sha256;
  }
  r.files = files;
  verify_pinned_files(r.files, path);
  return r;
}

}  // namespace moefuzz::cli
