// The `cuda` kernel's resident expert weights (kernels/cuda/resident_experts.h): a run whose experts
// are already on the device gives the bits a run with an empty cache gives, a changed expert is never
// taken from a stale copy, and eviction keeps the copies' contents. Skips visibly without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/case.h"
#include "core/profile.h"
#include "core/swizzle.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/cuda/pipeline_result.h"
#include "kernels/cuda/resident_experts.h"
#include "support/require_gpu.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaResidentExperts, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled";
}
#else
namespace moefuzz {
namespace {

CaseRecipe recipe() {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.seed = 77;
  r.routing.mode = RoutingMode::kSoftmax;
  r.shape = {.tokens = 24, .hidden = 256, .inter = 128, .experts = 8, .top_k = 2};
  return r;
}

LayerResult run(const Case& c) {
  return cuda::run_whole_case(cuda::config_for(c.recipe, cuda_kernel_profile(), 0), c);
}

// The run on a thread of its own: an empty cache.
LayerResult run_fresh(const Case& c) {
  LayerResult out;
  std::thread t([&] { out = run(c); });
  t.join();
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(CudaResidentExperts, ResidentRunsGiveTheBitsOfFreshRuns) {
  MOEFUZZ_REQUIRE_GPU();
  const Case a = materialize(recipe());
  const int64_t X = static_cast<int64_t>(a.experts.size());
  const LayerResult first = run(a);
  const int64_t hits_before = cuda::thread_resident_experts().hits();
  const LayerResult again = run(a);
  EXPECT_EQ(cuda::thread_resident_experts().hits() - hits_before, X) << "every expert resident";
  EXPECT_TRUE(same_bits(first.output, again.output));

  // Changed codes and a changed scale, on every expert: the warm thread must not use its old copies.
  Case b = a;
  for (ExpertWeights& ew : b.experts) {
    ew.down.packed[0] ^= 0x11;
    ew.gate.scales[0] = ew.gate.scales[0] == 0x38 ? 0x40 : 0x38;
  }
  const LayerResult warm = run(b), fresh = run_fresh(b);
  EXPECT_TRUE(same_bits(warm.output, fresh.output));
  EXPECT_FALSE(same_bits(warm.output, first.output))
      << "the change must be visible for the test to mean anything";
}

// Experts are found by a hash remembered under their content stamps (core/shared_vector.h): a case
// changed in place between runs, through a reference held across a run, must still get its new bits.
TEST(CudaResidentExperts, InPlaceChangesBetweenRunsAreNeverStale) {
  MOEFUZZ_REQUIRE_GPU();
  Case c = materialize(recipe());  // frozen experts: their stamps are trusted
  const LayerResult before = run(c);
  ExpertWeights& ew = c.experts[0];  // copies the frozen expert; this case alone holds the copy
  for (size_t e = 0; e < c.experts.size(); ++e) c.experts[e].down.packed[1] ^= 0x22;
  const LayerResult changed = run(c);
  EXPECT_TRUE(same_bits(changed.output, run_fresh(c).output));
  EXPECT_FALSE(same_bits(changed.output, before.output)) << "the change must be visible";
  ew.up.packed[3] ^= 0x35;  // through the reference held across the run above
  ew.up.scales[1] = ew.up.scales[1] == 0x38 ? 0x40 : 0x38;
  const LayerResult again = run(c);
  EXPECT_TRUE(same_bits(again.output, run_fresh(c).output));
  EXPECT_FALSE(same_bits(again.output, changed.output)) << "the second change must be visible";
}

TEST(CudaResidentExperts, EvictionKeepsEveryCopysContent) {
  MOEFUZZ_REQUIRE_GPU();
  const Case c = materialize(recipe());
  const cuda::PipelineConfig cfg = cuda::config_for(c.recipe, cuda_kernel_profile(), 0);
  const int64_t H = cfg.hidden, I = cfg.inter;
  const cuda::ExpertLayout l{.hidden = H,
                             .inter = I,
                             .up_first = cfg.up_first,
                             .w13_sf = swizzled_128x4_size(2 * I, H / 16),
                             .w2_sf = swizzled_128x4_size(H, I / 16)};
  // Room for two copies: four experts evict one another; each copy read back is its expert's layout.
  cuda::ResidentExperts r(static_cast<size_t>(2 * l.bytes()));
  std::vector<uint8_t> want(static_cast<size_t>(l.bytes())), got(want.size());
  for (int pass = 0; pass < 2; ++pass)
    for (size_t e = 0; e < 4; ++e) {
      const uint8_t* d = r.find_or_upload(c.experts, e, l, cudaStreamPerThread);
      ASSERT_NE(d, nullptr);
      ASSERT_EQ(cudaMemcpyAsync(got.data(), d, got.size(), cudaMemcpyDeviceToHost, cudaStreamPerThread),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
      cuda::write_expert_layout(c.experts[e], l, want.data());
      EXPECT_EQ(got, want) << "expert " << e << ", pass " << pass;
      EXPECT_LE(r.bytes_held(), static_cast<size_t>(2 * l.bytes()));
    }
  EXPECT_EQ(r.hits(), 0) << "each expert was evicted before it came back";
  EXPECT_EQ(r.misses(), 8);
  // Larger than the capacity: not kept, the caller uploads directly.
  cuda::ResidentExperts tiny(16);
  EXPECT_EQ(tiny.find_or_upload(c.experts, 0, l, cudaStreamPerThread), nullptr);
}

// A case's new experts are staged one after another in a pinned ring whose copies overlap: more
// experts than the ring holds (16 MiB; ~0.9 MB each here) are uploaded without a wait between them,
// and every copy still holds its own expert's bytes once the stream is done.
TEST(CudaResidentExperts, StagingRingKeepsEveryUploadsBytes) {
  MOEFUZZ_REQUIRE_GPU();
  CaseRecipe big = recipe();
  big.shape = {.tokens = 4, .hidden = 1024, .inter = 512, .experts = 24, .top_k = 2};
  const Case c = materialize(big);
  const cuda::PipelineConfig cfg = cuda::config_for(c.recipe, cuda_kernel_profile(), 0);
  const cuda::ExpertLayout l{.hidden = cfg.hidden,
                             .inter = cfg.inter,
                             .up_first = cfg.up_first,
                             .w13_sf = swizzled_128x4_size(2 * cfg.inter, cfg.hidden / 16),
                             .w2_sf = swizzled_128x4_size(cfg.hidden, cfg.inter / 16)};
  ASSERT_GT(static_cast<int64_t>(c.experts.size()) * l.bytes(), int64_t{16} << 20) << "the ring must wrap";
  cuda::ResidentExperts r(size_t{1} << 30);
  std::vector<const uint8_t*> copies;
  for (size_t e = 0; e < c.experts.size(); ++e)
    copies.push_back(r.find_or_upload(c.experts, e, l, cudaStreamPerThread));
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  std::vector<uint8_t> want(static_cast<size_t>(l.bytes())), got(want.size());
  for (size_t e = 0; e < c.experts.size(); ++e) {
    ASSERT_NE(copies[e], nullptr);
    ASSERT_EQ(cudaMemcpy(got.data(), copies[e], got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    cuda::write_expert_layout(c.experts[e], l, want.data());
    EXPECT_EQ(got, want) << "expert " << e;
  }
}

// The batched device-to-device copy that assembles a run's weights from resident copies: every byte
// of every segment lands, wide (16-byte) and narrow (odd offsets and lengths) segments alike, and
// nothing outside them is written.
TEST(CudaResidentExperts, CopySegmentsMovesEveryByteAndNothingElse) {
  MOEFUZZ_REQUIRE_GPU();
  constexpr int64_t kBytes = int64_t{3} << 20;
  std::vector<uint8_t> host(static_cast<size_t>(kBytes));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 131 + 7);
  uint8_t *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(src, host.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0xAB, kBytes), cudaSuccess);
  // {source offset, destination offset, bytes}: wide, odd length, odd offsets, empty, > 1 MB.
  const int64_t parts[][3] = {{0, 0, 4096},         {4096, 8192, 17},  {5001, 9001, 1},
                              {7, 20003, 4099},     {65536, 65536, 0}, {1 << 20, 1 << 20, (1 << 20) + 16},
                              {100003, 300001, 255}};
  std::vector<cuda::CopySegment> segments;
  std::vector<uint8_t> want(static_cast<size_t>(kBytes), 0xAB);
  for (const auto& p : parts) {
    segments.push_back({src + p[0], dst + p[1], p[2]});
    std::copy_n(host.begin() + p[0], p[2], want.begin() + p[1]);
  }
  cuda::launch_copy_segments(segments, cudaStreamPerThread);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  std::vector<uint8_t> got(want.size());
  ASSERT_EQ(cudaMemcpy(got.data(), dst, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(got == want);
  (void)cudaFree(src);
  (void)cudaFree(dst);
}

}  // namespace
}  // namespace moefuzz
#endif
