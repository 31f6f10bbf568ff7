// `check -j`'s default (tools/check_workers.h check_jobs): one worker per core for a CPU kernel; for a
// GPU kernel two per core, the extra ones capped at kMaxWorkersPerGpu per GPU and never fewer than
// one per core; the workers yield their cores while waiting for the GPU when they outnumber the cores.
#include <gtest/gtest.h>

#include "tools/check_workers.h"

namespace moefuzz::cli {
namespace {

TEST(CheckJobs, CpuKernelsGetOneWorkerPerCore) {
  EXPECT_EQ(check_jobs(1, 0), 1);
  EXPECT_EQ(check_jobs(2, 0), 2);
  EXPECT_EQ(check_jobs(128, 0), 128);
}

TEST(CheckJobs, GpuKernelsGetTwoPerCoreUpToTheCapPerGpu) {
  EXPECT_EQ(check_jobs(1, 1), 2);
  EXPECT_EQ(check_jobs(16, 1), 32);
  EXPECT_EQ(check_jobs(20, 1), kMaxWorkersPerGpu);  // 40 capped at 32
  EXPECT_EQ(check_jobs(32, 2), 64);
  EXPECT_EQ(check_jobs(128, 8), 256);
  // More cores than the cap allows: one worker per core still.
  EXPECT_EQ(check_jobs(48, 1), 48);
  EXPECT_EQ(check_jobs(64, 1), 64);
}

// More workers than cores: a spinning worker would hold the core another has work for.
TEST(CheckJobs, WorkersYieldTheirCoresOnlyWhenTheyOutnumberThem) {
  EXPECT_EQ(gpu_wait_for(1, 1), GpuWait::kSpin);
  EXPECT_EQ(gpu_wait_for(16, 16), GpuWait::kSpin);
  EXPECT_EQ(gpu_wait_for(17, 16), GpuWait::kYield);
  EXPECT_EQ(gpu_wait_for(check_jobs(16, 1), 16), GpuWait::kYield);  // the default for a GPU kernel
  EXPECT_EQ(gpu_wait_for(check_jobs(64, 1), 64), GpuWait::kSpin);   // capped at one per core
}

}  // namespace
}  // namespace moefuzz::cli
