// The GPU exact-dot device (oracles/gpu/gpu_exact_dots.h). One warp per (weight row, activation row)
// pair, activation rows fastest (neighbouring warps share a weight row through the caches), the
// blocks of the dot spread over the lanes; each dot comes back rounded (RoundedDot, 16 bytes). The
// arithmetic, the rounding included, is oracles/gpu/dot_math.h, the code the CPU unit test runs
// against exact_dot_rows. Flip sums (DotFlips) take one thread per pair, weight rows fastest (the
// warp reads one activation row's flips, broadcast), in oracles/gpu/flip_math.h's order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cuda_in_process.h"
#include "core/errors.h"
#include "core/resident_cache_budget.h"
#include "oracles/gpu/dot_math.h"
#include "oracles/gpu/flip_math.h"
#include "oracles/gpu/gpu_exact_dots.h"

namespace moefuzz::gpu {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw ToolError(std::string("GPU exact dots: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ")");
}

// An allocation that only grows (reused across calls of one thread): device memory, or pinned host
// memory (the results come back through it at full bus speed).
class GrowingBuffer {
 public:
  enum class Where { kDevice, kPinnedHost };
  explicit GrowingBuffer(Where where = Where::kDevice) : where_(where) {}
  GrowingBuffer(const GrowingBuffer&) = delete;
  GrowingBuffer& operator=(const GrowingBuffer&) = delete;
  ~GrowingBuffer() {
    if (ptr_ != nullptr) (void)release();  // errors at process teardown are ignored
  }
  void* reserve(size_t bytes) {
    if (bytes > size_) {
      if (ptr_ != nullptr) check(release(), where_ == Where::kDevice ? "cudaFree" : "cudaFreeHost");
      ptr_ = nullptr;
      size_ = 0;
      check(where_ == Where::kDevice ? cudaMalloc(&ptr_, bytes) : cudaMallocHost(&ptr_, bytes),
            where_ == Where::kDevice ? "cudaMalloc" : "cudaMallocHost");
      size_ = bytes;
    }
    return ptr_;
  }
  void* get() const { return ptr_; }

 private:
  cudaError_t release() { return where_ == Where::kDevice ? cudaFree(ptr_) : cudaFreeHost(ptr_); }
  Where where_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct ContentKeyHash {
  size_t operator()(const Hash128& k) const {
    return static_cast<size_t>(k.low ^ (k.high * 0x9E3779B97F4A7C15ull));
  }
};

// Device copies of weight matrices kept between calls, found by content (DeviceWeights::content):
// a check evaluates a case and ~20 transforms of it, which share most experts, so each expert's ~3 MB
// (at M) go up once per case instead of once per evaluation. Least recently used copies are freed
// first; copies named by the current call are never freed by it. Every call ends with a stream
// synchronization, so a copy freed at the next call's upload has no reads pending.
class ResidentWeights {
 public:
  // The copies come from their own stream-ordered pool on `device`, which keeps what they free: the
  // capacity bounds it, and the default pool's release threshold (which the `cuda` kernel's per-run
  // buffers rely on, kernels/cuda/moe_pipeline.cu) does not count them.
  ResidentWeights(size_t capacity, int device) : capacity_(capacity) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  }
  ResidentWeights(const ResidentWeights&) = delete;
  ResidentWeights& operator=(const ResidentWeights&) = delete;
  ~ResidentWeights() {
    for (auto& [key, copy] : copies_) cudaFree(copy.data);  // errors at teardown are ignored
    if (pool_ != nullptr) cudaMemPoolDestroy(pool_);
  }

  // The copy's device address ([packed bytes][scale bytes]), or nullptr.
  const uint8_t* find(const Hash128& key, uint64_t call) {
    const auto it = copies_.find(key);
    if (it == copies_.end()) return nullptr;
    it->second.call = call;
    lru_.splice(lru_.begin(), lru_, it->second.position);
    return it->second.data;
  }

