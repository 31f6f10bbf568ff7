#pragma once
// --weights FILE [--layer N] [--w13-order ORDER] [--inputs FILE]: real tensors for check, replay and
// shrink (docs/weights.md). check fits every drawn recipe to the files; replay and shrink keep the
// recipe's shape and replace the files it names (the files must be at least that large).
//
// Example (in a command):
//   static TensorFileArgs files;
//   add_tensor_file_options(cmd, files);
//   ... CaseRecipe r = load_recipe(path, files);   // the file's own pins, or --weights/--inputs
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/recipe.h"
#include "core/tensor_files.h"

namespace moefuzz::cli {

struct TensorFileArgs {
  std::string weights;
  int64_t layer = -1;  // -1: the only MoE layer of the file
  std::string w13_order = "gate_up";
  std::string inputs;
  bool given() const { return !weights.empty() || !inputs.empty(); }
};

void add_tensor_file_options(CLI::App* cmd, TensorFileArgs& a);

// The files as a recipe names them: absolute paths, their SHA-256, the layer (found when --layer is
// not given and the file holds one MoE layer), all checked (describe_tensor_files). InputError on a
// bad file, an ambiguous or missing layer, or --layer without --weights.
TensorFiles resolve_tensor_files(const TensorFileArgs& a);

// The options of `a` as REPRO words (absolute, shell-quoted paths; "" when none is given), so that a
// replay given --weights/--inputs prints a REPRO that replaces the same files.
std::string tensor_file_repro_args(const TensorFileArgs& a);

// A recipe file with the files of `a` in place of its own (when given; its pins are then not
// checked), else as parse_recipe_file reads it (pins checked).
CaseRecipe load_recipe(const std::string& path, const TensorFileArgs& a, int64_t max_case_bytes);

}  // namespace moefuzz::cli
