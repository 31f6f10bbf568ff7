// MoePipeline: device buffers, upload, stage sequencing and downloads (moe_pipeline.h).
#include "kernels/cuda/moe_pipeline.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>

#include "core/errors.h"
#include "core/fp8_group_quant.h"
#include "kernels/cuda/host_transfers.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/resident_experts.h"

namespace moefuzz::cuda {

int64_t PipelineConfig::max_rows() const {
  const int64_t r = pairs() + total_experts() * (kMaxRowsPerTile - 1);
  return (r + 127) / 128 * 128;
}

namespace {

// The profile fields the routing, align and combine stages implement (both formats).
std::string shared_stages_reason(const Profile& p) {
  if (p.combine != CombineAccum::kFp32SlotOrder && p.combine != CombineAccum::kBf16Products)
    return "only the fp32 slot-order and bf16-products combines are implemented";
  if (!p.bf16_after_gemm1 || !p.bf16_after_activation || !p.bf16_after_gemm2 || !p.bf16_output)
    return "every stage rounds to bf16 in this pipeline";
  if (p.routing_weight_dtype != WeightDtype::kFp32) return "routing weights are fp32";
  return "";
}

// The routing and shape limits of the routing, align and combine stages (both formats).
std::string routing_shape_reason(const CaseRecipe& r) {
  if (r.shape.experts < 1 || r.shape.experts > 4096) return "experts must be in [1, 4096]";
  if (r.shape.top_k < 1 || r.shape.top_k > r.shape.experts) return "top_k must be in [1, experts]";
  if (r.routing.mode == RoutingMode::kSigmoidGrouped &&
      (r.shape.n_group < 1 || r.shape.n_group > 256 || r.shape.experts % r.shape.n_group != 0 ||
       r.shape.topk_group < 1 || r.shape.topk_group > r.shape.n_group ||
       r.shape.topk_group * (r.shape.experts / r.shape.n_group) < r.shape.top_k))
    return "grouped routing needs n_group in [1, 256] dividing E and topk_group * E/n_group >= top_k";
  if (r.routing.shared_fusion == SharedFusion::kSeparate && r.shape.shared_experts > 1)
    return "at most one separate shared expert";
  if (r.shape.tokens < 0 || r.shape.tokens * (r.slots() + 1) > (int64_t{1} << 30))
    return "tokens * slots must stay below 2^30 (int32 row ids)";
  return "";
}

std::string prefixed(const char* kernel, const std::string& why) {
  return why.empty() ? why : std::string(kernel) + ": " + why;
}

}  // namespace

std::string unsupported_reason(const CaseRecipe& r, const Profile& p) {
  if (r.quant.activations == ActivationFormat::kFp8Group)
    return "cuda: FP8 block W8A8 (weight_format fp8_block) is the cuda-fp8 kernel's";
  if (r.quant.activations != ActivationFormat::kNvfp4)
    return "cuda: W4A16 (bf16 activations) not implemented";
  if (p.quantizer != QuantizerVariant::kFastMath)
    return "cuda: only the fast-math NVFP4 quantizer is implemented";
  if (std::string why = shared_stages_reason(p); !why.empty()) return prefixed("cuda", why);
  if (r.shape.hidden % 16 != 0 || r.shape.inter % 16 != 0)
    return "cuda: hidden and inter must be multiples of 16";
  return prefixed("cuda", routing_shape_reason(r));
}

std::string fp8_unsupported_reason(const CaseRecipe& r, const Profile& p) {
  if (r.quant.weights != WeightFormat::kFp8Block || r.quant.activations != ActivationFormat::kFp8Group)
    return "cuda-fp8: FP8 block W8A8 layers only (weight_format fp8_block, activations fp8_group); NVFP4 "
           "layers are the cuda kernel's";
  if (p.fp8_act_quant != Fp8GroupQuantVariant::kVllmCuda)
    return "cuda-fp8: only the vLLM CUDA (IEEE) per-token-group quantizer is implemented";
  if (p.fp8_dots_per_block != 2)
    return "cuda-fp8: the GEMM starts a fresh accumulator every 64 K (fp8_dots_per_block 2)";
  if (p.fp8_scale_order != Fp8ScaleOrder::kTriton)
    return "cuda-fp8: the GEMM applies its scales in Triton order fl(fl(P * sa) * sb)";
  if (p.fp8_mma_accum_bits > kHopperFp8MmaAccumBits)
    return "cuda-fp8: the FP8 tensor core keeps fewer accumulator bits than the profile claims";
  if (std::string why = shared_stages_reason(p); !why.empty()) return prefixed("cuda-fp8", why);
  if (r.shape.hidden % kFp8WeightBlock != 0 || r.shape.inter % kFp8WeightBlock != 0 ||
      r.shape.hidden < kFp8WeightBlock || r.shape.inter < kFp8WeightBlock)
    return "cuda-fp8: hidden and inter must be positive multiples of 128 (the weight scale block)";
  return prefixed("cuda-fp8", routing_shape_reason(r));
}

PipelineConfig config_for(const CaseRecipe& r, const Profile& p, int tactic) {
  PipelineConfig c;
  c.tokens = r.shape.tokens;
  c.hidden = r.shape.hidden;
  c.inter = r.shape.inter;
  c.experts = r.shape.experts;
  c.top_k = r.shape.top_k;
  c.n_group = r.shape.n_group;
  c.topk_group = r.shape.topk_group;
  c.shared_experts = r.shape.shared_experts;
  c.fused_shared = r.routing.shared_fusion == SharedFusion::kFused ? r.shape.shared_experts : 0;
  c.separate_shared = r.routing.shared_fusion == SharedFusion::kSeparate ? r.shape.shared_experts : 0;
  c.vocab = r.hash_vocab();
  c.mode = static_cast<int>(r.routing.mode);
  c.hash_score = static_cast<int>(r.routing.hash_score);
  // Hash routing always normalizes non-softmax scores (SPEC.md §2.5); the flag applies to top-k modes.
  c.renormalize = r.routing.mode == RoutingMode::kHash ? r.routing.hash_score != ScoreFunc::kSoftmax
                                                       : r.routing.renormalize;
  c.has_bias = r.routing.mode == RoutingMode::kSigmoidGrouped && r.routing.correction_bias;
  c.rsf = static_cast<float>(r.routing.routed_scaling_factor);
  c.rsf_in_topk = p.rsf_in_topk;
  c.renorm_epsilon = static_cast<float>(p.renorm_epsilon);
  c.fused_shared_weight_inv_rsf = p.shared_fused_weight_inv_rsf;
  c.up_first = p.w13_order == W13Order::kUpGate;
  c.zero_scale_by_vecmax = p.zero_scale_rule == ZeroScaleRule::kVecMaxTest;
  c.combine_bf16_products = p.combine == CombineAccum::kBf16Products;
  c.swiglu_clamped = std::isfinite(r.swiglu.limit);
  c.swiglu_limit = c.swiglu_clamped ? static_cast<float>(r.swiglu.limit) : 0.0f;
  c.swiglu_alpha = static_cast<float>(r.swiglu.alpha);
  c.swiglu_beta = static_cast<float>(r.swiglu.beta);
  c.fp8 = r.quant.activations == ActivationFormat::kFp8Group;
  c.fp8_ue8m0 = r.quant.fp8_ue8m0;
  c.tactic = std::clamp(tactic, 0, kNumTactics - 1);
  return c;
}

namespace {
// Every run of a pipeline works on its thread's own default stream and allocates from the device's
// stream-ordered pool: `check -j` workers sharing a GPU then neither wait on each other's work (the
// legacy default stream, cudaMalloc and cudaFree synchronize the whole device) nor pay a driver
// allocation per buffer and run.
const cudaStream_t kStream = cudaStreamPerThread;

// The pool keeps up to a quarter of the device's memory between runs instead of returning it at
// every synchronization; set once per device. Reserved memory counts what is in use too: the
// threads' resident expert copies (kernels/cuda/resident_experts.h; all workers' together at most a
// quarter of the device, core/resident_cache_budget.h) come from this pool, and a threshold below them made
// every run's buffers a fresh driver allocation (cuMemAllocAsync: 5% of a `-j 16` check's CPU).
void keep_pool_memory() {
  static std::mutex mu;
  static std::set<int> done;
  int dev = 0;
  MOEFUZZ_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert(dev).second) return;
  size_t free_bytes = 0, total_bytes = 0;
  MOEFUZZ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  cudaMemPool_t pool = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
  uint64_t keep = total_bytes / 4;
  MOEFUZZ_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
}

template <typename T>
T* device_alloc(std::vector<void*>& owned, int64_t count) {
  void* p = nullptr;
  MOEFUZZ_CUDA_CHECK(
      cudaMallocAsync(&p, static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T), kStream));
  owned.push_back(p);
  return static_cast<T*>(p);
}

