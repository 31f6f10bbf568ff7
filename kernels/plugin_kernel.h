#pragma once
// PluginKernel: a Kernel backed by a loaded plugin (.so, include/moefuzz/plugin.h). Every call into
// the plugin (supports and run_layer) happens in a forked child with a timeout
// (kernels/isolated_run.h): a crash, hang, early exit or error message from the plugin surfaces as
// a KernelFault, which the check engine reports as a finding; moefuzz keeps running.
//
// A plugin that implements the whole layer runs alone. A plugin that implements only some stages
// (say only `route`, or only `combine`) is composed with the built-in CPU pipeline
// (kernels/cpu/cpu_stages.h) for the others, under the profile the plugin claims; the LayerResult
// then carries every intermediate (routing, quantized rows, gemm1, activation, gemm2) so the
// oracle checks the plugin's stage where it happens.
//
// Example:
//   auto k = moefuzz::make_plugin_kernel("./libmine.so", {.timeout = std::chrono::seconds(5)});
//   if (k->supports(recipe).empty()) {
//     moefuzz::LayerResult out;
//     out.output.assign(T * H, poison);
//     try { k->run_layer(c, {}, out); }
//     catch (const moefuzz::KernelFault& f) { report(f.kind(), f.what()); }  // crash / timeout / ...
//   }
#include <chrono>
#include <memory>
#include <string>

#include "kernels/isolated_run.h"
#include "kernels/kernel.h"
#include "kernels/plugin_loader.h"

namespace moefuzz {

struct PluginKernelOptions {
  // Per call (supports, run_layer). make_kernel(path) takes it from MOEFUZZ_PLUGIN_TIMEOUT_S.
  std::chrono::milliseconds timeout{30000};
};

class PluginKernel : public Kernel {
 public:
  // Throws InputError for a plugin this build cannot run (device buffers without a CUDA path).
  PluginKernel(std::shared_ptr<const LoadedPlugin> plugin, PluginKernelOptions options);
  std::string name() const override { return plugin_->name; }
  std::string profile() const override { return plugin_->profile; }
  std::string description() const override;
  KernelClaims claims() const override { return plugin_->claims; }
  // The recipe's own validity, the CPU pipeline's domain for a stage plugin, then the plugin's
  // supports() (isolated). Throws KernelFault if the plugin's supports() crashes or hangs.
  std::string supports(const CaseRecipe& recipe) const override;
  // Throws KernelFault (crash, timeout, bad result, plugin-reported error) and InputError (a stage
  // plugin claiming a profile this build does not know).
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override;

  const LoadedPlugin& plugin() const { return *plugin_; }

 private:
  std::shared_ptr<const LoadedPlugin> plugin_;
  PluginKernelOptions options_;
};

// load_plugin + PluginKernel with the given options.
std::unique_ptr<Kernel> make_plugin_kernel(const std::string& path, PluginKernelOptions options);
// What make_kernel("./x.so") calls (kernels/registry.h): default options, with the timeout taken
// from MOEFUZZ_PLUGIN_TIMEOUT_S when set (seconds in [0.001, 86400]; InputError when malformed).
std::unique_ptr<Kernel> make_plugin_kernel(const std::string& path);

// The per-call timeout of kernels that run outside this process (plugins, Python kernels):
// MOEFUZZ_PLUGIN_TIMEOUT_S (seconds in [0.001, 86400]) when set, else `fallback`. Throws InputError
// when the variable is malformed.
std::chrono::milliseconds kernel_timeout_from_env(
    std::chrono::milliseconds fallback = std::chrono::seconds(30));

// True when the argument has the shape of a plugin path: it contains '/' or ends in ".so".
// make_kernel checks registry names first (mutants and composition cells contain '/').
bool looks_like_plugin_path(const std::string& name_or_path);

}  // namespace moefuzz
