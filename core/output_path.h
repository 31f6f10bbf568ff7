#pragma once
// Output paths given on the command line (--json, --out, shrink -o), checked BEFORE a run starts so a
// bad one costs nothing (exit 2, nothing run), and written so that nothing but a regular file is ever
// replaced: a symlink, a pipe, a device or a directory at the path is refused, never overwritten.
// "-" means standard output.
//
// Example:
//   moefuzz::check_output_file(json_path);      // InputError (exit 2) before the campaign
//   moefuzz::check_output_dir(out_dir);         // creates it; InputError when it cannot
//   ...
//   moefuzz::write_output(json_path, text);     // atomically, or to stdout for "-"
#include <string>

namespace moefuzz {

// Throws InputError when `path` cannot take a new regular file: something other than a regular file
// is there, its folder is missing or not writable. "-" is always accepted.
void check_output_file(const std::string& path);
// Creates `dir` (mkdir -p) and throws InputError when it is not a writable directory.
void check_output_dir(const std::string& dir);
// Writes `content` to `path` atomically (core/atomic_file.h), or to stdout when path is "-".
void write_output(const std::string& path, const std::string& content);

}  // namespace moefuzz