// Whether each of a run's buffers gets its own allocation: under compute-sanitizer (`moefuzz replay
// --sanitize` sets MOEFUZZ_CUDA_SEPARATE_BUFFERS=1 for it), so that memcheck sees every buffer's bounds.
bool separate_device_buffers() {
  static const bool separate = [] {
    const char* v = std::getenv("MOEFUZZ_CUDA_SEPARATE_BUFFERS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return separate;
}

// Hands out a run's buffers from one device allocation, each at a 256-byte boundary (the alignment
// cudaMalloc gives): ~40 cudaMallocAsync/cudaFreeAsync pairs per run were 7% of a `check -j 16`'s CPU
// and serialized its threads on the pool's lock (docs/perf.md). Used twice: once without a base to
// measure, then on the allocation. With separate_device_buffers(), every buffer is its own allocation.
class BufferCarver {
 public:
  // `base` null: measure only (every buffer comes back null).
  BufferCarver(uint8_t* base, std::vector<void*>& owned) : base_(base), owned_(owned) {}

  template <typename T>
  T* take(int64_t count) {
    if (separate_device_buffers()) return device_alloc<T>(owned_, count);
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T);
    T* p = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + used_);
    used_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    return p;
  }
  size_t used() const { return used_; }

 private:
  static constexpr size_t kAlignment = 256;
  uint8_t* base_;
  size_t used_ = 0;
  std::vector<void*>& owned_;
};

// From pageable memory: returns once the bytes are staged (the source may then change).
void upload_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, kStream));
}
template <typename T>
void upload(T* dst, const std::vector<T>& src) {
  upload_bytes(dst, src.data(), src.size() * sizeof(T));
}
void download_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, kStream));
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(kStream));
}
template <typename T>
std::vector<T> download(const T* src, int64_t count) {
  std::vector<T> v(static_cast<size_t>(count));
  download_bytes(v.data(), src, v.size() * sizeof(T));
  return v;
}
}  // namespace

