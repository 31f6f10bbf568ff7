// The GPU exact-dot device (oracles/gpu/gpu_exact_dots.h). One warp per (weight row, activation row)
// pair, activation rows fastest (neighbouring warps share a weight row through the caches), the
// blocks of the dot spread over the lanes. The arithmetic is oracles/gpu/dot_math.h, the code the CPU unit
// test runs against exact_dot_rows.
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

#include "core/cuda_in_process.h"
#include "core/errors.h"
#include "oracles/gpu/dot_math.h"
#include "oracles/gpu/gpu_exact_dots.h"

namespace moefuzz::gpu {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw ToolError(std::string("GPU exact dots: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ")");
}

// A device allocation that only grows (reused across calls of one thread).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);  // errors at process teardown are ignored
  }
  void* reserve(size_t bytes) {
    if (bytes > size_) {
      if (ptr_ != nullptr) check(cudaFree(ptr_), "cudaFree");
      ptr_ = nullptr;
      size_ = 0;
      check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
      size_ = bytes;
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// One thread's buffers and stream on one CUDA device.
struct ThreadState {
  cudaStream_t stream = nullptr;
  DeviceBuffer a_codes, a_scales, a_nan, w_packed, w_scales, sum, abs_sum, nan;
  std::vector<__int128> host_sum, host_abs;
  std::vector<uint8_t> host_nan, host_a_nan;
  ThreadState() { check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~ThreadState() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

ThreadState& thread_state() {
  thread_local std::map<int, std::unique_ptr<ThreadState>> states;  // by CUDA device of the thread
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::unique_ptr<ThreadState>& s = states[device];
  if (!s) s = std::make_unique<ThreadState>();
  return *s;
}

// The exact int128 sum of one value per lane of a warp (two 64-bit shuffles per step).
__device__ __forceinline__ __int128 warp_sum(__int128 x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const unsigned long long lo = __shfl_down_sync(0xFFFFFFFFu, static_cast<unsigned long long>(x), offset);
    const long long hi = __shfl_down_sync(0xFFFFFFFFu, static_cast<long long>(x >> 64), offset);
    x += static_cast<__int128>((static_cast<unsigned __int128>(static_cast<unsigned long long>(hi)) << 64) |
                               lo);
  }
  return x;
}

// One warp per (weight row, activation row) pair, activation rows fastest; lane l takes blocks l,
// l + 32, ... and lane 0 writes the warp's exact totals.
__global__ void exact_dots_kernel(const int8_t* __restrict__ a_codes, const int32_t* __restrict__ a_scales,
                                  const uint8_t* __restrict__ a_nan, int64_t rows, int64_t code_stride,
                                  int64_t scale_stride, const uint8_t* __restrict__ w_packed,
                                  const uint8_t* __restrict__ w_scales, int64_t weight_rows, int64_t cols,
                                  __int128* __restrict__ sum, __int128* __restrict__ abs_sum,
                                  uint8_t* __restrict__ nan) {
  const int64_t t = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (t >= rows * weight_rows) return;  // whole warps leave together (blockDim is a multiple of 32)
  const int64_t o = t / rows, r = t % rows;
  const DotTotals d =
      exact_block_dots(a_codes + r * code_stride, a_scales + r * scale_stride, w_packed + o * (cols / 2),
                       w_scales + o * (cols / 16), cols / 16, lane, 32);
  const __int128 s = warp_sum(d.sum), m = warp_sum(d.abs_sum);
  const bool any_nan = __any_sync(0xFFFFFFFFu, d.weight_nan);
  if (lane == 0) {
    sum[t] = s;
    abs_sum[t] = m;
    nan[t] = static_cast<uint8_t>(any_nan || a_nan[r] != 0);
  }
}

class GpuExactDots final : public ExactDotDevice {
 public:
  std::string name() const override { return "gpu"; }

  void dots(const DecodedNvfp4& a, int64_t rows, std::span<const Nvfp4Matrix* const> weights,
            ExactDot* out) override {
    if (rows <= 0 || weights.empty()) return;
    if (rows > a.rows()) throw ToolError("GPU exact dots: more rows than the activation table holds");
    const int64_t cols = a.cols();
    int64_t weight_rows = 0;
    for (const Nvfp4Matrix* w : weights) {
      if (w->cols != cols) throw ToolError("GPU exact dots: operand lengths differ");
      weight_rows += w->rows;
    }
    if (weight_rows == 0) return;
    ThreadState& s = thread_state();
    const int64_t code_stride = a.groups() * 128, scale_stride = a.groups() * 8;
    const size_t pairs = static_cast<size_t>(rows * weight_rows);

    // Uploads: the activation tables as DecodedNvfp4 holds them, the weights as stored, back to back.
    s.host_a_nan.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) s.host_a_nan[static_cast<size_t>(r)] = a.row_has_nan(r) ? 1 : 0;
    auto* d_codes = static_cast<int8_t*>(s.a_codes.reserve(static_cast<size_t>(rows * code_stride)));
    auto* d_scales = static_cast<int32_t*>(s.a_scales.reserve(static_cast<size_t>(rows * scale_stride) * 4));
    auto* d_anan = static_cast<uint8_t*>(s.a_nan.reserve(static_cast<size_t>(rows)));
    auto* d_packed = static_cast<uint8_t*>(s.w_packed.reserve(static_cast<size_t>(weight_rows * cols / 2)));
    auto* d_wscales = static_cast<uint8_t*>(s.w_scales.reserve(static_cast<size_t>(weight_rows * cols / 16)));
    check(cudaMemcpyAsync(d_codes, a.code_row(0), static_cast<size_t>(rows * code_stride),
                          cudaMemcpyHostToDevice, s.stream),
          "upload of activation codes");
    check(cudaMemcpyAsync(d_scales, a.scale_row(0), static_cast<size_t>(rows * scale_stride) * 4,
                          cudaMemcpyHostToDevice, s.stream),
          "upload of activation scales");
    check(cudaMemcpyAsync(d_anan, s.host_a_nan.data(), static_cast<size_t>(rows), cudaMemcpyHostToDevice,
                          s.stream),
          "upload of activation NaN flags");
    int64_t row0 = 0;
    for (const Nvfp4Matrix* w : weights) {
      check(cudaMemcpyAsync(d_packed + row0 * cols / 2, w->packed.data(),
                            static_cast<size_t>(w->rows * cols / 2), cudaMemcpyHostToDevice, s.stream),
            "upload of weight codes");
      check(cudaMemcpyAsync(d_wscales + row0 * cols / 16, w->scales.data(),
                            static_cast<size_t>(w->rows * cols / 16), cudaMemcpyHostToDevice, s.stream),
            "upload of weight scales");
      row0 += w->rows;
    }

    auto* d_sum = static_cast<__int128*>(s.sum.reserve(pairs * sizeof(__int128)));
    auto* d_abs = static_cast<__int128*>(s.abs_sum.reserve(pairs * sizeof(__int128)));
    auto* d_nan = static_cast<uint8_t*>(s.nan.reserve(pairs));
    constexpr int kThreads = 256;  // 8 warps, one dot each
    const int64_t blocks = (static_cast<int64_t>(pairs) * 32 + kThreads - 1) / kThreads;
    exact_dots_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s.stream>>>(
        d_codes, d_scales, d_anan, rows, code_stride, scale_stride, d_packed, d_wscales, weight_rows, cols,
        d_sum, d_abs, d_nan);
    check(cudaGetLastError(), "exact-dot kernel launch");
    s.host_sum.resize(pairs);
    s.host_abs.resize(pairs);
    s.host_nan.resize(pairs);
    check(
        cudaMemcpyAsync(s.host_sum.data(), d_sum, pairs * sizeof(__int128), cudaMemcpyDeviceToHost, s.stream),
        "download of sums");
    check(
        cudaMemcpyAsync(s.host_abs.data(), d_abs, pairs * sizeof(__int128), cudaMemcpyDeviceToHost, s.stream),
        "download of magnitude sums");
    check(cudaMemcpyAsync(s.host_nan.data(), d_nan, pairs, cudaMemcpyDeviceToHost, s.stream),
          "download of NaN flags");
    check(cudaStreamSynchronize(s.stream), "exact-dot kernel");

    // Device order [weight row][activation row] -> the caller's [matrix][activation row][weight row].
    int64_t base = 0;
    row0 = 0;
    for (const Nvfp4Matrix* w : weights) {
      const int64_t N = w->rows;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < N; ++o) {
          const size_t t = static_cast<size_t>((row0 + o) * rows + r);
          ExactDot& d = out[base + r * N + o];
          d.sum = s.host_sum[t];
          d.abs_sum = s.host_abs[t];
          d.nan = s.host_nan[t] != 0;
        }
      base += rows * N;
      row0 += N;
    }
  }
};

}  // namespace

bool gpu_exact_dots_available(std::string* why) {
  mark_cuda_in_process(
      "the oracle's GPU exact dots, --oracle-device gpu");  // cudaGetDeviceCount initializes it
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why != nullptr)
      *why = e != cudaSuccess
                 ? std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")"
                 : std::string("no CUDA device present");
    return false;
  }
  return true;
}

std::shared_ptr<ExactDotDevice> make_gpu_exact_dots() {
  std::string why;
  if (!gpu_exact_dots_available(&why)) throw InputError("GPU exact dots: " + why);
  return std::make_shared<GpuExactDots>();
}

}  // namespace moefuzz::gpu