  // Uploads `m` as the copy under `key`; nullptr when it cannot be kept (too large, or no room without
  // freeing a copy this call reads): the caller uploads it to scratch memory instead.
  const uint8_t* upload(const Hash128& key, const Nvfp4Matrix& m, uint64_t call, cudaStream_t stream) {
    const size_t packed = m.packed.size(), bytes = packed + m.scales.size();
    if (bytes > capacity_ / 4) return nullptr;
    while (held_ + bytes > capacity_) {
      if (lru_.empty() || copies_.at(lru_.back()).call == call) return nullptr;
      drop(lru_.back(), stream);
    }
    uint8_t* data = nullptr;
    // Stream-ordered: neither this nor drop()'s free waits for the other threads' work on the device.
    const cudaError_t e = cudaMallocFromPoolAsync(reinterpret_cast<void**>(&data), bytes, pool_, stream);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it and use scratch memory
      return nullptr;
    }
    check(e, "cudaMallocFromPoolAsync of a resident weight copy");
    check(cudaMemcpyAsync(data, m.packed.data(), packed, cudaMemcpyHostToDevice, stream),
          "upload of weight codes");
    check(cudaMemcpyAsync(data + packed, m.scales.data(), m.scales.size(), cudaMemcpyHostToDevice, stream),
          "upload of weight scales");
    lru_.push_front(key);
    copies_[key] = Copy{data, bytes, call, lru_.begin()};
    held_ += bytes;
    return data;
  }

 private:
  struct Copy {
    uint8_t* data = nullptr;
    size_t bytes = 0;
    uint64_t call = 0;  // the last call that named it
    std::list<Hash128>::iterator position;
  };
  void drop(const Hash128& key, cudaStream_t stream) {
    const auto it = copies_.find(key);
    check(cudaFreeAsync(it->second.data, stream), "cudaFreeAsync of a resident weight copy");
    held_ -= it->second.bytes;
    lru_.erase(it->second.position);
    copies_.erase(it);
  }

  size_t capacity_, held_ = 0;
  cudaMemPool_t pool_ = nullptr;
  std::list<Hash128> lru_;  // most recently used first
  std::unordered_map<Hash128, Copy, ContentKeyHash> copies_;
};

