#pragma once
// Names a misspelled command or option before CLI11 parses (CLI11 would only say "A subcommand is
// required" or "The following arguments were not expected"), with the nearest known name.
//
// Example:
//   const std::string why = misspelling_message(app, argc, argv);
//   // `moefuzz chek` -> "unknown command 'chek'; did you mean 'check'?"
//   if (!why.empty()) { std::cerr << "moefuzz: error: " << why << "\n"; return kExitUsage; }
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace moefuzz::cli {

// "" when every command and long option on the command line is known; else one line naming the first
// unknown one and, when a known name is close (edit distance), that name.
std::string misspelling_message(CLI::App& app, int argc, const char* const* argv);

// The candidate nearest to `word` by edit distance when it is plausibly a typo of it, else "".
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace moefuzz::cli
