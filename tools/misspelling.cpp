#include "tools/misspelling.h"

#include <fmt/format.h>

#include <algorithm>

namespace moefuzz::cli {
namespace {

// Levenshtein distance with adjacent transpositions (optimal string alignment): "chekc" is one edit
// from "check".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

// The option `name` ("--cases") on `app` or, through fallthrough, on one of its parents.
const CLI::Option* find_option(CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent())
    if (const CLI::Option* opt = app->get_option_no_throw(name)) return opt;
  return nullptr;
}

std::vector<std::string> long_names(CLI::App* app) {
  std::vector<std::string> out;
  for (; app != nullptr; app = app->get_parent())
    for (const CLI::Option* opt : app->get_options())
      for (const auto& n : opt->get_lnames()) out.push_back("--" + n);
  return out;
}

std::string command_path(CLI::App* app) {
  std::string path;
  for (; app != nullptr; app = app->get_parent())
    path = app->get_parent() == nullptr ? "moefuzz" + path : " " + app->get_name() + path;
  return path;
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is another word, not a typo.
  const size_t plausible = std::max<size_t>(1, word.size() / 3);
  return !best.empty() && best_distance <= plausible ? best : std::string();
}

std::string misspelling_message(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // everything after is positional
    if (arg.rfind("--", 0) == 0) {
      const std::string name = arg.substr(0, arg.find('='));
      const CLI::Option* opt = find_option(current, name);
      if (opt == nullptr) {
        const std::string near = nearest_name(name, long_names(current));
        return fmt::format("unknown option '{}' for '{}'{}", name, command_path(current),
                           near.empty() ? fmt::format(" ({} --help lists the options)", command_path(current))
                                        : fmt::format("; did you mean '{}'?", near));
      }
      // The next word is this option's value (unless given as --name=value): never a command.
      if (opt->get_type_size_max() > 0 && arg.find('=') == std::string::npos) ++i;
      continue;
    }
    if (arg.rfind("-", 0) == 0) {  // short options and negative numbers: CLI11 judges them
      continue;
    }
    if (current != &app) continue;  // a positional of the command (a file, ...)
    std::vector<std::string> names;
    for (CLI::App* sub : subcommands_of(app)) {
      if (sub->get_name() == arg) {
        current = sub;
        break;
      }
      names.push_back(sub->get_name());
    }
    if (current != &app) continue;
    const std::string near = nearest_name(arg, names);
    return fmt::format(
        "unknown command '{}'{}", arg,
        near.empty() ? " (moefuzz --help lists the commands)" : fmt::format("; did you mean '{}'?", near));
  }
  return "";
}

}  // namespace moefuzz::cli