// One thread's buffers, stream and resident weights on one CUDA device.
struct ThreadState {
  cudaStream_t stream = nullptr;
  GrowingBuffer a_codes, a_scales, a_nan, w_scratch, results;
  GrowingBuffer host_results{GrowingBuffer::Where::kPinnedHost};
  std::vector<uint8_t> host_a_nan;
  // The call's code flips: per row [first entry, end, dense row or -1], the entries' columns and
  // weights, and the dense rows (one weight per column) built from them on the device.
  GrowingBuffer flip_rows, flip_columns, flip_weights, flip_dense, flip_sums;
  GrowingBuffer host_flips{GrowingBuffer::Where::kPinnedHost};
  std::vector<int64_t> host_flip_rows;
  std::vector<int32_t> host_flip_columns;
  std::vector<double> host_flip_weights;
  std::unique_ptr<ResidentWeights> resident;
  uint64_t calls = 0;
  explicit ThreadState(int device) {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    resident = std::make_unique<ResidentWeights>(resident_cache_bytes(total_bytes), device);
  }
  ~ThreadState() {
    resident.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

ThreadState& thread_state() {
  thread_local std::map<int, std::unique_ptr<ThreadState>> states;  // by CUDA device of the thread
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::unique_ptr<ThreadState>& s = states[device];
  if (!s) s = std::make_unique<ThreadState>(device);
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

// The weight matrices of one launch, by value: each one's packed codes and E4M3 bytes on the device,
// and the running count of weight rows before it (first_row[count] = all of them).
constexpr int kMaxMatrices = 4;
struct MatrixSet {
  const uint8_t* packed[kMaxMatrices];
  const uint8_t* scales[kMaxMatrices];
  int64_t first_row[kMaxMatrices + 1];
  int count;
};

// One warp per (weight row, activation row) pair, activation rows fastest (neighbouring warps share a
// weight row through the caches); lane l takes blocks l, l + 32, ... and lane 0 writes the pair's
// RoundedDot at the caller's position: matrix m's block [rows][its rows] after the earlier matrices'.
__global__ void exact_dots_kernel(const int8_t* __restrict__ a_codes, const int32_t* __restrict__ a_scales,
                                  const uint8_t* __restrict__ a_nan, int64_t rows, int64_t code_stride,
                                  int64_t scale_stride, MatrixSet w, int64_t cols,
                                  double2* __restrict__ out) {
  const int64_t t = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (t >= rows * w.first_row[w.count]) return;  // whole warps leave together (blockDim is a multiple of 32)
  const int64_t weight_row = t / rows, r = t % rows;
  int m = 0;
  while (weight_row >= w.first_row[m + 1]) ++m;
  const int64_t o = weight_row - w.first_row[m], n = w.first_row[m + 1] - w.first_row[m];
  const DotTotals d =
      exact_block_dots(a_codes + r * code_stride, a_scales + r * scale_stride, w.packed[m] + o * (cols / 2),
                       w.scales[m] + o * (cols / 16), cols / 16, lane, 32);
  const __int128 s = warp_sum(d.sum), a = warp_sum(d.abs_sum);
  const bool any_nan = __any_sync(0xFFFFFFFFu, d.weight_nan);
  if (lane == 0) {
    const double nan = __longlong_as_double(0x7FF8000000000000ll);  // the host's quiet_NaN
    out[rows * w.first_row[m] + r * n + o] =
        any_nan || a_nan[r] != 0 ? make_double2(nan, nan) : make_double2(dot_value(s), dot_abs_value(a));
  }
}

// Dense flip row d (one weight per column) of activation row r: the row's entries added per column in
// list order, as flip_terms does on the CPU. One thread per row; `dense` was zeroed.
__global__ void dense_flips_kernel(const int64_t* __restrict__ flip_rows, const int32_t* __restrict__ columns,
                                   const double* __restrict__ weights, int64_t rows, int64_t cols,
                                   double* __restrict__ dense) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows || flip_rows[3 * r + 2] < 0) return;
  double* row = dense + flip_rows[3 * r + 2] * cols;
  for (int64_t k = flip_rows[3 * r]; k < flip_rows[3 * r + 1]; ++k) row[columns[k]] += weights[k];
}

// One thread per (activation row, weight row) pair, weight rows fastest; the pair's flip sum at its
// dot's position (exact_dots_kernel's layout).
__global__ void flip_sums_kernel(const int64_t* __restrict__ flip_rows, const int32_t* __restrict__ columns,
                                 const double* __restrict__ weights, const double* __restrict__ dense,
                                 int64_t rows, MatrixSet w, int64_t cols, double* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t total = w.first_row[w.count];
  if (t >= rows * total) return;
  const int64_t r = t / total, weight_row = t % total;
  int m = 0;
  while (weight_row >= w.first_row[m + 1]) ++m;
  const int64_t o = weight_row - w.first_row[m], n = w.first_row[m + 1] - w.first_row[m];
  const uint8_t* packed = w.packed[m] + o * (cols / 2);
  const uint8_t* scales = w.scales[m] + o * (cols / 16);
  const int64_t first = flip_rows[3 * r], end = flip_rows[3 * r + 1], d = flip_rows[3 * r + 2];
  out[rows * w.first_row[m] + r * n + o] =
      d >= 0 ? dense_flip_sum(dense + d * cols, packed, scales, cols)
             : sparse_flip_sum(columns + first, weights + first, end - first, packed, scales);
}

class GpuExactDots final : public ExactDotDevice {
 public:
  explicit GpuExactDots(int64_t smallest_call) : smallest_call_(smallest_call) {}
  std::string name() const override { return "gpu"; }
  int64_t smallest_call() const override { return smallest_call_; }

  void dots(const DecodedNvfp4& a, int64_t rows, std::span<const DeviceWeights> weights, RoundedDot* out,
            const DotFlips* flips) override {
    if (rows <= 0) return;
    if (rows > a.rows()) throw ToolError("GPU exact dots: more rows than the activation table holds");
    for (const DeviceWeights& w : weights)
      if (w.matrix->cols != a.cols()) throw ToolError("GPU exact dots: operand lengths differ");
    if (flips != nullptr && static_cast<int64_t>(flips->rows.size()) != rows)
      throw ToolError("GPU exact dots: flip rows differ from activation rows");
    ThreadState& s = thread_state();
    upload_activations(s, a, rows);
    if (flips != nullptr) upload_flips(s, flips->rows, a.cols());
    double* flip_out = flips != nullptr ? flips->out : nullptr;
    for (size_t first = 0; first < weights.size(); first += kMaxMatrices) {
      const std::span<const DeviceWeights> part =
          weights.subspan(first, std::min<size_t>(kMaxMatrices, weights.size() - first));
      const RoundedDot* before = out;
      out = launch(s, a, rows, part, out, flip_out);
      if (flip_out != nullptr) flip_out += out - before;
    }
  }

