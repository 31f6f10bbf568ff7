#pragma once
// REPRO lines that run as printed, from any directory: the moefuzz program as the user can type it
// (`moefuzz` only when PATH finds this very binary, else its absolute path) and absolute file and
// plugin paths, shell-quoted when needed.
//
// Example:
//   repro_replay_command("out/finding-001-ORACLE_layer.moefuzz", "cpu")
//   // -> "/home/u/moefuzz/build/release/bin/moefuzz replay /home/u/out/finding-001-ORACLE_layer.moefuzz
//   //     --kernel cpu"
#include <string>

namespace moefuzz {

// The command that starts moefuzz: "moefuzz" when PATH resolves that name to the running moefuzz
// binary, else the binary's absolute path. A process that is not moefuzz (a fuzzer, a test) names the
// `moefuzz` next to its own executable when there is one (build/<preset>/bin/ holds both).
const std::string& repro_program();

// `<program> replay <absolute recipe> --kernel <kernel>`, each word quoted for a POSIX shell if needed.
// The kernel name is used as given: a plugin path should already be absolute
// (kernels/kernel_name.h stored_kernel_name).
std::string repro_replay_command(const std::string& recipe_path, const std::string& kernel_name);

// A word a POSIX shell reads back unchanged: as is when it only holds safe characters, else in single
// quotes.
std::string shell_quote(const std::string& word);

}  // namespace moefuzz
