#pragma once
// Loading a kernel plugin (.so implementing include/moefuzz/plugin.h): dlopen, look up
// moefuzz_plugin_entry, check the ABI version and the description. Anything wrong with the file is
// bad outside input: one InputError naming the file and what is wrong (exit 2 in the CLI).
//
// The plugin is first loaded in a forked child (kernels/isolated_run.h), so a library whose
// constructors or entry function crash or hang is reported as an InputError instead of taking
// moefuzz down; only a plugin that loaded cleanly there is loaded into the moefuzz process.
//
// Example:
//   std::shared_ptr<const moefuzz::LoadedPlugin> p = moefuzz::load_plugin("./libmine.so");
//   std::cout << p->name << " claims " << p->profile << "\n";
//   if (p->implements(MOEFUZZ_STAGE_ROUTE)) p->api->route(&desc, &ids, &weights);  // via PluginKernel
#include <chrono>
#include <memory>
#include <string>

#include "kernels/kernel.h"
#include "moefuzz/plugin.h"

namespace moefuzz {

struct LoadedPlugin {
  std::string path;
  const moefuzz_plugin_v1* api = nullptr;  // static storage inside the library
  std::string name;
  std::string profile;
  std::string description;
  KernelClaims claims;
  uint32_t stages = 0;  // MOEFUZZ_STAGE_* bits
  bool wants_device = false;

  bool implements(uint32_t stage_bit) const { return (stages & stage_bit) != 0; }
  // "layer" or a comma list of the implemented stages ("route,combine").
  std::string stage_list() const;
};

// The library stays loaded for the life of the process (no dlclose: a plugin's static state and
// thread-locals may outlive any one kernel object). `probe_timeout` bounds the isolated trial load.
std::shared_ptr<const LoadedPlugin> load_plugin(
    const std::string& path, std::chrono::milliseconds probe_timeout = std::chrono::seconds(30));

}  // namespace moefuzz
