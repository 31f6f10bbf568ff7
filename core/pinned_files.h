#pragma once
// The files a recipe names (CaseRecipe::files: weights, captured inputs) pinned by path and SHA-256,
// so a finding written from a run with real tensors replays against the same bytes or not at all.
//
// Example:
//   moefuzz::pin_files(r.files);                       // absolute paths + their SHA-256 (check)
//   moefuzz::verify_pinned_files(r.files, "f.moefuzz");  // InputError when a hash differs (replay)
#include <string>

#include "core/recipe.h"

namespace moefuzz {

// Makes relative paths absolute against `base_dir` (a recipe file's directory; "" = the current
// directory). Paths stay as written otherwise (no symlink resolution).
void resolve_file_paths(ExternalTensors& files, const std::string& base_dir);

// Absolute paths and each named file's SHA-256 (replacing any hash already there).
void pin_files(ExternalTensors& files);

// For each file with a *_sha256: hashes the file and throws InputError "<origin>: weights file P
// has SHA-256 X, but the recipe pins Y" when they differ (or the file cannot be read).
void verify_pinned_files(const ExternalTensors& files, const std::string& origin);

}  // namespace moefuzz