struct MoePipeline::Impl {
  PipelineConfig cfg;
  DeviceBuffers b;
  std::vector<void*> owned;
  // Mutable views of the input buffers.
  uint16_t* hidden = nullptr;
  float *logits = nullptr, *bias = nullptr, *a1q = nullptr, *a2q = nullptr, *alpha1 = nullptr,
        *alpha2 = nullptr;
  int32_t *token_ids = nullptr, *hash_table = nullptr;
  uint8_t *w13 = nullptr, *w13_sf = nullptr, *w2 = nullptr, *w2_sf = nullptr;
  float *w13_fp8_scale = nullptr, *w2_fp8_scale = nullptr;
  int64_t w13_sf_per_expert = 0, w2_sf_per_expert = 0;

  ~Impl() {
    for (void* p : owned) (void)cudaFreeAsync(p, kStream);
  }

  void allocate() {
    keep_pool_memory();
    uint8_t* base = nullptr;
    if (!separate_device_buffers()) {
      BufferCarver measure(nullptr, owned);
      carve(measure);
      MOEFUZZ_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&base), measure.used(), kStream));
      owned.push_back(base);
    }
    BufferCarver carver(base, owned);
    carve(carver);
  }

  // Every buffer of the run, from `carver` (BufferCarver: measured first, then handed out).
  void carve(BufferCarver& carver) {
    const PipelineConfig& c = cfg;
    const int64_t T = c.tokens, H = c.hidden, I = c.inter, E = c.experts, X = c.total_experts();
    const int64_t S = c.all_slots(), rows = c.max_rows();
    // Each format's own buffers; the other format's get no room (device_alloc makes one element).
    const int64_t nv = c.fp8 ? 0 : 1, f8 = c.fp8 ? 1 : 0;
    w13_sf_per_expert = nv * sf_bytes_128x4(2 * I, H / 16);
    w2_sf_per_expert = nv * sf_bytes_128x4(H, I / 16);
    hidden = carver.take<uint16_t>(T * H);
    logits = carver.take<float>(T * E);
    bias = carver.take<float>(E);
    token_ids = carver.take<int32_t>(T);
    hash_table = carver.take<int32_t>(c.vocab * c.top_k);
    // NVFP4: two E2M1 codes a byte; FP8: one E4M3 code a byte.
    w13 = carver.take<uint8_t>(X * 2 * I * (c.fp8 ? H : H / 2));
    w13_sf = carver.take<uint8_t>(X * w13_sf_per_expert);
    w2 = carver.take<uint8_t>(X * H * (c.fp8 ? I : I / 2));
    w2_sf = carver.take<uint8_t>(X * w2_sf_per_expert);
    w13_fp8_scale = carver.take<float>(f8 * X * (2 * I / kFp8WeightBlock) * (H / kFp8WeightBlock));
    w2_fp8_scale = carver.take<float>(f8 * X * (H / kFp8WeightBlock) * (I / kFp8WeightBlock));
    a1q = carver.take<float>(X);
    a2q = carver.take<float>(X);
    alpha1 = carver.take<float>(2 * X);
    alpha2 = carver.take<float>(X);
    b.hidden = hidden;
    b.logits = logits;
    b.bias = c.has_bias ? bias : nullptr;
    b.token_ids = token_ids;
    b.hash_table = hash_table;
    b.w13 = w13;
    b.w13_sf = w13_sf;
    b.w2 = w2;
    b.w2_sf = w2_sf;
    b.a1_scale_q = a1q;
    b.a2_scale_q = a2q;
    b.alpha1 = alpha1;
    b.alpha2 = alpha2;
    b.w13_fp8_scale = w13_fp8_scale;
    b.w2_fp8_scale = w2_fp8_scale;
    b.ids = carver.take<int32_t>(T * S);
    b.weights = carver.take<float>(T * S);
    b.expert_count = carver.take<int32_t>(X);
    b.expert_offset = carver.take<int32_t>(X + 1);
    b.tile_expert = carver.take<int32_t>(rows / 16);
    b.num_tiles = carver.take<int32_t>(1);
    b.row_pair = carver.take<int32_t>(rows);
    b.pair_row = carver.take<int64_t>(T * S);
    b.a1_packed = carver.take<uint8_t>(nv * rows * H / 2);
    b.a1_sf = carver.take<uint8_t>(nv * sf_bytes_128x4(rows, H / 16));
    b.a1_dq = carver.take<uint16_t>(nv * rows * H);
    b.a1_fp8 = carver.take<uint8_t>(f8 * rows * H);
    b.a1_fp8_scale = carver.take<float>(f8 * rows * (H / kFp8ActivationGroup));
    b.g1 = carver.take<uint16_t>(rows * 2 * I);
    b.act = carver.take<uint16_t>(rows * I);
    b.a2_packed = carver.take<uint8_t>(nv * rows * I / 2);
    b.a2_sf = carver.take<uint8_t>(nv * sf_bytes_128x4(rows, I / 16));
    b.a2_dq = carver.take<uint16_t>(nv * rows * I);
    b.a2_fp8 = carver.take<uint8_t>(f8 * rows * I);
    b.a2_fp8_scale = carver.take<float>(f8 * rows * (I / kFp8ActivationGroup));
    b.y = carver.take<uint16_t>(rows * H);
    b.out = carver.take<uint16_t>(T * H);
  }

  int64_t total_rows() const {
    int32_t v = 0;
    download_bytes(&v, b.expert_offset + cfg.total_experts(), sizeof(v));
    return v;
  }

  // Rows `rows` of a permuted stage buffer (cols elements each), gathered on the device first when
  // there are many (kernels/cuda/gather_rows.cu).
  template <typename T>
  std::vector<T> rows_of(const T* buf, int64_t cols, const std::vector<int64_t>& rows) const {
    std::vector<T> out(rows.size() * static_cast<size_t>(cols));
    if (rows.size() > 16) {
      const int64_t n = static_cast<int64_t>(rows.size()), row_bytes = cols * static_cast<int64_t>(sizeof(T));
      std::vector<void*> scratch;
      int64_t* d_rows = device_alloc<int64_t>(scratch, n);
      auto* packed = device_alloc<uint8_t>(scratch, n * row_bytes);
      upload(d_rows, rows);
      launch_gather_rows(reinterpret_cast<const uint8_t*>(buf), row_bytes, d_rows, n,
                         std::min(total_rows(), cfg.max_rows()), packed, kStream);
      download_bytes(out.data(), packed, out.size() * sizeof(T));
      for (void* p : scratch) MOEFUZZ_CUDA_CHECK(cudaFreeAsync(p, kStream));
    } else {
      for (size_t i = 0; i < rows.size(); ++i)
        MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(out.data() + i * cols, buf + rows[i] * cols,
                                           static_cast<size_t>(cols) * sizeof(T), cudaMemcpyDeviceToHost,
                                           kStream));
      MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(kStream));
    }
    return out;
  }

  // The LINEAR scales (kb a row) of permuted rows `rows` out of a whole 128x4-swizzled scale buffer
  // `sf` of max_rows() rows; a row outside [0, max_rows()) (a faulty permutation) reads 0xFF.
  std::vector<uint8_t> linear_scales(const uint8_t* sf, int64_t kb, const std::vector<int64_t>& rows) const {
    std::vector<uint8_t> scales(rows.size() * static_cast<size_t>(kb), 0xFF);
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i] >= 0 && rows[i] < cfg.max_rows())
        for (int64_t k = 0; k < kb; ++k) scales[i * kb + k] = sf[sf_offset_128x4(rows[i], k, kb)];
    return scales;
  }

  void quant_rows(const uint8_t* packed_buf, const uint8_t* sf_buf, int64_t cols,
                  const std::vector<int64_t>& rows, std::vector<uint8_t>& packed,
                  std::vector<uint8_t>& scales) const {
    packed = rows_of(packed_buf, cols / 2, rows);
    const int64_t kb = cols / 16;
    scales = linear_scales(download(sf_buf, sf_bytes_128x4(cfg.max_rows(), kb)).data(), kb, rows);
  }

  Fp8GroupQuantized fp8_rows(const uint8_t* codes, const float* scales, int64_t cols,
                             const std::vector<int64_t>& rows) const {
    Fp8GroupQuantized q;
    q.rows = static_cast<int64_t>(rows.size());
    q.cols = cols;
    q.group = kFp8ActivationGroup;
    q.codes = rows_of(codes, cols, rows);
    q.scales = rows_of(scales, cols / kFp8ActivationGroup, rows);
    return q;
  }

  // The FP8 case's weights: E4M3 codes [X][2I][H] and [X][H][I] in the profile's w13 order, their fp32
  // block scales [X][2I/128][H/128] and [X][H/128][I/128] (the halves of w13 stacked like the codes).
  void upload_fp8_weights(const Case& c) {
    const int64_t H = cfg.hidden, I = cfg.inter, X = cfg.total_experts();
    const int64_t half_codes = I * H, half_scales = (I / kFp8WeightBlock) * (H / kFp8WeightBlock),
                  down_scales = (H / kFp8WeightBlock) * (I / kFp8WeightBlock);
    std::vector<float> w13_scales(static_cast<size_t>(X * 2 * half_scales)),
        w2_scales(static_cast<size_t>(X * down_scales));
    for (int64_t e = 0; e < X; ++e) {
      const Fp8ExpertWeights& ew = c.experts[static_cast<size_t>(e)].fp8;
      const auto fits = [](const Fp8BlockQuantized& m, int64_t rows, int64_t cols) {
        return m.rows == rows && m.cols == cols && m.scale_rows == rows / kFp8WeightBlock &&
               m.scale_cols == cols / kFp8WeightBlock &&
               static_cast<int64_t>(m.codes.size()) == rows * cols &&
               static_cast<int64_t>(m.scales.size()) == (rows / kFp8WeightBlock) * (cols / kFp8WeightBlock);
      };
      if (!fits(ew.gate, I, H) || !fits(ew.up, I, H) || !fits(ew.down, H, I))
        throw InputError("cuda-fp8 kernel: case tensor 'experts' (FP8 shapes) has the wrong size");
      const Fp8BlockQuantized& first = cfg.up_first ? ew.up : ew.gate;
      const Fp8BlockQuantized& second = cfg.up_first ? ew.gate : ew.up;
      upload_bytes(w13 + e * 2 * half_codes, first.codes.data(), static_cast<size_t>(half_codes));
      upload_bytes(w13 + e * 2 * half_codes + half_codes, second.codes.data(),
                   static_cast<size_t>(half_codes));
      std::copy(first.scales.begin(), first.scales.end(), w13_scales.begin() + e * 2 * half_scales);
      std::copy(second.scales.begin(), second.scales.end(),
                w13_scales.begin() + e * 2 * half_scales + half_scales);
      upload_bytes(w2 + e * H * I, ew.down.codes.data(), static_cast<size_t>(H * I));
      std::copy(ew.down.scales.begin(), ew.down.scales.end(), w2_scales.begin() + e * down_scales);
    }
    upload(w13_fp8_scale, w13_scales);
    upload(w2_fp8_scale, w2_scales);
  }
};