 private:
  // The activation rows' decoded tables as DecodedNvfp4 holds them, and one NaN flag per row.
  static void upload_activations(ThreadState& s, const DecodedNvfp4& a, int64_t rows) {
    const int64_t code_stride = a.groups() * 128, scale_stride = a.groups() * 8;
    s.host_a_nan.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) s.host_a_nan[static_cast<size_t>(r)] = a.row_has_nan(r) ? 1 : 0;
    check(cudaMemcpyAsync(s.a_codes.reserve(static_cast<size_t>(rows * code_stride)), a.code_row(0),
                          static_cast<size_t>(rows * code_stride), cudaMemcpyHostToDevice, s.stream),
          "upload of activation codes");
    check(cudaMemcpyAsync(s.a_scales.reserve(static_cast<size_t>(rows * scale_stride) * 4), a.scale_row(0),
                          static_cast<size_t>(rows * scale_stride) * 4, cudaMemcpyHostToDevice, s.stream),
          "upload of activation scales");
    check(cudaMemcpyAsync(s.a_nan.reserve(static_cast<size_t>(rows)), s.host_a_nan.data(),
                          static_cast<size_t>(rows), cudaMemcpyHostToDevice, s.stream),
          "upload of activation NaN flags");
  }

  // The rows' flip lists as three flat arrays, and their dense rows built on the device.
  static void upload_flips(ThreadState& s, std::span<const FlipList> lists, int64_t cols) {
    const size_t rows = lists.size();
    s.host_flip_rows.resize(3 * rows);
    s.host_flip_columns.clear();
    s.host_flip_weights.clear();
    int64_t dense_rows = 0;
    for (size_t r = 0; r < rows; ++r) {
      const FlipList& list = lists[r];
      s.host_flip_rows[3 * r] = static_cast<int64_t>(s.host_flip_columns.size());
      for (const auto& [column, weight] : list) {
        if (column < 0 || column >= cols)
          throw ToolError("GPU exact dots: a flip's column is out of its row");
        s.host_flip_columns.push_back(column);
        s.host_flip_weights.push_back(weight);
      }
      s.host_flip_rows[3 * r + 1] = static_cast<int64_t>(s.host_flip_columns.size());
      s.host_flip_rows[3 * r + 2] = flips_are_dense(list.size(), cols) ? dense_rows++ : -1;
    }
    const size_t entries = s.host_flip_columns.size();
    check(cudaMemcpyAsync(s.flip_rows.reserve(3 * rows * 8), s.host_flip_rows.data(), 3 * rows * 8,
                          cudaMemcpyHostToDevice, s.stream),
          "upload of flip rows");
    if (entries > 0) {
      check(cudaMemcpyAsync(s.flip_columns.reserve(entries * 4), s.host_flip_columns.data(), entries * 4,
                            cudaMemcpyHostToDevice, s.stream),
            "upload of flip columns");
      check(cudaMemcpyAsync(s.flip_weights.reserve(entries * 8), s.host_flip_weights.data(), entries * 8,
                            cudaMemcpyHostToDevice, s.stream),
            "upload of flip weights");
    }
    if (dense_rows > 0) {
      const size_t bytes = static_cast<size_t>(dense_rows * cols) * 8;
      check(cudaMemsetAsync(s.flip_dense.reserve(bytes), 0, bytes, s.stream), "clearing the dense flip rows");
      constexpr int kThreads = 128;
      dense_flips_kernel<<<static_cast<unsigned>((rows + kThreads - 1) / kThreads), kThreads, 0, s.stream>>>(
          static_cast<const int64_t*>(s.flip_rows.get()), static_cast<const int32_t*>(s.flip_columns.get()),
          static_cast<const double*>(s.flip_weights.get()), static_cast<int64_t>(rows), cols,
          static_cast<double*>(s.flip_dense.get()));
      check(cudaGetLastError(), "dense flip kernel launch");
    }
  }

