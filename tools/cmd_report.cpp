// moefuzz report DIR [-o FILE]: one self-contained HTML page (tools/html_report.h) for the output
// directory of a check, campaign or drift run; written to DIR/report.html unless -o. Exit 0, or 2
// for a directory that holds no moefuzz output.
#include <fmt/format.h>

#include <iostream>

#include "core/output_path.h"
#include "tools/commands.h"
#include "tools/html_report.h"

namespace moefuzz::cli {

void add_report_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("report", "One self-contained HTML page for a check, campaign or drift directory");
  static std::string dir, out;
  cmd->add_option("DIR", dir, "The --out directory of moefuzz check, campaign or drift")->required();
  cmd->add_option("-o,--output", out, "Where to write the page (default DIR/report.html)");
  cmd->callback([&exit_code] {
    const std::string page =
        render_report_page(dir);  // a bad DIR is an InputError before anything is written
    const std::string path = out.empty() ? dir + "/report.html" : out;
    check_output_file(path);
    write_output(path, page);
    std::cout << "wrote " << path << "\n";
    exit_code = 0;
  });
}

}  // namespace moefuzz::cli