MoePipeline::MoePipeline(const PipelineConfig& cfg) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = cfg;
  impl_->allocate();
}
MoePipeline::~MoePipeline() = default;
const PipelineConfig& MoePipeline::config() const { return impl_->cfg; }

void MoePipeline::upload_case(const Case& c) {
  Impl& m = *impl_;
  const PipelineConfig& cfg = m.cfg;
  const int64_t T = cfg.tokens, H = cfg.hidden, I = cfg.inter, E = cfg.experts, X = cfg.total_experts();
  auto need = [](bool ok, const char* what) {
    if (!ok)
      throw InputError(std::string("cuda kernel: case tensor '") + what + "' has the wrong size or values");
  };
  need(static_cast<int64_t>(c.hidden.size()) == T * H, "hidden");
  need(static_cast<int64_t>(c.logits.size()) == T * E, "logits");
  need(static_cast<int64_t>(c.experts.size()) == X, "experts");
  if (!cfg.fp8) {  // FP8 activations are quantized dynamically: no static scales
    need(!c.a1_scale.empty() && !c.a2_scale.empty(), "a1_scale/a2_scale");
    need(c.a1_scale.size() == 1 || static_cast<int64_t>(c.a1_scale.size()) >= X, "a1_scale");
    need(c.a2_scale.size() == 1 || static_cast<int64_t>(c.a2_scale.size()) >= X, "a2_scale");
  }
  if (cfg.has_bias) need(static_cast<int64_t>(c.bias.size()) == E, "bias");
  if (cfg.mode == static_cast<int>(RoutingMode::kHash)) {
    need(static_cast<int64_t>(c.token_ids.size()) == T, "token_ids");
    need(static_cast<int64_t>(c.hash_table.size()) == cfg.vocab * cfg.top_k, "hash_table");
    for (int32_t id : c.token_ids) need(id >= 0 && id < cfg.vocab, "token_ids");
    for (int32_t e : c.hash_table) need(e >= 0 && e < E, "hash_table");
  }
  // The activations, logits and per-expert scalars go in one batch through pinned memory.
  DeviceWrites writes;
  if (cfg.mode == static_cast<int>(RoutingMode::kHash)) {
    writes.add(m.token_ids, c.token_ids);
    writes.add(m.hash_table, c.hash_table);
  }
  writes.add(m.hidden, c.hidden);
  writes.add(m.logits, c.logits);
  if (cfg.has_bias) writes.add(m.bias, c.bias);
  if (cfg.fp8) {
    writes.flush(kStream);
    m.upload_fp8_weights(c);
    return;
  }

  // Weights come from the thread's resident copies (kernels/cuda/resident_experts.h): uploaded once
  // per content, then copied device to device into this run's buffers (kernels/cuda/copy_segments.cu).
  const ExpertLayout layout{.hidden = H,
                            .inter = I,
                            .up_first = cfg.up_first,
                            .w13_sf = m.w13_sf_per_expert,
                            .w2_sf = m.w2_sf_per_expert};
  ResidentExperts& resident = thread_resident_experts();
  std::vector<uint8_t> direct;       // an expert no resident copy can hold, in the same layout
  std::vector<CopySegment> pending;  // device-to-device copies from resident copies, not yet launched
  std::vector<float> a1q(X), a2q(X), alpha1(2 * X), alpha2(X);
  for (int64_t e = 0; e < X; ++e) {
    const ExpertWeights& ew = c.experts[static_cast<size_t>(e)];
    need(ew.gate.rows == I && ew.gate.cols == H && ew.up.rows == I && ew.up.cols == H && ew.down.rows == H &&
             ew.down.cols == I,
         "experts (shapes)");
    const size_t half = static_cast<size_t>(I * (H / 2));
    const Nvfp4Matrix& first = cfg.up_first ? ew.up : ew.gate;
    const Nvfp4Matrix& second = cfg.up_first ? ew.gate : ew.up;
    need(first.packed.size() == half && second.packed.size() == half &&
             ew.down.packed.size() == static_cast<size_t>(H * (I / 2)) && first.scales.size() == half / 8 &&
             second.scales.size() == half / 8 && ew.down.scales.size() == static_cast<size_t>(H * (I / 16)),
         "experts (packed codes)");
    // Resident copies feed one batched device-to-device launch after the loop; an upload may evict a
    // copy an earlier expert's segments read, so the pending segments are enqueued before each one.
    const ResidentExperts::Key key = ResidentExperts::key_of(c.experts, static_cast<size_t>(e), layout);
    const uint8_t* src = resident.find(key);
    if (src == nullptr) {
      launch_copy_segments(pending, kStream);
      pending.clear();
      src = resident.upload(key, ew, layout, kStream);
    }
    const bool from_host = src == nullptr;
    if (from_host) {
      direct.resize(static_cast<size_t>(layout.bytes()));
      write_expert_layout(ew, layout, direct.data());
      src = direct.data();
    }
    const auto copy = [&](uint8_t* dst, int64_t bytes) {
      if (from_host)  // pageable: returns once staged, so `direct` may be rewritten for the next expert
        MOEFUZZ_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, kStream));
      else
        pending.push_back({src, dst, bytes});
      src += bytes;
    };
    copy(m.w13 + e * layout.w13_bytes(), layout.w13_bytes());
    copy(m.w2 + e * layout.w2_bytes(), layout.w2_bytes());
    copy(m.w13_sf + e * layout.w13_sf, layout.w13_sf);
    copy(m.w2_sf + e * layout.w2_sf, layout.w2_sf);
    a1q[e] = c.a1_scale_for(e);
    a2q[e] = c.a2_scale_for(e);
    // GEMM epilogue alphas (SPEC.md §1.9): g_alpha = S_d(activation) * S_d(weight), fp32; the case
    // stores the activation QUANTIZATION scale, so S_d(act) = fl(1 / S_q).
    const float a1d = 1.0f / a1q[e], a2d = 1.0f / a2q[e];
    alpha1[2 * e] = a1d * first.global_dequant;
    alpha1[2 * e + 1] = a1d * second.global_dequant;
    alpha2[e] = a2d * ew.down.global_dequant;
  }
  launch_copy_segments(pending, kStream);
  writes.add(m.a1q, a1q);
  writes.add(m.a2q, a2q);
  writes.add(m.alpha1, alpha1);
  writes.add(m.alpha2, alpha2);
  writes.flush(kStream);
}

