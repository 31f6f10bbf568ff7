#pragma once
// Options given before (or, through CLI11 fallthrough, after) the subcommand, shared by every
// command: `moefuzz --max-case-bytes 8000000000 show corpora/examples/deepseek_v3.moefuzz`.
//
// Example (in a command's callback):
//   const auto r = moefuzz::parse_recipe_file(path, moefuzz::cli::global_options().max_case_bytes);
#include <cstdint>
#include <string>

#include "core/memory_budget.h"
#include "core/recipe.h"

namespace moefuzz::cli {

struct GlobalOptions {
  // Upper bound on the bytes one case may materialize (estimate_case_bytes); larger recipes are
  // rejected with exit 2 before anything is allocated. By default a quarter of the memory available
  // at start (core/memory_budget.h derives the fraction).
  int64_t max_case_bytes = default_max_case_bytes();
  // Where the oracle's W4A4 GEMM dots run: "cpu" or "gpu" (oracles/gpu/gpu_exact_dots.h); empty:
  // MOEFUZZ_ORACLE_DEVICE, else "cpu". Installed once the command line is parsed.
  std::string oracle_device;
};

inline GlobalOptions& global_options() {
  static GlobalOptions options;
  return options;
}

}  // namespace moefuzz::cli
