// moefuzz: differential testing and fuzzing of Mixture-of-Experts kernels. See README.md.
#include <iostream>

#include "core/errors.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"moefuzz: differential testing and fuzzing of MoE kernels (routing, NVFP4, grouped GEMM, combine)"};
  app.require_subcommand(1);
  int exit_code = moefuzz::kExitOk;
  moefuzz::cli::add_list_command(app, exit_code);
  moefuzz::cli::add_show_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return moefuzz::kExitUsage;  // every usage error is exit 2, whatever CLI11's own code
  } catch (const moefuzz::InputError& e) {
    std::cerr << "moefuzz: error: " << e.what() << "\n";
    return moefuzz::kExitUsage;
  }
  return exit_code;
}
