#pragma once
// Device-memory plugins (wants_device = 1, include/moefuzz/plugin.h): the run of one case inside
// the forked child of kernels/isolated_run.h. The case's tensors are copied to the device, every
// output is pre-filled on the device with the CANARY poison (RunOptions::poison_bits) between
// sentinel bands, the plugin is called with device pointers and a stream, and afterwards:
//   - a CUDA error (illegal address, failed launch) -> KernelFault device-error (oom for an
//     out-of-memory error);
//   - a store into a sentinel band -> KernelFault bad-result, except the layer output's trailing band,
//     which travels back with the output so the CANARY invariant reports it as on the host;
//   - any input tensor (case tensors and each stage's operands) that differs from the bytes moefuzz
//     uploaded -> KernelFault bad-result ("modified its input").
// Stage plugins are composed with the CPU pipeline (kernels/composed_pipeline.h): each stage's operands
// go to the device, its results come back.
//
// The device code lives in kernels/cuda/device_buffers.{h,cu} (built only with CUDA); without CUDA,
// device_plugins_built() is false and PluginKernel refuses such plugins at load (InputError).
//
// Example (the isolated body of PluginKernel::run_layer):
//   std::string err = moefuzz::run_device_plugin(plugin, profile, c, opts, res, y, slack);
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "kernels/kernel.h"
#include "kernels/plugin_loader.h"

namespace moefuzz {

// True when this build has the CUDA runtime (device-memory plugins can run where a GPU exists).
bool device_plugins_built();

// Throws InputError unless a CUDA device is usable: asked in a forked child (this process never
// initializes CUDA), once when the plugin is loaded, so a machine without a GPU is bad input (exit 2)
// before any case runs, never a finding. Without CUDA in the build: the build's refusal.
void require_usable_device(const LoadedPlugin& plugin, std::chrono::milliseconds timeout);

// Runs `plugin` on case `c` with device buffers: the whole layer when `profile` is null, else the
// plugin's stages composed with the CPU pipeline under `profile`. Fills `res` and the output `y`
// [T, H]; `y_slack` floats after y (the guarded trailing band, 0 when unguarded) receive the device
// band's first floats. Returns "" or the plugin's own error message; throws KernelFault as above (its
// message "bad-result: ..." / "device-error: ...": run_isolated prefixes the plugin's name) and
// InputError when no CUDA device is usable.
std::string run_device_plugin(const LoadedPlugin& plugin, const Profile* profile, const Case& c,
                              const RunOptions& opts, LayerResult& res, std::span<float> y, int64_t y_slack);

}  // namespace moefuzz
