// The plugin ABI end to end: the example plugin (examples/plugin_minimal) builds, loads through
// make_kernel(path) and routes like the CPU pipeline; malformed plugins are InputErrors naming the
// file and the defect; crashing, hanging, exiting and erroring plugins (examples/plugin_faulty)
// become KernelFaults while this process keeps running, within a short timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/case.h"
#include "core/cuda_in_process.h"
#include "core/errors.h"
#include "core/profile.h"
#include "drivers/check_engine.h"
#include "kernels/isolated_run.h"
#include "kernels/plugin_kernel.h"
#include "kernels/registry.h"

#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_EXAMPLE_PLUGIN
#error "MOEFUZZ_EXAMPLE_PLUGIN is set by examples/plugin_minimal/CMakeLists.txt"
#endif

namespace moefuzz {
namespace {

// Short enough that the hang tests cost well under a second, long enough (~100x a fork + small
// case run, a few ms) that a loaded CI machine does not turn a correct run into a timeout.
constexpr std::chrono::milliseconds kTestTimeout{750};

std::string faulty(const std::string& fault) {
  return std::string(MOEFUZZ_PLUGIN_LIB_DIR) + "/libmoefuzz_faulty_" + fault + ".so";
}

std::unique_ptr<Kernel> load(const std::string& path) {
  return make_plugin_kernel(path, PluginKernelOptions{.timeout = kTestTimeout});
}

CaseRecipe small_recipe(uint64_t seed) {
  CaseRecipe r;
  r.seed = seed;
  r.profile = "flashinfer-cutlass";
  r.shape = {.tokens = 6, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
  return r;
}

// Runs k on c the way the check engine does: output pre-sized and poisoned.
LayerResult run(const Kernel& k, const Case& c, RunOptions opts = {}) {
  LayerResult out;
  float poison;
  std::memcpy(&poison, &opts.poison_bits, sizeof poison);
  out.output.assign(static_cast<size_t>(c.recipe.shape.tokens * c.recipe.shape.hidden), poison);
  k.run_layer(c, opts, out);
  return out;
}

std::string input_error_of(const std::string& path) {
  try {
    load(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

bool profile_known(const std::string& name) {
  for (const Profile& p : all_profiles())
    if (p.name == name) return true;
  return false;
}

// ---- Loading -----------------------------------------------------------------------------------

TEST(PluginLoader, ExamplePluginLoadsThroughMakeKernel) {
  std::unique_ptr<Kernel> k = make_kernel(MOEFUZZ_EXAMPLE_PLUGIN);
  EXPECT_EQ(k->name(), "example-route");
  EXPECT_EQ(k->profile(), "flashinfer-cutlass");
  EXPECT_NE(k->description().find("stages: route"), std::string::npos) << k->description();
  EXPECT_TRUE(k->claims().deterministic);
  EXPECT_EQ(k->claims().tactics, 1);
  EXPECT_FALSE(k->is_mutant());
}

TEST(PluginLoader, PathsAreRecognizedByShape) {
  EXPECT_TRUE(looks_like_plugin_path("./libx.so"));
  EXPECT_TRUE(looks_like_plugin_path("libx.so"));
  EXPECT_TRUE(looks_like_plugin_path("/opt/k/libx"));
  EXPECT_FALSE(looks_like_plugin_path("cpu"));
  EXPECT_FALSE(looks_like_plugin_path(".so"));
  // A bare file name means the file in the current directory, not the library search path.
  const std::string e = [] {
    try {
      make_kernel("libmoefuzz_no_such_plugin.so");
    } catch (const InputError& x) {
      return std::string(x.what());
    }
    return std::string("(no InputError)");
  }();
  EXPECT_NE(e.find("'./libmoefuzz_no_such_plugin.so': no such file"), std::string::npos) << e;
}

TEST(PluginLoader, WrongAbiVersionIsAnInputErrorNamingBothVersions) {
  const std::string e = input_error_of(faulty("abi"));
  EXPECT_NE(e.find(faulty("abi")), std::string::npos) << e;
  EXPECT_NE(e.find("ABI version " + std::to_string(MOEFUZZ_PLUGIN_ABI_VERSION + 98)), std::string::npos) << e;
  EXPECT_NE(e.find("supports version " + std::to_string(MOEFUZZ_PLUGIN_ABI_VERSION)), std::string::npos) << e;
}

TEST(PluginLoader, MissingEntrySymbolIsAnInputError) {
  const std::string e = input_error_of(faulty("no_symbol"));
  EXPECT_NE(e.find(faulty("no_symbol")), std::string::npos) << e;
  EXPECT_NE(e.find("missing symbol 'moefuzz_plugin_entry'"), std::string::npos) << e;
}

TEST(PluginLoader, NullNameIsAnInputError) {
  const std::string e = input_error_of(faulty("null_name"));
  EXPECT_NE(e.find("field 'name' is NULL"), std::string::npos) << e;
}

TEST(PluginLoader, MissingFileAndNonLibraryAreInputErrors) {
  EXPECT_NE(input_error_of("/nonexistent/libx.so").find("no such file"), std::string::npos);
  const std::string text = std::string(MOEFUZZ_BINARY_DIR) + "/plugin_test_not_a_library.so";
  std::ofstream(text) << "this is not an ELF file\n";
  const std::string e = input_error_of(text);
  EXPECT_NE(e.find("cannot load the shared library"), std::string::npos) << e;
  std::remove(text.c_str());
}

TEST(PluginLoader, EntryThatCrashesIsAnInputErrorAndWeSurvive) {
  const std::string e = input_error_of(faulty("entry_crash"));
  EXPECT_NE(e.find("crash"), std::string::npos) << e;
  EXPECT_NE(e.find("while loading the plugin"), std::string::npos) << e;
}

#ifndef MOEFUZZ_WITH_CUDA
TEST(PluginLoader, DeviceBufferPluginIsRefusedClearlyWithoutCuda) {
  const std::string e = input_error_of(faulty("device"));
  EXPECT_NE(e.find("device buffers"), std::string::npos) << e;
  EXPECT_NE(e.find("built without the CUDA runtime"), std::string::npos) << e;
}
#else
// With CUDA in the build, loading asks a forked child for a device (this process never touches CUDA
// for a plugin); on a machine without a GPU that is an InputError at load, not a finding. With a GPU
// the device path runs (tests/gpu/device_plugin_test.cpp).
TEST(PluginLoader, DeviceBufferPluginWithoutGpuIsRefusedClearly) {
  std::string why;
  if (cuda::cuda_device_available(&why))
    GTEST_SKIP() << "a GPU is present: tests/gpu/device_plugin_test.cpp runs the device path";
  const std::string e = input_error_of(faulty("device"));
  EXPECT_NE(e.find("wants_device = 1"), std::string::npos) << e;
  EXPECT_NE(e.find("no usable CUDA device"), std::string::npos) << e;
}

// A process that uses CUDA itself (the oracle's GPU dots mark it, core/cuda_in_process.h) cannot run a
// device plugin's forked calls: refused at load with the reason, GPU or not. In a child process (a
// death test), so the mark does not reach the other tests.
TEST(PluginLoader, DeviceBufferPluginIsRefusedInAProcessThatUsesCuda) {
  EXPECT_EXIT(
      {
        mark_cuda_in_process("the oracle's GPU exact dots, --oracle-device gpu");
        const std::string e = input_error_of(faulty("device"));
        std::_Exit(e.find("cannot run in a process that uses CUDA itself") != std::string::npos &&
                           e.find("--oracle-device cpu") != std::string::npos
                       ? 0
                       : 1);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

TEST(PluginLoader, MalformedTimeoutEnvironmentIsAnInputError) {
  ASSERT_EQ(setenv("MOEFUZZ_PLUGIN_TIMEOUT_S", "soon", 1), 0);
  EXPECT_THROW(make_plugin_kernel(MOEFUZZ_EXAMPLE_PLUGIN), InputError);
  unsetenv("MOEFUZZ_PLUGIN_TIMEOUT_S");
}

// ---- Whole-layer plugins: results cross the process boundary exactly ---------------------------

TEST(PluginKernel, WholeLayerResultArrivesBitForBit) {
  auto k = load(faulty("pattern"));
  const Case c = materialize(small_recipe(3));
  const LayerResult r = run(*k, c);
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden, slots = c.recipe.slots();
  ASSERT_EQ(r.output.size(), static_cast<size_t>(T * H));
  ASSERT_EQ(r.routing.ids.size(), static_cast<size_t>(T * slots));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) ASSERT_EQ(r.output[t * H + h], static_cast<float>(t * 1000 + h) + 0.25f);
    for (int64_t s = 0; s < slots; ++s) {
      ASSERT_EQ(r.routing.ids[t * slots + s], s);
      ASSERT_EQ(r.routing.weights[t * slots + s], 1.0f / static_cast<float>(slots));
    }
  }
}

TEST(PluginKernel, GuardedOutputBufferAndItsBandTravelBack) {
  auto k = load(faulty("pattern"));
  const Case c = materialize(small_recipe(4));
  const int64_t n = c.recipe.shape.tokens * c.recipe.shape.hidden, slack = 16;
  RunOptions opts;
  float poison;
  std::memcpy(&poison, &opts.poison_bits, sizeof poison);
  std::vector<float> guarded(static_cast<size_t>(n + slack), poison);
  opts.output_data = guarded.data();
  opts.output_slack = slack;
  LayerResult out;
  k->run_layer(c, opts, out);
  EXPECT_EQ(guarded[0], 0.25f);
  EXPECT_EQ(guarded[n - 1],
            static_cast<float>((c.recipe.shape.tokens - 1) * 1000 + c.recipe.shape.hidden - 1) + 0.25f);
  for (int64_t i = n; i < n + slack; ++i) EXPECT_TRUE(std::isnan(guarded[i])) << "band element " << i;
}

TEST(PluginKernel, SupportsReturnsThePluginsReason) {
  auto k = load(faulty("pattern"));
  CaseRecipe r = small_recipe(1);
  EXPECT_EQ(k->supports(r), "");
  r.shape.tokens = 65;
  EXPECT_EQ(k->supports(r), "plugin: more than 64 tokens");
}

// ---- Faults: findings, not crashes ---------------------------------------------------------------

FaultKind fault_of(const Kernel& k, const Case& c, std::string& what, double& seconds, int& signal_number) {
  try {
    run(k, c);
  } catch (const KernelFault& f) {
    what = f.what();
    seconds = f.seconds();
    signal_number = f.signal_number();
    return f.kind();
  }
  ADD_FAILURE() << "no KernelFault";
  return FaultKind::kBadResult;
}

TEST(PluginIsolation, SegfaultBecomesACrashFaultAndWeKeepRunning) {
  auto k = load(faulty("crash"));
  const Case c = materialize(small_recipe(5));
  std::string what;
  double s = 0;
  int sig = 0;
  EXPECT_EQ(fault_of(*k, c, what, s, sig), FaultKind::kCrash);
  EXPECT_EQ(sig, SIGSEGV);
  EXPECT_NE(what.find("faulty"), std::string::npos) << what;
  EXPECT_NE(what.find("signal " + std::to_string(SIGSEGV)), std::string::npos) << what;
  // The framework survived: a well-behaved plugin still runs in this process.
  EXPECT_EQ(run(*load(faulty("pattern")), c).output[0], 0.25f);
}

TEST(PluginIsolation, HangBecomesATimeoutFaultWithinTheTimeout) {
  auto k = load(faulty("hang"));
  const Case c = materialize(small_recipe(6));
  std::string what;
  double s = 0;
  int sig = 0;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(fault_of(*k, c, what, s, sig), FaultKind::kTimeout);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, std::chrono::duration<double>(kTestTimeout).count());
  // The kill is prompt (pidfd wake-up, or a waitpid poll every <= 2 ms); a second of slack covers a
  // busy machine.
  EXPECT_LT(elapsed, std::chrono::duration<double>(kTestTimeout).count() + 1.0);
  EXPECT_NE(what.find("timeout"), std::string::npos) << what;
}

TEST(PluginIsolation, EarlyExitIsABadResult) {
  auto k = load(faulty("exit"));
  std::string what;
  double s = 0;
  int sig = 0;
  EXPECT_EQ(fault_of(*k, materialize(small_recipe(7)), what, s, sig), FaultKind::kBadResult);
  EXPECT_NE(what.find("before writing its result"), std::string::npos) << what;
}

TEST(PluginIsolation, ReportedErrorIsAPluginErrorCarryingTheMessage) {
  auto k = load(faulty("error"));
  std::string what;
  double s = 0;
  int sig = 0;
  EXPECT_EQ(fault_of(*k, materialize(small_recipe(8)), what, s, sig), FaultKind::kPluginError);
  EXPECT_NE(what.find("layer returned an error: deliberate failure: workspace too small"), std::string::npos)
      << what;
}

TEST(PluginIsolation, HangingSupportsIsATimeoutFault) {
  auto k = load(faulty("supports_hang"));
  try {
    k->supports(small_recipe(1));
    ADD_FAILURE() << "no KernelFault";
  } catch (const KernelFault& f) {
    EXPECT_EQ(f.kind(), FaultKind::kTimeout);
  }
}

TEST(IsolatedRun, FaultKindsHaveTheNamesSharedWithEveryBridge) {
  // The names are a contract with the other kernel bridges (C plugins, Python) and with reports.
  const std::pair<FaultKind, std::pair<std::string_view, std::string_view>> want[] = {
      {FaultKind::kCrash, {"crash", "CRASH"}},
      {FaultKind::kTimeout, {"timeout", "HANG"}},
      {FaultKind::kBadResult, {"bad-result", "BAD-RESULT"}},
      {FaultKind::kPluginError, {"plugin-error", "ERROR"}},
      {FaultKind::kOutOfMemory, {"oom", "OOM"}},
      {FaultKind::kDeviceError, {"device-error", "DEVICE-ERROR"}},
  };
  for (const auto& [kind, names] : want) {
    EXPECT_EQ(fault_kind_name(kind), names.first);
    EXPECT_EQ(fault_report_class(kind), names.second);
  }
}

TEST(IsolatedRun, EveryFaultKindThrownInTheChildArrivesAsItself) {
  for (FaultKind kind : {FaultKind::kOutOfMemory, FaultKind::kDeviceError}) {
    try {
      run_isolated("test", 0, {kTestTimeout},
                   [&](ResultWriter&) -> std::string { throw KernelFault(kind, "deliberate"); });
      ADD_FAILURE() << "no KernelFault";
    } catch (const KernelFault& f) {
      EXPECT_EQ(f.kind(), kind);
    }
  }
}

TEST(IsolatedRun, ReturnsExactlyTheBytesTheChildWrote) {
  const std::vector<uint8_t> got = run_isolated("test", 8, {kTestTimeout}, [](ResultWriter& w) {
    const uint8_t bytes[3] = {7, 0, 255};
    w.append(bytes, sizeof bytes);
    return std::string();
  });
  EXPECT_EQ(got, (std::vector<uint8_t>{7, 0, 255}));
}

TEST(IsolatedRun, OverflowingTheRegionIsAnErrorNotACorruption) {
  EXPECT_THROW(run_isolated("test", 2, {kTestTimeout},
                            [](ResultWriter& w) {
                              const uint8_t bytes[3] = {1, 2, 3};
                              w.append(bytes, sizeof bytes);
                              return std::string();
                            }),
               std::runtime_error);
}

TEST(IsolatedRun, InputErrorInTheChildStaysAnInputError) {
  EXPECT_THROW(
      run_isolated("test", 0, {kTestTimeout}, [](ResultWriter&) -> std::string { throw InputError("bad"); }),
      InputError);
}

// ---- Stage composition: the example routing plugin inside the CPU pipeline ---------------------

// Reference: the built-in CPU kernel that claims the same profile ("cpu-flashinfer").
std::unique_ptr<Kernel> cpu_reference_or_skip_reason(const std::string& profile, std::string& why) {
  if (!profile_known(profile)) {
    why = "profile '" + profile + "' is not in this build yet";
    return nullptr;
  }
  for (const KernelEntry& e : kernel_registry()) {
    if (e.kind != KernelKind::kBuiltin) continue;
    std::unique_ptr<Kernel> k = e.make();
    if (k->profile() == profile) return k;
  }
  why = "no built-in CPU kernel claims profile '" + profile + "' yet";
  return nullptr;
}

// Softmax routing only: its selection order is the logits' order, so near-ties are found here
// without an oracle. (Grouped sigmoid routing is left to the oracle's set admissibility.)
void expect_softmax_routing_agrees(int seeds) {
  auto plugin = load(MOEFUZZ_EXAMPLE_PLUGIN);
  std::string why;
  auto cpu = cpu_reference_or_skip_reason(plugin->profile(), why);
  if (!cpu) GTEST_SKIP() << "comparison with the CPU kernel skipped: " << why;
  int compared_tokens = 0, identical_rows = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    CaseRecipe r = small_recipe(static_cast<uint64_t>(seed));
    r.routing.mode = RoutingMode::kSoftmax;
    r.routing.routed_scaling_factor = 2.5;
    ASSERT_EQ(plugin->supports(r), "");
    ASSERT_EQ(cpu->supports(r), "");
    const Case c = materialize(r);
    // Two threads in the child: the CPU stages spawn their own, which fork isolation must allow.
    const LayerResult got = run(*plugin, c, RunOptions{.threads = 2}), want = run(*cpu, c);
    const int64_t T = r.shape.tokens, H = r.shape.hidden, slots = r.slots(), E = r.shape.experts;
    for (float y : got.output) ASSERT_TRUE(std::isfinite(y));
    for (int64_t t = 0; t < T; ++t) {
      // Both compute each score with one fp32 libm call (error <= 1 ulp each) and a softmax sum of E
      // terms: relative score error <= (E + 2) * 2^-24 per side. A token whose selection margin
      // (k-th vs (k+1)-th distinct selection score, recomputed in double) is below twice that may
      // legitimately select differently; every other token must agree exactly.
      std::vector<double> sel(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) sel[e] = c.logits[t * E + e];  // softmax is monotone in the logit
      std::vector<double> sorted = sel;
      std::sort(sorted.rbegin(), sorted.rend());
      const double margin = sorted[r.shape.top_k - 1] - sorted[r.shape.top_k];
      const double bound =
          2.0 * static_cast<double>(E + 2) * std::ldexp(1.0, -24) * (1.0 + std::fabs(sorted[0]));
      if (margin <= bound) continue;
      ++compared_tokens;
      bool same_weights = true;
      for (int64_t s = 0; s < slots; ++s) {
        const size_t i = static_cast<size_t>(t * slots + s);
        ASSERT_EQ(got.routing.ids[i], want.routing.ids[i]) << "token " << t << " slot " << s;
        // Weights: the same formula, so the same value up to the rounding of a division vs a
        // reciprocal and E-term sums: relative (E + k + 4) * 2^-24 per side, times rsf.
        const double w_bound = 2.0 * static_cast<double>(E + r.shape.top_k + 4) * std::ldexp(1.0, -24) *
                               std::fabs(static_cast<double>(want.routing.weights[i]));
        EXPECT_LE(std::fabs(static_cast<double>(got.routing.weights[i]) - want.routing.weights[i]), w_bound)
            << "token " << t << " slot " << s << " got " << got.routing.weights[i] << " want "
            << want.routing.weights[i];
        same_weights = same_weights && got.routing.ids[i] == want.routing.ids[i] &&
                       got.routing.weights[i] == want.routing.weights[i];
      }
      if (same_weights) {  // identical decisions through identical CPU stages: identical bits
        ++identical_rows;
        for (int64_t h = 0; h < H; ++h)
          ASSERT_EQ(got.output[t * H + h], want.output[t * H + h]) << "token " << t;
      }
    }
  }
  EXPECT_GT(compared_tokens, 0) << "every token was a near-tie: the comparison would be vacuous";
  ::testing::Test::RecordProperty("compared_tokens", compared_tokens);
  ::testing::Test::RecordProperty("bit_identical_rows", identical_rows);
}

TEST(PluginComposition, SoftmaxRoutingPluginAgreesWithTheCpuKernel) { expect_softmax_routing_agrees(8); }

TEST(PluginComposition, BadExpertIdsFromAStagePluginAreABadResult) {
  if (!profile_known("flashinfer-cutlass"))
    GTEST_SKIP() << "profile 'flashinfer-cutlass' not in this build yet";
  auto k = load(faulty("bad_ids"));
  std::string what;
  double s = 0;
  int sig = 0;
  EXPECT_EQ(fault_of(*k, materialize(small_recipe(9)), what, s, sig), FaultKind::kBadResult);
  EXPECT_NE(what.find("not an expert id"), std::string::npos) << what;
}

// ---- Through the check engine: what `moefuzz check --kernel ./lib.so` does per case -------------

TEST(PluginCheckEngine, ExamplePluginPassesEveryInvariantAndACrashIsAFinding) {
  if (!profile_known("flashinfer-cutlass"))
    GTEST_SKIP() << "profile 'flashinfer-cutlass' not in this build yet";
  const CheckOptions options{.invariants = select_invariants("all")};
  ASSERT_FALSE(options.invariants.empty());
  auto plugin = load(MOEFUZZ_EXAMPLE_PLUGIN);
  // Opt-in longer sweep (docs/plugins.md): MOEFUZZ_PLUGIN_TEST_SEEDS=500.
  const char* env = std::getenv("MOEFUZZ_PLUGIN_TEST_SEEDS");
  const uint64_t seeds = env ? std::strtoull(env, nullptr, 10) : 4;
  int passed_verdicts = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    CaseRecipe r = small_recipe(seed);
    if (seed % 2 == 0) {  // every other case: DeepSeek-V3 grouped sigmoid routing with rsf 2.5
      r.routing.mode = RoutingMode::kSigmoidGrouped;
      r.shape.n_group = 4;
      r.shape.topk_group = 2;
      r.routing.routed_scaling_factor = 2.5;
    }
    const Case c = materialize(r);
    const CaseReport rep = check_case(*plugin, c, options);
    ASSERT_FALSE(rep.failed()) << "seed " << seed << ": " << rep.first_failure().invariant << " "
                               << rep.first_failure().message;
    for (const Verdict& v : rep.verdicts) passed_verdicts += v.outcome == Outcome::kPass;
  }
  EXPECT_GT(passed_verdicts, 0);
  ::testing::Test::RecordProperty("passed_verdicts", passed_verdicts);
  // The same case through a crashing plugin: a failed verdict naming the crash, not a dead process.
  const CaseReport crash = check_case(*load(faulty("crash")), materialize(small_recipe(1)), options);
  ASSERT_TRUE(crash.failed());
  EXPECT_NE(crash.first_failure().message.find("crash"), std::string::npos) << crash.first_failure().message;
}

}  // namespace
}  // namespace moefuzz
