#pragma once
// Atomic file writes: content goes to a temporary file in the same folder, is flushed to disk and
// renamed over the target, so a finding is never lost or half-written (a campaign killed with
// SIGKILL leaves either the old file or the new one).
//
// Example:
//   moefuzz::write_file_atomically("out/finding-1.moefuzz", text);   // throws InputError on failure
#include <string>

namespace moefuzz {

// Throws InputError when something other than a regular file is at `path` (never replaced).
void write_file_atomically(const std::string& path, const std::string& content);
// mkdir -p; throws InputError naming the path on failure.
void make_directories(const std::string& path);

}  // namespace moefuzz