void MoePipeline::fill_random_device(uint64_t seed) {
  Impl& m = *impl_;
  const PipelineConfig& c = m.cfg;
  const int64_t T = c.tokens, H = c.hidden, I = c.inter, X = c.total_experts();
  if (c.fp8) throw std::logic_error("MoePipeline::fill_random_device: NVFP4 pipelines only");
  // Codes: any byte. Scales: E4M3 bytes 0x20..0x3F (2^-3 .. 1.875; never NaN). Activations and
  // logits: positive finite values below 2 (high byte <= 0x3F); never zeros (METHOD.md).
  launch_fill_random(m.w13, X * 2 * I * (H / 2), seed + 1, 0xFF, 0, nullptr);
  launch_fill_random(m.w2, X * H * (I / 2), seed + 2, 0xFF, 0, nullptr);
  launch_fill_random(m.w13_sf, X * m.w13_sf_per_expert, seed + 3, 0x1F, 0x20, nullptr);
  launch_fill_random(m.w2_sf, X * m.w2_sf_per_expert, seed + 4, 0x1F, 0x20, nullptr);
  launch_fill_random(reinterpret_cast<uint8_t*>(m.hidden), T * H * 2, seed + 5, 0x3F, 0x01, nullptr);
  launch_fill_random(reinterpret_cast<uint8_t*>(m.logits), T * c.experts * 4, seed + 6, 0x3F, 0x01, nullptr);
  const std::vector<float> ones(static_cast<size_t>(X), 1.0f), alphas(static_cast<size_t>(2 * X), 1.0f / 64);
  upload(m.a1q, ones);
  upload(m.a2q, ones);
  upload(m.alpha1, alphas);
  upload(m.alpha2, std::vector<float>(alphas.begin(), alphas.begin() + X));
  MOEFUZZ_CUDA_CHECK(cudaDeviceSynchronize());
}

