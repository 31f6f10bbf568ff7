#pragma once
// Each moefuzz subcommand lives in its own tools/cmd_<name>.cpp and registers itself on the CLI11
// app through one of these functions (called from tools/main.cpp). A command's callback stores its
// exit code in `exit_code` (0 ok, 1 a check failed, 2 usage or input error).
#include <CLI/CLI.hpp>

namespace moefuzz::cli {

void add_list_command(CLI::App& app, int& exit_code);
void add_show_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
void add_mutants_command(CLI::App& app, int& exit_code);
void add_drift_command(CLI::App& app, int& exit_code);
void add_shrink_command(CLI::App& app, int& exit_code);
void add_campaign_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);

}  // namespace moefuzz::cli
