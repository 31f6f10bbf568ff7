#pragma once
// Device memory for device-memory plugins (wants_device = 1, include/moefuzz/plugin.h): the CUDA
// side of kernels/device_plugin.cpp. Allocations, host<->device copies, the CANARY poison fill and
// sentinel bands on the device, and the input-integrity check, on one stream of one device. No CUDA
// types appear here, so plain C++ files include it.
//
// Only ever used in the forked child of kernels/isolated_run.h: the moefuzz process itself never
// initializes CUDA for a plugin (a CUDA context does not survive fork), so every call starts with a
// fresh context and a device fault (illegal address, sticky error) dies with the child.
//
// Example (inside the isolated body):
//   moefuzz::cuda::DeviceSession s;                      // InputError when no GPU is usable
//   moefuzz::cuda::DeviceInput x(s, "logits", host.data(), host.size() * 4);
//   moefuzz::cuda::DeviceOutput y(s, "output", n * 4, poison_bits);   // poisoned, banded
//   plugin_call(x.data(), y.data(), s.stream());
//   s.synchronize("layer");                               // KernelFault kDeviceError on a CUDA error
//   std::string bad = y.band_violation();                 // "" when both bands hold the sentinel
//   y.download(host_out.data(), n * 4);
//   bool same = x.unchanged();
#include <cstddef>
#include <cstdint>
#include <string>

namespace moefuzz::cuda {

// Sentinel band on each side of every device output, in bytes: kernels/canary.h's band
// (kCanaryBandFloats = 128 floats), the widest N-tile overhang of the built-in kernels.
inline constexpr size_t kDeviceBandBytes = 128 * 4;

// One device and one stream for one isolated call. Device: CUDA's device 0 as the process sees it
// (CUDA_VISIBLE_DEVICES selects the physical one).
class DeviceSession {
 public:
  // Throws InputError ("no usable CUDA device: ...") when the runtime finds no GPU or no driver.
  DeviceSession();
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;
  void* stream() const { return stream_; }  // a cudaStream_t
  int ordinal() const { return ordinal_; }
  // Waits for the stream after the plugin's `stage` call; a CUDA error raised by the code under test
  // throws KernelFault (kDeviceError, or kOutOfMemory for cudaErrorMemoryAllocation), message
  // "device-error: CUDA error NAME (...) after the <stage> call" (run_isolated prefixes the plugin).
  void synchronize(const std::string& stage) const;
  // Waits for moefuzz's own uploads and fills before a plugin call, so a plugin that works on another
  // stream (its own, the legacy default) still sees them; a CUDA error here is moefuzz's (runtime_error).
  void ready() const;

 private:
  void* stream_ = nullptr;
  int ordinal_ = 0;
};

// A read-only input: a device copy of host bytes; unchanged() copies it back and compares.
class DeviceInput {
 public:
  DeviceInput(const DeviceSession& s, std::string name, const void* host, size_t bytes);
  ~DeviceInput();
  DeviceInput(const DeviceInput&) = delete;
  DeviceInput& operator=(const DeviceInput&) = delete;
  void* data() const { return bytes_ == 0 ? nullptr : ptr_; }
  const std::string& name() const { return name_; }
  bool unchanged() const;

 private:
  const DeviceSession& s_;
  std::string name_;
  const void* host_;
  size_t bytes_;
  void* ptr_ = nullptr;
};

// An output of `bytes` with a sentinel band (canary.h's kCanaryBandBits) of kDeviceBandBytes before
// and after, all filled on the device: the body with the 32-bit `fill_word` repeated (the poison, or
// 0xFFFFFFFF for ids = -1), or, for byte outputs, from host bytes (upload_body).
class DeviceOutput {
 public:
  DeviceOutput(const DeviceSession& s, std::string name, size_t bytes, uint32_t fill_word);
  ~DeviceOutput();
  DeviceOutput(const DeviceOutput&) = delete;
  DeviceOutput& operator=(const DeviceOutput&) = delete;
  void upload_body(const void* host);  // replaces the fill with `bytes` host bytes
  void* data() const { return body_; }
  // Copies `bytes` from the start of the body to host; `bytes` may run into the trailing band (up to
  // kDeviceBandBytes more), so the framework's own canary check sees an overhanging store.
  void download(void* host, size_t bytes) const;
  // "" when both bands still hold the sentinel, else "<name>: N bytes written before / after ...".
  // skip_trailing_bytes: the leading part of the trailing band the caller downloads and checks itself.
  std::string band_violation(size_t skip_trailing_bytes = 0) const;

 private:
  const DeviceSession& s_;
  std::string name_;
  size_t bytes_;
  uint8_t* base_ = nullptr;  // band, body, band
  void* body_ = nullptr;
};

}  // namespace moefuzz::cuda