void MoePipeline::run() {
  Impl& m = *impl_;
  const PipelineConfig& c = m.cfg;
  const int64_t rows = c.max_rows();
  const cudaStream_t s = kStream;
  MOEFUZZ_CUDA_CHECK(
      cudaMemsetAsync(m.b.pair_row, 0xFF, static_cast<size_t>(c.pairs()) * sizeof(int64_t), s));
  if (c.fp8) {
    launch_routing(c, m.b, s);
    launch_align(c, m.b, s);
    launch_fp8_quantize_fc1(c, m.b, s);
    launch_fp8_gemm1(c, m.b, s);
    launch_fp8_activation(c, m.b, s);
    launch_fp8_gemm2(c, m.b, s);
  } else {
    // Padding scale bytes (columns past K/16, rows past the last tile) must read 0x00 (SPEC.md §1.8).
    MOEFUZZ_CUDA_CHECK(cudaMemsetAsync(m.b.a1_sf, 0, sf_bytes_128x4(rows, c.hidden / 16), s));
    MOEFUZZ_CUDA_CHECK(cudaMemsetAsync(m.b.a2_sf, 0, sf_bytes_128x4(rows, c.inter / 16), s));
    launch_routing(c, m.b, s);
    launch_align(c, m.b, s);
    launch_quantize_fc1(c, m.b, s);
    launch_gemm1(c, m.b, s);
    launch_activation(c, m.b, s);
    launch_gemm2(c, m.b, s);
  }
  launch_combine(c, m.b, s);
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(s));
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

float MoePipeline::time_gemms_ms(int iters) {
  Impl& m = *impl_;
  cudaEvent_t start, stop;
  MOEFUZZ_CUDA_CHECK(cudaEventCreate(&start));
  MOEFUZZ_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < iters + 3; ++i) {  // 3 warm-ups
    MOEFUZZ_CUDA_CHECK(cudaEventRecord(start));
    if (m.cfg.fp8) {
      launch_fp8_gemm1(m.cfg, m.b, nullptr);
      launch_fp8_gemm2(m.cfg, m.b, nullptr);
    } else {
      launch_gemm1(m.cfg, m.b, nullptr);
      launch_gemm2(m.cfg, m.b, nullptr);
    }
    MOEFUZZ_CUDA_CHECK(cudaEventRecord(stop));
    MOEFUZZ_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    MOEFUZZ_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0f : ms[ms.size() / 2];
}

