// Device memory for device-memory plugins (device_buffers.h).
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "core/errors.h"
#include "kernels/canary.h"
#include "kernels/cuda/device_buffers.h"
#include "kernels/cuda/launch.h"
#include "kernels/isolated_run.h"

namespace moefuzz::cuda {
namespace {

constexpr unsigned kFillThreads = 256;
// Byte i of the region gets byte (i mod 4) of `value` (little-endian): the 32-bit pattern repeated
// from the region's start, whatever its alignment (a byte output's trailing band starts anywhere).
__global__ void fill_pattern_kernel(uint8_t* p, int64_t bytes, uint32_t value) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < bytes) p[i] = static_cast<uint8_t>(value >> (8 * (i % 4)));
}

void fill_pattern(void* p, size_t bytes, uint32_t value, cudaStream_t s) {
  if (bytes == 0) return;
  const int64_t n = static_cast<int64_t>(bytes);
  fill_pattern_kernel<<<static_cast<unsigned>((n + kFillThreads - 1) / kFillThreads), kFillThreads, 0, s>>>(
      static_cast<uint8_t*>(p), n, value);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// Our own allocations failing is the device being too small for the case, not a kernel fault.
void* device_malloc(size_t bytes, const std::string& what) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess)
    throw InputError("device-memory plugin: cannot allocate " + std::to_string(bytes) +
                     " bytes on the GPU for " + what + " (" + cudaGetErrorString(e) + ")");
  return p;
}

}  // namespace

DeviceSession::DeviceSession() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1)
    throw InputError(std::string("device-memory plugin (wants_device = 1): no usable CUDA device: ") +
                     (e != cudaSuccess ? cudaGetErrorString(e) : "the runtime reports 0 devices"));
  ordinal_ = 0;
  MOEFUZZ_CUDA_CHECK(cudaSetDevice(ordinal_));
  cudaStream_t s = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

DeviceSession::~DeviceSession() {
  // The child exits right after; a sticky error left by the plugin makes this fail, harmlessly.
  if (stream_ != nullptr) (void)cudaStreamDestroy(as_stream(stream_));
}

void DeviceSession::synchronize(const std::string& stage) const {
  cudaError_t e = cudaStreamSynchronize(as_stream(stream_));
  if (e == cudaSuccess) e = cudaGetLastError();  // a failed launch the plugin did not check
  if (e == cudaSuccess) return;
  const FaultKind kind = e == cudaErrorMemoryAllocation ? FaultKind::kOutOfMemory : FaultKind::kDeviceError;
  // The names fault_kind_name() gives (isolated_run.cpp is not part of this library).
  const char* name = kind == FaultKind::kOutOfMemory ? "oom" : "device-error";
  throw KernelFault(kind, std::string(name) + ": CUDA error " + cudaGetErrorName(e) + " (" +
                              cudaGetErrorString(e) + ") after the " + stage + " call");
}

void DeviceSession::ready() const { MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

DeviceInput::DeviceInput(const DeviceSession& s, std::string name, const void* host, size_t bytes)
    : s_(s), name_(std::move(name)), host_(host), bytes_(bytes) {
  ptr_ = device_malloc(bytes_, name_);
  if (bytes_ > 0)
    MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(ptr_, host_, bytes_, cudaMemcpyHostToDevice, as_stream(s_.stream())));
}

DeviceInput::~DeviceInput() { (void)cudaFree(ptr_); }

bool DeviceInput::unchanged() const {
  if (bytes_ == 0) return true;
  std::vector<uint8_t> back(bytes_);
  MOEFUZZ_CUDA_CHECK(
      cudaMemcpyAsync(back.data(), ptr_, bytes_, cudaMemcpyDeviceToHost, as_stream(s_.stream())));
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(as_stream(s_.stream())));
  return std::memcmp(back.data(), host_, bytes_) == 0;
}

DeviceOutput::DeviceOutput(const DeviceSession& s, std::string name, size_t bytes, uint32_t fill_word)
    : s_(s), name_(std::move(name)), bytes_(bytes) {
  base_ = static_cast<uint8_t*>(device_malloc(bytes_ + 2 * kDeviceBandBytes, name_));
  body_ = base_ + kDeviceBandBytes;
  cudaStream_t st = as_stream(s_.stream());
  fill_pattern(base_, kDeviceBandBytes, kCanaryBandBits, st);
  fill_pattern(body_, bytes_, fill_word, st);
  fill_pattern(base_ + kDeviceBandBytes + bytes_, kDeviceBandBytes, kCanaryBandBits, st);
}

DeviceOutput::~DeviceOutput() { (void)cudaFree(base_); }

void DeviceOutput::upload_body(const void* host) {
  if (bytes_ > 0)
    MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(body_, host, bytes_, cudaMemcpyHostToDevice, as_stream(s_.stream())));
}

void DeviceOutput::download(void* host, size_t bytes) const {
  if (bytes > bytes_ + kDeviceBandBytes)
    throw std::logic_error("DeviceOutput::download past the trailing band");
  if (bytes == 0) return;
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(host, body_, bytes, cudaMemcpyDeviceToHost, as_stream(s_.stream())));
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(as_stream(s_.stream())));
}

std::string DeviceOutput::band_violation(size_t skip_trailing_bytes) const {
  std::vector<uint8_t> before(kDeviceBandBytes), after(kDeviceBandBytes);
  cudaStream_t st = as_stream(s_.stream());
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(before.data(), base_, kDeviceBandBytes, cudaMemcpyDeviceToHost, st));
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(after.data(), base_ + kDeviceBandBytes + bytes_, kDeviceBandBytes,
                                     cudaMemcpyDeviceToHost, st));
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(st));
  uint8_t sentinel[4];
  std::memcpy(sentinel, &kCanaryBandBits, 4);
  int64_t n_before = 0, n_after = 0, first_after = -1;
  for (size_t i = 0; i < kDeviceBandBytes; ++i) {
    n_before += before[i] != sentinel[i % 4];
    if (i >= skip_trailing_bytes && after[i] != sentinel[i % 4]) {
      if (first_after < 0) first_after = static_cast<int64_t>(i);
      ++n_after;
    }
  }
  if (n_before == 0 && n_after == 0) return "";
  std::string s = name_ + ":";
  if (n_before) s += " " + std::to_string(n_before) + " bytes written in the sentinel band before the buffer";
  if (n_after)
    s += std::string(n_before ? ";" : "") + " " + std::to_string(n_after) +
         " bytes written in the sentinel band past the end (first at +" + std::to_string(first_after) +
         " bytes)";
  return s;
}

}  // namespace moefuzz::cuda
