#include "kernels/plugin_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstring>

#include "core/errors.h"
#include "kernels/isolated_run.h"

namespace moefuzz {
namespace {

constexpr uint32_t kKnownStages = MOEFUZZ_STAGE_LAYER | MOEFUZZ_STAGE_ROUTE | MOEFUZZ_STAGE_QUANTIZE |
                                  MOEFUZZ_STAGE_GEMM1 | MOEFUZZ_STAGE_ACTIVATION | MOEFUZZ_STAGE_GEMM2 |
                                  MOEFUZZ_STAGE_COMBINE;
// Bound on strings read from the plugin: a missing terminator must not make us read forever.
constexpr size_t kMaxPluginString = 4096;

struct StageSlot {
  uint32_t bit;
  const char* name;
  bool (*present)(const moefuzz_plugin_v1&);
};
constexpr StageSlot kStageSlots[] = {
    {MOEFUZZ_STAGE_LAYER, "layer", [](const moefuzz_plugin_v1& p) { return p.layer != nullptr; }},
    {MOEFUZZ_STAGE_ROUTE, "route", [](const moefuzz_plugin_v1& p) { return p.route != nullptr; }},
    {MOEFUZZ_STAGE_QUANTIZE, "quantize", [](const moefuzz_plugin_v1& p) { return p.quantize != nullptr; }},
    {MOEFUZZ_STAGE_GEMM1, "gemm1", [](const moefuzz_plugin_v1& p) { return p.gemm1 != nullptr; }},
    {MOEFUZZ_STAGE_ACTIVATION, "activation",
     [](const moefuzz_plugin_v1& p) { return p.activation != nullptr; }},
    {MOEFUZZ_STAGE_GEMM2, "gemm2", [](const moefuzz_plugin_v1& p) { return p.gemm2 != nullptr; }},
    {MOEFUZZ_STAGE_COMBINE, "combine", [](const moefuzz_plugin_v1& p) { return p.combine != nullptr; }},
};

std::string bounded_string(const char* s, const std::string& field, const std::string& who, bool required) {
  if (s == nullptr) {
    if (required) throw InputError(who + ": field '" + field + "' is NULL");
    return "";
  }
  const size_t n = strnlen(s, kMaxPluginString);
  if (n == kMaxPluginString) throw InputError(who + ": field '" + field + "' is not a terminated string");
  if (required && n == 0) throw InputError(who + ": field '" + field + "' is empty");
  return std::string(s, n);
}

// dlopen + entry + every check; the same function runs in the probe child and in the parent.
LoadedPlugin open_and_validate(const std::string& path) {
  const std::string who = "plugin '" + path + "'";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(who + ": no such file");
  if (!S_ISREG(st.st_mode)) throw InputError(who + ": not a regular file");
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    throw InputError(who + ": cannot load the shared library: " + (e ? e : "unknown dlopen error"));
  }
  void* sym = dlsym(handle, MOEFUZZ_PLUGIN_ENTRY_SYMBOL);
  if (sym == nullptr) {
    throw InputError(who + ": missing symbol '" MOEFUZZ_PLUGIN_ENTRY_SYMBOL
                           "' (export it with MOEFUZZ_PLUGIN_EXPORT from include/moefuzz/plugin.h)");
  }
  auto entry = reinterpret_cast<moefuzz_plugin_entry_fn>(sym);
  const moefuzz_plugin_v1* api = entry();
  if (api == nullptr) throw InputError(who + ": " MOEFUZZ_PLUGIN_ENTRY_SYMBOL "() returned NULL");
  if (api->abi_version != MOEFUZZ_PLUGIN_ABI_VERSION) {
    throw InputError(who + ": ABI version " + std::to_string(api->abi_version) +
                     ", but this moefuzz supports version " + std::to_string(MOEFUZZ_PLUGIN_ABI_VERSION) +
                     " (rebuild it against include/moefuzz/plugin.h)");
  }
  if (api->struct_size < sizeof(moefuzz_plugin_v1)) {
    throw InputError(who + ": struct_size " + std::to_string(api->struct_size) +
                     " is smaller than moefuzz_plugin_v1 (" + std::to_string(sizeof(moefuzz_plugin_v1)) +
                     " bytes)");
  }
  LoadedPlugin p;
  p.path = path;
  p.api = api;
  p.name = bounded_string(api->name, "name", who, true);
  p.profile = bounded_string(api->profile, "profile", who, true);
  p.description = bounded_string(api->description, "description", who, false);
  if (api->tactics < 1) throw InputError(who + ": tactics must be >= 1, got " + std::to_string(api->tactics));
  p.claims = {.deterministic = api->deterministic != 0,
              .batch_invariant = api->batch_invariant != 0,
              .tactics = api->tactics};
  if (api->stages == 0) throw InputError(who + ": 'stages' is 0: the plugin implements nothing");
  if ((api->stages & ~kKnownStages) != 0) {
    throw InputError(who + ": 'stages' has unknown bits (" + std::to_string(api->stages & ~kKnownStages) +
                     ")");
  }
  p.stages = api->stages;
  for (const StageSlot& s : kStageSlots) {
    if ((p.stages & s.bit) && !s.present(*api)) {
      throw InputError(who + ": declares stage '" + s.name + "' but its function pointer is NULL");
    }
  }
  p.wants_device = api->wants_device != 0;
  return p;
}

}  // namespace

std::string LoadedPlugin::stage_list() const {
  if (implements(MOEFUZZ_STAGE_LAYER)) return "layer";
  std::string out;
  for (const StageSlot& s : kStageSlots)
    if (s.bit != MOEFUZZ_STAGE_LAYER && implements(s.bit))
      out += (out.empty() ? "" : ",") + std::string(s.name);
  return out;
}

std::shared_ptr<const LoadedPlugin> load_plugin(const std::string& path_in,
                                                std::chrono::milliseconds probe_timeout) {
  // dlopen searches the library path for a name without '/'; a file named on the command line
  // means the file here.
  const std::string path = path_in.find('/') == std::string::npos ? "./" + path_in : path_in;
  try {
    run_isolated("plugin '" + path + "' (loading)", 0, IsolationLimits{probe_timeout}, [&](ResultWriter&) {
      open_and_validate(path);
      return std::string();
    });
  } catch (const KernelFault& f) {
    throw InputError(std::string(f.what()) + " (while loading the plugin; its constructors or " +
                     MOEFUZZ_PLUGIN_ENTRY_SYMBOL + "() failed)");
  }
  return std::make_shared<const LoadedPlugin>(open_and_validate(path));
}

}  // namespace moefuzz