std::vector<uint16_t> MoePipeline::download_output() const {
  return download(impl_->b.out, impl_->cfg.tokens * impl_->cfg.hidden);
}
void MoePipeline::download_routing(std::vector<int32_t>& ids, std::vector<float>& weights) const {
  const int64_t n = impl_->cfg.tokens * impl_->cfg.all_slots();
  ids = download(impl_->b.ids, n);
  weights = download(impl_->b.weights, n);
}
Permutation MoePipeline::download_permutation() const {
  Permutation p;
  p.rows = impl_->total_rows();
  p.row_pair = download(impl_->b.row_pair, p.rows);
  p.pair_row = download(impl_->b.pair_row, impl_->cfg.pairs());
  return p;
}
void MoePipeline::download_fc1_rows(const std::vector<int64_t>& rows, std::vector<uint8_t>& packed,
                                    std::vector<uint8_t>& scales) const {
  impl_->quant_rows(impl_->b.a1_packed, impl_->b.a1_sf, impl_->cfg.hidden, rows, packed, scales);
}
void MoePipeline::download_fc2_rows(const std::vector<int64_t>& rows, std::vector<uint8_t>& packed,
                                    std::vector<uint8_t>& scales) const {
  impl_->quant_rows(impl_->b.a2_packed, impl_->b.a2_sf, impl_->cfg.inter, rows, packed, scales);
}
Fp8GroupQuantized MoePipeline::download_fc1_fp8_rows(const std::vector<int64_t>& rows) const {
  return impl_->fp8_rows(impl_->b.a1_fp8, impl_->b.a1_fp8_scale, impl_->cfg.hidden, rows);
}
Fp8GroupQuantized MoePipeline::download_fc2_fp8_rows(const std::vector<int64_t>& rows) const {
  return impl_->fp8_rows(impl_->b.a2_fp8, impl_->b.a2_fp8_scale, impl_->cfg.inter, rows);
}
std::vector<uint16_t> MoePipeline::download_gemm1_rows(const std::vector<int64_t>& rows) const {
  return impl_->rows_of(impl_->b.g1, 2 * impl_->cfg.inter, rows);
}
std::vector<uint16_t> MoePipeline::download_act_rows(const std::vector<int64_t>& rows) const {
  return impl_->rows_of(impl_->b.act, impl_->cfg.inter, rows);
}
std::vector<uint16_t> MoePipeline::download_gemm2_rows(const std::vector<int64_t>& rows) const {
  return impl_->rows_of(impl_->b.y, impl_->cfg.hidden, rows);
}

MoePipeline::RunReadout MoePipeline::read_run() const {
  const Impl& m = *impl_;
  const PipelineConfig& c = m.cfg;
  const int64_t out_n = c.tokens * c.hidden, slots = c.tokens * c.all_slots();
  DeviceReads reads;
  const auto out = reads.add(m.b.out, out_n * sizeof(uint16_t));
  const auto ids = reads.add(m.b.ids, slots * sizeof(int32_t));
  const auto weights = reads.add(m.b.weights, slots * sizeof(float));
  const auto pair_row = reads.add(m.b.pair_row, c.pairs() * sizeof(int64_t));
  const auto rows = reads.add(m.b.expert_offset + c.total_experts(), sizeof(int32_t));
  reads.fetch(kStream);
  RunReadout r;
  r.output = reads.vector<uint16_t>(out, out_n);
  r.ids = reads.vector<int32_t>(ids, slots);
  r.weights = reads.vector<float>(weights, slots);
  r.pair_row = reads.vector<int64_t>(pair_row, c.pairs());
  r.rows = reads.vector<int32_t>(rows, 1)[0];
  return r;
}

