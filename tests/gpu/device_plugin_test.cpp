// Device-memory plugins (wants_device = 1) through `moefuzz check`, on the GPU: moefuzz's CUDA
// pipeline as a whole-layer plugin (examples/plugin_cuda) and a CUDA combine stage composed with the
// CPU pipeline (examples/plugin_device) pass; the faulty device combines (one fault each) are reported
// as findings with the right class. Skips visibly without a GPU (CI has none); the refusal paths
// without a GPU are tested in tests/kernels/device_plugin_refusal_test.cpp.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "cli/run_moefuzz.h"

#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(DevicePlugin, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: no device-memory plugins"; }
#else
namespace {

const std::string kLib = test_build_dir() + "/lib/";

RunResult check(const std::string& lib, const std::string& cases, const std::string& invariants = "all") {
  // 600 CPU seconds: every kernel call forks a child that creates a fresh CUDA context.
  return run_moefuzz(
      {"check", "--kernel", kLib + lib, "--cases", cases, "--seed", "7", "--invariants", invariants}, 600);
}

bool skip_without_gpu() {
  std::string why;
  if (moefuzz::cuda::cuda_device_available(&why)) return false;
  std::printf("no CUDA GPU present: %s\n", why.c_str());
  return true;
}

TEST(DevicePlugin, CudaPipelineAsWholeLayerPluginPasses) {
  if (skip_without_gpu()) GTEST_SKIP() << "no CUDA GPU present";
  const RunResult r = check("libmoefuzz_cuda_layer.so", "8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(DevicePlugin, DeviceCombineStageComposedWithCpuPipelinePasses) {
  if (skip_without_gpu()) GTEST_SKIP() << "no CUDA GPU present";
  const RunResult r = check("libmoefuzz_device_combine.so", "8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

struct Fault {
  const char* lib;
  const char* expected;    // a phrase of the finding
  const char* invariants;  // the unwritten element is also non-finite: FINITE (earlier) would report it first
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.lib; }  // ctest names, not raw bytes

class FaultyDevicePlugin : public ::testing::TestWithParam<Fault> {};

TEST_P(FaultyDevicePlugin, IsReportedAsAFinding) {
  if (skip_without_gpu()) GTEST_SKIP() << "no CUDA GPU present";
  const RunResult r = check(GetParam().lib, "3", GetParam().invariants);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(GetParam().expected), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultyDevicePlugin,
    ::testing::Values(Fault{"libmoefuzz_faulty_device_unwritten.so", "CANARY", "CANARY"},
                      Fault{"libmoefuzz_faulty_device_overhang.so", "out-of-bounds store", "all"},
                      Fault{"libmoefuzz_faulty_device_input.so",
                            "modified its input tensor 'combine gemm2_out'", "all"},
                      Fault{"libmoefuzz_faulty_device_illegal.so", "device-error", "all"}),
    [](const auto& info) {
      std::string n = info.param.lib;
      n = n.substr(std::string("libmoefuzz_faulty_device_").size());
      return n.substr(0, n.find('.'));
    });

}  // namespace
#endif