  // Up to kMaxMatrices matrices in one launch; returns the position after their results in `out`
  // (and writes their flip sums to flip_out when the call has flips).
  static RoundedDot* launch(ThreadState& s, const DecodedNvfp4& a, int64_t rows,
                            std::span<const DeviceWeights> weights, RoundedDot* out, double* flip_out) {
    const int64_t cols = a.cols();
    const uint64_t call = ++s.calls;
    MatrixSet set{};
    set.count = static_cast<int>(weights.size());
    // Resident copies first (found or uploaded); the rest go to scratch memory, back to back.
    size_t scratch_bytes = 0;
    std::vector<size_t> scratch_at(weights.size(), SIZE_MAX);
    for (size_t m = 0; m < weights.size(); ++m) {
      const DeviceWeights& w = weights[m];
      const uint8_t* d = nullptr;
      if (w.content) {
        d = s.resident->find(*w.content, call);
        if (d == nullptr) d = s.resident->upload(*w.content, *w.matrix, call, s.stream);
      }
      if (d != nullptr) {
        set.packed[m] = d;
        set.scales[m] = d + w.matrix->packed.size();
      } else {
        scratch_at[m] = scratch_bytes;
        scratch_bytes += w.matrix->packed.size() + w.matrix->scales.size();
      }
    }
    if (scratch_bytes > 0) {
      auto* scratch = static_cast<uint8_t*>(s.w_scratch.reserve(scratch_bytes));
      for (size_t m = 0; m < weights.size(); ++m) {
        if (scratch_at[m] == SIZE_MAX) continue;
        const Nvfp4Matrix& w = *weights[m].matrix;
        uint8_t* d = scratch + scratch_at[m];
        check(cudaMemcpyAsync(d, w.packed.data(), w.packed.size(), cudaMemcpyHostToDevice, s.stream),
              "upload of weight codes");
        check(cudaMemcpyAsync(d + w.packed.size(), w.scales.data(), w.scales.size(), cudaMemcpyHostToDevice,
                              s.stream),
              "upload of weight scales");
        set.packed[m] = d;
        set.scales[m] = d + w.packed.size();
      }
    }
    set.first_row[0] = 0;
    for (size_t m = 0; m < weights.size(); ++m)
      set.first_row[m + 1] = set.first_row[m] + weights[m].matrix->rows;
    const size_t pairs = static_cast<size_t>(rows * set.first_row[set.count]);
    if (pairs == 0) return out;

    auto* d_out = static_cast<double2*>(s.results.reserve(pairs * sizeof(double2)));
    constexpr int kThreads = 256;  // 8 warps, one dot each
    const int64_t blocks = (static_cast<int64_t>(pairs) * 32 + kThreads - 1) / kThreads;
    exact_dots_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s.stream>>>(
        static_cast<const int8_t*>(s.a_codes.get()), static_cast<const int32_t*>(s.a_scales.get()),
        static_cast<const uint8_t*>(s.a_nan.get()), rows, a.groups() * 128, a.groups() * 8, set, cols, d_out);
    check(cudaGetLastError(), "exact-dot kernel launch");
    void* host = s.host_results.reserve(pairs * sizeof(double2));
    check(cudaMemcpyAsync(host, d_out, pairs * sizeof(double2), cudaMemcpyDeviceToHost, s.stream),
          "download of the dots");
    if (flip_out != nullptr) {
      auto* d_flips = static_cast<double*>(s.flip_sums.reserve(pairs * sizeof(double)));
      constexpr int kFlipThreads = 128;
      flip_sums_kernel<<<static_cast<unsigned>((pairs + kFlipThreads - 1) / kFlipThreads), kFlipThreads, 0,
                         s.stream>>>(
          static_cast<const int64_t*>(s.flip_rows.get()), static_cast<const int32_t*>(s.flip_columns.get()),
          static_cast<const double*>(s.flip_weights.get()), static_cast<const double*>(s.flip_dense.get()),
          rows, set, cols, d_flips);
      check(cudaGetLastError(), "flip-sum kernel launch");
      check(cudaMemcpyAsync(s.host_flips.reserve(pairs * sizeof(double)), d_flips, pairs * sizeof(double),
                            cudaMemcpyDeviceToHost, s.stream),
            "download of the flip sums");
    }
    check(cudaStreamSynchronize(s.stream), "exact-dot kernel");
    static_assert(sizeof(RoundedDot) == sizeof(double2), "RoundedDot is {value, abs_value}");
    std::memcpy(static_cast<void*>(out), host, pairs * sizeof(double2));
    if (flip_out != nullptr) std::memcpy(flip_out, s.host_flips.get(), pairs * sizeof(double));
    return out + pairs;
  }

  int64_t smallest_call_;
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

std::shared_ptr<ExactDotDevice> make_gpu_exact_dots(int64_t smallest_call) {
  std::string why;
  if (!gpu_exact_dots_available(&why)) throw InputError("GPU exact dots: " + why);
  return std::make_shared<GpuExactDots>(smallest_call);
}

}  // namespace moefuzz::gpu