MoePipeline::StageReadout MoePipeline::read_stages(const std::vector<int64_t>& rows,
                                                   const std::vector<int64_t>& shared_rows, bool values,
                                                   int64_t in_use) const {
  const Impl& m = *impl_;
  const PipelineConfig& c = m.cfg;
  const int64_t n = static_cast<int64_t>(rows.size()),
                ns = values ? static_cast<int64_t>(shared_rows.size()) : 0;
  const int64_t H = c.hidden, I = c.inter, limit = std::min(in_use, c.max_rows());
  // Each stage's rows are gathered on the device (kernels/cuda/gather_rows.cu) into one scratch
  // buffer after the row indices, then everything comes back in one batch.
  struct Piece {
    const void* src;
    int64_t row_bytes;
    bool shared;
  };
  std::vector<Piece> pieces;
  if (c.fp8) {
    pieces.push_back({m.b.a1_fp8, H, false});
    pieces.push_back({m.b.a1_fp8_scale, H / kFp8ActivationGroup * 4, false});
    pieces.push_back({m.b.a2_fp8, I, false});
    pieces.push_back({m.b.a2_fp8_scale, I / kFp8ActivationGroup * 4, false});
  } else {
    pieces.push_back({m.b.a1_packed, H / 2, false});
    pieces.push_back({m.b.a2_packed, I / 2, false});
  }
  if (values) {
    pieces.push_back({m.b.g1, 2 * I * 2, false});
    pieces.push_back({m.b.act, I * 2, false});
    pieces.push_back({m.b.y, H * 2, false});
    if (ns > 0) pieces.push_back({m.b.y, H * 2, true});
  }
  const auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  int64_t scratch_bytes = aligned((n + ns) * 8);
  for (const Piece& p : pieces) scratch_bytes += aligned((p.shared ? ns : n) * p.row_bytes);
  uint8_t* scratch = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), scratch_bytes, kStream));
  struct FreeScratch {  // after the reads, or when a launch or the fetch throws
    uint8_t* p;
    ~FreeScratch() { (void)cudaFreeAsync(p, kStream); }
  } free_scratch{scratch};
  auto* d_rows = reinterpret_cast<int64_t*>(scratch);
  DeviceWrites writes;
  writes.add(d_rows, rows);
  writes.add(d_rows + n, shared_rows.data(), static_cast<size_t>(ns) * 8);
  writes.flush(kStream);
  DeviceReads reads;
  std::vector<DeviceReads::Handle> handles;
  int64_t offset = aligned((n + ns) * 8);
  for (const Piece& p : pieces) {
    const int64_t count = p.shared ? ns : n;
    launch_gather_rows(static_cast<const uint8_t*>(p.src), p.row_bytes, d_rows + (p.shared ? n : 0), count,
                       limit, scratch + offset, kStream);
    handles.push_back(reads.add(scratch + offset, static_cast<size_t>(count * p.row_bytes)));
    offset += aligned(count * p.row_bytes);
  }
  DeviceReads::Handle sf1 = 0, sf2 = 0;
  if (!c.fp8) {
    sf1 = reads.add(m.b.a1_sf, sf_bytes_128x4(c.max_rows(), H / 16));
    sf2 = reads.add(m.b.a2_sf, sf_bytes_128x4(c.max_rows(), I / 16));
  }
  reads.fetch(kStream);

  StageReadout r;
  size_t next = 0;
  const auto bytes_of = [&](int64_t count) { return reads.vector<uint8_t>(handles[next++], count); };
  const auto bf16_of = [&](int64_t count) { return reads.vector<uint16_t>(handles[next++], count); };
  if (c.fp8) {
    for (Fp8GroupQuantized* q : {&r.fc1_fp8, &r.fc2_fp8}) {
      const int64_t cols = q == &r.fc1_fp8 ? H : I;
      q->rows = n;
      q->cols = cols;
      q->group = kFp8ActivationGroup;
      q->codes = bytes_of(n * cols);
      q->scales = reads.vector<float>(handles[next++], n * (cols / kFp8ActivationGroup));
    }
  } else {
    r.fc1_packed = bytes_of(n * H / 2);
    r.fc2_packed = bytes_of(n * I / 2);
    r.fc1_scales = m.linear_scales(reads.data(sf1), H / 16, rows);
    r.fc2_scales = m.linear_scales(reads.data(sf2), I / 16, rows);
  }
  if (values) {
    r.gemm1 = bf16_of(n * 2 * I);
    r.act = bf16_of(n * I);
    r.gemm2 = bf16_of(n * H);
    if (ns > 0) r.shared = bf16_of(ns * H);
  }
  return r;
}

int64_t MoePipeline::gemm_min_bytes() const {
  const PipelineConfig& c = impl_->cfg;
  const std::vector<int32_t> count = download(impl_->b.expert_count, c.total_experts());
  int64_t bytes = 0, rows = 0;
  for (int32_t n : count) {
    rows += n;
    if (n > 0 && c.fp8)  // one byte a code, one fp32 scale a 128x128 block
      bytes += 3 * c.inter * c.hidden + 3 * (c.inter / kFp8WeightBlock) * (c.hidden / kFp8WeightBlock) * 4;
    else if (n > 0)
      bytes += 2 * c.inter * (c.hidden / 2) + impl_->w13_sf_per_expert + c.hidden * (c.inter / 2) +
               impl_->w2_sf_per_expert;
  }
  // bf16 activations: A1 read, GEMM1 out written, A2 read, GEMM2 out written.
  bytes += rows * 2 * (c.hidden + 2 * c.inter + c.inter + c.hidden);
  return bytes;
}

double measure_copy_gbs(int64_t bytes, int iters) {
  void *src = nullptr, *dst = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&src, static_cast<size_t>(bytes)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dst, static_cast<size_t>(bytes)));
  launch_fill_random(static_cast<uint8_t*>(src), bytes, 99, 0xFF, 0, nullptr);
  cudaEvent_t start, stop;
  MOEFUZZ_CUDA_CHECK(cudaEventCreate(&start));
  MOEFUZZ_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < iters + 2; ++i) {  // 2 warm-ups
    MOEFUZZ_CUDA_CHECK(cudaEventRecord(start));
    MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice));
    MOEFUZZ_CUDA_CHECK(cudaEventRecord(stop));
    MOEFUZZ_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    MOEFUZZ_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(src);
  cudaFree(dst);
  std::sort(ms.begin(), ms.end());
  const double t = ms.empty() ? 0.0 : ms[ms.size() / 2] * 1e-3;
  return t > 0 ? 2.0 * static_cast<double>(bytes) / t / 1e9 : 0.0;
}

bool cuda_device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  return true;
}

std::string cuda_device_name() {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "unknown";
  return p.name;
}

}  // namespace moefuzz::cuda
